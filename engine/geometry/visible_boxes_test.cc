// visible_boxes (visible_boxes.h) against a painted grid: random boxes written in order
// into a small 2-D and 3-D grid, each cell remembering the last box that wrote it.  The
// output must be disjoint boxes, each inside the input it names, covering exactly the
// painted cells, and naming at each cell the box the grid says wins there.
#include "engine/geometry/visible_boxes.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace tessera {
namespace {

void check_against_paint(int rank, uint64_t n, int inputs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Box> in;
  for (int i = 0; i < inputs; ++i) {
    Coords lo(rank), hi(rank);
    for (int d = 0; d < rank; ++d) {
      lo[d] = rng() % n;
      hi[d] = lo[d] + rng() % (n - lo[d]);
    }
    in.emplace_back(lo, hi);
  }
  uint64_t cells = 1;
  for (int d = 0; d < rank; ++d) cells *= n;
  auto at = [&](const Coords& c) {
    uint64_t off = 0;
    for (int d = 0; d < rank; ++d) off = off * n + c[d];
    return off;
  };
  // Every cell of box b, in turn.
  auto each = [&](const Box& b, auto&& f) {
    Coords c = b.lo;
    for (;;) {
      f(c);
      int d = rank - 1;
      for (; d >= 0; --d) {
        if (++c[d] <= b.hi[d]) break;
        c[d] = b.lo[d];
      }
      if (d < 0) return;
    }
  };
  const int64_t kNone = -1;
  std::vector<int64_t> paint(cells, kNone);
  for (size_t i = 0; i < in.size(); ++i) each(in[i], [&](const Coords& c) { paint[at(c)] = static_cast<int64_t>(i); });

  std::vector<VisibleBox> out;
  ASSERT_TRUE(visible_boxes(in, 1u << 20, &out)) << "seed " << seed;
  std::vector<int64_t> got(cells, kNone);
  for (const VisibleBox& v : out) {
    ASSERT_LT(v.src, in.size());
    ASSERT_TRUE(in[v.src].contains(v.box)) << v.box.to_string() << " outside input " << v.src;
    each(v.box, [&](const Coords& c) {
      ASSERT_EQ(got[at(c)], kNone) << "seed " << seed << ": two output boxes hold a cell";
      got[at(c)] = static_cast<int64_t>(v.src);
    });
  }
  ASSERT_EQ(got, paint) << "seed " << seed;
  // The bound: one box fewer than the largest working set is refused; the work set never
  // falls below the final count, so max_out = out.size() - 1 must fail.
  if (!out.empty()) {
    std::vector<VisibleBox> out2;
    EXPECT_FALSE(visible_boxes(in, out.size() - 1, &out2));
  }
}

TEST(VisibleBoxes, MatchesAPaintedGrid2D) {
  for (uint64_t seed = 1; seed <= 300; ++seed) check_against_paint(2, 12, 1 + static_cast<int>(seed % 9), seed);
}

TEST(VisibleBoxes, MatchesAPaintedGrid3D) {
  for (uint64_t seed = 1; seed <= 200; ++seed) check_against_paint(3, 6, 1 + static_cast<int>(seed % 7), seed);
}

TEST(VisibleBoxes, DisjointWritesStayWholeAndAHiddenWriteVanishes) {
  std::vector<VisibleBox> out;
  // Two bands far apart in a tile: themselves, nothing painted between them.
  ASSERT_TRUE(visible_boxes({Box({0, 0}, {7, 255}), Box({1000, 300}, {1007, 555})}, 64, &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].box, Box({0, 0}, {7, 255}));
  EXPECT_EQ(out[1].box, Box({1000, 300}, {1007, 555}));
  // A write hidden whole by a later one is gone.
  ASSERT_TRUE(visible_boxes({Box({2, 2}, {3, 3}), Box({0, 0}, {9, 9})}, 64, &out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].src, 1u);
}

}  // namespace
}  // namespace tessera
