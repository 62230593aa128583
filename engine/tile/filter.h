// The per-tile filter pipeline: each tile's bytes pass through the filters in order on
// write and in reverse on read.  HDF5's shuffle/deflate map onto kShuffle/kZlib, whose
// bytes are exactly what HDF5's own filters produce and read (so a tile is an HDF5 chunk
// byte for byte: direct chunk I/O); zstd and lz4 are the fast codecs.  kDeflate, kZstd
// and kLz4 prefix their stream with its decoded size (a bound checked before decoding).  A pipeline is stored in every fragment footer, so a
// fragment can always be read without the schema that wrote it.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/util/bytes.h"

namespace tessera {

enum class FilterType : uint8_t {
  kShuffle = 1,  // byte transpose by element size (HDF5's shuffle)
  kDeflate = 2,  // zlib, level 1..9
  kZstd = 3,     // level 1..19 (0 = default 3)
  kLz4 = 4,      // level ignored
  kZlib = 5,     // a bare zlib stream (RFC 1950), HDF5's deflate format, level 1..9
};

struct Filter {
  FilterType type;
  int32_t level = 0;
  bool operator==(const Filter& o) const { return type == o.type && level == o.level; }
};

class FilterPipeline {
 public:
  FilterPipeline() = default;
  FilterPipeline(std::vector<Filter> filters, uint32_t elem_size)
      : filters_(std::move(filters)), elem_size_(elem_size) {}

  const std::vector<Filter>& filters() const { return filters_; }
  uint32_t elem_size() const { return elem_size_; }
  bool empty() const { return filters_.empty(); }
  // Throws kInvalidArgument for unknown filters or bad levels.
  void validate() const;

  // Applies the filters; `out` is replaced.  With no filters, out = copy of in.
  void encode(const uint8_t* in, size_t n, std::vector<uint8_t>& out) const;
  // Reverses the filters; the result must be exactly raw_size bytes, else throws kCorrupt
  // (message prefixed by `what`).  Never reads or writes out of bounds on bad input.
  void decode(const uint8_t* in, size_t n, size_t raw_size, std::vector<uint8_t>& out,
              const std::string& what) const;

  void serialize(ByteWriter& w) const;
  static FilterPipeline deserialize(ByteReader& r);
  bool operator==(const FilterPipeline& o) const {
    return filters_ == o.filters_ && elem_size_ == o.elem_size_;
  }

 private:
  std::vector<Filter> filters_;
  uint32_t elem_size_ = 1;
};

// `p` with its slow codecs (deflate, zstd) replaced by one lz4 stage, shuffle kept: the
// pipeline of a write-buffer spill of scattered points (a small, short-lived delta that
// consolidation rewrites with the schema's pipeline; docs/engine.md "Sparse deltas").
FilterPipeline fast_variant(const FilterPipeline& p);

}  // namespace tessera
