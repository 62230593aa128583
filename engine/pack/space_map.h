// space_map.h — the free ranges of a pack (docs/format.md, "Free space"): coalesced on
// return, handed out best-fit, or at a wanted offset so that a growing file stays one
// extent.  Not recorded in the file: an opener recomputes it from the tree.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "engine/pack/pack_format.h"

namespace tessera {
namespace pack {

class SpaceMap {
 public:
  void add(Range r);
  // The smallest free range of at least len bytes, cut from its start.
  bool take(uint64_t len, Range* out);
  // Exactly [off, off + len), when all of it is free.
  bool take_at(uint64_t off, uint64_t len);
  // The free range ending at `end`, removed (the pack's end can move back over it).
  bool take_ending_at(uint64_t end, Range* out);
  // The lowest free bytes below `limit`: at most max_len of them, from the start of the
  // lowest free range (compaction moves data down into these).
  bool take_lowest(uint64_t limit, uint64_t max_len, Range* out);
  // Free bytes below `limit`.
  uint64_t total_below(uint64_t limit) const;
  uint64_t total() const { return total_; }
  void clear() { by_off_.clear(), total_ = 0; }
  // [from, to) minus the given ranges (in any order, overlaps allowed).
  static std::vector<Range> complement(uint64_t from, uint64_t to, std::vector<Range> used);

 private:
  std::map<uint64_t, uint64_t> by_off_;  // offset -> length
  uint64_t total_ = 0;
};

}  // namespace pack
}  // namespace tessera
