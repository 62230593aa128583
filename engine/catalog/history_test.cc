// Time travel (history.h): every commit recorded; a container opened as of any commit
// reads exactly what the commit left — checked against a model of every commit, through
// catalog compactions (archived logs), consolidations that keep their inputs, extent
// changes, erases, metadata-only commits, and a vacuum; lookups by number and by time.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "engine/catalog/history.h"
#include "engine/testing/testutil.h"

using namespace tessera;
using testutil::status_str;

namespace {

constexpr uint64_t kRows = 48, kCols = 40;

Schema schema() {
  Schema s;
  s.extent = {kRows, kCols};
  s.max_extent = {kUnlimited, kCols};
  s.tile_extent = {8, 8};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  s.fill.assign(4, 0xFF);  // -1
  s.filters = FilterPipeline({{FilterType::kShuffle, 0}, {FilterType::kLz4, 0}}, 4);
  return s;
}

struct State {
  uint64_t rows = kRows;
  std::vector<int32_t> v = std::vector<int32_t>(kRows * kCols, -1);
  std::string meta;  // a metadata record's value ("" = absent)
  bool operator==(const State& o) const { return rows == o.rows && v == o.v && meta == o.meta; }
};

std::vector<int32_t> read_all(Array& a, uint64_t rows, Status* st) {
  std::vector<int32_t> got(rows * kCols);
  if (rows) *st = a.read(Selection::from_box(Box({0, 0}, {rows - 1, kCols - 1})), got.data());
  return got;
}

TEST(History, EveryCommitReadsAsItWasCommitted) {
  testutil::TempDir tmp{"tessera_history"};
  const std::string path = tmp.sub("c");
  testutil::Rng rng(testutil::named_seed("History", 1818));
  std::map<uint64_t, State> at;       // commit seq -> state
  std::map<uint64_t, uint64_t> when;  // commit seq -> time
  uint64_t id = 0;
  State model;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
    c->catalog().set_durability(Catalog::Durability::kOnSync);  // the connector's
    ASSERT_TRUE(c->create_array(schema(), &id).ok());
    ArrayOptions o;
    o.durable_writes = false;
    o.keep_replaced = true;
    o.inline_fragment_bytes = 2048;  // both inline and file fragments
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, true, o, &a).ok());
    size_t compactions_seen = 0;
    for (int k = 0; k < 60; ++k) {
      const int what = static_cast<int>(rng.below(10));
      if (what < 5) {  // a box write
        uint64_t r0 = rng.below(model.rows), c0 = rng.below(kCols);
        uint64_t h = 1 + rng.below(std::min<uint64_t>(16, model.rows - r0)), w = 1 + rng.below(kCols - c0);
        std::vector<int32_t> vals(h * w);
        for (auto& x : vals) x = static_cast<int32_t>(rng.below(1000000));
        ASSERT_TRUE(a->write(Selection::from_box(Box({r0, c0}, {r0 + h - 1, c0 + w - 1})), vals.data()).ok());
        for (uint64_t r = 0; r < h; ++r)
          for (uint64_t cc = 0; cc < w; ++cc) model.v[(r0 + r) * kCols + c0 + cc] = vals[r * w + cc];
      } else if (what == 5) {  // points
        std::vector<uint64_t> pts;
        std::vector<int32_t> vals;
        for (int i = 0; i < 7; ++i) {
          uint64_t r = rng.below(model.rows), cc = rng.below(kCols);
          pts.insert(pts.end(), {r, cc});
          vals.push_back(static_cast<int32_t>(rng.below(1000)));
        }
        ASSERT_TRUE(a->write_points(pts.data(), vals.size(), vals.data()).ok());
        for (size_t i = 0; i < vals.size(); ++i) model.v[pts[2 * i] * kCols + pts[2 * i + 1]] = vals[i];
      } else if (what == 6) {  // an extent change
        const uint64_t rows = 16 + rng.below(48);
        ASSERT_TRUE(a->set_extent({rows, kCols}).ok());
        std::vector<int32_t> nv(rows * kCols, -1);
        for (uint64_t r = 0; r < std::min(rows, model.rows); ++r)
          for (uint64_t cc = 0; cc < kCols; ++cc) nv[r * kCols + cc] = model.v[r * kCols + cc];
        model.rows = rows;
        model.v = nv;
      } else if (what == 7) {  // an erase
        uint64_t r0 = rng.below(model.rows);
        ASSERT_TRUE(a->erase({Box({r0, 0}, {r0, kCols / 2})}).ok());
        for (uint64_t cc = 0; cc <= kCols / 2; ++cc) model.v[r0 * kCols + cc] = -1;
      } else if (what == 8) {  // a consolidation (content unchanged), kept inputs
        ASSERT_TRUE(a->consolidate_all().ok());
      }
      // Metadata: big enough values that the catalog log compacts now and then.
      if (rng.chance(0.5)) {
        model.meta = std::string(6000 + rng.below(6000), static_cast<char>('a' + k % 26));
        CatalogBatch b;
        b.put("obj/meta", model.meta);
        c->catalog().commit(b);
      }
      std::vector<Array*> list{a.get()};
      Status st = commit_arrays(*c, list);
      ASSERT_TRUE(st.ok()) << status_str(st);
      const CommitInfo ci = last_commit(c->catalog());
      if (at.count(ci.seq)) continue;  // nothing changed: no commit
      at[ci.seq] = model;
      when[ci.seq] = ci.ts_ns;
      if (is_directory(Env::posix(), join_path(path, Catalog::kHistoryDir)))
        compactions_seen = list_dir(Env::posix(), join_path(path, Catalog::kHistoryDir)).size();
    }
    EXPECT_GE(compactions_seen, 2u) << "the test should see the catalog compact (archived logs)";
    const auto commits = list_commits(c->catalog());
    ASSERT_EQ(commits.size(), at.size());
    for (size_t i = 1; i < commits.size(); ++i) {
      EXPECT_EQ(commits[i].seq, commits[i - 1].seq + 1);
      EXPECT_LT(commits[i - 1].ts_ns, commits[i].ts_ns);
    }
  }
  auto check = [&](const std::string& when_text, uint64_t seq) {
    SCOPED_TRACE("as of " + when_text);
    std::unique_ptr<Container> c;
    Status st = Container::open_as_of(path, when_text, &c);
    ASSERT_TRUE(st.ok()) << status_str(st);
    EXPECT_EQ(c->as_of_commit(), seq);
    EXPECT_FALSE(c->writable());
    const State& want = at.at(seq);
    EXPECT_EQ(c->catalog().get("obj/meta").value_or(""), want.meta);
    std::unique_ptr<Array> a;
    st = c->open_array(id, false, ArrayOptions{}, &a);
    ASSERT_TRUE(st.ok()) << status_str(st);
    ASSERT_EQ(a->schema().extent[0], want.rows);
    Status rs;
    EXPECT_EQ(read_all(*a, want.rows, &rs), want.v) << "commit " << seq;
    EXPECT_TRUE(rs.ok()) << status_str(rs);
    std::unique_ptr<Array> w;  // read-only, whatever is asked
    if (c->open_array(id, true, ArrayOptions{}, &w).ok()) {
      int32_t v = 1;
      uint64_t p[2] = {0, 0};
      EXPECT_FALSE(w->write_points(p, 1, &v).ok());
    }
  };
  for (auto& [seq, state] : at) {
    check(std::to_string(seq), seq);
    check("@" + std::to_string(when.at(seq)), seq);  // its own time
    check("@" + std::to_string(when.at(seq) + 1), seq);  // just after: still it
  }
  // Errors: before the first commit, no such number, text that names nothing.
  std::unique_ptr<Container> none;
  EXPECT_EQ(Container::open_as_of(path, "@1", &none).code(), Errc::kNotFound);
  EXPECT_EQ(Container::open_as_of(path, "999999", &none).code(), Errc::kNotFound);
  EXPECT_EQ(Container::open_as_of(path, "yesterday", &none).code(), Errc::kInvalidArgument);
  // A vacuum removes kept inputs: reads as of commits that need them fail naming the
  // missing file — or, where a later merge of only older fragments stands in, still
  // return what was committed.  Never other data.
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(path, true, &c).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, true, ArrayOptions{}, &a).ok());
    VacuumResult vr;
    ASSERT_TRUE(a->vacuum(&vr).ok());
  }
  size_t still = 0, gone = 0;
  for (auto& [seq, state] : at) {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open_as_of(path, std::to_string(seq), &c).ok());
    std::unique_ptr<Array> a;
    Status st = c->open_array(id, false, ArrayOptions{}, &a);
    if (!st.ok()) {
      EXPECT_NE(st.message().find("vacuum"), std::string::npos) << st.message();
      ++gone;
      continue;
    }
    Status rs;
    EXPECT_EQ(read_all(*a, state.rows, &rs), state.v) << "commit " << seq << " after the vacuum";
    ++still;
  }
  EXPECT_GT(still, 0u);
  // Dropping the archived logs gives up the commits before the last compaction.
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(path, true, &c).ok());
    EXPECT_GT(c->catalog().drop_history(), 0u);
  }
  Status st = Container::open_as_of(path, "1", &none);
  EXPECT_EQ(st.code(), Errc::kNotFound) << status_str(st);
  EXPECT_NE(st.message().find("history"), std::string::npos);
  ASSERT_TRUE(Container::open_as_of(path, std::to_string(at.rbegin()->first), &none).ok());
  (void)gone;
}

