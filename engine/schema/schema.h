// The schema of one array: the shape, the element, the tiling and how tiles are filtered.
// The connector maps an HDF5 dataset's dataspace, datatype and dcpl onto this.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/geometry/box.h"
#include "engine/tile/filter.h"

namespace tessera {

// How to interpret an element's bytes for statistics (min/max).  kOpaque: no statistics.
enum class ElementKind : uint8_t { kOpaque = 0, kInt = 1, kUInt = 2, kFloat = 3 };

// Tile order and cell order.  Row-major is the default, as in HDF5.  The space-filling
// orders (Z-order, Hilbert, MultiMap-style: docs/layouts.md) are tile orders; cells within
// a tile stay row- or column-major, which every copy between tiles and boxes relies on
// (strided runs).  Every order is implemented in layout.h and nowhere else.
enum class Order : uint8_t { kRowMajor = 0, kColMajor = 1, kZOrder = 2, kHilbert = 3, kMultiMap = 4 };
constexpr uint8_t kLastOrder = 4;

// "row-major", "column-major", "z-order", "hilbert", "multimap".
const char* order_name(Order o);
// Accepts the names above and "row", "column", "zorder", "morton" (any case); false if unknown.
bool parse_order(const std::string& name, Order* out);
// The names parse_order accepts, for error messages.
const char* order_names();

// A dataset's layout as named by tessera_Pset_layout, layout= and tessera.create_dataset:
// "TILE" or "TILE:CELLS" — a tile order (parse_order) and a cell order inside tiles,
// "row-major" or "column-major" (docs/layouts.md).  Without ":CELLS" the tile order's own
// cell order (default_cell_order).  False, with the reason in *why, for an unknown name
// or a cell order that is not row- or column-major.
bool parse_layout(const std::string& spec, Order* tile, Order* cell, std::string* why);
// The cell order a tile order brings when none is named: row-major, except MultiMap's,
// whose cells go dimension 0 fastest (column-major) — the paper's Dim0 along the track,
// applied inside the tile so beams along dimensions 0 and 1 read one 64 KiB block per
// tile (multimap.h).
Order default_cell_order(Order tile);
// "TILE" when the cell order is the tile order's default, else "TILE:CELLS".
std::string layout_name(Order tile, Order cell);

// Where a fragment's tiles and cells go: a tile order, a cell order (row- or
// column-major) and, for the MultiMap tile order, its basic cube.  The array's schema
// names the order new fragments take; each fragment records its own (docs/format.md), so
// a consolidation can convert an array to another order (docs/layouts.md) while older
// fragments, and reads as of older commits, keep theirs.
struct StorageOrder {
  Order tile = Order::kRowMajor, cell = Order::kRowMajor;
  Coords cube;  // tile order kMultiMap only
  bool operator==(const StorageOrder& o) const { return tile == o.tile && cell == o.cell && cube == o.cube; }
  bool operator!=(const StorageOrder& o) const { return !(*this == o); }
  std::string name() const { return layout_name(tile, cell); }
  // Throws kInvalidArgument (or ByteReader's kCorrupt through `bad`) for a cell order
  // that is not row- or column-major, an unknown tile order or a cube that does not fit.
  void validate(int rank) const;
};

constexpr uint32_t kVarDescriptorSize = 32;

// The one schema format version written and read (docs/format.md, "Format versions"):
// versions 1 to 4 came only from development builds and are refused.
constexpr uint32_t kSchemaVersion = 5;

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
  // Tile order kMultiMap only: the basic cube, in tiles per dimension (multimap.h).
  // Stored, so a later change of how cubes are chosen never reorders an existing array.
  Coords multimap_cube;
  uint64_t sparse_capacity = 10000;  // cells per sparse data tile
  // Variable-length cells (strings, vlen sequences).  Tiles then hold fixed 32-byte
  // descriptors (var_heap.h) and the bytes live in heap files; elem_size must be
  // kVarDescriptorSize and the fill value is the empty string.
  bool var = false;
  // A compact array (compact_cells.h): small, fixed extent, unfiltered, fixed-size cells,
  // kept as ONE catalog record of all its cells instead of fragments — HDF5's compact
  // layout (raw data in the object header) in the catalog's terms.
  bool compact = false;

  // Sets the cell order, then the tile order (the MultiMap cube depends on the cell order).
  void set_layout(Order tile, Order cell) {
    cell_order = cell;
    set_tile_order(tile);
  }
  // The order new fragments take.
  StorageOrder order() const { return {tile_order, cell_order, multimap_cube}; }
  // Sets the tile order (and, for kMultiMap, chooses the basic cube for this schema's
  // shape, tiles and element size).
  void set_tile_order(Order o);

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
