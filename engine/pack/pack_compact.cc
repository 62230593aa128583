// pack_compact.cc — PackStore::compact (pack_store.h): space returned at a clean close.
// Freed bytes are reused by later allocations, but a pack whose files were deleted in
// bulk (a vacuum, a consolidation) would keep its size; moving the highest extents down
// into the holes lets the close cut the file (issue 42: after a vacuum, at most 1.2x the
// live data).  A move is a copy plus an `extent` record remapping the file's range; the
// old bytes are freed only once that record is durable, so a crash at any point leaves
// either mapping whole.
#include <algorithm>
#include <vector>

#include "engine/pack/pack_store.h"

namespace tessera {
namespace pack {

int PackStore::compact() {
  if (readers_present()) return 0;  // they may still read the bytes a move would free
  for (const Range& r : retired_) free_.add(r);
  retired_.clear();
  std::vector<Tree::Placed> extents = tree_.placed();
  uint64_t live = slot_.checkpoint_len;
  for (const Range& b : journal_blocks_) live += b.len;
  for (const Tree::Placed& p : extents) live += p.at.len;
  if (free_.total_below(region_end_) * 5 <= live + (1 << 20)) return 0;
  std::sort(extents.begin(), extents.end(),
            [](const Tree::Placed& a, const Tree::Placed& b) { return a.at.off > b.at.off; });
  std::vector<uint8_t> buf;
  for (const Tree::Placed& p : extents) {
    // Piece by piece into the lowest holes below the extent, while there are any.
    for (uint64_t done = 0; done < p.at.len;) {
      Range to;
      if (!free_.take_lowest(p.at.off, std::min<uint64_t>(p.at.len - done, 8 << 20), &to)) break;
      buf.resize(to.len);
      int rc = read_at(buf.data(), to.len, p.at.off + done);
      if (!rc) rc = write_at(buf.data(), to.len, to.off);
      Record r;
      r.type = RecordType::kExtent;
      r.a = p.ino;
      r.b = p.file_off + done;
      r.c = to.off;
      r.d = to.len;
      if (!rc) rc = log(r);  // the old bytes go to pending_: free after the sync below
      if (rc) {
        free_.add(to);
        return rc;
      }
      done += to.len;
    }
  }
  return sync();
}

}  // namespace pack
}  // namespace tessera
