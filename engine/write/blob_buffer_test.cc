// BlobBuffer (blob_buffer.h) against a plain list of boxes: its Z-order tile index must
// find exactly the blobs a linear pass finds — for boxes, points, tiny tiles (blobs over
// too many tiles to index), and coordinates beyond the key's bits per dimension.
#include "engine/write/blob_buffer.h"

#include <gtest/gtest.h>

#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using testutil::random_box;
using testutil::Rng;

TEST(BlobBuffer, IndexFindsWhatALinearPassFinds) {
  const uint64_t seed = testutil::named_seed("BlobBufferIndex", 15);
  std::printf("[ seed     ] BlobBuffer index: %llu\n", static_cast<unsigned long long>(seed));
  Rng rng(seed);
  for (int round = 0; round < 60; ++round) {
    const int rank = static_cast<int>(rng.range(1, 4));
    Coords extent, tile;
    // Some arrays reach past the key's 64/rank bits per dimension of tile coordinates.
    const bool huge = rank > 1 && rng.chance(0.2);  // rank 1: 64 bits, nothing beyond
    for (int d = 0; d < rank; ++d) {
      tile.push_back(rng.range(1, 40));
      const uint64_t tiles = huge && d == 0 ? (uint64_t{1} << (64 / rank)) + rng.below(1000) : rng.range(1, 50);
      extent.push_back(std::min<uint64_t>(tile.back() * tiles, uint64_t{1} << 62));
    }
    BlobBuffer bb(tile, nullptr);
    std::vector<Box> model;
    const int n = static_cast<int>(rng.range(0, 80));
    for (int i = 0; i < n; ++i) {
      // Near the far corner too, where the huge dimension's tile coordinates overflow.
      Box b = random_box(rng, extent, rng.chance(0.3) ? 200 : 30);
      if (huge && rng.chance(0.5)) {
        const uint64_t side = b.hi[0] - b.lo[0];
        b.lo[0] = extent[0] - 1 - side;
        b.hi[0] = extent[0] - 1;
      }
      bb.add(b, std::vector<uint8_t>(8));
      model.push_back(b);
    }
    ASSERT_EQ(bb.blobs().size(), model.size());
    for (int q = 0; q < 200; ++q) {
      Box qb = random_box(rng, extent, rng.chance(0.5) ? 5 : 500);
      if (huge && rng.chance(0.3)) {
        qb.lo[0] = extent[0] - 1 - rng.below(100);
        qb.hi[0] = extent[0] - 1;
      }
      std::vector<size_t> want;
      for (size_t i = 0; i < model.size(); ++i)
        if (model[i].intersects(qb)) want.push_back(i);
      ASSERT_EQ(bb.over(qb), want) << "query " << qb.to_string() << " round " << round;
      ASSERT_EQ(bb.intersects(qb), !want.empty());
      // A point: the newest blob holding it.
      Coords c(rank);
      for (int d = 0; d < rank; ++d) c[d] = qb.lo[d] + rng.below(qb.hi[d] - qb.lo[d] + 1);
      const Blob* newest = nullptr;
      for (size_t i = 0; i < model.size(); ++i)
        if (model[i].contains(c.data())) newest = &bb.blobs()[i];
      ASSERT_EQ(bb.newest_at(c.data()), newest) << "point " << testutil::coords_str(c.data(), rank);
      ASSERT_EQ(bb.covers_any(c.data(), 1, rank), newest != nullptr);
    }
    bb.clear();
    EXPECT_TRUE(bb.empty());
    EXPECT_FALSE(bb.intersects(Box(Coords(rank, 0), Coords(extent.begin(), extent.end()))));
  }
}

// Spilled blobs' memory is reused for the next blobs, counts against the write budget,
// stays within a quarter of its limit, and goes when the budget asks for room.
TEST(BlobBuffer, SpilledMemoryIsReusedWithinTheBudget) {
  WriteBudget budget(uint64_t{64} << 20);
  BlobMemory mem(budget);
  const Coords tile{64, 64};
  constexpr size_t kSize = 3000001;
  std::vector<uint8_t> v = mem.take(kSize);
  ASSERT_EQ(v.size(), kSize);
  const uint8_t* at = v.data();
  {
    BlobBuffer bb(tile, &mem);
    bb.add(Box({0, 0}, {511, 511}), std::move(v));
  }  // destroyed: its blob's memory is kept
  EXPECT_GE(mem.kept(), kSize);
  EXPECT_EQ(budget.used(), mem.kept());  // counted like a write buffer
  std::vector<uint8_t> again = mem.take(kSize - 1);
  EXPECT_EQ(again.data(), at);
  EXPECT_EQ(again.size(), kSize - 1);
  EXPECT_EQ(mem.kept(), 0u);
  EXPECT_EQ(budget.used(), 0u);
  // Too large a kept vector for a small blob is not handed out (it would waste memory).
  mem.give(std::move(again));
  std::vector<uint8_t> small = mem.take(4096);
  EXPECT_NE(small.data(), at);
  // Nothing beyond a quarter of the limit is kept.
  for (int i = 0; i < 8; ++i) mem.give(std::vector<uint8_t>(4 << 20));
  EXPECT_LE(mem.kept(), budget.limit() / 4);
  EXPECT_GT(mem.kept(), 0u);
  // The budget asks for room: everything kept goes.
  mem.flush_in_background();
  EXPECT_EQ(mem.kept(), 0u);
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace tessera
