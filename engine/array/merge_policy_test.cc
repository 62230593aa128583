// The size-tiered policy of automatic consolidation (merge_policy.h) against a brute-force
// model: after merging until nothing is due, no run of `fanin` similar fragments is left
// anywhere (checked position by position, by a loop written apart from the policy's), the
// count is within the stated bound, and appending equal records leaves O(log n)
// fragments at a write amplification of about log_fanin(n).
#include "engine/array/merge_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/testing/testutil.h"

namespace tessera {
namespace {

// True when some run of >= fanin adjacent sizes has every size within ratio of the run's
// largest *older-side growth* rule: a run read from its newest member back, each older
// one at most ratio times the largest seen so far (the model states the rule literally).
bool any_due(const std::vector<uint64_t>& s, const TieredPolicy& p) {
  for (size_t last = 0; last < s.size(); ++last) {
    size_t len = 1;
    uint64_t big = s[last];
    for (size_t k = last; k > 0; --k) {
      if (static_cast<double>(s[k - 1]) > p.ratio * static_cast<double>(big)) break;
      big = std::max(big, s[k - 1]);
      ++len;
    }
    if (len >= p.fanin) return true;
  }
  return false;
}

// Merges until nothing is due; a merge's result is `shrink` of its inputs' sum (overwrites
// and compression make it smaller).  Returns the bytes the merges wrote.
uint64_t settle(std::vector<uint64_t>* s, const TieredPolicy& p, double shrink = 1.0) {
  uint64_t written = 0;
  while (auto run = pick_tiered_merge(*s, p)) {
    auto [first, last] = *run;
    EXPECT_LE(first, last);
    EXPECT_LT(last, s->size());
    EXPECT_GE(last - first + 1, p.fanin);
    uint64_t sum = std::accumulate(s->begin() + first, s->begin() + last + 1, uint64_t{0});
    const uint64_t out = std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<double>(sum) * shrink));
    s->erase(s->begin() + first, s->begin() + last + 1);
    s->insert(s->begin() + first, out);
    written += out;
  }
  return written;
}

TEST(MergePolicy, NothingDueBelowFanin) {
  TieredPolicy p;
  EXPECT_FALSE(pick_tiered_merge({}, p));
  EXPECT_FALSE(pick_tiered_merge({10, 10, 10}, p));
  auto r = pick_tiered_merge({10, 10, 10, 10}, p);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 0u);
  EXPECT_EQ(r->second, 3u);
  // A much larger older fragment is not part of the run; the four newest are.
  r = pick_tiered_merge({1000, 10, 10, 10, 10}, p);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 1u);
  EXPECT_EQ(r->second, 4u);
  // The newest due run wins, though an older one is due too.
  r = pick_tiered_merge({5, 5, 5, 5, 100, 7, 7, 7, 7}, p);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 5u);
  EXPECT_EQ(r->second, 8u);
  // Smaller older fragments join a run read from a larger newer one (a large write after
  // small ones that had not merged yet): the large one is rewritten once.
  r = pick_tiered_merge({5, 5, 5, 5, 100}, p);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 0u);
  EXPECT_EQ(r->second, 4u);
  // A run not at the newest end: a much smaller fragment came last.
  r = pick_tiered_merge({50, 50, 50, 50, 3}, p);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 0u);
  EXPECT_EQ(r->second, 3u);
}

TEST(MergePolicy, RandomHistoriesSettleWithinTheBound) {
  testutil::Rng rng(testutil::base_seed(0x71E5));
  for (int round = 0; round < 300; ++round) {
    TieredPolicy p;
    p.fanin = 2 + rng.below(6);
    p.ratio = 1.25 + static_cast<double>(rng.below(400)) / 100.0;
    const double shrink = rng.chance(0.5) ? 1.0 : 0.3 + static_cast<double>(rng.below(70)) / 100.0;
    std::vector<uint64_t> s;
    const int pushes = 1 + static_cast<int>(rng.below(2000));
    for (int i = 0; i < pushes; ++i) {
      // Sizes of all kinds: records, bursts, a large write now and then.
      uint64_t size = rng.chance(0.02) ? rng.range(1 << 16, 1 << 22) : rng.range(64, rng.chance(0.5) ? 128 : 8192);
      s.push_back(size);
      // Sometimes several commits arrive before the background merge runs.
      if (rng.chance(0.7)) settle(&s, p, shrink);
    }
    settle(&s, p, shrink);
    SCOPED_TRACE("round " + std::to_string(round) + ": fanin " + std::to_string(p.fanin) + " ratio " +
                 std::to_string(p.ratio));
    ASSERT_FALSE(any_due(s, p)) << "the policy stopped while a run was due";
    const uint64_t lo = *std::min_element(s.begin(), s.end()), hi = *std::max_element(s.begin(), s.end());
    EXPECT_LE(s.size(), tiered_bound(lo, hi, p));
  }
}

TEST(MergePolicy, EqualAppendsLeaveLogarithmicFragmentsAndWriteAmplification) {
  for (size_t fanin : {2, 4, 8}) {
    TieredPolicy p;
    p.fanin = fanin;
    p.ratio = fanin == 2 ? 1.5 : 2.0;  // below fanin: a merged fragment is another tier
    std::vector<uint64_t> s;
    uint64_t written = 0, appended = 0;
    size_t most = 0;
    const uint64_t n = 100000;
    for (uint64_t i = 0; i < n; ++i) {
      s.push_back(700);  // a 64-value record with its footer
      appended += 700;
      written += settle(&s, p);
      most = std::max(most, s.size());
    }
    const double levels = std::ceil(std::log(static_cast<double>(n)) / std::log(static_cast<double>(fanin)));
    SCOPED_TRACE("fanin " + std::to_string(fanin));
    // At most fanin - 1 per tier, one more while a tier fills.
    EXPECT_LE(most, static_cast<size_t>((fanin - 1) * (levels + 1)));
    // Every byte is rewritten once per tier it climbs.
    const double amplification = static_cast<double>(appended + written) / static_cast<double>(appended);
    EXPECT_LE(amplification, levels + 1);
    EXPECT_GE(amplification, levels - 1);
  }
}

}  // namespace
}  // namespace tessera
