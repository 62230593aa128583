// plan_window (block_window.h) against a model: random runs over a random tile, read
// window by window the way Fragment::read_dense_runs does (the file's bytes dealt out to
// the plan's pieces in order, then its copies made).  Every run must end up holding the
// file's bytes at its offset, nothing outside the runs may be written, every block holding
// a run byte must be read exactly once, and the limits (pieces, scratch, window size) must
// hold.  Also: the checksum of a block split into spans equals the one-shot checksum.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "engine/fragment/block_window.h"
#include "engine/util/checksum.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using testutil::Rng;

TEST(BlockWindow, SpansChecksumEqualsOneShot) {
  Rng rng(5);
  std::vector<uint8_t> bytes(70000);
  rng.fill(bytes.data(), bytes.size());
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = rng.gen()() % bytes.size();
    std::vector<ByteSpan> spans;
    std::vector<std::vector<uint8_t>> copies;  // each span in its own buffer
    for (size_t at = 0; at < n;) {
      const size_t len = std::min<size_t>(n - at, 1 + rng.gen()() % 5000);
      copies.emplace_back(bytes.begin() + at, bytes.begin() + at + len);
      at += len;
    }
    for (auto& c : copies) spans.push_back({c.data(), c.size()});
    EXPECT_EQ(checksum64_spans(spans.data(), spans.size()), checksum64(bytes.data(), n)) << "trial " << trial;
  }
}

TEST(BlockWindow, RandomRunsReadExactlyOnce) {
  Rng rng(11);
  for (int trial = 0; trial < 3000; ++trial) {
    const uint64_t B = 1 + rng.gen()() % 96;
    const uint64_t size = 1 + rng.gen()() % (B * 24);
    std::vector<uint8_t> file(size);
    rng.fill(file.data(), size);
    // Runs: ascending, disjoint; their destinations in one buffer, sometimes abutting.
    std::vector<ByteRun> runs;
    std::vector<uint8_t> dst(size * 3 + 64, 0xA5);
    uint64_t off = rng.gen()() % std::min<uint64_t>(size, 3 * B), at = 0;
    while (off < size) {
      const uint64_t len = std::min<uint64_t>(size - off, 1 + rng.gen()() % (rng.gen()() % 2 ? 8 : 3 * B));
      if (rng.gen()() % 3) at += rng.gen()() % 7;  // else abutting the previous destination
      runs.push_back({off, len, dst.data() + at});
      at += len;
      off += len + (rng.gen()() % 2 ? 0 : rng.gen()() % (4 * B));
    }
    if (runs.empty()) continue;
    const WindowLimits lim{B, size, B * (1 + rng.gen()() % 8), rng.gen()() % (4 * B), 1 + rng.gen()() % 48,
                           1 + rng.gen()() % 12};
    std::vector<uint8_t> want(dst);
    for (const ByteRun& r : runs) std::memcpy(want.data() + (r.dst - dst.data()), &file[r.off], r.len);

    std::set<uint64_t> read_blocks;
    WindowPlan plan;
    std::vector<uint8_t> scratch;
    size_t k = 0;
    uint64_t skip = 0;
    int windows = 0;
    while (k < runs.size()) {
      ASSERT_LT(++windows, 10000) << "no progress, trial " << trial;
      plan_window(runs, k, skip, lim, &plan);
      ASSERT_LT(plan.b0, plan.b1) << "trial " << trial;
      ASSERT_EQ(plan.w0, plan.b0 * B);
      ASSERT_EQ(plan.w1, std::min(size, plan.b1 * B));
      ASSERT_LE((plan.b1 - plan.b0) * B, std::max(B, lim.max_bytes / B * B));
      ASSERT_LE(plan.pieces.size(), lim.max_pieces) << "trial " << trial;
      if (plan.b1 - plan.b0 > 1) {
        ASSERT_LE(plan.scratch_bytes, lim.max_scratch) << "trial " << trial;
      }
      for (uint64_t b = plan.b0; b < plan.b1; ++b) ASSERT_TRUE(read_blocks.insert(b).second) << "block read twice";
      // Deal the window's file bytes out to the pieces, in order.
      scratch.assign(plan.scratch_bytes, 0);
      uint64_t pos = plan.w0, scratch_used = 0;
      for (const WindowPlan::Piece& p : plan.pieces) {
        ASSERT_GT(p.len, 0u);
        ASSERT_LE(pos + p.len, plan.w1);
        if (p.dst) {
          std::memcpy(p.dst, &file[pos], p.len);
        } else {
          ASSERT_LE(p.soff + p.len, scratch.size());
          std::memcpy(&scratch[p.soff], &file[pos], p.len);
          scratch_used += p.len;
        }
        pos += p.len;
      }
      ASSERT_EQ(pos, plan.w1);
      ASSERT_EQ(scratch_used, plan.scratch_bytes);
      for (const WindowPlan::Copy& c : plan.copies) {
        ASSERT_LE(c.soff + c.len, scratch.size());
        std::memcpy(c.dst, &scratch[c.soff], c.len);
      }
      // The next window starts after this one.
      if (plan.next_run < runs.size()) {
        ASSERT_GE(runs[plan.next_run].off + plan.next_skip, plan.w1);
      }
      k = plan.next_run;
      skip = plan.next_skip;
    }
    ASSERT_EQ(dst, want) << "trial " << trial;
    for (const ByteRun& r : runs)
      for (uint64_t b = r.off / B; b <= (r.off + r.len - 1) / B; ++b) ASSERT_TRUE(read_blocks.count(b));
  }
}

}  // namespace
}  // namespace tessera
