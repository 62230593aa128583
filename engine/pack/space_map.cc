#include "engine/pack/space_map.h"

#include <algorithm>
#include <iterator>

namespace tessera {
namespace pack {

void SpaceMap::add(Range r) {
  if (r.len == 0) return;
  total_ += r.len;
  auto next = by_off_.lower_bound(r.off);
  if (next != by_off_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == r.off) {
      r.off = prev->first;
      r.len += prev->second;
      by_off_.erase(prev);
    }
  }
  if (next != by_off_.end() && r.end() == next->first) {
    r.len += next->second;
    by_off_.erase(next);
  }
  by_off_[r.off] = r.len;
}

bool SpaceMap::take(uint64_t len, Range* out) {
  auto best = by_off_.end();
  for (auto it = by_off_.begin(); it != by_off_.end(); ++it)
    if (it->second >= len && (best == by_off_.end() || it->second < best->second)) best = it;
  if (best == by_off_.end()) return false;
  *out = Range{best->first, len};
  const Range rest{best->first + len, best->second - len};
  by_off_.erase(best);
  if (rest.len) by_off_[rest.off] = rest.len;
  total_ -= len;
  return true;
}

bool SpaceMap::take_at(uint64_t off, uint64_t len) {
  auto it = by_off_.upper_bound(off);
  if (it == by_off_.begin()) return false;
  --it;
  const Range r{it->first, it->second};
  if (r.off > off || r.end() < off + len) return false;
  by_off_.erase(it);
  if (off > r.off) by_off_[r.off] = off - r.off;
  if (r.end() > off + len) by_off_[off + len] = r.end() - off - len;
  total_ -= len;
  return true;
}

bool SpaceMap::take_ending_at(uint64_t end, Range* out) {
  if (by_off_.empty()) return false;
  auto it = std::prev(by_off_.end());
  if (it->first + it->second != end) return false;
  *out = Range{it->first, it->second};
  total_ -= it->second;
  by_off_.erase(it);
  return true;
}

bool SpaceMap::take_lowest(uint64_t limit, uint64_t max_len, Range* out) {
  if (by_off_.empty() || by_off_.begin()->first >= limit) return false;
  const Range r{by_off_.begin()->first, by_off_.begin()->second};
  const uint64_t len = std::min({r.len, max_len, limit - r.off});
  by_off_.erase(by_off_.begin());
  if (len < r.len) by_off_[r.off + len] = r.len - len;
  total_ -= len;
  *out = Range{r.off, len};
  return true;
}

uint64_t SpaceMap::total_below(uint64_t limit) const {
  uint64_t t = 0;
  for (auto& kv : by_off_) {
    if (kv.first >= limit) break;
    t += std::min(kv.second, limit - kv.first);
  }
  return t;
}

std::vector<Range> SpaceMap::complement(uint64_t from, uint64_t to, std::vector<Range> used) {
  std::sort(used.begin(), used.end(), [](const Range& a, const Range& b) { return a.off < b.off; });
  std::vector<Range> out;
  uint64_t at = from;
  for (const Range& u : used) {
    if (u.len == 0) continue;
    if (u.off > at && at < to) out.push_back({at, std::min(u.off, to) - at});
    at = std::max(at, u.end());
  }
  if (at < to) out.push_back({at, to - at});
  return out;
}

}  // namespace pack
}  // namespace tessera
