// Value index files (index_format.h, index_builder.h) and their pieces: thresholds
// answered by the index alone, newer writes winning over an index, damaged files,
// index_on_write, precision keys, bins and bitmaps.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/index/index_format.h"
#include "engine/query/query.h"
#include "engine/index/query_parse.h"
#include "engine/testing/testutil.h"
#include "engine/index/value_bins.h"

namespace tessera {
namespace {

using testutil::Rng;
using testutil::status_str;

// ----------------------------------------------------------------- index files

class IndexFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Container::create(dir_.sub("c.tsr"), Container::CreateMode::kExclusive, &cont_).ok());
    Schema s;
    s.extent = s.max_extent = {200, 300};
    s.tile_extent = {50, 300};
    s.elem_size = 4;
    s.kind = ElementKind::kFloat;
    ASSERT_TRUE(cont_->create_array(s, &id_).ok());
    open();
    v_.resize(200 * 300);
    for (size_t i = 0; i < v_.size(); ++i) v_[i] = static_cast<float>(200 + (i / 300) * 0.5 + (i % 300) * 0.01);
    ASSERT_TRUE(arr_->write(Selection::from_box(Box({0, 0}, {199, 299})), v_.data()).ok());
    ASSERT_TRUE(arr_->flush().ok());
  }
  void open() {
    arr_.reset();
    ArrayOptions o;
    o.durable_writes = false;
    o.inline_fragment_bytes = 0;
    ASSERT_TRUE(cont_->open_array(id_, true, o, &arr_).ok());
  }
  TermQuery query(CmpOp op, const char* t, bool hits = true) {
    TermQuery q;
    q.op = op;
    EXPECT_TRUE(Literal::parse(t, &q.lit));
    q.region = {{0, 0}, {1, 1}, {200, 300}};
    q.want_hits = hits;
    return q;
  }
  uint64_t want(CmpOp op, double t) {
    uint64_t n = 0;
    for (float x : v_) n += holds(x < t ? -1 : x > t ? 1 : 0, op);
    return n;
  }
  testutil::TempDir dir_{"tessera_query"};
  std::unique_ptr<Container> cont_;
  uint64_t id_ = 0;
  std::unique_ptr<Array> arr_;
  std::vector<float> v_;
};

TEST_F(IndexFiles, RoundThresholdsAreAnsweredByTheIndexAlone) {
  IndexBuild b;
  uint64_t calls = 0, last = 0;
  b.progress = [&](uint64_t done, uint64_t total) {
    ++calls;
    EXPECT_LE(done, total);
    EXPECT_GE(done, last);
    last = done;
  };
  ASSERT_TRUE(arr_->build_index(IndexOptions{}, &b).ok());
  EXPECT_EQ(b.built, 1u);
  EXPECT_EQ(b.cells, 60000u);
  EXPECT_GE(calls, 2u) << "after each chunk, and at the end";
  EXPECT_EQ(last, 60000u);
  for (bool hits : {false, true}) {
    TermAnswer a;
    ASSERT_TRUE(arr_->evaluate(query(CmpOp::kLt, "250", hits), &a).ok());
    EXPECT_EQ(a.count, want(CmpOp::kLt, 250));
    EXPECT_EQ(a.compared, 0u) << "250 has 3 significant digits: a bin boundary";
    EXPECT_EQ(a.hits.cardinality(), hits ? a.count : 0);
    ASSERT_TRUE(arr_->evaluate(query(CmpOp::kGe, "250.123", hits), &a).ok());
    EXPECT_EQ(a.count, want(CmpOp::kGe, 250.123));
    EXPECT_GT(a.compared, 0u) << "a constant inside a bin: its candidates are checked";
    EXPECT_LT(a.compared, 60000u / 10);
  }
  IndexInfo info;
  ASSERT_TRUE(arr_->index_info(&info).ok());
  EXPECT_EQ(info.indexed, 1u);
  EXPECT_GT(info.index_bytes, 0u);
  EXPECT_LT(info.index_bytes, info.data_bytes / 5) << "smooth data: runs";
  // No temporary or spool file is left behind.
  for (const std::string& name : list_dir(Env::posix(), index_dir(arr_->dir()))) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
}

