// selection.h — HDF5 selections -> engine reads/writes, and memory gather/scatter.
//
// HDF5 pairs the i-th selected element of the memory space with the i-th element of the
// file space, each in its selection's iteration order: row-major for hyperslabs (also for
// unions: row-major over the whole selection, not block by block), the given order for
// point lists.  The file side is read/written as a "packed" buffer in that order; the
// memory side is gathered/scattered with HDF5's own selection iterator, so both sides
// follow exactly the order native HDF5 uses.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <vector>

#include "engine/array/array.h"

namespace tessera_vol {

struct FileSelection {
  enum Kind { kNone, kSlab, kPoints, kIrregular } kind = kNone;
  uint64_t n = 0;                // selected elements
  tessera::Selection slab;       // kSlab: 'all' or a regular hyperslab
  std::vector<uint64_t> points;  // kPoints: rank coordinates per point, selection order
  hid_t space = H5I_INVALID_HID; // kIrregular: the file space (borrowed)
};

// Every element of an extent of `dims` (engine coordinates): kSlab, or kNone when the
// extent holds none.  Throws when they are 2^63 or more (a transfer counts them).
FileSelection whole_selection(const tessera::Coords& dims);
// The same for operations on its boxes only (defined elements, erase): n saturates.
FileSelection whole_boxes(const tessera::Coords& dims);

// Resolves the file selection of `fspace` against the dataset's dataspace `dspace`.
// Throws VolError if the ranks differ or the selection reaches beyond the extent.
FileSelection resolve_file_selection(hid_t fspace, hid_t dspace);

// Reads/writes the selected elements as a packed buffer in HDF5's pairing order.
void read_selection(tessera::Array& a, const FileSelection& fs, void* packed);
// A point list is handed over to the engine: fs.points is empty afterwards.
void write_selection(tessera::Array& a, FileSelection& fs, const void* packed);

// The file selection of a kSlab or kIrregular selection as disjoint boxes, row-major
// order (erase and defined, sparse.cc).
std::vector<tessera::Box> selection_boxes(const FileSelection& fs);

// Variable-length arrays: cell values in pairing order, lengths[i] bytes each,
// concatenated (never-written cells are empty).  Irregular selections go as point lists.
void read_selection_var(tessera::Array& a, const FileSelection& fs, std::vector<uint64_t>* lengths,
                        std::vector<uint8_t>* data);
void write_selection_var(tessera::Array& a, const FileSelection& fs, const uint64_t* lengths,
                         const void* data);

// If the memory selection is one contiguous run in pairing order (mem 'all', H5S_BLOCK,
// a hyperslab covering whole rows, ...), returns true and its byte offset.
bool memory_contiguous(hid_t mspace, size_t es, uint64_t n, size_t* offset);
// Copies the selected elements of buf to packed (gather) or back (scatter).
void gather(hid_t mspace, size_t es, const void* buf, void* packed);
void scatter(hid_t mspace, size_t es, const void* packed, void* buf);

}  // namespace tessera_vol
