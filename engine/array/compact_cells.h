// The cells of a compact array (Schema::compact): every cell of a small, fixed-extent
// array in one row-major buffer, stored as ONE catalog record (docs/format.md, "Compact
// arrays").  HDF5 keeps a compact dataset's raw data in its object header; tessera keeps
// a small dataset's cells in its catalog record for the same reason: a dataset of 100
// doubles should cost one record, not a fragment with a footer, a tile index and the
// objects that describe them.  A write rewrites the buffer in memory; the flush commits
// the whole record in its catalog batch (the catalog log is append-only, so this is still
// a new version appended, never an update in place).
//
// An array never written has no record and reads as its fill value everywhere.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/geometry/box.h"
#include "engine/schema/schema.h"

namespace tessera {

class CompactCells {
 public:
  explicit CompactCells(const Schema& schema);

  bool written() const { return !cells_.empty(); }
  uint64_t bytes() const { return total_; }  // of the whole array
  // The record's bytes: "TSRACELL" then the cells.  decode throws kCorrupt (naming
  // `what`) unless the record holds exactly this array's cells.
  std::string encode() const;
  void decode(std::string_view record, const std::string& what);

  // Selections as Array::write/read: src/dst in selection row-major order with element
  // strides per dimension.  A first write starts from the fill value everywhere.
  void write(const Selection& sel, const uint8_t* src, const uint64_t* sstride);
  void read(const Selection& sel, uint8_t* dst, const uint64_t* dstride) const;
  void write_points(const uint64_t* coords, size_t n, const uint8_t* values);
  void read_points(const uint64_t* coords, size_t n, uint8_t* dst) const;

 private:
  void materialize();  // fill value everywhere
  const uint8_t* image() const;  // the cells, or a fill image if never written
  uint64_t offset(const uint64_t* c) const;
  // Calls f(box lo per dimension, box shape, offset of the box in selection order) for
  // each box of the selection's product of intervals.
  template <class F>
  void for_each_box(const Selection& sel, const uint64_t* sstride, F f) const;

  int rank_ = 0;
  size_t es_ = 1;
  std::vector<uint8_t> fill_;  // one element
  uint64_t total_ = 0;
  uint64_t strides_[kMaxRank] = {};  // row-major element strides of the array
  std::vector<uint8_t> cells_;       // empty until written
  mutable std::vector<uint8_t> fill_image_;
};

}  // namespace tessera
