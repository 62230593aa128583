// WriteBudget (write_budget.h) on its own, with owners that only count bytes, and with
// arrays: one context's budget holds the write buffers of many arrays within its limit
// (plus the write in hand), flushes them in the background while reads and writes go on,
// and what is read afterwards is what a model says was written.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/context/context.h"
#include "engine/testing/testutil.h"
#include "engine/write/write_budget.h"

namespace tessera {
namespace {

using testutil::Rng;
using testutil::status_str;

// An owner whose flush takes a while and then gives its bytes back.
struct FakeOwner : BufferOwner {
  WriteBudget* b = nullptr;
  std::atomic<int> flushes{0};
  std::atomic<uint64_t> held{0};
  void flush_in_background() noexcept override {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    held = 0;
    ++flushes;  // before the report: it may wake the waiting writer at once
    b->report(this, 0);
  }
};

TEST(WriteBudget, OverTheLimitTheLargestIsFlushedAndWritersWait) {
  WriteBudget b(1000);
  FakeOwner small, big;
  small.b = big.b = &b;
  EXPECT_FALSE(b.report(&small, 300));
  EXPECT_TRUE(b.report(&big, 900));
  EXPECT_EQ(b.used(), 1200u);
  EXPECT_EQ(b.largest(), &big);
  b.wait_for_room();  // queues the largest and waits for it
  EXPECT_EQ(big.flushes.load(), 1);
  EXPECT_EQ(small.flushes.load(), 0);
  EXPECT_EQ(b.used(), 300u);
  EXPECT_EQ(b.peak(), 1200u);
  b.forget(&small);
  EXPECT_EQ(b.used(), 0u);
}

TEST(WriteBudget, ForgetWaitsForARunningFlush) {
  WriteBudget b(10);
  FakeOwner o;
  o.b = &b;
  b.report(&o, 100);
  b.request(&o);
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  b.forget(&o);  // returns only once the flush (if it started) is over
  EXPECT_EQ(b.used(), 0u);
  b.wait_idle(&o);
}

TEST(WriteBudget, AFlushThatDoesNotHelpDoesNotHangTheWriter) {
  struct Stuck : BufferOwner {
    void flush_in_background() noexcept override {}  // a failing disk: keeps its bytes
  } s;
  WriteBudget b(10);
  b.report(&s, 100);
  b.wait_for_room();  // gives up after fruitless flushes instead of waiting forever
  EXPECT_EQ(b.used(), 100u);
  b.forget(&s);
}

Schema grid_schema() {
  Schema s;
  s.extent = s.max_extent = {512, 512};
  s.tile_extent = {64, 64};
  s.elem_size = 4;
  s.kind = ElementKind::kUInt;
  s.fill = {0xFF, 0xFF, 0xFF, 0xFF};
  return s;
}

// Many arrays of one context, in three containers (files), under a small budget:
// scattered writes and small box writes (blobs) to all of them, in rounds, with reads in
// between; the budget's peak stays within its limit plus the largest single write, and
// every array reads back exactly the model.
TEST(WriteBudget, ManyArraysShareOneBoundAndReadBackTheModel) {
  testutil::TempDir dir("tessera_budget");
  constexpr int kFiles = 3;
  std::vector<std::unique_ptr<Container>> conts(kFiles);
  for (int c = 0; c < kFiles; ++c)
    ASSERT_TRUE(Container::create(dir.sub("c" + std::to_string(c) + ".tsr"), Container::CreateMode::kExclusive,
                                  &conts[c])
                    .ok());
  EngineOptions eo;
  eo.write_memory_mb = 2;  // 2 MiB for all 12 arrays
  auto ctx = std::make_shared<Context>(eo);
  constexpr int kArrays = 12;
  std::vector<uint64_t> ids(kArrays);
  std::vector<std::unique_ptr<Array>> arrays(kArrays);
  ArrayOptions o;
  o.durable_writes = false;
  o.context = ctx;
  o.inline_fragment_bytes = 0;
  for (int i = 0; i < kArrays; ++i) {
    ASSERT_TRUE(conts[i % kFiles]->create_array(grid_schema(), &ids[i]).ok());
    ASSERT_TRUE(conts[i % kFiles]->open_array(ids[i], true, o, &arrays[i]).ok());
  }
  std::vector<std::map<uint64_t, uint32_t>> model(kArrays);
  Rng rng(testutil::named_seed("WriteBudget.ManyArrays", 77));
  constexpr size_t kPoints = 5000;  // ~120 KiB of buffer per write
  uint64_t biggest_write = 0;
  for (int round = 0; round < 30; ++round) {
    for (int i = 0; i < kArrays; ++i) {
      std::vector<uint64_t> pts(kPoints * 2);
      std::vector<uint32_t> v(kPoints);
      for (size_t k = 0; k < kPoints; ++k) {
        pts[2 * k] = rng.below(512);
        pts[2 * k + 1] = rng.below(512);
        v[k] = static_cast<uint32_t>(round * 100000 + k);
        model[i][pts[2 * k] * 512 + pts[2 * k + 1]] = v[k];
      }
      ASSERT_TRUE(arrays[i]->write_points(pts.data(), kPoints, v.data()).ok());
      biggest_write = std::max<uint64_t>(biggest_write, kPoints * (16 + 4) * 2);  // capacity slack
      if (rng.chance(0.5)) {  // a box below a tile's size: a blob
        const uint64_t r0 = rng.below(500), c0 = rng.below(450);
        const Box b({r0, c0}, {r0 + rng.range(1, 11), c0 + rng.range(15, 61)});
        std::vector<uint32_t> bv;
        for (uint64_t r = b.lo[0]; r <= b.hi[0]; ++r)
          for (uint64_t c = b.lo[1]; c <= b.hi[1]; ++c) {
            bv.push_back(static_cast<uint32_t>(round * 100000 + 50000 + bv.size()));
            model[i][r * 512 + c] = bv.back();
          }
        ASSERT_TRUE(arrays[i]->write(Selection::from_box(b), bv.data()).ok());
      }
    }
    if (round % 7 == 3) {  // a read in the middle: sees buffered, in-flight and written cells
      int i = static_cast<int>(rng.below(kArrays));
      std::vector<uint32_t> got(512 * 512);
      ASSERT_TRUE(arrays[i]->read(Selection::from_box(Box({0, 0}, {511, 511})), got.data()).ok());
      for (uint64_t c = 0; c < got.size(); ++c) {
        auto it = model[i].find(c);
        ASSERT_EQ(got[c], it == model[i].end() ? 0xFFFFFFFFu : it->second) << "array " << i << " cell " << c;
      }
    }
  }
  // Slack: the write in hand lands whole before its writer waits, and a read sorting a
  // buffer copies it with its keys for a moment (at most the limit again).  Without the
  // budget the buffers would hold all 72 MB written.
  EXPECT_LE(ctx->budget().peak(), 2 * ctx->budget().limit() + 4 * biggest_write)
      << "the budget's peak passed twice its limit";
  EXPECT_GT(arrays[0]->fragments().size(), 1u) << "the budget never flushed anything";
  for (int i = 0; i < kArrays; ++i) ASSERT_TRUE(arrays[i]->flush().ok());
  arrays.clear();  // every array gone: the budget holds nothing but kept blob memory
  EXPECT_EQ(ctx->budget().used(), ctx->blob_memory().kept());
  for (int i = 0; i < kArrays; ++i) {
    std::unique_ptr<Array> a;
    ASSERT_TRUE(conts[i % kFiles]->open_array(ids[i], false, ArrayOptions(), &a).ok());
    std::vector<uint32_t> got(512 * 512);
    ASSERT_TRUE(a->read(Selection::from_box(Box({0, 0}, {511, 511})), got.data()).ok());
    for (uint64_t c = 0; c < got.size(); ++c) {
      auto it = model[i].find(c);
      ASSERT_EQ(got[c], it == model[i].end() ? 0xFFFFFFFFu : it->second) << "reopened array " << i << " cell " << c;
    }
  }
}

// A writer thread and a reader thread on one array while background flushes run: the
// reader only ever sees a cell's fill value or a value the writer wrote there, and once
// it saw a value it never sees an older one again (newest-wins at every moment).  The
// writer alternates between the top and the bottom half (points, and boxes kept as
// blobs), the reader reads random boxes and point lists: reads of the half a flush in
// flight holds wait for it, reads of the other half go on (finish_parked_for) — both must
// see the same consistent view.
TEST(WriteBudget, ReadsDuringBackgroundFlushesSeeAConsistentView) {
  testutil::TempDir dir("tessera_budget");
  std::unique_ptr<Container> cont;
  ASSERT_TRUE(Container::create(dir.sub("c.tsr"), Container::CreateMode::kExclusive, &cont).ok());
  EngineOptions eo;
  eo.write_memory_mb = 1;
  auto ctx = std::make_shared<Context>(eo);
  uint64_t id;
  ASSERT_TRUE(cont->create_array(grid_schema(), &id).ok());
  ArrayOptions o;
  o.durable_writes = false;
  o.context = ctx;
  o.buffer_budget = 256 << 10;  // background flushes every few writes
  std::unique_ptr<Array> a;
  ASSERT_TRUE(cont->open_array(id, true, o, &a).ok());
  // Cell c gets values c * 1000 + round, rounds increasing: a value's round says its age.
  constexpr int kRounds = 60;
  constexpr uint64_t kCells = 64 * 512;
  std::atomic<bool> done{false};
  std::atomic<int> bad{0}, reads{0};
  std::thread reader([&] {
    std::vector<int> seen(kCells, -1);
    auto check = [&](uint64_t c, uint32_t got) {
      if (got == 0xFFFFFFFFu) {
        if (seen[c] >= 0) ++bad;  // was written, now reads as fill
        return;
      }
      const int round = static_cast<int>(got % 1000);
      if (got / 1000 != c || round < seen[c]) ++bad;
      seen[c] = round;
    };
    Rng rr(6);
    std::vector<uint32_t> got;
    while (!done && bad == 0) {
      ++reads;
      if (rr.chance(0.5)) {
        const uint64_t r0 = rr.below(64), c0 = rr.below(512);
        const uint64_t r1 = r0 + rr.below(64 - r0), c1 = c0 + rr.below(512 - c0);
        got.resize((r1 - r0 + 1) * (c1 - c0 + 1));
        if (!a->read(Selection::from_box(Box({r0, c0}, {r1, c1})), got.data()).ok()) {
          ++bad;
          return;
        }
        size_t k = 0;
        for (uint64_t r = r0; r <= r1; ++r)
          for (uint64_t c = c0; c <= c1; ++c) check(r * 512 + c, got[k++]);
      } else {
        // Points within one half or across both.
        const uint64_t lo = rr.chance(0.5) ? 0 : 32, rows = rr.chance(0.3) ? 64 - lo : 32;
        std::vector<uint64_t> pts, cells;
        for (int k = 0; k < 200; ++k) {
          const uint64_t c = lo * 512 + rr.below(rows * 512);
          cells.push_back(c);
          pts.push_back(c / 512);
          pts.push_back(c % 512);
        }
        got.resize(cells.size());
        if (!a->read_points(pts.data(), cells.size(), got.data()).ok()) {
          ++bad;
          return;
        }
        for (size_t k = 0; k < cells.size(); ++k) check(cells[k], got[k]);
      }
    }
  });
  Rng rng(5);
  for (int round = 0; round < kRounds; ++round) {
    const uint64_t lo = round % 2 ? 32 : 0;  // this round's half
    std::vector<uint64_t> pts;
    std::vector<uint32_t> v;
    for (int k = 0; k < 4000; ++k) {
      uint64_t c = lo * 512 + rng.below(32 * 512);
      pts.push_back(c / 512);
      pts.push_back(c % 512);
      v.push_back(static_cast<uint32_t>(c * 1000 + round));
    }
    ASSERT_TRUE(a->write_points(pts.data(), v.size(), v.data()).ok());
    for (int k = 0; k < 4; ++k) {  // boxes of 64-1024 cells: blobs
      const uint64_t r0 = lo + rng.below(24), c0 = rng.below(384);
      const Box b({r0, c0}, {r0 + rng.range(1, 7), c0 + rng.range(31, 127)});
      std::vector<uint32_t> bv;
      for (uint64_t r = b.lo[0]; r <= b.hi[0]; ++r)
        for (uint64_t c = b.lo[1]; c <= b.hi[1]; ++c) bv.push_back(static_cast<uint32_t>((r * 512 + c) * 1000 + round));
      ASSERT_TRUE(a->write(Selection::from_box(b), bv.data()).ok());
    }
  }
  done = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_GT(a->fragments().size(), 2u) << "no background flush happened";
}

}  // namespace
}  // namespace tessera
