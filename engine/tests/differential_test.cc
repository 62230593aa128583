// Randomized differential test of the array engine (engine/array/array.h) against a plain
// in-memory model (testutil.h): ten configurations (ranks 1-4, element sizes 1/4/8/12,
// tiles that do not divide the extent, no filter / shuffle+deflate / zstd / lz4, row- and
// column-major orders, fill values) each run a few hundred random operations — box,
// strided, interval-product and point writes, set_extent, flush, reopen, consolidation,
// refresh, a long-lived reader — with full, box, strided and point reads checked after
// every step.  The deterministic tests are in differential_fixed_test.cc.
//
// Every random run prints its seed.  Replay one configuration with
//   TESSERA_TEST_SEED=<seed> TESSERA_TEST_SEED_EXACT=1 ./engine_tests --gtest_filter='Differential.<name>'
// (without TESSERA_TEST_SEED_EXACT the value is a base seed from which each configuration
// derives its own).  TESSERA_TEST_ITERS overrides the number of operations per configuration.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/tests/differential_ops.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using namespace differential_rig;

void run_config(const Config& cfg) {
  uint64_t seed = config_seed(cfg.name);
  uint64_t iters = default_iters();
  SCOPED_TRACE("Differential config " + std::string(cfg.name) + " seed " + std::to_string(seed) + " (replay: TESSERA_TEST_SEED=" +
               std::to_string(seed) + " TESSERA_TEST_SEED_EXACT=1)");
  auto t0 = std::chrono::steady_clock::now();
  DiffRun run(cfg, seed);
  run.run(iters);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ seed     ] Differential %s: seed %llu, %llu ops, %.2f s\n             %s\n", cfg.name,
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(run.ops_done()), secs,
              run.stats_str().c_str());
}

using F = FilterType;
const std::vector<Filter> kNone = {};
const std::vector<Filter> kShuffleDeflate = {{F::kShuffle, 0}, {F::kDeflate, 4}};
const std::vector<Filter> kZstd = {{F::kZstd, 0}};
const std::vector<Filter> kLz4 = {{F::kLz4, 0}};
constexpr uint64_t U = kUnlimited;

// Regression: a schema without an explicit fill value (zeros, the HDF5 default) used to
// hit undefined behaviour on open (memcpy to the null data() of the empty fill vector in
// ByteReader), which aborts sanitizer builds.  Runs before the random configurations so a
// sanitizer abort names it.
TEST(Differential, ZeroFillSchemaOpens) {
  testutil::TempDir t("tessera_diff_zerofill");
  Schema s;
  s.extent = {10};
  s.max_extent = {10};
  s.tile_extent = {4};
  s.elem_size = 4;
  ASSERT_TRUE(s.fill.empty());
  ASSERT_TRUE(Array::create(t.sub("a"), s).ok());
  std::unique_ptr<Array> a;
  Status st = Array::open(t.sub("a"), false, ArrayOptions(), &a);
  ASSERT_TRUE(st.ok()) << status_str(st);
  std::vector<uint32_t> v(10, 1);
  ASSERT_TRUE(a->read(Selection::from_box(Box({0}, {9})), v.data()).ok());
  EXPECT_EQ(v, std::vector<uint32_t>(10, 0));
}

TEST(Differential, Rank1Elem1NoFilter) {
  run_config({"Rank1Elem1NoFilter", ElementKind::kUInt, 1, {7}, {50}, {300}, {300}, kNone});
}
TEST(Differential, Rank1Elem8ZstdUnlimitedSmallSparseTiles) {
  Config c{"Rank1Elem8ZstdUnlimitedSmallSparseTiles", ElementKind::kFloat, 8, {64}, {100}, {U}, {500}, kZstd};
  c.sparse_capacity = 5;
  run_config(c);
}
TEST(Differential, Rank2Elem4ShuffleDeflate) {
  Config c{"Rank2Elem4ShuffleDeflate", ElementKind::kInt, 4, {5, 7}, {23, 31}, {40, U}, {40, 48}, kShuffleDeflate};
  c.sparse_capacity = 13;
  run_config(c);
}
TEST(Differential, Rank2Elem12Lz4ColMajor) {
  run_config({"Rank2Elem12Lz4ColMajor", ElementKind::kOpaque, 12, {4, 6}, {17, 19}, {30, 30}, {30, 30}, kLz4,
              Order::kColMajor, Order::kColMajor});
}
TEST(Differential, Rank2Elem1MixedOrdersZstd) {
  Config c{"Rank2Elem1MixedOrdersZstd", ElementKind::kOpaque, 1, {8, 3}, {20, 25}, {U, 33}, {45, 33}, kZstd,
           Order::kRowMajor, Order::kColMajor};
  c.sparse_capacity = 17;
  run_config(c);
}
TEST(Differential, Rank2TileLargerThanExtent) {
  Config c{"Rank2TileLargerThanExtent", ElementKind::kUInt, 4, {64, 48}, {30, 20}, {U, U}, {60, 40}, kNone,
           Order::kColMajor, Order::kRowMajor};
  c.nonzero_fill = false;
  c.sparse_capacity = 20;
  run_config(c);
}
TEST(Differential, Rank3Elem4Zstd) {
  Config c{"Rank3Elem4Zstd", ElementKind::kUInt, 4, {3, 4, 5}, {10, 9, 11}, {16, 16, 16}, {16, 16, 16}, kZstd,
           Order::kColMajor, Order::kRowMajor};
  c.sparse_capacity = 7;
  run_config(c);
}
TEST(Differential, Rank3Elem12ShuffleDeflate) {
  Config c{"Rank3Elem12ShuffleDeflate", ElementKind::kOpaque, 12, {4, 4, 4}, {8, 7, 9}, {U, 12, 13}, {14, 12, 13},
           kShuffleDeflate, Order::kRowMajor, Order::kColMajor};
  c.sparse_capacity = 9;
  run_config(c);
}
TEST(Differential, Rank4Elem8Lz4ColMajor) {
  Config c{"Rank4Elem8Lz4ColMajor", ElementKind::kInt, 8, {2, 3, 2, 3}, {5, 6, 4, 7}, {8, 8, 8, 8}, {8, 8, 8, 8},
           kLz4, Order::kColMajor, Order::kColMajor};
  c.sparse_capacity = 32;
  run_config(c);
}
TEST(Differential, Rank4Elem1NoFilter) {
  run_config({"Rank4Elem1NoFilter", ElementKind::kUInt, 1, {3, 3, 3, 3}, {7, 5, 6, 4}, {U, 9, 9, U}, {9, 9, 9, 8},
              kNone});
}

