// value_filters.h — filters that change values (scale-offset, n-bit, lossy plugin
// filters), applied so that a tessera dataset reads back exactly what native HDF5 does.
//
// Native HDF5 stores every chunk through the dcpl's filter pipeline and decodes it on
// read, so what an application reads from a scale-offset dataset is decode(encode(chunk))
// — different numbers than it wrote, by design.  Tessera's engine stores values
// losslessly, so the connector runs the pipeline itself, with HDF5's OWN filter code (and
// any plugin on HDF5_PLUGIN_PATH): a chunk (= tessera tile) is read back whole — never-
// written cells and the part beyond the dataset's edge as the fill value, as HDF5 fills
// a new chunk — written to a one-chunk native dataset in an in-memory file and read
// again (native_chunk.h); the decoded values are what the tile then holds.
//
// When: native keeps written chunks unfiltered in the dataset's chunk cache and filters
// them when they leave it (at the latest at H5Dclose, H5Dflush or the file's flush or
// close) — until then it reads back the values as written, and a second partial write to
// a cached chunk updates the unfiltered values.  Tessera does the same: writes note the
// chunks they touch, and those chunks go through the pipeline when the dataset handle
// closes, at H5Dflush and at the file's flush or close.  (Native's cache also evicts
// chunks earlier when it is full — 1 MiB and 521 chunks by default; tessera does not
// model eviction, so a chunk rewritten after native evicted it may differ.)
//
// The cost is a read and a rewrite of each touched chunk plus HDF5's filtering: meant
// for the datasets that ask for such filters, not a general path.  It runs on the
// caller's thread (HDF5 is not thread-safe), as native's does.  Not covered: an extent
// shrink that cuts a chunk natively re-encodes that chunk; tessera keeps its values.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <memory>
#include <set>

#include "engine/array/array.h"
#include "vol/model/native_chunk.h"

namespace tessera_vol {

class ValueFilters {
 public:
  // True if the dcpl has a filter tessera cannot store losslessly in its place.
  static bool needed(hid_t dcpl);
  // A scratch one-chunk native dataset with the dcpl's filters for file type `ftype`
  // and chunk `tile`; throws VolError as native H5Dcreate fails (a filter's can_apply
  // or set_local refusing the type).
  ValueFilters(hid_t ftype, hid_t dcpl, const tessera::Coords& tile);
  ValueFilters(const ValueFilters&) = delete;
  ValueFilters& operator=(const ValueFilters&) = delete;

  // Notes the tiles the selection of `fspace` (a dataspace of the dataset, with the
  // selection just written) touches.
  void note_written(const tessera::Schema& s, hid_t fspace);
  // Sends every noted tile through the pipeline (`dspace`: the dataset's dataspace).
  void flush(tessera::Array& a, hid_t dspace);

 private:
  void refilter_tile(tessera::Array& a, hid_t dspace, const tessera::Coords& t);

  std::set<tessera::Coords> dirty_;
  NativeChunk chunk_;
};

class SharedFile;
// Flushes the noted tiles of every open dataset of the file (its flush and close).
void flush_value_filters(SharedFile& f);

}  // namespace tessera_vol