TEST(History, TimesParse) {
  testutil::TempDir tmp{"tessera_history_t"};
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(tmp.sub("c"), Container::CreateMode::kExclusive, &c).ok());
  CatalogBatch b;
  add_commit(c->catalog(), b, 1795689669000000000ull, 1, 1);  // 2026-11-26 10:41:09 UTC
  c->catalog().commit(b);
  CatalogBatch b2;
  add_commit(c->catalog(), b2, 1795689729500000000ull, 2, 1);  // a minute later, + 0.5 s
  c->catalog().commit(b2);
  CommitInfo ci;
  for (auto& [text, seq] : std::vector<std::pair<std::string, uint64_t>>{
           {"2026-11-26T10:41:09Z", 1}, {"2026-11-26 10:41:59", 1}, {"2026-11-26T10:42:09.5Z", 2},
           {"2026-11-26 10:42:10 UTC", 2}, {"#2", 2}, {"1", 1}}) {
    ASSERT_TRUE(find_commit(c->catalog(), text, &ci).ok()) << text;
    EXPECT_EQ(ci.seq, seq) << text;
  }
  EXPECT_EQ(find_commit(c->catalog(), "2026-11-26 10:41:08", &ci).code(), Errc::kNotFound);
  EXPECT_EQ(find_commit(c->catalog(), "2026-13-01 00:00", &ci).code(), Errc::kInvalidArgument);
  EXPECT_EQ(find_commit(c->catalog(), "", &ci).code(), Errc::kInvalidArgument);
}

}  // namespace
