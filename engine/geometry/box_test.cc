// Box and Selection (box.h) against brute-force models over small index spaces.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "engine/geometry/box.h"
#include "engine/util/error.h"

using namespace tessera;

namespace {

std::set<Coords> cells_of(const Box& b) {
  std::set<Coords> out;
  for (uint64_t x = b.lo[0]; x <= b.hi[0]; ++x)
    for (uint64_t y = b.lo[1]; y <= b.hi[1]; ++y) out.insert({x, y});
  return out;
}

Box random_box(std::mt19937& rng) {
  uint64_t a = rng() % 12, b = rng() % 12, c = rng() % 12, d = rng() % 12;
  return Box({std::min(a, b), std::min(c, d)}, {std::max(a, b), std::max(c, d)});
}

}  // namespace

TEST(Box, IntersectAndSubtractMatchSetAlgebra) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    Box a = random_box(rng), b = random_box(rng);
    std::set<Coords> ca = cells_of(a), cb = cells_of(b), both, rest;
    for (const Coords& c : ca) (cb.count(c) ? both : rest).insert(c);
    Box i;
    const bool nonempty = intersect(a, b, &i);
    EXPECT_EQ(nonempty, !both.empty());
    EXPECT_EQ(a.intersects(b), !both.empty());
    if (nonempty) {
      EXPECT_EQ(cells_of(i), both);
    }
    std::vector<Box> pieces;
    subtract(a, b, &pieces);
    EXPECT_LE(pieces.size(), 4u);
    std::set<Coords> got;
    size_t total = 0;
    for (const Box& p : pieces) {
      auto cp = cells_of(p);
      total += cp.size();
      got.insert(cp.begin(), cp.end());
    }
    EXPECT_EQ(got, rest);
    EXPECT_EQ(total, rest.size()) << "the pieces are disjoint";
    EXPECT_EQ(a.cells(), ca.size());
    EXPECT_EQ(a.contains(b), cb.size() == both.size());
  }
}

TEST(Selection, HyperslabCellsAndPositions) {
  // start 1, stride 4, count 3, block 2 (dim 0) x start 0, stride 1, count 5, block 1 (dim 1).
  Selection s = Selection::from_hyperslab({1, 0}, {4, 1}, {3, 5}, {2, 1});
  std::vector<Coords> model;
  for (uint64_t k = 0; k < 3; ++k)
    for (uint64_t j = 0; j < 2; ++j)
      for (uint64_t y = 0; y < 5; ++y) model.push_back({1 + 4 * k + j, y});
  EXPECT_EQ(s.cells(), model.size());
  for (size_t i = 0; i < model.size(); ++i) {
    uint64_t pos = 99;
    ASSERT_TRUE(s.position_of(model[i].data(), &pos));
    EXPECT_EQ(pos, i) << "row-major selection order";
  }
  uint64_t pos;
  Coords outside{3, 0};
  EXPECT_FALSE(s.position_of(outside.data(), &pos));
  EXPECT_EQ(s.bbox(), Box({1, 0}, {10, 4}));
  EXPECT_FALSE(s.is_box());
  EXPECT_TRUE(Selection::from_box(Box({2, 3}, {4, 5})).is_box());
  EXPECT_THROW(Selection::from_hyperslab({0, 0}, {2, 1}, {2, 1}, {3, 1}), Error);  // overlapping blocks
}

TEST(Selection, IntervalsAreSortedAndMerged) {
  Selection s = Selection::from_intervals({{{5, 6}, {0, 1}, {2, 3}}, {{0, 0}}});
  ASSERT_EQ(s.dim(0).ivs.size(), 2u) << "sorted, adjacent intervals merged";
  EXPECT_EQ(s.dim(0).ivs[0].lo, 0u);
  EXPECT_EQ(s.dim(0).ivs[0].hi, 3u);
  EXPECT_EQ(s.dim(0).ivs[1].lo, 5u);
  EXPECT_EQ(s.cells(), 6u);
  Selection t = Selection::from_intervals({{{5, 6}, {0, 1}}, {{0, 0}}});
  EXPECT_EQ(t.dim(0).ivs.size(), 2u);
  EXPECT_EQ(t.cells(), 4u);
}
