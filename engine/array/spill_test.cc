// The write buffer's spill path: the order and uniqueness of what for_each_tile hands
// out (checked against an independent model: a std::map keyed by the comparison of
// tile coordinates then in-tile offsets, computed here with plain division), the three
// sort strategies (keys with the arrival index in one word, keys alone, no packed key),
// and the LSM-style pipeline choice of a spill: scattered points are stored with the fast
// variant of the schema's pipeline until consolidation rewrites them with the schema's
// own, while the data reads back exactly throughout.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>

#include <map>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/write/write_buffer.h"
#include "engine/testing/testutil.h"

using namespace tessera;

namespace {

// The global order spelled out independently of Layout: tile coordinates in tile order,
// then in-tile offsets in cell order.
std::vector<uint64_t> model_key(const Schema& s, const uint64_t* c) {
  const int r = s.rank();
  std::vector<uint64_t> k;
  for (int i = 0; i < r; ++i) {
    int d = s.tile_order == Order::kRowMajor ? i : r - 1 - i;
    k.push_back(c[d] / s.tile_extent[d]);
  }
  for (int i = 0; i < r; ++i) {
    int d = s.cell_order == Order::kRowMajor ? i : r - 1 - i;
    k.push_back(c[d] % s.tile_extent[d]);
  }
  return k;
}

struct Cell {
  std::vector<uint64_t> coords;
  std::vector<uint8_t> value;
};

// Adds `n` random points (many repeats) to `wb` and to the model, in `batches` calls.
void add_random(const Schema& s, WriteBuffer& wb, std::map<std::vector<uint64_t>, Cell>& model,
                testutil::Rng& rng, size_t n, size_t batches, uint64_t span) {
  const int r = s.rank();
  for (size_t b = 0; b < batches; ++b) {
    std::vector<uint64_t> c;
    std::vector<uint8_t> v;
    for (size_t i = 0; i < n / batches; ++i) {
      Cell cell;
      for (int d = 0; d < r; ++d) {
        // Half the points from a small corner, so the same cell is often written again.
        uint64_t hi = rng.chance(0.5) ? std::min<uint64_t>(span, 7) : span;
        cell.coords.push_back(std::min(rng.below(hi + 1), s.extent[d] - 1));
      }
      cell.value.resize(s.elem_size);
      rng.fill(cell.value.data(), cell.value.size());
      c.insert(c.end(), cell.coords.begin(), cell.coords.end());
      v.insert(v.end(), cell.value.begin(), cell.value.end());
      model[model_key(s, cell.coords.data())] = cell;  // the newest write wins
    }
    if (b % 2 == 0) {
      wb.add(c.data(), v.data(), c.size() / r, true);
    } else {
      size_t cnt = c.size() / r;
      wb.add(std::move(c), v.data(), cnt);
    }
  }
}

// for_each_tile hands out every model cell once, tiles ascending, cells ascending.
void check_tiles(const Schema& s, WriteBuffer& wb, const std::map<std::vector<uint64_t>, Cell>& model) {
  const int r = s.rank();
  auto it = model.begin();
  std::vector<uint64_t> prev_tile;
  wb.for_each_tile([&](const uint64_t* tile, const uint64_t* cs, const uint8_t* vs, size_t m, const Box& bb) {
    ASSERT_GT(m, 0u);
    std::vector<uint64_t> t(tile, tile + r);
    std::vector<uint64_t> tk = model_key(s, cs);
    tk.resize(r);  // the tile part, in tile order
    if (!prev_tile.empty()) {
      EXPECT_LT(prev_tile, tk) << "tiles must come in ascending tile order";
    }
    prev_tile = tk;
    Box want{Coords(cs, cs + r), Coords(cs, cs + r)};
    for (size_t i = 0; i < m; ++i) {
      ASSERT_NE(it, model.end()) << "more cells than the model holds";
      const uint64_t* c = cs + i * r;
      EXPECT_EQ(std::vector<uint64_t>(c, c + r), it->second.coords) << "cell " << i << " out of order";
      EXPECT_EQ(std::vector<uint8_t>(vs + i * s.elem_size, vs + (i + 1) * s.elem_size), it->second.value)
          << "cell " << testutil::coords_str(c, r) << ": not the newest value";
      for (int d = 0; d < r; ++d) {
        EXPECT_EQ(t[d], c[d] / s.tile_extent[d]) << "cell outside its tile";
        want.lo[d] = std::min(want.lo[d], c[d]);
        want.hi[d] = std::max(want.hi[d], c[d]);
      }
      ++it;
    }
    EXPECT_EQ(bb, want);
  });
  EXPECT_EQ(it, model.end()) << "cells missing";
}

struct Config {
  const char* name;
  std::vector<uint64_t> extent, tile;
  uint32_t elem_size;
  Order cell, tile_order;
  uint64_t span;  // coordinates drawn from [0, span]
};

Schema schema_for(const Config& c) {
  Schema s;
  s.extent = c.extent;
  s.max_extent = c.extent;
  s.tile_extent = c.tile;
  s.elem_size = c.elem_size;
  s.cell_order = c.cell;
  s.tile_order = c.tile_order;
  return s;
}

const Config kConfigs[] = {
    // packed key and arrival index in one word; power-of-two tiles (shift and mask)
    {"pow2", {4096, 4096}, {512, 256}, 4, Order::kRowMajor, Order::kRowMajor, 4095},
    // odd tile extents (division), column-major orders, 8-byte values
    {"odd_colmajor", {1000, 999}, {37, 100}, 8, Order::kColMajor, Order::kColMajor, 998},
    // rank 3, mixed orders, odd element size
    {"rank3", {50, 60, 70}, {7, 16, 9}, 3, Order::kColMajor, Order::kRowMajor, 69},
    // 60 key bits: the key fits a word but not beside the index (whole cells move)
    {"wide_keys", {uint64_t{1} << 30, uint64_t{1} << 30}, {3, 5}, 4, Order::kRowMajor, Order::kRowMajor,
     (uint64_t{1} << 30) - 1},
    // keys wider than a word: the comparison sort
    {"huge_keys", {uint64_t{1} << 40, uint64_t{1} << 40}, {3, 5}, 2, Order::kRowMajor, Order::kColMajor,
     (uint64_t{1} << 40) - 1},
    // rank 1
    {"rank1", {100000}, {1000}, 4, Order::kRowMajor, Order::kRowMajor, 99999},
};

}  // namespace

