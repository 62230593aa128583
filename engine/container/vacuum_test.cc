// Retiring fragments and checking a container: consolidation that keeps its inputs
// (ArrayOptions::keep_replaced) and vacuum() (engine/array/consolidation.cc), the catalog's records of
// published fragment files (array_store.h: a lost file is an error, never fill values),
// a reader that lists a fragment a vacuum then removes, and verify_container (verify.h)
// on intact and damaged containers.  Every read is compared with a model of the writes.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "engine/testing/testutil.h"
#include "engine/container/verify.h"

using namespace tessera;
using testutil::status_str;

namespace {

Schema schema(bool var = false) {
  Schema s;
  s.extent = {32, 32};
  s.max_extent = {32, 32};
  s.tile_extent = {8, 8};
  s.elem_size = var ? kVarDescriptorSize : 4;
  s.kind = var ? ElementKind::kOpaque : ElementKind::kInt;
  s.var = var;
  if (!var) s.filters = FilterPipeline({{FilterType::kShuffle, 0}, {FilterType::kZstd, 1}}, 4);
  return s;
}

struct Fixture {
  testutil::TempDir tmp{"tessera_vacuum"};
  std::string path = tmp.path() + "/c";
  std::vector<int32_t> model = std::vector<int32_t>(32 * 32, 0);
  uint64_t id = 0;

  Fixture() {
    std::unique_ptr<Container> c;
    EXPECT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
    EXPECT_TRUE(c->create_array(schema(), &id).ok());
  }
  static ArrayOptions opts(bool keep) {
    ArrayOptions o;
    o.durable_writes = false;  // the connector's mode: published (and recorded) at flush
    o.inline_fragment_bytes = 0;
    o.keep_replaced = keep;
    return o;
  }
  // Writes a box of distinct values; each call is one flush, so one fragment file.
  void box(Array& a, uint64_t r0, uint64_t c0, uint64_t n, int32_t base) {
    std::vector<int32_t> w(n * n);
    for (uint64_t i = 0; i < n * n; ++i) w[i] = base + static_cast<int32_t>(i);
    ASSERT_TRUE(a.write(Selection::from_box(Box({r0, c0}, {r0 + n - 1, c0 + n - 1})), w.data()).ok());
    ASSERT_TRUE(a.flush().ok());
    for (uint64_t r = 0; r < n; ++r)
      for (uint64_t c = 0; c < n; ++c) model[(r0 + r) * 32 + c0 + c] = w[r * n + c];
  }
  void expect(Array& a) {
    std::vector<int32_t> got(32 * 32);
    Status st = a.read(Selection::from_box(Box({0, 0}, {31, 31})), got.data());
    ASSERT_TRUE(st.ok()) << status_str(st);
    EXPECT_EQ(got, model);
  }
  std::string frag_dir() { return path + "/arrays/" + std::string(15, '0') + std::to_string(id) + "/frag"; }
  std::vector<std::string> tfr_files() {
    std::vector<std::string> out;
    for (auto& n : list_dir(Env::posix(), frag_dir()))
      if (n.size() == 47 && n.compare(43, 4, ".tfr") == 0) out.push_back(frag_dir() + "/" + n);
    return out;
  }
  void write_three(bool keep) {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(path, true, &c).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, true, opts(keep), &a).ok());
    box(*a, 0, 0, 16, 100);
    box(*a, 8, 8, 16, 1000);
    box(*a, 20, 2, 10, 5000);
    expect(*a);
  }
  VerifyReport verify() {
    VerifyReport r;
    Status st = verify_container(path, VerifyOptions{}, &r);
    EXPECT_TRUE(st.ok()) << status_str(st);
    return r;
  }
  static std::string all(const VerifyReport& r) {
    std::string s;
    for (auto& p : r.problems) s += p + "\n";
    return s;
  }
};

