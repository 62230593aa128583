// Defined cells and erase (array_sparse.cc, defined_cells.h) against an independent model:
// a map from cell to value holding exactly the defined cells.  Random box and point writes
// (buffered and direct, so fragments are dense and sparse), box and point erases,
// consolidations (all, a range, size-tiered), extent changes, flushes and reopens, 1-D to
// 4-D; after each step the whole array is read, and defined() over the extent and over a
// random box, defined_points() and written_tiles() are compared with the model.
// Crashes in the middle of an erase: crash_test.cc (its op mix erases).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using testutil::Rng;
using testutil::status_str;

constexpr uint64_t kDefaultSeed = 0x5BA45E;

struct Shape {
  Coords extent, tile;
};

class SparseRun : testutil::ArrayRun {
 public:
  SparseRun(const Shape& shape, uint64_t seed) : ArrayRun(shape.extent, seed, "tessera_sparse"), shape_(shape) {}

  void run(int steps) {
    const std::string cpath = dir_.sub("c.tsr");
    ASSERT_TRUE(Container::create(cpath, Container::CreateMode::kExclusive, &cont_).ok());
    Schema s;
    s.extent = shape_.extent;
    s.max_extent = shape_.extent;
    s.tile_extent = shape_.tile;
    s.elem_size = 4;
    s.kind = ElementKind::kUInt;
    s.fill = {0xAB, 0xCD, 0xEF, 0x01};
    s.sparse_capacity = 1 + rng_.below(20);
    if (rng_.chance(0.3)) s.filters = FilterPipeline({{FilterType::kLz4, 0}}, 4);
    ASSERT_TRUE(cont_->create_array(s, &id_).ok());
    opts_.durable_writes = rng_.chance(0.3);
    opts_.direct_cells = 1 + rng_.below(64);
    opts_.buffer_budget = rng_.chance(0.5) ? 200 : (64 << 20);  // spills make sparse fragments
    opts_.inline_fragment_bytes = rng_.chance(0.5) ? 0 : (64 << 10);
    reopen();
    for (int step = 0; step < steps && !::testing::Test::HasFailure(); ++step) {
      op();
      verify();
      if (::testing::Test::HasFailure())
        ADD_FAILURE() << "seed " << seed_ << " rank " << rank_ << " failed at step " << step << "; ops:\n" << log_;
    }
  }

 private:
  template <class F>
  static void each_cell(const Box& b, F f) {
    testutil::each_cell(b, f);
  }

