// curve_test.cc — the space-filling curves (curve.h) against independent definitions, and
// the tile orders of Layout built on them.
#include "engine/geometry/curve.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>
#include <vector>

#include "engine/schema/layout.h"
#include "engine/schema/multimap.h"

namespace tessera {
namespace {

// Skilling's transform run literally over all 64 levels (no skipping of zero levels), and
// the index read bit by bit: the definition hilbert_words must agree with.
std::vector<uint64_t> hilbert_reference(std::vector<uint64_t> x) {
  const int n = static_cast<int>(x.size());
  for (uint64_t q = uint64_t{1} << 63; q > 1; q >>= 1) {
    const uint64_t p = q - 1;
    for (int i = 0; i < n; ++i) {
      if (x[i] & q) {
        x[0] ^= p;
      } else {
        uint64_t t = (x[0] ^ x[i]) & p;
        x[0] ^= t;
        x[i] ^= t;
      }
    }
  }
  for (int i = 1; i < n; ++i) x[i] ^= x[i - 1];
  uint64_t t = 0;
  for (uint64_t q = uint64_t{1} << 63; q > 1; q >>= 1)
    if (x[n - 1] & q) t ^= q - 1;
  for (int i = 0; i < n; ++i) x[i] ^= t;
  std::vector<uint64_t> out(n, 0);
  int pos = 64 * n - 1;  // from the top: level 63 of x[0], x[1], ..., then level 62, ...
  for (int level = 63; level >= 0; --level)
    for (int d = 0; d < n; ++d, --pos)
      if ((x[d] >> level) & 1) out[n - 1 - pos / 64] |= uint64_t{1} << (pos % 64);
  return out;
}

TEST(Curve, HilbertMatchesFullLevelReference) {
  std::mt19937_64 rng(7);
  for (int rank = 1; rank <= 5; ++rank)
    for (int it = 0; it < 400; ++it) {
      std::vector<uint64_t> c(rank);
      const int bits = 1 + static_cast<int>(rng() % 64);
      for (auto& v : c) v = bits == 64 ? rng() : rng() & ((uint64_t{1} << bits) - 1);
      std::vector<uint64_t> got(rank);
      hilbert_words(c.data(), rank, got.data());
      ASSERT_EQ(got, hilbert_reference(c)) << "rank " << rank << " bits " << bits;
    }
}

// Walking a 2^k grid in Hilbert order moves one step along one axis at a time, and every
// cell is visited once: the defining property, checked on 2-, 3- and 4-D grids.
TEST(Curve, HilbertVisitsNeighboursInOrder) {
  for (int rank = 2; rank <= 4; ++rank) {
    const uint64_t side = rank == 4 ? 4 : 8;
    uint64_t cells = 1;
    for (int d = 0; d < rank; ++d) cells *= side;
    std::vector<std::pair<std::vector<uint64_t>, std::vector<uint64_t>>> all;
    for (uint64_t k = 0; k < cells; ++k) {
      std::vector<uint64_t> c(rank);
      uint64_t r = k;
      for (int d = 0; d < rank; ++d, r /= side) c[d] = r % side;
      std::vector<uint64_t> key(rank);
      hilbert_words(c.data(), rank, key.data());
      all.push_back({key, c});
    }
    std::sort(all.begin(), all.end());
    for (size_t i = 0; i + 1 < all.size(); ++i) {
      uint64_t dist = 0;
      for (int d = 0; d < rank; ++d)
        dist += all[i].second[d] > all[i + 1].second[d] ? all[i].second[d] - all[i + 1].second[d]
                                                        : all[i + 1].second[d] - all[i].second[d];
      ASSERT_EQ(dist, 1u) << "rank " << rank << " step " << i;
    }
  }
}

TEST(Curve, MortonInterleavesLastDimensionFastest) {
  // (y, x) = (1, 0) -> 0b10, (0, 1) -> 0b01; (3, 5) = (0b011, 0b101) -> y2 x2 y1 x1 y0 x0 = 0b011011.
  uint64_t a[2] = {1, 0}, b[2] = {0, 1}, c[2] = {3, 5}, w[2];
  EXPECT_EQ(morton_code(a, 2, 32), 2u);
  EXPECT_EQ(morton_code(b, 2, 32), 1u);
  EXPECT_EQ(morton_code(c, 2, 32), 0b011011u);
  morton_words(c, 2, w);
  EXPECT_EQ(w[0], 0u);
  EXPECT_EQ(w[1], 0b011011u);
  uint64_t big[2] = {uint64_t{1} << 63, 1};
  morton_words(big, 2, w);
  EXPECT_EQ(w[0], uint64_t{1} << 63);  // y's top bit is the index's top bit
  EXPECT_EQ(w[1], 1u);
}

Schema layout_schema(Order tile_order, Order cell_order = Order::kRowMajor) {
  Schema s;
  s.extent = {37, 41, 23};
  s.max_extent = {kUnlimited, 41, 23};
  s.tile_extent = {4, 3, 5};
  s.elem_size = 4;
  s.cell_order = cell_order;
  s.set_tile_order(tile_order);
  s.validate();
  return s;
}

// for_each_tile visits a box's tiles in compare_tiles order, the packed keys sort as the
// key words do, and the keys of the MultiMap order follow the cube layout of multimap.h.
TEST(Curve, LayoutOrdersAgree) {
  std::mt19937_64 rng(11);
  for (Order o : {Order::kRowMajor, Order::kColMajor, Order::kZOrder, Order::kHilbert, Order::kMultiMap})
    for (Order co : {Order::kRowMajor, Order::kColMajor}) {
      SCOPED_TRACE(std::string(order_name(o)) + " / " + order_name(co));
      Schema s = layout_schema(o, co);
      Layout l(s);
      Box b({3, 2, 1}, {30, 40, 22});
      std::vector<Coords> seen;
      l.for_each_tile(b, [&](const Coords& t) { seen.push_back(t); });
      ASSERT_EQ(seen.size(), 8u * 14 * 5);
      for (size_t i = 0; i + 1 < seen.size(); ++i) ASSERT_LT(l.compare_tiles(seen[i].data(), seen[i + 1].data()), 0);
      std::set<Coords> uniq(seen.begin(), seen.end());
      EXPECT_EQ(uniq.size(), seen.size());
      std::vector<uint64_t> coords;
      for (int i = 0; i < 3000; ++i)
        for (int d = 0; d < 3; ++d) coords.push_back(rng() % (d == 0 ? 200 : s.extent[d]));
      std::vector<uint64_t> packed;
      ASSERT_TRUE(l.packed_keys(coords.data(), 3000, &packed));
      for (int i = 0; i < 2999; ++i) {
        int c = l.compare_cells(&coords[i * 3], &coords[(i + 1) * 3]);
        int p = packed[i] < packed[i + 1] ? -1 : packed[i] > packed[i + 1] ? 1 : 0;
        ASSERT_EQ(c, p) << i;
      }
    }
}

TEST(Curve, MultiMapCubeFollowsTrackAndAdjacency) {
  Schema s;
  s.extent = s.max_extent = {1024, 1024, 512};
  s.tile_extent = {64, 64, 64};
  s.elem_size = 4;  // 1 MiB tiles: a 4 MiB track is 4 tiles along dimension 0
  s.set_tile_order(Order::kMultiMap);
  EXPECT_EQ(s.multimap_cube, (Coords{4, 8, 8}));
  Layout l(s);
  // Along dimension 0 (the track) consecutive tiles are consecutive in the order.
  uint64_t a[3] = {0, 0, 0}, b[3] = {1, 0, 0}, c[3] = {0, 1, 0}, k[4];
  l.tile_key(b, k);
  EXPECT_EQ(k[3], 1u);
  l.tile_key(c, k);
  EXPECT_EQ(k[3], 4u);  // the next track of the cube
  EXPECT_LT(l.compare_tiles(a, b), 0);
  uint64_t next_cube[3] = {4, 0, 0};
  l.tile_key(next_cube, k);
  EXPECT_EQ(k[3], 0u);
  EXPECT_EQ(k[2], 1u);  // cube coordinate of dimension 0, the fastest among cubes
}

TEST(Curve, SchemaRoundTripsAndRejects) {
  for (Order o : {Order::kZOrder, Order::kHilbert, Order::kMultiMap}) {
    Schema s = layout_schema(o);
    auto bytes = s.serialize();
    Schema t = Schema::deserialize(bytes.data(), bytes.size(), "test");
    EXPECT_EQ(t.tile_order, o);
    EXPECT_EQ(t.multimap_cube, s.multimap_cube);
  }
  Schema bad = layout_schema(Order::kRowMajor);
  bad.cell_order = Order::kHilbert;
  EXPECT_THROW(bad.validate(), Error);
  Order o;
  EXPECT_TRUE(parse_order("Hilbert", &o));
  EXPECT_EQ(o, Order::kHilbert);
  EXPECT_TRUE(parse_order("morton", &o));
  EXPECT_EQ(o, Order::kZOrder);
  EXPECT_FALSE(parse_order("spiral", &o));
}

// Layout names: "TILE[:CELLS]"; MultiMap's own cell order is column-major (dimension 0
// fastest), which also moves its track to the last dimension; space-filling cell orders
// are refused with the reason.
TEST(Curve, LayoutNamesChooseTileAndCellOrders) {
  Order t, c;
  std::string why;
  ASSERT_TRUE(parse_layout("multimap", &t, &c, &why));
  EXPECT_EQ(t, Order::kMultiMap);
  EXPECT_EQ(c, Order::kColMajor);
  ASSERT_TRUE(parse_layout("MultiMap:row-major", &t, &c, &why));
  EXPECT_EQ(c, Order::kRowMajor);
  ASSERT_TRUE(parse_layout("z-order:col", &t, &c, &why));
  EXPECT_EQ(t, Order::kZOrder);
  EXPECT_EQ(c, Order::kColMajor);
  ASSERT_TRUE(parse_layout("hilbert", &t, &c, &why));
  EXPECT_EQ(c, Order::kRowMajor);
  EXPECT_EQ(layout_name(Order::kMultiMap, Order::kColMajor), "multimap");
  EXPECT_EQ(layout_name(Order::kMultiMap, Order::kRowMajor), "multimap:row-major");
  EXPECT_EQ(layout_name(Order::kRowMajor, Order::kColMajor), "row-major:column-major");
  EXPECT_FALSE(parse_layout("spiral", &t, &c, &why));
  EXPECT_NE(why.find("unknown layout 'spiral'"), std::string::npos) << why;
  EXPECT_FALSE(parse_layout("row-major:spiral", &t, &c, &why));
  EXPECT_NE(why.find("unknown cell order 'spiral'"), std::string::npos) << why;
  EXPECT_FALSE(parse_layout("multimap:hilbert", &t, &c, &why));
  EXPECT_NE(why.find("cell order hilbert"), std::string::npos) << why;
  EXPECT_NE(why.find("not supported"), std::string::npos) << why;

  Schema s;
  s.extent = s.max_extent = {1024, 1024, 512};
  s.tile_extent = {64, 64, 64};
  s.elem_size = 4;
  s.set_layout(Order::kMultiMap, Order::kColMajor);
  // Column-major cells: beams along dimension 2 read whole tiles, so the 4-tile track
  // runs along dimension 2 (multimap_dims), then dimension 1, then 0.
  EXPECT_EQ(s.multimap_cube, (Coords{8, 8, 4}));
  Layout l(s);
  uint64_t a[3] = {0, 0, 0}, b[3] = {0, 0, 1}, k[4];
  l.tile_key(b, k);
  EXPECT_EQ(k[3], 1u);
  EXPECT_LT(l.compare_tiles(a, b), 0);
}

}  // namespace
}  // namespace tessera