TEST(Vacuum, KeptInputsAreHiddenUntilVacuumed) {
  Fixture fx;
  fx.write_three(true);
  ASSERT_EQ(fx.tfr_files().size(), 3u);
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::open(fx.path, true, &c).ok());
  std::unique_ptr<Array> a;
  ASSERT_TRUE(c->open_array(fx.id, true, Fixture::opts(true), &a).ok());
  ASSERT_TRUE(a->consolidate_all().ok());
  EXPECT_EQ(a->fragments().size(), 1u);
  EXPECT_EQ(a->replaced_fragments().size(), 3u);
  EXPECT_EQ(fx.tfr_files().size(), 4u) << "keep_replaced: the inputs stay on disk";
  EXPECT_EQ(a->fragments()[0].replaces.size(), 3u);
  fx.expect(*a);
  // Another reader (and a writable reopen) sees the merged state, inputs hidden.
  {
    std::unique_ptr<Container> rc;
    ASSERT_TRUE(Container::open(fx.path, false, &rc).ok());
    std::unique_ptr<Array> r;
    ASSERT_TRUE(rc->open_array(fx.id, false, ArrayOptions{}, &r).ok());
    EXPECT_EQ(r->fragments().size(), 1u);
    EXPECT_EQ(r->replaced_fragments().size(), 3u);
    fx.expect(*r);
    // verify checks the kept inputs as well.
    VerifyReport vr = fx.verify();
    EXPECT_TRUE(vr.ok()) << Fixture::all(vr);
    EXPECT_EQ(vr.fragments, 4u);
    // The reader keeps its open inputs across the vacuum below.
    VacuumResult res;
    ASSERT_TRUE(a->vacuum(&res).ok());
    EXPECT_EQ(res.fragments, 3u);
    EXPECT_GT(res.bytes, 0u);
    fx.expect(*r);
    ASSERT_TRUE(r->refresh().ok());
    fx.expect(*r);
    EXPECT_TRUE(r->replaced_fragments().empty());
  }
  EXPECT_EQ(fx.tfr_files().size(), 1u);
  EXPECT_TRUE(a->replaced_fragments().empty());
  fx.expect(*a);
  VacuumResult again;
  ASSERT_TRUE(a->vacuum(&again).ok());
  EXPECT_EQ(again.fragments, 0u);
  VerifyReport vr = fx.verify();
  EXPECT_TRUE(vr.ok()) << Fixture::all(vr);
  EXPECT_EQ(vr.fragments, 1u);
  EXPECT_EQ(vr.recorded_files, 1u);
}

TEST(Vacuum, ReadOnlyArrayCannotVacuum) {
  Fixture fx;
  fx.write_three(true);
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::open(fx.path, false, &c).ok());
  std::unique_ptr<Array> a;
  ASSERT_TRUE(c->open_array(fx.id, false, ArrayOptions{}, &a).ok());
  VacuumResult res;
  EXPECT_FALSE(a->vacuum(&res).ok());
}

TEST(Vacuum, ALostFragmentFileIsAnErrorNotFillValues) {
  Fixture fx;
  fx.write_three(false);
  auto files = fx.tfr_files();
  ASSERT_EQ(files.size(), 3u);
  remove_file(Env::posix(), files[1]);
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::open(fx.path, false, &c).ok());
  std::unique_ptr<Array> a;
  Status st = c->open_array(fx.id, false, ArrayOptions{}, &a);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Errc::kCorrupt);
  EXPECT_NE(st.message().find(files[1]), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("missing"), std::string::npos) << st.message();
  VerifyReport vr = fx.verify();
  ASSERT_EQ(vr.problems.size(), 1u) << Fixture::all(vr);
  EXPECT_NE(vr.problems[0].find(files[1]), std::string::npos) << vr.problems[0];
}