  void op() {
    const uint64_t r = rng_.below(100);
    if (r < 25) {  // box write
      Box b = random_box(rng_.chance(0.5) ? 3 : 64);
      std::vector<uint32_t> v(b.cells());
      size_t i = 0;
      each_cell(b, [&](const Coords& c) {
        v[i] = static_cast<uint32_t>(rng_.gen()());
        model_[c] = v[i++];
      });
      log_ += "write " + b.to_string() + "\n";
      expect_ok(arr_->write(Selection::from_box(b), v.data()), "write");
    } else if (r < 45) {  // points (repeats allowed: the last one wins)
      size_t n = rng_.range(1, 30);
      std::vector<uint64_t> pts;
      std::vector<uint32_t> v(n);
      for (size_t i = 0; i < n; ++i) {
        Coords c = random_cell();
        pts.insert(pts.end(), c.begin(), c.end());
        v[i] = static_cast<uint32_t>(rng_.gen()());
        model_[c] = v[i];
      }
      log_ += "write " + std::to_string(n) + " points\n";
      expect_ok(arr_->write_points(pts.data(), n, v.data()), "write_points");
    } else if (r < 60) {  // erase one box, or two disjoint ones (a box split in two)
      Box b = random_box(rng_.chance(0.5) ? 4 : 64);
      std::vector<Box> boxes{b};
      int d = static_cast<int>(rng_.below(rank_));
      if (b.hi[d] > b.lo[d] && rng_.chance(0.5)) {
        Box a = b, c = b;
        uint64_t mid = b.lo[d] + rng_.below(b.hi[d] - b.lo[d]);
        a.hi[d] = mid;
        c.lo[d] = mid + 2 <= b.hi[d] ? mid + 2 : mid + 1;  // sometimes leave a gap
        boxes = {a};
        if (c.lo[d] <= c.hi[d]) boxes.push_back(c);
      }
      for (const Box& x : boxes) each_cell(x, [&](const Coords& c) { model_.erase(c); });
      log_ += "erase " + b.to_string() + " in " + std::to_string(boxes.size()) + "\n";
      expect_ok(arr_->erase(boxes), "erase");
    } else if (r < 70) {  // erase points
      size_t n = rng_.range(1, 30);
      std::vector<uint64_t> pts;
      for (size_t i = 0; i < n; ++i) {
        Coords c = random_cell();
        if (rng_.chance(0.5) && !model_.empty()) {  // mostly cells that are defined
          auto it = model_.begin();
          std::advance(it, rng_.below(model_.size()));
          c = it->first;
        }
        pts.insert(pts.end(), c.begin(), c.end());
        model_.erase(c);
      }
      log_ += "erase " + std::to_string(n) + " points\n";
      expect_ok(arr_->erase_points(pts.data(), n), "erase_points");
    } else if (r < 80) {
      size_t n = arr_->fragments().size();
      uint64_t how = rng_.below(3);
      log_ += "consolidate " + std::to_string(how) + "\n";
      if (how == 0 || n < 2) {
        expect_ok(arr_->consolidate_all(), "consolidate_all");
      } else if (how == 1) {
        size_t first = rng_.below(n), last = std::min(n - 1, first + rng_.below(4));
        expect_ok(arr_->consolidate(first, last), "consolidate");
      } else {
        expect_ok(arr_->consolidate_auto(2, 4.0), "consolidate_auto");
      }
    } else if (r < 88) {  // shrink or grow: cells cut off become undefined
      Coords e(rank_);
      for (int d = 0; d < rank_; ++d) e[d] = rng_.range(1, shape_.extent[d]);
      for (auto it = model_.begin(); it != model_.end();) {
        bool in = true;
        for (int d = 0; d < rank_; ++d) in &= it->first[d] < e[d];
        it = in ? std::next(it) : model_.erase(it);
      }
      extent_ = e;
      log_ += "set_extent\n";
      expect_ok(arr_->set_extent(e), "set_extent");
    } else if (r < 94) {
      log_ += "flush\n";
      expect_ok(arr_->flush(), "flush");
    } else {
      log_ += "reopen\n";
      reopen();
    }
  }

