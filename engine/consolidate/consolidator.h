// consolidator.h — the merge of consolidation (TileDB §4.3), apart from publishing it.
//
// The inputs (adjacent fragments, oldest first) are merged tile by tile: for every space
// tile any input touches, their pieces are painted oldest to newest into one tile buffer
// with a coverage mask (memory: one tile plus the inputs' decoded tiles for that tile).
// Cells no input covered stay uncovered — they must keep falling through to older
// fragments — so a tile whose written cells fill a box becomes a dense piece and any
// other tile keeps its written cells as sparse cells.  Undefined cells (fill boxes of
// erases and extent shrinks, erased cells) must keep hiding older data while older
// fragments exist: they stay undefined (a fill box where they fill the tile's box, erased
// cells otherwise).  A merge that starts at the array's oldest fragment has nothing older
// to hide, so it drops them: that is where an erase gives its space back.
// Array::consolidate_range publishes the result.
#pragma once
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "engine/fragment/fragment.h"
#include "engine/fragment/fragment_writer.h"
#include "engine/schema/layout.h"
#include "engine/schema/schema.h"

namespace tessera {

class Consolidator {
 public:
  // keep_erased: some fragment older than the inputs remains (see above).  The result is
  // in the schema's order; each input is read in its own (Fragment::layout(schema)), so
  // a schema in another order converts the inputs.
  Consolidator(const Schema& schema, std::vector<std::shared_ptr<Fragment>> in, bool keep_erased);
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
  bool keep_erased_;
  static constexpr uint8_t kCellNone = 0, kCellData = 1, kCellErased = 2;
  std::set<TileKey> tiles_;  // the tiles any input touches, in tile order
};

}  // namespace tessera