// The space-filling tile orders (docs/layouts.md), each against the model with every
// operation above: box, strided, interval-product and point writes and reads, extents,
// spills, blobs, reopen and consolidation.
TEST(Differential, Rank1ZOrder) {
  run_config({"Rank1ZOrder", ElementKind::kUInt, 2, {5}, {40}, {U}, {90}, kNone, Order::kRowMajor, Order::kZOrder});
}
TEST(Differential, Rank2ZOrderUnlimitedZstd) {
  Config c{"Rank2ZOrderUnlimitedZstd", ElementKind::kInt, 4, {5, 7}, {23, 31}, {40, U}, {40, 48}, kZstd,
           Order::kRowMajor, Order::kZOrder};
  c.sparse_capacity = 13;
  run_config(c);
}
TEST(Differential, Rank2HilbertColMajorCells) {
  run_config({"Rank2HilbertColMajorCells", ElementKind::kOpaque, 12, {4, 6}, {17, 19}, {30, 30}, {30, 30}, kLz4,
              Order::kColMajor, Order::kHilbert});
}
TEST(Differential, Rank2MultiMapUnlimited) {
  Config c{"Rank2MultiMapUnlimited", ElementKind::kOpaque, 1, {8, 3}, {20, 25}, {U, 33}, {45, 33}, kNone,
           Order::kRowMajor, Order::kMultiMap};
  c.sparse_capacity = 17;
  run_config(c);
}
TEST(Differential, Rank3ZOrderNoFilter) {
  Config c{"Rank3ZOrderNoFilter", ElementKind::kUInt, 4, {3, 4, 5}, {10, 9, 11}, {16, 16, 16}, {16, 16, 16}, kNone,
           Order::kRowMajor, Order::kZOrder};
  c.sparse_capacity = 7;
  run_config(c);
}
TEST(Differential, Rank3HilbertShuffleDeflate) {
  Config c{"Rank3HilbertShuffleDeflate", ElementKind::kOpaque, 12, {4, 4, 4}, {8, 7, 9}, {U, 12, 13}, {14, 12, 13},
           kShuffleDeflate, Order::kRowMajor, Order::kHilbert};
  c.sparse_capacity = 9;
  run_config(c);
}
TEST(Differential, Rank3MultiMapZstd) {
  Config c{"Rank3MultiMapZstd", ElementKind::kFloat, 4, {2, 3, 2}, {10, 9, 11}, {U, 16, U}, {16, 16, 16}, kZstd,
           Order::kRowMajor, Order::kMultiMap};
  c.sparse_capacity = 7;
  run_config(c);
}
TEST(Differential, Rank3MultiMapColMajorCellsNoFilter) {
  Config c{"Rank3MultiMapColMajorCellsNoFilter", ElementKind::kUInt, 2, {3, 2, 4}, {9, 10, 7}, {16, 16, 16},
           {16, 16, 16}, kNone, Order::kColMajor, Order::kMultiMap};
  run_config(c);
}
TEST(Differential, Rank4HilbertNoFilter) {
  run_config({"Rank4HilbertNoFilter", ElementKind::kUInt, 1, {3, 3, 3, 3}, {7, 5, 6, 4}, {U, 9, 9, U}, {9, 9, 9, 8},
              kNone, Order::kRowMajor, Order::kHilbert});
}

// Conversions (docs/layouts.md): consolidations that rewrite every fragment or a range of
// them into a random layout, so reads, consolidations, extent changes, the write buffer
// and the long-lived reader meet arrays whose fragments are in several orders.
TEST(Differential, Rank2ConvertingLayouts) {
  Config c{"Rank2ConvertingLayouts", ElementKind::kInt, 4, {5, 7}, {23, 31}, {40, U}, {40, 48}, kNone,
           Order::kRowMajor, Order::kRowMajor};
  c.sparse_capacity = 13;
  c.convert = true;
  run_config(c);
}
TEST(Differential, Rank3ConvertingLayoutsZstd) {
  Config c{"Rank3ConvertingLayoutsZstd", ElementKind::kOpaque, 12, {3, 4, 5}, {10, 9, 11}, {U, 16, 16},
           {16, 16, 16}, kZstd, Order::kColMajor, Order::kHilbert};
  c.sparse_capacity = 7;
  c.convert = true;
  run_config(c);
}
TEST(Differential, Rank3ConvertingLayoutsMultiMapNoFilter) {
  Config c{"Rank3ConvertingLayoutsMultiMapNoFilter", ElementKind::kUInt, 2, {3, 2, 4}, {9, 10, 7}, {16, 16, 16},
           {16, 16, 16}, kNone, Order::kColMajor, Order::kMultiMap};
  c.convert = true;
  run_config(c);
}

}  // namespace
}  // namespace tessera
