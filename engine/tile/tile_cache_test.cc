// TileCache (tile_cache.h): least recently used goes first, the byte budget holds, a
// tile larger than a quarter of the budget is never cached, a key is stored once.
#include <gtest/gtest.h>

#include <memory>

#include "engine/tile/tile_cache.h"

using namespace tessera;

namespace {
std::shared_ptr<const void> blob(int v) { return std::make_shared<const int>(v); }
int value(const std::shared_ptr<const void>& p) { return *static_cast<const int*>(p.get()); }
}  // namespace

TEST(TileCache, EvictsLeastRecentlyUsedWithinBudget) {
  TileCache c(400);
  for (uint64_t i = 0; i < 4; ++i) c.put({1, i}, blob(static_cast<int>(i)), 100);
  EXPECT_EQ(c.used(), 400u);
  ASSERT_NE(c.get({1, 0}), nullptr);  // 0 is now the most recent
  c.put({1, 4}, blob(4), 100);        // evicts 1, the least recent
  EXPECT_EQ(c.used(), 400u);
  EXPECT_EQ(c.get({1, 1}), nullptr);
  EXPECT_EQ(value(c.get({1, 0})), 0);
  EXPECT_EQ(value(c.get({1, 4})), 4);
  c.put({2, 0}, blob(9), 100);  // evicts 2 (0, 4 were used since)
  EXPECT_EQ(c.get({1, 2}), nullptr);
  EXPECT_NE(c.get({1, 3}), nullptr);
}

TEST(TileCache, LargeTilesAndRepeatsAreNotStored) {
  TileCache c(400);
  c.put({1, 0}, blob(1), 101);  // over a quarter of the budget
  EXPECT_EQ(c.get({1, 0}), nullptr);
  EXPECT_EQ(c.used(), 0u);
  c.put({1, 1}, blob(1), 100);
  c.put({1, 1}, blob(2), 100);  // already there: kept as first stored
  EXPECT_EQ(value(c.get({1, 1})), 1);
  EXPECT_EQ(c.used(), 100u);
  // Keys differ by fragment serial and by offset.
  c.put({2, 1}, blob(3), 100);
  EXPECT_EQ(value(c.get({2, 1})), 3);
  EXPECT_EQ(value(c.get({1, 1})), 1);
}