// A reader lists the fragment directory while a writer consolidates and vacuums: every
// open must see either the inputs or the result — never neither (fill values).  The
// writer rewrites values the model already holds, so every state reads as the model.
TEST(Vacuum, ReadersRacingAVacuumNeverMissData) {
  Fixture fx;
  fx.write_three(true);
  const std::vector<int32_t> model = fx.model;
  std::atomic<bool> stop{false};
  std::atomic<int> opens{0};
  std::string first_failure;
  std::thread reader([&] {
    while (!stop && first_failure.empty()) {
      std::unique_ptr<Container> c;
      Status st = Container::open(fx.path, false, &c);
      std::unique_ptr<Array> a;
      if (st.ok()) st = c->open_array(fx.id, false, ArrayOptions{}, &a);
      std::vector<int32_t> got(32 * 32);
      if (st.ok()) st = a->read(Selection::from_box(Box({0, 0}, {31, 31})), got.data());
      if (!st.ok()) first_failure = st.message();
      else if (got != model) first_failure = "wrong data";
      ++opens;
    }
  });
  for (int round = 0; round < 40 && first_failure.empty(); ++round) {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(fx.path, true, &c).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(fx.id, true, Fixture::opts(true), &a).ok());
    for (int k = 0; k < 2; ++k) {
      const uint64_t r0 = (round * 5 + k * 11) % 24, c0 = (round * 3 + k * 7) % 24;
      std::vector<int32_t> w(8 * 8);
      for (uint64_t r = 0; r < 8; ++r)
        for (uint64_t cc = 0; cc < 8; ++cc) w[r * 8 + cc] = model[(r0 + r) * 32 + c0 + cc];
      ASSERT_TRUE(a->write(Selection::from_box(Box({r0, c0}, {r0 + 7, c0 + 7})), w.data()).ok());
      ASSERT_TRUE(a->flush().ok());
    }
    ASSERT_TRUE(a->consolidate_all().ok());
    VacuumResult res;
    ASSERT_TRUE(a->vacuum(&res).ok());
    EXPECT_GE(res.fragments, 2u);
  }
  stop = true;
  reader.join();
  EXPECT_GT(opens.load(), 0);
  EXPECT_TRUE(first_failure.empty()) << first_failure;
}

TEST(Verify, IntactContainerIsClean) {
  Fixture fx;
  fx.write_three(false);
  VerifyReport vr = fx.verify();
  EXPECT_TRUE(vr.ok()) << Fixture::all(vr);
  EXPECT_EQ(vr.arrays, 1u);
  EXPECT_EQ(vr.fragments, 3u);
  EXPECT_GT(vr.tiles, 3u);
  EXPECT_EQ(vr.bytes, testutil::file_size(fx.tfr_files()[0]) + testutil::file_size(fx.tfr_files()[1]) +
                          testutil::file_size(fx.tfr_files()[2]));
}

TEST(Verify, EveryFlippedTileByteIsFound) {
  Fixture fx;
  fx.write_three(false);
  const std::string f = fx.tfr_files()[0];
  std::vector<uint8_t> orig = read_file(Env::posix(), f);
  // Bytes inside the data area: tiles (whatever a read of them would check).
  size_t caught = 0, tried = 0;
  for (size_t off = 64; off + 64 < orig.size(); off += 97) {
    std::vector<uint8_t> bad = orig;
    bad[off] ^= 0x41;
    write_file_atomic(Env::posix(), f, bad.data(), bad.size());
    VerifyReport vr = fx.verify();
    ++tried;
    if (!vr.ok()) {
      ++caught;
      EXPECT_NE(vr.problems[0].find(f), std::string::npos) << vr.problems[0];
    }
  }
  write_file_atomic(Env::posix(), f, orig.data(), orig.size());
  EXPECT_EQ(caught, tried) << "a flipped byte went unnoticed";
  EXPECT_TRUE(fx.verify().ok());
}