TEST(Spill, ForEachTileMatchesModel) {
  const uint64_t seed = testutil::base_seed(7);
  for (const Config& cfg : kConfigs) {
    SCOPED_TRACE(std::string(cfg.name) + " seed " + std::to_string(seed));
    const Schema s = schema_for(cfg);
    testutil::Rng rng(seed);
    // Unsorted (the spill's indexed path) and after normalize() (the read path's order).
    for (bool normalized : {false, true}) {
      WriteBuffer wb(s);
      std::map<std::vector<uint64_t>, Cell> model;
      add_random(s, wb, model, rng, 6000, 3, cfg.span);
      if (normalized) {
        wb.normalize();
        ASSERT_EQ(wb.cells(), model.size());
      }
      check_tiles(s, wb, model);
      // normalize() afterwards lists the same cells in the same order.
      wb.normalize();
      ASSERT_EQ(wb.cells(), model.size());
      size_t i = 0;
      for (auto& [k, cell] : model) {
        EXPECT_EQ(std::vector<uint64_t>(&wb.coords()[i * s.rank()], &wb.coords()[(i + 1) * s.rank()]), cell.coords);
        ++i;
      }
    }
  }
}

TEST(Spill, SingleCellAndEmpty) {
  const Schema s = schema_for(kConfigs[0]);
  WriteBuffer wb(s);
  size_t calls = 0;
  wb.for_each_tile([&](const uint64_t*, const uint64_t*, const uint8_t*, size_t, const Box&) { ++calls; });
  EXPECT_EQ(calls, 0u);
  uint64_t c[2] = {4095, 4095};
  int32_t v = 42;
  wb.add(c, reinterpret_cast<const uint8_t*>(&v), 1, true);
  wb.for_each_tile([&](const uint64_t* t, const uint64_t* cs, const uint8_t* vs, size_t m, const Box&) {
    ++calls;
    EXPECT_EQ(m, 1u);
    EXPECT_EQ(t[0], 7u);
    EXPECT_EQ(t[1], 15u);
    EXPECT_EQ(cs[0], 4095u);
    int32_t got;
    std::memcpy(&got, vs, 4);
    EXPECT_EQ(got, 42);
  });
  EXPECT_EQ(calls, 1u);
}

TEST(Spill, FastVariantKeepsShuffleAndReplacesSlowCodecs) {
  auto types = [](const FilterPipeline& p) {
    std::vector<FilterType> t;
    for (auto& f : p.filters()) t.push_back(f.type);
    return t;
  };
  using V = std::vector<FilterType>;
  EXPECT_EQ(types(fast_variant(FilterPipeline({{FilterType::kDeflate, 6}}, 4))), V{FilterType::kLz4});
  EXPECT_EQ(types(fast_variant(FilterPipeline({{FilterType::kShuffle, 0}, {FilterType::kDeflate, 1}}, 4))),
            (V{FilterType::kShuffle, FilterType::kLz4}));
  EXPECT_EQ(types(fast_variant(FilterPipeline({{FilterType::kZstd, 3}}, 4))), V{FilterType::kLz4});
  EXPECT_EQ(types(fast_variant(FilterPipeline({{FilterType::kLz4, 0}}, 4))), V{FilterType::kLz4});
  EXPECT_TRUE(fast_variant(FilterPipeline({}, 4)).empty());
  EXPECT_EQ(fast_variant(FilterPipeline({{FilterType::kDeflate, 6}}, 8)).elem_size(), 8u);
}

