// Bounded descriptors (issue 43; engine/util/file_cache.h): under a real RLIMIT_NOFILE of
// 256 (a forked child), a container of many thousands of fragment files over several
// datasets is written by an append+flush loop, opened, read with every kind of
// selection, consolidated and verified, every read compared with a model; a process with
// many containers open stays within the limit; readers race consolidation while the
// cache evicts their descriptors; another process's consolidation removes files a reader
// had closed; reopens fail on purpose.  Without the cache every open array kept every
// fragment file open, and all of this died with errno 24.
//
// TESSERA_FD_TEST_FRAGMENTS: fragments of the large test (default 16000, about 20 s here; the issue's
// 50000 runs in a few minutes).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/container/verify.h"
#include "engine/testing/fd_rig.h"
#include "engine/testing/test_schema.h"
#include "engine/testing/testutil.h"
#include "engine/util/file_cache.h"

using namespace tessera;
using namespace tessera::fd_rig;

namespace {

ArrayOptions file_fragments(const std::shared_ptr<Context>& ctx) {
  ArrayOptions o;
  o.durable_writes = false;  // the connector's mode: a commit publishes
  o.inline_fragment_bytes = 0;  // every fragment a file: what the bound is about
  o.blob_bytes = 0;
  o.context = ctx;
  return o;
}

// The datasets of the large test and their models (plain arrays, fill 0).
struct Datasets {
  // 0: a 1-D log appended 16 values at a time; 1: rows of 32 appended one at a time, and
  // older rows overwritten by boxes; 2: a fixed 256 x 256 grid of scattered box and point
  // writes; 3: variable-length strings appended 4 at a time (a heap file each).
  static constexpr int kCount = 4;
  uint64_t ids[kCount] = {};
  std::vector<int32_t> log;
  std::vector<int32_t> rows;  // 32 per row
  std::vector<int32_t> grid = std::vector<int32_t>(256 * 256, 0);
  std::vector<std::string> strings;

