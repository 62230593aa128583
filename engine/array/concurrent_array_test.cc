// Several threads on one Array at once (array.h: every method is thread-safe): writers of
// disjoint row bands, each checking its band against its own model after every write,
// while other threads flush, build the value index, consolidate and read.  Small write
// budgets keep the background flusher busy.  Run under ThreadSanitizer by
// `scripts/test --tsan` (docs/reliability.md); in the ordinary build it checks the
// results against the model.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "engine/array/array.h"
#include "engine/context/context.h"
#include "engine/index/index_builder.h"
#include "engine/context/options.h"
#include "engine/testing/testutil.h"

using namespace tessera;

namespace {

constexpr uint64_t kRows = 64, kCols = 48, kBand = 16, kWriters = 4;

Schema band_schema() {
  Schema s;
  s.extent = {kRows, kCols};
  s.max_extent = s.extent;
  s.tile_extent = {8, 8};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  s.filters = FilterPipeline({{FilterType::kShuffle, 0}, {FilterType::kZstd, 1}}, 4);
  s.fill = {0xFF, 0xFF, 0xFF, 0xFF};
  return s;
}

}  // namespace

TEST(ConcurrentArray, WritersFlushIndexConsolidateAndReadersAgreeWithTheModel) {
  testutil::TempDir dir("tessera_concurrent");
  const std::string path = dir.sub("a");
  ASSERT_TRUE(Array::create(path, band_schema()).ok());
  EngineOptions eo;
  eo.write_memory_mb = 1;
  eo.threads = 2;
  eo.io_threads = 2;
  eo.tile_cache_mb = 1;
  auto ctx = std::make_shared<Context>(eo);
  ArrayOptions o;
  o.durable_writes = false;
  o.context = ctx;
  o.buffer_budget = 16 << 10;
  o.blob_min_cells = 4;
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(path, true, o, &a).ok());

  std::vector<int32_t> model(kRows * kCols, -1);  // each writer owns its band's cells
  std::atomic<int> failures{0};
  std::atomic<bool> writers_done{false};
  const uint64_t seed = testutil::named_seed("ConcurrentArray", 19);
  std::printf("[ seed     ] ConcurrentArray: %llu\n", static_cast<unsigned long long>(seed));
  const int rounds = testutil::kSanitized ? 25 : 40;

  auto writer = [&](uint64_t w) {
    std::mt19937_64 rng(seed + w);
    const uint64_t r_lo = w * kBand;
    for (int round = 0; round < rounds && failures == 0; ++round) {
      const uint64_t r0 = r_lo + rng() % kBand, r1 = r0 + rng() % (r_lo + kBand - r0);
      const uint64_t c0 = rng() % kCols, c1 = c0 + rng() % (kCols - c0);
      std::vector<int32_t> v;
      for (uint64_t r = r0; r <= r1; ++r)
        for (uint64_t c = c0; c <= c1; ++c) {
          const int32_t x = static_cast<int32_t>((w << 24) | (round << 12) | (r * kCols + c) % 4096);
          v.push_back(x);
          model[r * kCols + c] = x;
        }
      if (!a->write(Selection::from_box(Box({r0, c0}, {r1, c1})), v.data()).ok()) ++failures;
      // The whole band reads back as this writer's model, whatever the others do.
      std::vector<int32_t> got(kBand * kCols);
      if (!a->read(Selection::from_box(Box({r_lo, 0}, {r_lo + kBand - 1, kCols - 1})), got.data()).ok()) {
        ++failures;
        continue;
      }
      for (uint64_t i = 0; i < got.size(); ++i)
        if (got[i] != model[r_lo * kCols + i]) {
          ADD_FAILURE() << "writer " << w << " round " << round << " cell " << r_lo * kCols + i << ": got "
                        << got[i] << ", wrote " << model[r_lo * kCols + i];
          ++failures;
          break;
        }
      if (round % 10 == 9 && !a->flush().ok()) ++failures;
    }
  };
  std::vector<std::thread> threads;
  for (uint64_t w = 0; w < kWriters; ++w) threads.emplace_back(writer, w);
  // Maintenance at the same time: index builds, consolidation, whole-array reads.
  std::thread maintenance([&] {
    int i = 0;
    std::vector<int32_t> all(kRows * kCols);
    while (!writers_done && failures == 0) {
      switch (i++ % 3) {
        case 0: {
          IndexBuild b;
          if (!a->build_index(IndexOptions{}, &b).ok()) ++failures;
          break;
        }
        case 1:
          if (!a->consolidate_auto(2, 100.0).ok()) ++failures;
          break;
        default:
          if (!a->read(Selection::from_box(Box({0, 0}, {kRows - 1, kCols - 1})), all.data()).ok()) ++failures;
      }
    }
  });
  for (auto& t : threads) t.join();
  writers_done = true;
  maintenance.join();
  ASSERT_EQ(failures.load(), 0);
  ASSERT_TRUE(a->flush().ok());
  a.reset();
  // Reopened: every cell is the model's.
  ASSERT_TRUE(Array::open(path, false, ArrayOptions{}, &a).ok());
  std::vector<int32_t> all(kRows * kCols);
  ASSERT_TRUE(a->read(Selection::from_box(Box({0, 0}, {kRows - 1, kCols - 1})), all.data()).ok());
  for (uint64_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], model[i]) << "cell " << i;
}
