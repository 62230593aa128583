// merge_policy.cc — see merge_policy.h.
#include "engine/array/merge_policy.h"

#include <algorithm>
#include <cmath>

namespace tessera {

std::optional<std::pair<size_t, size_t>> pick_tiered_merge(const std::vector<uint64_t>& sizes, const TieredPolicy& p) {
  const size_t fanin = std::max<size_t>(p.fanin, 2);
  const size_t n = sizes.size();
  if (n < fanin) return std::nullopt;
  // Each start position, newest first.  A run from `last` ends where a fragment is more
  // than ratio times the largest before it; its length decides.
  for (size_t last = n; last-- > 0;) {
    uint64_t largest = sizes[last];
    size_t first = last;
    while (first > 0 && static_cast<double>(sizes[first - 1]) <= p.ratio * static_cast<double>(largest)) {
      --first;
      largest = std::max(largest, sizes[first]);
    }
    if (last - first + 1 >= fanin) return std::make_pair(first, last);
    if (last + 1 < fanin) break;  // shorter than a run could be from here down
  }
  return std::nullopt;
}

size_t tiered_bound(uint64_t smallest, uint64_t largest, const TieredPolicy& p) {
  const size_t fanin = std::max<size_t>(p.fanin, 2);
  const double lo = static_cast<double>(std::max<uint64_t>(smallest, 1));
  const double hi = static_cast<double>(std::max(largest, smallest));
  const double steps = p.ratio > 1 ? std::floor(std::log(hi / lo) / std::log(p.ratio)) : 0;
  return (fanin - 1) * (1 + static_cast<size_t>(std::max(0.0, steps)));
}

}  // namespace tessera