  static Schema schema(int k) {
    switch (k) {
      case 0: return int32_schema({0}, {kUnlimited}, {4096});
      case 1: return int32_schema({0, 32}, {kUnlimited, 32}, {64, 32});
      case 2: return int32_schema({256, 256}, {256, 256}, {32, 32});
      default: {
        Schema s;
        s.extent = {0};
        s.max_extent = {kUnlimited};
        s.tile_extent = {1024};
        s.elem_size = kVarDescriptorSize;
        s.var = true;
        return s;
      }
    }
  }
  uint64_t nrows() const { return rows.size() / 32; }
};

// One append+flush cycle of dataset k (one fragment), the model updated alike.
void write_one(Datasets& d, int k, Array& a, std::mt19937_64& rng, int32_t stamp) {
  Status st;
  if (k == 0) {
    const uint64_t at = d.log.size();
    std::vector<int32_t> v(16);
    for (int i = 0; i < 16; ++i) v[i] = stamp * 16 + i;
    ASSERT_TRUE(a.set_extent({at + 16}).ok());
    st = a.write(Selection::from_box(Box({at}, {at + 15})), v.data());
    d.log.insert(d.log.end(), v.begin(), v.end());
  } else if (k == 1) {
    if (d.nrows() < 8 || rng() % 3) {
      const uint64_t r = d.nrows();
      std::vector<int32_t> v(32);
      for (int i = 0; i < 32; ++i) v[i] = stamp + i;
      ASSERT_TRUE(a.set_extent({r + 1, 32}).ok());
      st = a.write(Selection::from_box(Box({r, 0}, {r, 31})), v.data());
      d.rows.insert(d.rows.end(), v.begin(), v.end());
    } else {  // an overwrite of older rows: newest wins
      const uint64_t r0 = rng() % d.nrows(), r1 = std::min(d.nrows() - 1, r0 + rng() % 4);
      const uint64_t c0 = rng() % 32, c1 = c0 + rng() % (32 - c0);
      std::vector<int32_t> v((r1 - r0 + 1) * (c1 - c0 + 1), -stamp);
      st = a.write(Selection::from_box(Box({r0, c0}, {r1, c1})), v.data());
      for (uint64_t r = r0; r <= r1; ++r)
        for (uint64_t c = c0; c <= c1; ++c) d.rows[r * 32 + c] = -stamp;
    }
  } else if (k == 2) {
    if (rng() % 2) {
      const uint64_t r0 = rng() % 256, c0 = rng() % 256;
      const uint64_t r1 = std::min<uint64_t>(255, r0 + rng() % 24), c1 = std::min<uint64_t>(255, c0 + rng() % 24);
      std::vector<int32_t> v((r1 - r0 + 1) * (c1 - c0 + 1));
      for (size_t i = 0; i < v.size(); ++i) v[i] = stamp * 1000 + static_cast<int32_t>(i);
      st = a.write(Selection::from_box(Box({r0, c0}, {r1, c1})), v.data());
      size_t i = 0;
      for (uint64_t r = r0; r <= r1; ++r)
        for (uint64_t c = c0; c <= c1; ++c) d.grid[r * 256 + c] = v[i++];
    } else {
      std::vector<uint64_t> pts;
      std::vector<int32_t> v;
      for (int i = 0; i < 10; ++i) {
        const uint64_t r = rng() % 256, c = rng() % 256;
        pts.push_back(r);
        pts.push_back(c);
        v.push_back(stamp * 7 + i);
      }
      st = a.write_points(pts.data(), 10, v.data());
      for (int i = 0; i < 10; ++i) d.grid[pts[2 * i] * 256 + pts[2 * i + 1]] = v[i];
    }
  } else {
    const uint64_t at = d.strings.size();
    std::vector<uint64_t> len;
    std::string data;
    for (int i = 0; i < 4; ++i) {
      const std::string s = "s" + std::to_string(stamp) + std::string(rng() % 20, 'a' + i);
      len.push_back(s.size());
      data += s;
      d.strings.push_back(s);
    }
    ASSERT_TRUE(a.set_extent({at + 4}).ok());
    st = a.write_var(Selection::from_box(Box({at}, {at + 3})), len.data(), data.data());
  }
  ASSERT_TRUE(st.ok()) << st.message();
}

// Every kind of selection of every dataset, against the models.
void read_all_kinds(const Datasets& d, Array* const* arrays, std::mt19937_64& rng) {
  Status st;
  {  // the log: whole, strided, points
    Array& a = *arrays[0];
    const uint64_t n = d.log.size();
    std::vector<int32_t> got(n, -1);
    ASSERT_TRUE((st = a.read(Selection::from_box(Box({0}, {n - 1})), got.data())).ok()) << st.message();
    EXPECT_EQ(got, d.log) << "log, whole";
    const uint64_t stride = 1 + rng() % 40, count = n / stride;
    std::vector<int32_t> sl(count * 2);
    ASSERT_TRUE(a.read(Selection::from_hyperslab({0}, {stride}, {count}, {2 <= stride ? 2u : 1u}), sl.data()).ok());
    for (uint64_t i = 0, b = 2 <= stride ? 2 : 1; i < count; ++i)
      for (uint64_t j = 0; j < b; ++j) ASSERT_EQ(sl[i * b + j], d.log[i * stride + j]) << "log, hyperslab";
    std::vector<uint64_t> pts(500);
    for (auto& p : pts) p = rng() % n;
    std::vector<int32_t> pv(500);
    ASSERT_TRUE(a.read_points(pts.data(), pts.size(), pv.data()).ok());
    for (size_t i = 0; i < pts.size(); ++i) ASSERT_EQ(pv[i], d.log[pts[i]]) << "log, points";
  }
  {  // the rows: whole, boxes, unions of intervals, a strided hyperslab
    Array& a = *arrays[1];
    const uint64_t n = d.nrows();
    std::vector<int32_t> got(n * 32, -1);
    ASSERT_TRUE(a.read(Selection::from_box(Box({0, 0}, {n - 1, 31})), got.data()).ok());
    EXPECT_EQ(got, d.rows) << "rows, whole";
    for (int k = 0; k < 20; ++k) {
      std::vector<std::vector<Interval>> dims(2);
      for (int d2 = 0; d2 < 2; ++d2) {
        const uint64_t ext = d2 == 0 ? n : 32;
        for (int i = 0, m = 1 + static_cast<int>(rng() % 4); i < m; ++i) {
          const uint64_t lo = rng() % ext;
          dims[d2].push_back({lo, std::min(ext - 1, lo + rng() % 50)});
        }
      }
      const Selection sel = Selection::from_intervals(dims);
      const auto sets = testutil::index_sets_of_intervals(dims);
      std::vector<int32_t> v(sets[0].size() * sets[1].size(), -1);
      ASSERT_TRUE(a.read(sel, v.data()).ok());
      size_t i = 0;
      for (uint64_t r : sets[0])
        for (uint64_t c : sets[1]) ASSERT_EQ(v[i++], d.rows[r * 32 + c]) << "rows, union of intervals";
    }
    const uint64_t stride = 3, count = n / stride;
    std::vector<int32_t> sl(count * 4 * 2);
    ASSERT_TRUE(a.read(Selection::from_hyperslab({0, 1}, {stride, 16}, {count, 2}, {1, 4}), sl.data()).ok());
    size_t i = 0;
    for (uint64_t r = 0; r < count; ++r)
      for (uint64_t c : {1, 2, 3, 4, 17, 18, 19, 20}) ASSERT_EQ(sl[i++], d.rows[r * stride * 32 + c]) << "rows, hyperslab";
  }
  {  // the grid: whole, boxes, points
    Array& a = *arrays[2];
    std::vector<int32_t> got(256 * 256, -1);
    ASSERT_TRUE(a.read(Selection::from_box(Box({0, 0}, {255, 255})), got.data()).ok());
    EXPECT_EQ(got, d.grid) << "grid, whole";
    for (int k = 0; k < 20; ++k) {
      const uint64_t r0 = rng() % 256, c0 = rng() % 256, r1 = r0 + rng() % (256 - r0), c1 = c0 + rng() % (256 - c0);
      std::vector<int32_t> v((r1 - r0 + 1) * (c1 - c0 + 1), -1);
      ASSERT_TRUE(a.read(Selection::from_box(Box({r0, c0}, {r1, c1})), v.data()).ok());
      size_t i = 0;
      for (uint64_t r = r0; r <= r1; ++r)
        for (uint64_t c = c0; c <= c1; ++c) ASSERT_EQ(v[i++], d.grid[r * 256 + c]) << "grid, box";
    }
    std::vector<uint64_t> pts;
    for (int i = 0; i < 1000; ++i) pts.push_back(rng() % 256);
    std::vector<int32_t> pv(500);
    ASSERT_TRUE(a.read_points(pts.data(), 500, pv.data()).ok());
    for (size_t i = 0; i < 500; ++i) ASSERT_EQ(pv[i], d.grid[pts[2 * i] * 256 + pts[2 * i + 1]]) << "grid, points";
  }
  {  // the strings: whole and points
    Array& a = *arrays[3];
    const uint64_t n = d.strings.size();
    std::vector<uint64_t> len;
    std::vector<uint8_t> data;
    ASSERT_TRUE((st = a.read_var(Selection::from_box(Box({0}, {n - 1})), &len, &data)).ok()) << st.message();
    ASSERT_EQ(len.size(), n);
    size_t at = 0;
    for (uint64_t i = 0; i < n; ++i) {
      ASSERT_EQ(std::string(data.begin() + at, data.begin() + at + len[i]), d.strings[i]) << "strings, whole";
      at += len[i];
    }
    std::vector<uint64_t> pts(200);
    for (auto& p : pts) p = rng() % n;
    ASSERT_TRUE(a.read_points_var(pts.data(), pts.size(), &len, &data).ok());
    at = 0;
    for (size_t i = 0; i < pts.size(); ++i) {
      ASSERT_EQ(std::string(data.begin() + at, data.begin() + at + len[i]), d.strings[pts[i]]) << "strings, points";
      at += len[i];
    }
  }
}

}  // namespace