  void check_defined(const Box& region, const char* what) {
    std::vector<Box> out;
    expect_ok(arr_->defined({region}, &out), "defined");
    std::set<Coords> got;
    uint64_t cells = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_TRUE(region.contains(out[i])) << what << ": " << out[i].to_string() << " outside " << region.to_string();
      if (i > 0) {
        EXPECT_LT(out[i - 1].lo, out[i].lo) << what << ": boxes not sorted";
      }
      cells += out[i].cells();
      each_cell(out[i], [&](const Coords& c) { got.insert(c); });
    }
    EXPECT_EQ(cells, got.size()) << what << ": overlapping boxes";
    std::set<Coords> want;
    for (const auto& [c, v] : model_)
      if (region.contains(c.data())) want.insert(c);
    EXPECT_EQ(got, want) << what << ": defined cells differ (" << got.size() << " vs " << want.size() << ")";
  }

  void verify() {
    Box all(Coords(rank_, 0), extent_);
    for (auto& x : all.hi) --x;
    // Values: the model's, the fill value elsewhere.
    std::vector<uint32_t> got(all.cells());
    expect_ok(arr_->read(Selection::from_box(all), got.data()), "read");
    uint32_t fill;
    std::memcpy(&fill, arr_->schema().fill_value(), 4);
    size_t i = 0, bad = 0;
    each_cell(all, [&](const Coords& c) {
      auto it = model_.find(c);
      const uint32_t want = it == model_.end() ? fill : it->second;
      if (got[i++] != want && bad++ < 3) ADD_FAILURE() << "cell " << testutil::coords_str(c.data(), rank_) << " reads " << got[i - 1] << ", want " << want;
    });
    check_defined(all, "whole extent");
    check_defined(random_box(8), "random box");
    // Points, defined or not.
    std::vector<uint64_t> pts;
    std::vector<uint8_t> want;
    for (int k = 0; k < 20; ++k) {
      Coords c = random_cell();
      pts.insert(pts.end(), c.begin(), c.end());
      want.push_back(model_.count(c) ? 1 : 0);
    }
    std::vector<uint8_t> flags;
    expect_ok(arr_->defined_points(pts.data(), want.size(), &flags), "defined_points");
    EXPECT_EQ(flags, want) << "defined_points";
    // Tiles holding a defined cell: HDF5's allocated chunks.
    std::set<Coords> want_tiles;
    for (const auto& [c, v] : model_) {
      Coords t(rank_);
      for (int d = 0; d < rank_; ++d) t[d] = c[d] / shape_.tile[d];
      want_tiles.insert(t);
    }
    std::vector<Coords> tiles;
    expect_ok(arr_->written_tiles(&tiles), "written_tiles");
    EXPECT_EQ(std::set<Coords>(tiles.begin(), tiles.end()), want_tiles) << "written tiles";
  }

  Shape shape_;
  std::map<Coords, uint32_t> model_;
};

TEST(Sparse, DefinedAndEraseMatchAModel) {
  const std::vector<Shape> shapes = {
      {{97}, {16}}, {{23, 19}, {8, 5}}, {{9, 10, 7}, {4, 3, 4}}, {{5, 6, 4, 5}, {2, 3, 2, 4}}};
  const uint64_t base = testutil::base_seed(kDefaultSeed);
  const int runs = testutil::kSanitized ? 3 : 8, steps = testutil::kSanitized ? 40 : 80;
  for (size_t s = 0; s < shapes.size(); ++s)
    for (int k = 0; k < runs && !::testing::Test::HasFailure(); ++k) SparseRun(shapes[s], base + s * 1000 + k).run(steps);
}

// An erase gives its space back once consolidation reaches the oldest fragment; before
// that its fill boxes keep hiding the older data.
TEST(Sparse, ConsolidationDropsErasedCells) {
  testutil::TempDir dir("tessera_sparse");
  std::unique_ptr<Container> cont;
  ASSERT_TRUE(Container::create(dir.sub("c.tsr"), Container::CreateMode::kExclusive, &cont).ok());
  Schema s;
  s.extent = s.max_extent = {256, 256};
  s.tile_extent = {64, 64};
  s.elem_size = 8;
  s.kind = ElementKind::kUInt;
  uint64_t id;
  ASSERT_TRUE(cont->create_array(s, &id).ok());
  ArrayOptions o;
  o.durable_writes = false;
  std::unique_ptr<Array> a;
  ASSERT_TRUE(cont->open_array(id, true, o, &a).ok());
  std::vector<uint64_t> v(256 * 256);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i + 1;
  ASSERT_TRUE(a->write(Selection::from_box(Box({0, 0}, {255, 255})), v.data()).ok());
  ASSERT_TRUE(a->flush().ok());
  const uint64_t full = a->storage_bytes();
  // Erase all but a 10 x 10 corner and a diagonal of single cells.
  std::vector<Box> boxes = {Box({0, 10}, {9, 255}), Box({10, 0}, {255, 255})};
  ASSERT_TRUE(a->erase(boxes).ok());
  std::vector<uint64_t> diag;
  for (uint64_t k = 0; k < 10; ++k) diag.insert(diag.end(), {k, k});
  ASSERT_TRUE(a->erase_points(diag.data(), 10).ok());
  ASSERT_TRUE(a->flush().ok());
  EXPECT_GE(a->storage_bytes(), full);  // not yet smaller: both fragments remain
  ASSERT_TRUE(a->consolidate_all().ok());
  EXPECT_LT(a->storage_bytes() * 100, full) << "90 of 65536 cells left";
  std::vector<Box> out;
  ASSERT_TRUE(a->defined({Box({0, 0}, {255, 255})}, &out).ok());
  uint64_t cells = 0;
  for (const Box& b : out) cells += b.cells();
  EXPECT_EQ(cells, 90u);
  std::vector<uint64_t> got(256 * 256);
  ASSERT_TRUE(a->read(Selection::from_box(Box({0, 0}, {255, 255})), got.data()).ok());
  for (uint64_t r = 0; r < 256; ++r)
    for (uint64_t c = 0; c < 256; ++c) {
      const bool kept = r < 10 && c < 10 && r != c;
      ASSERT_EQ(got[r * 256 + c], kept ? v[r * 256 + c] : 0u) << r << "," << c;
    }
}