TEST_F(IndexFiles, NewerWritesAndErasesWinOverAnIndexedFragment) {
  IndexBuild b;
  ASSERT_TRUE(arr_->build_index(IndexOptions{}, &b).ok());
  // Overwrite a box (buffered, then a fragment of its own) and erase another.
  std::vector<float> low(10 * 10, 100.0f);
  ASSERT_TRUE(arr_->write(Selection::from_box(Box({100, 100}, {109, 109})), low.data()).ok());
  for (uint64_t r = 100; r < 110; ++r)
    for (uint64_t c = 100; c < 110; ++c) v_[r * 300 + c] = 100.0f;
  TermAnswer a;
  ASSERT_TRUE(arr_->evaluate(query(CmpOp::kLt, "150"), &a).ok());
  EXPECT_EQ(a.count, 100u) << "only the overwritten cells (from the buffer)";
  ASSERT_TRUE(arr_->flush().ok());
  ASSERT_TRUE(arr_->evaluate(query(CmpOp::kGe, "250"), &a).ok());
  EXPECT_EQ(a.count, want(CmpOp::kGe, 250));
  ASSERT_TRUE(arr_->erase({Box({0, 0}, {199, 9})}).ok());
  for (uint64_t r = 0; r < 200; ++r)
    for (uint64_t c = 0; c < 10; ++c) v_[r * 300 + c] = 0.0f;  // the fill value
  ASSERT_TRUE(arr_->evaluate(query(CmpOp::kLe, "0"), &a).ok());
  EXPECT_EQ(a.count, 2000u) << "erased cells read as the fill value 0";
  ASSERT_TRUE(arr_->evaluate(query(CmpOp::kGt, "205.5"), &a).ok());
  EXPECT_EQ(a.count, want(CmpOp::kGt, 205.5));
  // Consolidation indexes the merged fragment and removes the inputs' indexes.
  ASSERT_TRUE(arr_->consolidate_all().ok());
  IndexInfo info;
  ASSERT_TRUE(arr_->index_info(&info).ok());
  EXPECT_EQ(info.fragments, 1u);
  EXPECT_EQ(info.indexed, 1u);
  EXPECT_EQ(list_dir(Env::posix(), index_dir(arr_->dir())).size(), 1u);
  ASSERT_TRUE(arr_->evaluate(query(CmpOp::kGt, "205.5"), &a).ok());
  EXPECT_EQ(a.count, want(CmpOp::kGt, 205.5));
  EXPECT_LT(a.compared, 20000u);
  open();  // and after a reopen
  ASSERT_TRUE(arr_->evaluate(query(CmpOp::kLt, "150"), &a).ok());
  EXPECT_EQ(a.count, want(CmpOp::kLt, 150));
  ASSERT_TRUE(arr_->drop_index().ok());
  ASSERT_TRUE(arr_->evaluate(query(CmpOp::kLt, "150"), &a).ok());
  EXPECT_EQ(a.count, want(CmpOp::kLt, 150));
  EXPECT_EQ(a.compared, 60000u - 2000u) << "no index: every stored value compared";
}

TEST_F(IndexFiles, DamagedIndexIsAnErrorNamingTheFile) {
  IndexBuild b;
  ASSERT_TRUE(arr_->build_index(IndexOptions{}, &b).ok());
  const std::string idir = index_dir(arr_->dir());
  const std::string path = join_path(idir, list_dir(Env::posix(), idir).at(0));
  const uint64_t size = File::open_read(Env::posix(), path).size();
  const std::vector<uint8_t> good = read_file(Env::posix(), path);
  for (uint64_t at : {uint64_t{40}, size / 2, size - 60, size - 5}) {
    std::vector<uint8_t> bad = good;
    bad[at] ^= 0x5A;
    write_file_atomic(Env::posix(), path, bad.data(), bad.size());
    TermAnswer a;
    Status st = arr_->evaluate(query(CmpOp::kGe, "201.5"), &a);
    if (st.ok()) {
      EXPECT_EQ(a.count, want(CmpOp::kGe, 201.5)) << "byte " << at << ": damage in a part not read";
    } else {
      EXPECT_EQ(st.code(), Errc::kCorrupt) << st.message();
      EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
    }
    write_file_atomic(Env::posix(), path, good.data(), good.size());
  }
  // build_index replaces a damaged index.
  std::vector<uint8_t> bytes = read_file(Env::posix(), path);
  bytes[bytes.size() - 20] ^= 1;
  write_file_atomic(Env::posix(), path, bytes.data(), bytes.size());
  IndexBuild again;
  ASSERT_TRUE(arr_->build_index(IndexOptions{}, &again).ok());
  EXPECT_EQ(again.built, 1u);
  TermAnswer a;
  ASSERT_TRUE(arr_->evaluate(query(CmpOp::kGe, "201.5"), &a).ok());
  EXPECT_EQ(a.count, want(CmpOp::kGe, 201.5));
}

