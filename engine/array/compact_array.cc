// compact_array.cc — see compact_array.h.
#include "engine/array/compact_array.h"

#include "engine/util/error.h"

namespace tessera {

CompactArray::CompactArray(const Schema& schema, ArrayStore& store, bool durable_writes, bool collective, bool fresh)
    : store_(store), cells_(schema), durable_writes_(durable_writes), collective_(collective), loaded_(fresh) {}

CompactCells& CompactArray::cells() {
  if (!loaded_) {
    std::string label;
    if (auto v = store_.compact_record(&label)) cells_.decode(*v, label);
    loaded_ = true;
  }
  return cells_;
}

// Each MPI rank would hold its own copy of the cells and only rank 0's catalog persists:
// writes from other ranks would be lost, so a compact array is read-only in a parallel
// file (it can only come from a serial writer: parallel files never create one).
void CompactArray::require_writable() const {
  if (collective_)
    throw_error(Errc::kUnsupported, "a compact array written serially cannot be written in a parallel (MPI-IO) file");
}

void CompactArray::write(const Selection& sel, const uint8_t* src, const uint64_t* sstride) {
  require_writable();
  cells().write(sel, src, sstride);
  dirty_ = true;
  if (durable_writes_) publish(false, nullptr);
}

void CompactArray::write_points(const uint64_t* coords, size_t n, const uint8_t* values) {
  require_writable();
  cells().write_points(coords, n, values);
  dirty_ = dirty_ || n > 0;
  if (durable_writes_ && n > 0) publish(false, nullptr);
}

void CompactArray::read(const Selection& sel, uint8_t* dst, const uint64_t* dstride) {
  if (sel.empty()) return;
  cells().read(sel, dst, dstride);
}

void CompactArray::read_points(const uint64_t* coords, size_t n, uint8_t* dst) { cells().read_points(coords, n, dst); }

void CompactArray::set_extent(const Coords& current, const Coords& extent) const {
  if (extent != current) throw_error(Errc::kInvalidArgument, "set_extent: a compact array's extent is fixed");
}

uint64_t CompactArray::storage_bytes() { return cells().written() ? cells_.bytes() : 0; }

// A dataset deleted meanwhile has no schema record: its cells must not come back (the
// store checks).
void CompactArray::publish(bool synced, CatalogBatch* into) {
  if (!dirty_) return;
  store_.publish_compact(cells_.encode(), cells_.bytes(), synced, into);
  dirty_ = false;
}

void CompactArray::refresh() {
  if (!dirty_) loaded_ = false;
}

}  // namespace tessera