TEST(Verify, TruncatedDeletedAndForeignFiles) {
  Fixture fx;
  fx.write_three(false);
  auto files = fx.tfr_files();
  std::vector<uint8_t> orig = read_file(Env::posix(), files[2]);
  {  // truncated
    File t = File::open_rw(Env::posix(), files[2], false);
    t.truncate(orig.size() / 2);
    t.close();
    VerifyReport vr = fx.verify();
    ASSERT_FALSE(vr.ok());
    bool named = false;
    for (auto& p : vr.problems) named = named || p.find(files[2]) != std::string::npos;
    EXPECT_TRUE(named) << Fixture::all(vr);
    write_file_atomic(Env::posix(), files[2], orig.data(), orig.size());
  }
  EXPECT_TRUE(fx.verify().ok());
  {  // another array's fragment under this name: id mismatch
    std::vector<uint8_t> other = read_file(Env::posix(), files[0]);
    write_file_atomic(Env::posix(), files[2], other.data(), other.size());
    VerifyReport vr = fx.verify();
    EXPECT_FALSE(vr.ok());
    write_file_atomic(Env::posix(), files[2], orig.data(), orig.size());
  }
  {  // the catalog's schema record gone
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(fx.path, true, &c).ok());
    auto v = c->catalog().get(Container::array_prefix(fx.id) + "schema");
    CatalogBatch b;
    b.del(Container::array_prefix(fx.id) + "schema");
    c->catalog().commit(b);
    VerifyReport vr = fx.verify();
    ASSERT_FALSE(vr.ok());
    EXPECT_NE(vr.problems[0].find("schema is missing"), std::string::npos) << Fixture::all(vr);
    CatalogBatch back;
    back.put(Container::array_prefix(fx.id) + "schema", *v);
    c->catalog().commit(back);
  }
  EXPECT_TRUE(fx.verify().ok());
  {  // a damaged container header: nothing else can be trusted
    const std::string h = fx.path + "/tessera.container";
    std::vector<uint8_t> hb = read_file(Env::posix(), h), bad = hb;
    bad[3] ^= 1;
    write_file_atomic(Env::posix(), h, bad.data(), bad.size());
    VerifyReport vr = fx.verify();
    ASSERT_EQ(vr.problems.size(), 1u);
    EXPECT_NE(vr.problems[0].find("tessera.container"), std::string::npos) << vr.problems[0];
    write_file_atomic(Env::posix(), h, hb.data(), hb.size());
  }
  VerifyReport none;
  Status st = verify_container(fx.tmp.path() + "/nothing", VerifyOptions{}, &none);
  EXPECT_FALSE(st.ok());
}

TEST(Verify, VariableLengthValuesAreCheckedAgainstTheirHeaps) {
  testutil::TempDir tmp{"tessera_verify_var"};
  const std::string path = tmp.path() + "/c";
  uint64_t id = 0;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
    ASSERT_TRUE(c->create_array(schema(true), &id).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, true, Fixture::opts(false), &a).ok());
    std::vector<uint64_t> lens;
    std::string data;
    for (int i = 0; i < 64; ++i) {
      std::string s = "value " + std::to_string(i * 7919);
      lens.push_back(s.size());
      data += s;
    }
    ASSERT_TRUE(a->write_var(Selection::from_box(Box({0, 0}, {7, 7})), lens.data(), data.data()).ok());
    ASSERT_TRUE(a->flush().ok());
  }
  VerifyReport vr;
  ASSERT_TRUE(verify_container(path, VerifyOptions{}, &vr).ok());
  EXPECT_TRUE(vr.ok()) << Fixture::all(vr);
  EXPECT_EQ(vr.var_values, 64u);
  const std::string heap_dir = path + "/arrays/" + std::string(15, '0') + std::to_string(id) + "/heap";
  auto heaps = list_dir(Env::posix(), heap_dir);
  ASSERT_EQ(heaps.size(), 1u);
  const std::string heap = heap_dir + "/" + heaps[0];
  std::vector<uint8_t> hb = read_file(Env::posix(), heap), bad = hb;
  bad[hb.size() - 3] ^= 0x10;
  write_file_atomic(Env::posix(), heap, bad.data(), bad.size());
  ASSERT_TRUE(verify_container(path, VerifyOptions{}, &vr).ok());
  ASSERT_FALSE(vr.ok());
  EXPECT_NE(vr.problems[0].find(heap), std::string::npos) << vr.problems[0];
  remove_file(Env::posix(), heap);
  ASSERT_TRUE(verify_container(path, VerifyOptions{}, &vr).ok());
  ASSERT_FALSE(vr.ok());
  EXPECT_NE(vr.problems[0].find(heap), std::string::npos) << vr.problems[0];
}

}  // namespace
