// Layout (layout.h): tile iteration and cell linearization for both orders, checked
// against each other and against a brute-force model.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "engine/schema/layout.h"

using namespace tessera;

namespace {

Schema schema(Order tile_order, Order cell_order) {
  Schema s;
  s.extent = {30, 17, 9};
  s.max_extent = s.extent;
  s.tile_extent = {4, 5, 3};
  s.elem_size = 4;
  s.tile_order = tile_order;
  s.cell_order = cell_order;
  return s;
}

Box random_box(std::mt19937& rng, const Coords& extent) {
  Box b;
  for (size_t d = 0; d < extent.size(); ++d) {
    uint64_t a = rng() % extent[d], c = rng() % extent[d];
    b.lo.push_back(std::min(a, c));
    b.hi.push_back(std::max(a, c));
  }
  return b;
}

}  // namespace

TEST(Layout, ForEachTileVisitsOverlappingTilesInTileOrder) {
  std::mt19937 rng(7);
  for (Order to : {Order::kRowMajor, Order::kColMajor}) {
    Schema s = schema(to, Order::kRowMajor);
    Layout layout(s);
    for (int trial = 0; trial < 50; ++trial) {
      Box b = random_box(rng, s.extent);
      std::vector<Coords> seen;
      layout.for_each_tile(b, [&](const Coords& t) { seen.push_back(t); });
      // Model: every tile whose box meets b, once.
      std::set<Coords> want;
      for (uint64_t x = b.lo[0]; x <= b.hi[0]; ++x)
        for (uint64_t y = b.lo[1]; y <= b.hi[1]; ++y)
          for (uint64_t z = b.lo[2]; z <= b.hi[2]; ++z) want.insert({x / 4, y / 5, z / 3});
      EXPECT_EQ(std::set<Coords>(seen.begin(), seen.end()), want);
      EXPECT_EQ(seen.size(), want.size());
      for (size_t i = 1; i < seen.size(); ++i)
        EXPECT_LT(layout.compare_tiles(seen[i - 1].data(), seen[i].data()), 0) << "not in tile order";
    }
  }
}

// Appends to an open dense fragment start after its last tile (Array::write_dense), so
// the first tile of a box must be the box's smallest in every tile order.  Regression:
// the lo corner's tile was taken for it, which a Hilbert curve need not enter first.
TEST(Layout, FirstTileIsTheBoxsSmallestInEveryOrder) {
  std::mt19937 rng(11);
  for (Order to : {Order::kRowMajor, Order::kColMajor, Order::kZOrder, Order::kHilbert, Order::kMultiMap}) {
    Schema s = schema(Order::kRowMajor, Order::kRowMajor);
    s.set_layout(to, Order::kRowMajor);
    Layout layout(s);
    int lo_corner_differs = 0;
    for (int trial = 0; trial < 200; ++trial) {
      Box b = random_box(rng, s.extent);
      Coords want;
      for (uint64_t x = b.lo[0] / 4; x <= b.hi[0] / 4; ++x)
        for (uint64_t y = b.lo[1] / 5; y <= b.hi[1] / 5; ++y)
          for (uint64_t z = b.lo[2] / 3; z <= b.hi[2] / 3; ++z) {
            Coords t{x, y, z};
            if (want.empty() || layout.compare_tiles(t.data(), want.data()) < 0) want = t;
          }
      Coords got(3), corner(3);
      layout.first_tile(b, got.data());
      layout.tile_of(b.lo.data(), corner.data());
      EXPECT_EQ(got, want) << "order " << static_cast<int>(to);
      lo_corner_differs += corner != want;
    }
    // The brute force is not vacuous: a Hilbert curve enters some boxes elsewhere.
    if (to == Order::kHilbert) EXPECT_GT(lo_corner_differs, 0);
    else EXPECT_EQ(lo_corner_differs, 0);
  }
}

TEST(Layout, CellAtInvertsCellStrides) {
  std::mt19937 rng(11);
  for (Order co : {Order::kRowMajor, Order::kColMajor}) {
    Schema s = schema(Order::kRowMajor, co);
    Layout layout(s);
    for (int trial = 0; trial < 50; ++trial) {
      Box b = random_box(rng, s.extent);
      uint64_t st[3];
      layout.cell_strides(b, st);
      Coords prev;
      for (uint64_t k = 0; k < b.cells(); ++k) {
        Coords c(3);
        layout.cell_at(b, k, c.data());
        ASSERT_TRUE(b.contains(c.data()));
        uint64_t lin = 0;
        for (int d = 0; d < 3; ++d) lin += (c[d] - b.lo[d]) * st[d];
        ASSERT_EQ(lin, k);
        // Consecutive cells of one tile's box ascend in the global order.
        if (!prev.empty() && b.cells() > 1) {
          uint64_t tp[3], tc[3];
          layout.tile_of(prev.data(), tp);
          layout.tile_of(c.data(), tc);
          if (std::equal(tp, tp + 3, tc)) {
            ASSERT_LT(layout.compare_cells(prev.data(), c.data()), 0);
          }
        }
        prev = c;
      }
    }
  }
}
