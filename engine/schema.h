// The schema of one array: the shape, the element, the tiling and how tiles are filtered.
// The connector maps an HDF5 dataset's dataspace, datatype and dcpl onto this.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/box.h"
#include "engine/filter.h"

namespace tessera {

// How to interpret an element's bytes for statistics (min/max).  kOpaque: no statistics.
enum class ElementKind : uint8_t { kOpaque = 0, kInt = 1, kUInt = 2, kFloat = 3 };

// Tile order and cell order.  Row-major is the default, as in HDF5.  The seam for
// space-filling orders (Z-order, Hilbert, MultiMap) is layout.h: new values here must be
// given a key function there; nothing else in the engine assumes a particular order.
enum class Order : uint8_t { kRowMajor = 0, kColMajor = 1 };

constexpr uint32_t kVarDescriptorSize = 32;

// The largest compact array (Schema::compact), in bytes of cells.
constexpr uint64_t kCompactMaxBytes = 64 << 10;

struct Schema {
  Coords extent;       // current extent per dimension
  Coords max_extent;   // kUnlimited allowed
  Coords tile_extent;  // tile (HDF5 chunk) extents; > 0
  uint32_t elem_size = 1;
  ElementKind kind = ElementKind::kOpaque;
  bool big_endian = false;     // byte order of stored elements (for statistics)
  std::vector<uint8_t> fill;   // elem_size bytes; empty means all zero
  FilterPipeline filters;
  Order cell_order = Order::kRowMajor;
  Order tile_order = Order::kRowMajor;
  uint64_t sparse_capacity = 10000;  // cells per sparse data tile
  // Variable-length cells (strings, vlen sequences).  Tiles then hold fixed 32-byte
  // descriptors (var_heap.h) and the bytes live in heap files; elem_size must be
  // kVarDescriptorSize and the fill value is the empty string.
  bool var = false;
  // A compact array (compact_cells.h): small, fixed extent, unfiltered, fixed-size cells,
  // kept as ONE catalog record of all its cells instead of fragments — HDF5's compact
  // layout (raw data in the object header) in the catalog's terms.  Serialized only when
  // set (schema version 2), so other schemas read as before.
  bool compact = false;

  int rank() const { return static_cast<int>(extent.size()); }
  Box domain() const;            // [0, extent-1]; empty (cells()==0) if any extent is 0
  uint64_t tile_cells() const;   // cells in one full tile
  const uint8_t* fill_value() const;  // elem_size bytes
  // Throws kInvalidArgument with a precise message.
  void validate() const;

  std::vector<uint8_t> serialize() const;
  static Schema deserialize(const uint8_t* p, size_t n, const std::string& what);
};

}  // namespace tessera