// An erase over more tiles than can be listed (a dataset of more than 2^64 cells, or a
// box over more than kMaxFillTiles tiles) erases where cells are defined, with the same
// result as a per-tile erase: nothing defined afterwards, reads give the fill value,
// cells outside the box untouched (issue 45).
TEST(Sparse, EraseOverVeryManyTiles) {
  testutil::TempDir dir("tessera_sparse");
  std::unique_ptr<Container> cont;
  ASSERT_TRUE(Container::create(dir.sub("c.tsr"), Container::CreateMode::kExclusive, &cont).ok());
  struct Case {
    Coords extent, tile;
  };
  // 2^124 cells in 2^104 tiles; 2^20 cells in 2^18 tiles (above the bound, still small).
  const std::vector<Case> cases = {{{uint64_t{1} << 62, uint64_t{1} << 62}, {1024, 1024}}, {{1024, 1024}, {2, 2}}};
  for (const Case& c : cases) {
    Schema s;
    s.extent = s.max_extent = c.extent;
    s.tile_extent = c.tile;
    s.elem_size = 8;
    s.kind = ElementKind::kUInt;
    s.fill = {7, 0, 0, 0, 0, 0, 0, 0};
    uint64_t id;
    ASSERT_TRUE(cont->create_array(s, &id).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(cont->open_array(id, true, ArrayOptions(), &a).ok());
    const uint64_t X = c.extent[0] - 1, Y = c.extent[1] - 1;
    // Cells at the corners and in the middle, a box flushed into a fragment and points
    // left in the write buffer.
    std::vector<uint64_t> box(9, 5), pts = {0, 0, X, Y, X / 2, Y / 3};
    ASSERT_TRUE(a->write(Selection::from_box(Box({X / 2, Y / 2}, {X / 2 + 2, Y / 2 + 2})), box.data()).ok());
    ASSERT_TRUE(a->flush().ok());
    std::vector<uint64_t> pv = {1, 2, 3};
    ASSERT_TRUE(a->write_points(pts.data(), 3, pv.data()).ok());
    // Erase everything but row 0.
    ASSERT_TRUE(a->erase({Box({1, 0}, {X, Y})}).ok());
    std::vector<Box> out;
    ASSERT_TRUE(a->defined({Box({0, 0}, {X, Y})}, &out).ok());
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0], Box({0, 0}, {0, 0}));
    uint64_t got[3];
    std::vector<uint64_t> read_pts = {0, 0, X, Y, X / 2 + 1, Y / 2 + 1};
    ASSERT_TRUE(a->read_points(read_pts.data(), 3, got).ok());
    EXPECT_EQ(got[0], 1u);
    EXPECT_EQ(got[1], 7u);
    EXPECT_EQ(got[2], 7u);
    ASSERT_TRUE(a->flush().ok());
    ASSERT_TRUE(a->consolidate_all().ok());
    ASSERT_TRUE(a->read_points(read_pts.data(), 3, got).ok());
    EXPECT_EQ(got[0], 1u);
    EXPECT_EQ(got[1], 7u);
    EXPECT_EQ(got[2], 7u);
  }
}

}  // namespace
}  // namespace tessera
