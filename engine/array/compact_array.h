// compact_array.h — a compact array (Schema::compact): Array's sibling implementation for
// small fixed arrays (at most 64 KiB of fixed-size cells that can never grow or be
// filtered: HDF5's compact and small contiguous layouts).  Its cells are one catalog
// record (CompactCells) — no fragments, tiles, journals or directory — loaded on first
// use and rewritten by the flush after a write.  Array delegates every operation of such
// an array here; locking and the Status boundary stay in Array.
#pragma once
#include <cstdint>

#include "engine/array/array_store.h"
#include "engine/array/compact_cells.h"

namespace tessera {

class CompactArray {
 public:
  // store: the array's (a CatalogStore: compact arrays live only in catalogs).
  // collective: an MPI rank's view (read-only, see write()).  fresh: the array was just
  // created, so it has no cells record to look up (every cell is the fill value).
  CompactArray(const Schema& schema, ArrayStore& store, bool durable_writes, bool collective, bool fresh = false);

  // Array::write / write_points / read / read_points on the cells (selections checked by
  // the caller); a durable-mode write publishes the record at once.
  void write(const Selection& sel, const uint8_t* src, const uint64_t* sstride);
  void write_points(const uint64_t* coords, size_t n, const uint8_t* values);
  void read(const Selection& sel, uint8_t* dst, const uint64_t* dstride);
  void read_points(const uint64_t* coords, size_t n, uint8_t* dst);
  // The extent is fixed: only the current one is accepted.
  void set_extent(const Coords& current, const Coords& extent) const;
  // The record's size once written, else 0.
  uint64_t storage_bytes();
  // Publishes the cells record if written since the last publish: into the caller's
  // catalog batch, or committed now (synced unless `synced`).
  void publish(bool synced, CatalogBatch* into);
  // Another process may have rewritten the record: re-read it on next use (unless this
  // one has unpublished writes).
  void refresh();

 private:
  CompactCells& cells();  // loaded from the record on first use
  void require_writable() const;
  ArrayStore& store_;
  CompactCells cells_;
  bool durable_writes_, collective_;
  bool loaded_ = false;
  bool dirty_ = false;  // written since the last publish
};

}  // namespace tessera
