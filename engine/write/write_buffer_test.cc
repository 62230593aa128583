// WriteBuffer (write_buffer.h) against a model: a map from cell to its newest value,
// ordered as the global order is defined for row-major tile and cell orders — tiles
// row-major, then cells row-major inside a tile — computed here by hand.  Checks
// normalize(), for_each_tile() (a spill's view), and the erase operations.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "engine/testing/testutil.h"
#include "engine/write/write_buffer.h"

using namespace tessera;

namespace {

constexpr uint64_t kE0 = 40, kE1 = 30, kT0 = 8, kT1 = 7;

Schema schema() {
  Schema s;
  s.extent = {kE0, kE1};
  s.max_extent = {kE0, kE1};
  s.tile_extent = {kT0, kT1};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  return s;
}

// (tile row, tile col, row in tile, col in tile): the global order's sort key.
using Key = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t>;
Key key(uint64_t r, uint64_t c) { return {r / kT0, c / kT1, r % kT0, c % kT1}; }
using Model = std::map<Key, std::pair<std::vector<uint64_t>, int32_t>>;

void add(WriteBuffer& b, Model& m, testutil::Rng& rng, size_t n, int32_t base) {
  std::vector<uint64_t> coords;
  std::vector<int32_t> values;
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = rng.below(kE0), c = rng.below(kE1);
    coords.push_back(r);
    coords.push_back(c);
    values.push_back(base + static_cast<int32_t>(i));
    m[key(r, c)] = {{r, c}, values.back()};  // later wins, also within one call
  }
  b.add(coords.data(), reinterpret_cast<const uint8_t*>(values.data()), n, rng.below(2) == 0);
}

void expect_equal(WriteBuffer& b, const Model& m) {
  b.normalize();
  ASSERT_EQ(b.cells(), m.size());
  size_t i = 0;
  for (auto& [k, cv] : m) {
    EXPECT_EQ(b.coords()[2 * i], cv.first[0]) << i;
    EXPECT_EQ(b.coords()[2 * i + 1], cv.first[1]) << i;
    int32_t v;
    std::memcpy(&v, &b.values()[4 * i], 4);
    EXPECT_EQ(v, cv.second) << i;
    ++i;
  }
}

}  // namespace

TEST(WriteBuffer, NewestWinsInGlobalOrder) {
  testutil::Rng rng(testutil::named_seed("WriteBuffer", 5));
  for (int trial = 0; trial < 20; ++trial) {
    WriteBuffer b(schema());
    Model m;
    for (int k = 0; k < 5; ++k) add(b, m, rng, 1 + rng.below(300), 1000 * k);
    expect_equal(b, m);
    add(b, m, rng, 50, 99000);  // more after a normalize
    expect_equal(b, m);
  }
}

TEST(WriteBuffer, SpillViewIsTheTilesInOrder) {
  testutil::Rng rng(testutil::named_seed("WriteBufferTiles", 6));
  WriteBuffer b(schema());
  Model m;
  for (int k = 0; k < 4; ++k) add(b, m, rng, 400, 1000 * k);
  auto it = m.begin();
  uint64_t last_tile = 0;
  bool first = true;
  b.for_each_tile([&](const uint64_t* tile, const uint64_t* coords, const uint8_t* values, size_t n, const Box& bb) {
    uint64_t t = tile[0] * ((kE1 + kT1 - 1) / kT1) + tile[1];
    EXPECT_TRUE(first || t > last_tile);
    first = false;
    last_tile = t;
    for (size_t i = 0; i < n; ++i, ++it) {
      ASSERT_NE(it, m.end());
      EXPECT_EQ(std::get<0>(it->first), tile[0]);
      EXPECT_EQ(std::get<1>(it->first), tile[1]);
      EXPECT_EQ(coords[2 * i], it->second.first[0]);
      EXPECT_EQ(coords[2 * i + 1], it->second.first[1]);
      EXPECT_TRUE(bb.contains(coords + 2 * i));
      int32_t v;
      std::memcpy(&v, values + 4 * i, 4);
      EXPECT_EQ(v, it->second.second);
    }
  });
  EXPECT_EQ(it, m.end());
}

TEST(WriteBuffer, EraseInsideAndOutside) {
  testutil::Rng rng(7);
  WriteBuffer b(schema());
  Model m;
  add(b, m, rng, 600, 0);
  const Box in({5, 3}, {20, 17});
  b.erase_inside(in);
  for (auto i = m.begin(); i != m.end();) i = in.contains(i->second.first.data()) ? m.erase(i) : std::next(i);
  expect_equal(b, m);
  const Box keep({0, 0}, {29, 24});
  b.erase_outside(keep);
  for (auto i = m.begin(); i != m.end();) i = keep.contains(i->second.first.data()) ? std::next(i) : m.erase(i);
  expect_equal(b, m);
  b.clear();
  EXPECT_TRUE(b.empty());
}
