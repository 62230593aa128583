// consolidator.h — the merge of consolidation (TileDB §4.3), apart from publishing it.
//
// The inputs (adjacent fragments, oldest first) are merged tile by tile: for every space
// tile any input touches, their pieces are painted oldest to newest into one tile buffer
// with a coverage mask (memory: one tile plus the inputs' decoded tiles for that tile).
// Cells no input covered stay uncovered — they must keep falling through to older
// fragments — so a tile whose covered cells fill a box becomes a dense piece and any
// other tile keeps its covered cells as sparse cells.  Fill pieces become explicit fill
// values: they must keep hiding older data.  Array::consolidate_range publishes the result.
#pragma once
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "engine/fragment.h"
#include "engine/fragment_writer.h"
#include "engine/layout.h"
#include "engine/schema.h"

namespace tessera {

class Consolidator {
 public:
  Consolidator(const Schema& schema, std::vector<std::shared_ptr<Fragment>> in);
  // Tile keys point at layout_: not copyable.
  Consolidator(const Consolidator&) = delete;
  Consolidator& operator=(const Consolidator&) = delete;
  // Restricts the merge to part `part` of `parts`: a contiguous share of the touched
  // tiles in tile order (parallel consolidation).  False when the share is empty.
  bool select_part(uint32_t part, uint32_t parts);
  // The result's id: the newest input's with a higher generation (parts get distinct
  // ones), so it sorts exactly where the inputs were.
  FragmentId result_id(uint32_t part = 0) const;
  // The ids the result replaces (every input).
  std::vector<FragmentId> replaced() const;
  // Writes the merged tiles into w (the caller sets its `replaces` and publishes it).
  void write(FragmentWriter& w);

 private:
  struct TileKey {
    const Layout* layout;
    Coords t;
    bool operator<(const TileKey& o) const { return layout->compare_tiles(t.data(), o.t.data()) < 0; }
  };
  Schema schema_;
  Layout layout_;
  std::vector<std::shared_ptr<Fragment>> in_;
  std::set<TileKey> tiles_;  // the tiles any input touches, in tile order
};

}  // namespace tessera