TEST(DescriptorBound, ManyFragmentsWithin256Descriptors) {
  const uint64_t fragments = testutil::env_u64("TESSERA_FD_TEST_FRAGMENTS", testutil::kSanitized ? 2000 : 16000);
  testutil::TempDir dir("tessera_fds");
  const std::string path = dir.sub("c");
  in_child(256, [&] {
    auto ctx = nosync_context();
    const size_t cap = FileCache::process().capacity();
    EXPECT_EQ(cap, 128u) << "half of the limit";
    const size_t base = open_descriptors();
    Datasets d;
    std::mt19937_64 rng(7);
    auto t0 = std::chrono::steady_clock::now();
    auto phase = [&](const char* what) {  // where the time goes, for choosing the size
      const auto t = std::chrono::steady_clock::now();
      std::printf("[ phase    ] %-40s %6.2f s\n", what, std::chrono::duration<double>(t - t0).count());
      t0 = t;
    };
    {  // the append+flush loop: one fragment file per cycle, round the datasets
      std::unique_ptr<Container> c;
      ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c, ctx).ok());
      std::unique_ptr<Array> a[Datasets::kCount];
      for (int k = 0; k < Datasets::kCount; ++k) {
        ASSERT_TRUE(c->create_array(Datasets::schema(k), &d.ids[k]).ok());
        ASSERT_TRUE(c->open_array(d.ids[k], true, file_fragments(ctx), &a[k]).ok());
      }
      size_t most = 0;
      for (uint64_t i = 0; i < fragments; ++i) {
        const int k = static_cast<int>(i % Datasets::kCount);
        write_one(d, k, *a[k], rng, static_cast<int32_t>(i + 1));
        if (::testing::Test::HasFatalFailure()) return;
        const Status st = commit_arrays(*c, {a[k].get()});
        ASSERT_TRUE(st.ok()) << "cycle " << i << ": " << st.message();
        if (i % 250 == 0) most = std::max(most, open_descriptors());
      }
      EXPECT_LE(most, base + cap + 16) << "the writer held at most the cache's bound and a few of its own";
      std::printf("[ fds      ] writer: at most %zu descriptors open (%zu before the container), limit 256\n", most, base);
      uint64_t files = 0;
      for (int k = 0; k < Datasets::kCount; ++k) files += a[k]->fragments().size();
      EXPECT_EQ(files, fragments) << "one fragment file per cycle";
    }
    std::printf("[ wrote    ] %llu fragments, peak %zu descriptors in the cache\n",
                static_cast<unsigned long long>(fragments), FileCache::process().stats().peak_open);
    phase("append+flush loop");
    {  // a fresh open, read-only: every kind of selection
      std::unique_ptr<Container> c;
      ASSERT_TRUE(Container::open(path, false, &c, ctx).ok());
      std::unique_ptr<Array> a[Datasets::kCount];
      Array* raw[Datasets::kCount];
      for (int k = 0; k < Datasets::kCount; ++k) {
        Status st = c->open_array(d.ids[k], false, file_fragments(ctx), &a[k]);
        ASSERT_TRUE(st.ok()) << st.message();
        raw[k] = a[k].get();
      }
      read_all_kinds(d, raw, rng);
      EXPECT_LE(open_descriptors(), base + cap + 8);
    }
    phase("open read-only, every selection kind");
    VerifyReport before;  // every fragment file checked, within the limit
    ASSERT_TRUE(verify_container(path, VerifyOptions{}, &before).ok());
    EXPECT_TRUE(before.ok()) << (before.problems.empty() ? "" : before.problems[0]);
    EXPECT_EQ(before.fragments, fragments);
    phase("verify");
    {  // consolidated, read again, verified
      std::unique_ptr<Container> c;
      ASSERT_TRUE(Container::open(path, true, &c, ctx).ok());
      std::unique_ptr<Array> a[Datasets::kCount];
      Array* raw[Datasets::kCount];
      for (int k = 0; k < Datasets::kCount; ++k) {
        ASSERT_TRUE(c->open_array(d.ids[k], true, file_fragments(ctx), &a[k]).ok());
        Status st = a[k]->consolidate_all();
        ASSERT_TRUE(st.ok()) << st.message();
        EXPECT_EQ(a[k]->fragments().size(), 1u);
        raw[k] = a[k].get();
      }
      read_all_kinds(d, raw, rng);
      EXPECT_LE(open_descriptors(), base + cap + 8);
    }
    phase("consolidate, every selection kind");
    VerifyReport rep;
    ASSERT_TRUE(verify_container(path, VerifyOptions{}, &rep).ok());
    EXPECT_TRUE(rep.ok()) << (rep.problems.empty() ? "" : rep.problems[0]);
    EXPECT_EQ(rep.fragments, static_cast<uint64_t>(Datasets::kCount));
    EXPECT_LE(FileCache::process().stats().peak_open, cap) << "the bound held for every open";
  });
}