TEST_F(IndexFiles, IndexOnWriteAndParts) {
  arr_.reset();
  ArrayOptions o;
  o.durable_writes = false;
  o.inline_fragment_bytes = 0;
  o.index_on_write = true;
  ASSERT_TRUE(cont_->open_array(id_, true, o, &arr_).ok());
  for (uint64_t r = 0; r < 3; ++r) {
    ASSERT_TRUE(arr_->write(Selection::from_box(Box({r * 60, 0}, {r * 60 + 49, 299})), std::vector<float>(50 * 300, 7.0f).data()).ok());
    ASSERT_TRUE(arr_->flush().ok());
  }
  IndexInfo info;
  ASSERT_TRUE(arr_->index_info(&info).ok());
  EXPECT_EQ(info.fragments, 4u);
  EXPECT_EQ(info.indexed, 3u) << "the three fragments written with index_on_write; the first has none";
  // Two "ranks" build the rest between them: each its share, together all.
  IndexBuild p0, p1;
  p0.parts = p1.parts = 2;
  p1.part = 1;
  ASSERT_TRUE(arr_->build_index(IndexOptions{}, &p0).ok());
  ASSERT_TRUE(arr_->build_index(IndexOptions{}, &p1).ok());
  EXPECT_EQ(p0.built + p1.built, 1u);
  ASSERT_TRUE(arr_->index_info(&info).ok());
  EXPECT_EQ(info.indexed, 4u);
}

// ----------------------------------------------------------------- pieces

TEST(Query, PrecisionKeysAndBins) {
  EXPECT_EQ(precision_key(0.1237, 3), 0.123);
  EXPECT_EQ(precision_key(-0.1237, 3), -0.124);
  EXPECT_EQ(precision_key(123456, 3), 123000);
  EXPECT_EQ(precision_key(0.3, 3), 0.3) << "the double nearest 0.3 keys to 0.3";
  EXPECT_EQ(precision_key(1000, 3), 1000);
  EXPECT_EQ(precision_key(999.9, 3), 999);
  EXPECT_EQ(precision_key(0, 3), 0);
  BinEdges e = BinEdges::from_sample({0.5, 0.25, 0.25, 0.75, 1.5}, 3, 1024);
  EXPECT_EQ(e.bins(), 5u);
  EXPECT_EQ(e.bin_of(-7), 0u);
  EXPECT_EQ(e.bin_of(0.25), 1u);
  EXPECT_EQ(e.bin_of(0.3), 1u);
  EXPECT_EQ(e.bin_of(0.5), 2u);
  EXPECT_EQ(e.bin_of(9), 4u);
  std::vector<double> many;
  for (int i = 0; i < 100000; ++i) many.push_back(i * 0.001);
  BinEdges m = BinEdges::from_sample(many, 3, 16);
  EXPECT_LE(m.bins(), 16u);
  EXPECT_GE(m.bins(), 12u) << "about equal counts";
}

TEST(Query, BitmapSegmentsAndSerialization) {
  Bitmap b;
  const uint64_t big = (uint64_t{1} << 32) - 3;
  b.add_range(big, big + 10);  // across a segment boundary
  b.add(5);
  EXPECT_EQ(b.cardinality(), 11u);
  EXPECT_EQ(b.range_cardinality(big + 2, big + 5), 3u);
  EXPECT_TRUE(b.contains(big + 9));
  EXPECT_FALSE(b.contains(big + 10));
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  b.for_each_run([&](uint64_t f, uint64_t n) { runs.push_back({f, n}); });
  ASSERT_EQ(runs.size(), 2u) << "a run across the boundary is one run";
  EXPECT_EQ(runs[1], std::make_pair(big, uint64_t{10}));
  std::vector<uint8_t> bytes = b.serialize();
  Bitmap c = Bitmap::deserialize(bytes.data(), bytes.size(), "test");
  EXPECT_EQ(c.cardinality(), 11u);
  c.flip(0, big + 20);
  EXPECT_EQ(c.cardinality(), big + 20 - 11);
  bytes.resize(bytes.size() - 1);
  EXPECT_THROW(Bitmap::deserialize(bytes.data(), bytes.size(), "test"), Error);
}

}  // namespace
}  // namespace tessera
