// merge_policy.h — which fragments automatic consolidation merges (auto_merge.h): a
// size-tiered policy, as in LSM trees (LevelDB/RocksDB's universal compaction), over the
// fragments in their order (oldest first).  Merges take adjacent fragments only (the
// result sorts where its inputs were, so newest-wins stays right).
//
// A *run* starts at some fragment and takes the next older fragment while that one is at
// most `ratio` times the largest fragment the run holds; the run is due once it holds
// `fanin` fragments or more.  The policy picks the newest due run (the smallest, cheapest
// merges first), and the caller merges runs until none is due.
//
// Why this bounds what a read consults: when no run is due, the run from the newest
// fragment stops within fanin - 1 fragments at one more than `ratio` times larger than
// everything it passed; the run from there stops the same way, and so on.  So every
// fanin - 1 fragments the size grows by more than `ratio`, and
//     fragments <= (fanin - 1) * (1 + log_ratio(largest / smallest)),
// O(log n) of the bytes written for any write history (tiered_bound).  For a writer
// appending equal records the tiers are powers of fanin: at most fanin - 1 fragments per
// tier, and every byte is rewritten once per tier it climbs, i.e. a write amplification of
// about 1 + log_fanin(n) (measured: docs/engine.md, "Automatic consolidation").
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace tessera {

struct TieredPolicy {
  size_t fanin = 4;    // fragments of similar size that make a merge (>= 2)
  double ratio = 2.0;  // "similar": within this factor of the largest in the run (> 1)
};

// The newest due run of `sizes` (bytes, oldest first) as [first, last], or none.
std::optional<std::pair<size_t, size_t>> pick_tiered_merge(const std::vector<uint64_t>& sizes, const TieredPolicy& p);

// The most fragments the policy leaves when nothing is due, for fragments of sizes
// between `smallest` and `largest` bytes (the bound above).
size_t tiered_bound(uint64_t smallest, uint64_t largest, const TieredPolicy& p);

}  // namespace tessera