// Sixty containers open for writing at once (each keeps its catalog and lock open: 120
// descriptors the cache does not hold), each appended and flushed 30 times, all read back:
// the cache gives way where the limit leaves it less than its bound.
TEST(DescriptorBound, ManyOpenContainersStayWithinTheLimit) {
  constexpr int kContainers = 60, kCycles = 30;
  testutil::TempDir dir("tessera_fds");
  in_child(256, [&] {
    auto ctx = nosync_context();
    std::vector<std::unique_ptr<Container>> cs(kContainers);
    std::vector<std::unique_ptr<Array>> as(kContainers);
    std::vector<uint64_t> ids(kContainers);
    std::vector<std::vector<int32_t>> model(kContainers);
    for (int i = 0; i < kContainers; ++i) {
      const std::string p = dir.sub("c" + std::to_string(i));
      Status st = Container::create(p, Container::CreateMode::kExclusive, &cs[i], ctx);
      ASSERT_TRUE(st.ok()) << st.message();
      ASSERT_TRUE(cs[i]->create_array(int32_schema({0}, {kUnlimited}, {256}), &ids[i]).ok());
      ASSERT_TRUE(cs[i]->open_array(ids[i], true, file_fragments(ctx), &as[i]).ok());
    }
    for (int cycle = 0; cycle < kCycles; ++cycle)
      for (int i = 0; i < kContainers; ++i) {
        const uint64_t at = model[i].size();
        std::vector<int32_t> v(8);
        for (int j = 0; j < 8; ++j) v[j] = i * 100000 + cycle * 8 + j;
        ASSERT_TRUE(as[i]->set_extent({at + 8}).ok());
        ASSERT_TRUE(as[i]->write(Selection::from_box(Box({at}, {at + 7})), v.data()).ok());
        Status st = commit_arrays(*cs[i], {as[i].get()});
        ASSERT_TRUE(st.ok()) << "container " << i << ", cycle " << cycle << ": " << st.message();
        model[i].insert(model[i].end(), v.begin(), v.end());
      }
    auto check = [&](const char* when) {
      for (int i = 0; i < kContainers; ++i) {
        std::vector<int32_t> got(model[i].size(), -1);
        Status st = as[i]->read(Selection::from_box(Box({0}, {got.size() - 1})), got.data());
        ASSERT_TRUE(st.ok()) << when << ": " << st.message();
        ASSERT_EQ(got, model[i]) << when << ", container " << i;
      }
    };
    check("written");
    EXPECT_EQ(as[0]->fragments().size(), static_cast<size_t>(kCycles));
    for (auto& a : as) a.reset();
    for (auto& c : cs) c.reset();
    for (int i = 0; i < kContainers; ++i) {
      ASSERT_TRUE(Container::open(dir.sub("c" + std::to_string(i)), false, &cs[i], ctx).ok());
      ASSERT_TRUE(cs[i]->open_array(ids[i], false, file_fragments(ctx), &as[i]).ok());
    }
    check("reopened read-only");
  });
}
