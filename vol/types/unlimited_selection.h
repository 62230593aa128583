// unlimited_selection.h — regular hyperslab selections with one unlimited dimension
// (H5S_UNLIMITED count or block), as virtual dataset mappings use them.
//
// HDF5 clips such selections to a source's or the virtual dataset's current extent with
// library-private functions (H5S_hyper_clip_unlim, H5S_hyper_get_clip_extent_match,
// H5S_hyper_get_unlim_block in H5Shyper.c).  These are the same rules over the public
// description of the selection (H5Sget_regular_hyperslab), producing ordinary limited
// selections the public API can intersect and project.
#pragma once

#include <hdf5.h>

#include <vector>

namespace tessera_vol {

struct UnlimitedHyperslab {
  int rank = 0;
  int unlim = -1;  // the unlimited dimension, -1: the selection is limited
  std::vector<hsize_t> start, stride, count, block;

  // The selection of `space` if it is a regular hyperslab with an unlimited dimension
  // (otherwise unlim stays -1 and the rest is empty).
  static UnlimitedHyperslab of(hid_t space);

  // Number of slices (indices in the unlimited dimension) selected below `clip`.
  hsize_t slices_below(hsize_t clip) const;
  // The extent in the unlimited dimension at which this selection holds `slices`
  // slices; incl_trail: up to the start of the next block rather than the end of the last.
  hsize_t extent_for_slices(hsize_t slices, bool incl_trail) const;
  // A new dataspace of `dims` (rank entries) holding this selection clipped at `clip` in
  // the unlimited dimension (a limited selection, possibly empty).
  hid_t clipped(const hsize_t* dims, hsize_t clip) const;
  // A new dataspace of `dims` holding block `k` of the unlimited dimension (count 1 there).
  hid_t block_at(const hsize_t* dims, hsize_t k) const;
};

}  // namespace tessera_vol