namespace {

Schema deflate_schema() {
  Schema s;
  s.extent = {256, 256};
  s.max_extent = {256, 256};
  s.tile_extent = {64, 32};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  s.sparse_capacity = 500;  // several sparse tiles per spill
  s.filters = FilterPipeline({{FilterType::kShuffle, 0}, {FilterType::kDeflate, 4}}, 4);
  return s;
}

std::vector<int32_t> read_all(Array& a) {
  std::vector<int32_t> v(256 * 256);
  EXPECT_TRUE(a.read(Selection::from_box(Box({0, 0}, {255, 255})), v.data()).ok());
  return v;
}

FilterPipeline newest_values_pipeline(Array& a) {
  auto frags = a.fragments();
  EXPECT_FALSE(frags.empty());
  return Fragment::open(frags.back().path)->meta().values_filters;
}

}  // namespace

TEST(Spill, ScatteredPointsAreAFastDeltaUntilConsolidation) {
  testutil::TempDir tmp;
  const std::string dir = tmp.path() + "/a";
  const Schema s = deflate_schema();
  ASSERT_TRUE(Array::create(dir, s).ok());
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(dir, true, ArrayOptions(), &a).ok());
  std::vector<int32_t> model(256 * 256, 0);
  // A dense base written as boxes (direct fragments): the schema's pipeline.
  std::vector<int32_t> base(256 * 64);
  for (size_t i = 0; i < base.size(); ++i) base[i] = static_cast<int32_t>(i % 1000);
  for (uint64_t r0 = 0; r0 < 256; r0 += 64) {
    ASSERT_TRUE(a->write(Selection::from_box(Box({r0, 0}, {r0 + 63, 255})), base.data()).ok());
    for (uint64_t i = 0; i < 64 * 256; ++i) model[r0 * 256 + i] = base[i];
  }
  ASSERT_TRUE(a->flush().ok());
  EXPECT_EQ(newest_values_pipeline(*a), s.filters);

  // Scattered points, some repeated: the spill is a delta under the fast variant.
  testutil::Rng rng(11);
  std::vector<uint64_t> pts;
  std::vector<int32_t> vals;
  for (int i = 0; i < 3000; ++i) {
    uint64_t r = rng.below(256), c = rng.below(256);
    pts.push_back(r);
    pts.push_back(c);
    vals.push_back(-1 - static_cast<int32_t>(rng.below(1000000)));
    model[r * 256 + c] = vals.back();
  }
  ASSERT_TRUE(a->write_points(std::vector<uint64_t>(pts), vals.data()).ok());
  EXPECT_EQ(read_all(*a), model) << "the buffer must read back before the spill";
  ASSERT_TRUE(a->flush().ok());
  EXPECT_EQ(newest_values_pipeline(*a), fast_variant(s.filters));
  EXPECT_EQ(read_all(*a), model);
  // Storage reports the bytes really stored: the sum of the fragment files.
  uint64_t files = 0;
  for (auto& f : a->fragments()) {
    struct stat st;
    ASSERT_EQ(::stat(f.path.c_str(), &st), 0) << f.path;
    files += static_cast<uint64_t>(st.st_size);
  }
  EXPECT_EQ(a->storage_bytes(), files);

  // Small box writes through the buffer keep the schema's pipeline.
  std::vector<int32_t> box(3 * 3, 77);
  ASSERT_TRUE(a->write(Selection::from_box(Box({10, 10}, {12, 12})), box.data()).ok());
  for (uint64_t r = 10; r <= 12; ++r)
    for (uint64_t c = 10; c <= 12; ++c) model[r * 256 + c] = 77;
  ASSERT_TRUE(a->flush().ok());
  EXPECT_EQ(newest_values_pipeline(*a), s.filters);
  EXPECT_EQ(read_all(*a), model);

  // Consolidation rewrites everything with the schema's pipeline.
  ASSERT_TRUE(a->consolidate_all().ok());
  ASSERT_EQ(a->fragments().size(), 1u);
  EXPECT_EQ(newest_values_pipeline(*a), s.filters);
  EXPECT_EQ(read_all(*a), model);

  // And after reopening.
  a.reset();
  ASSERT_TRUE(Array::open(dir, false, ArrayOptions(), &a).ok());
  EXPECT_EQ(read_all(*a), model);
}
