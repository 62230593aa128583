// unlimited_selection.cc — see unlimited_selection.h.
#include "vol/types/unlimited_selection.h"

#include "vol/base/error.h"  // fail_arg

namespace tessera_vol {

namespace {

// H5S__hyper_get_clip_diminfo: count and block of the unlimited dimension below `clip`.
void clip_diminfo(hsize_t start, hsize_t stride, hsize_t* count, hsize_t* block, hsize_t clip) {
  if (start >= clip) {
    if (*block == H5S_UNLIMITED) *block = 0;
    else *count = 0;
  } else if (*block == H5S_UNLIMITED || *block == stride) {
    *block = clip - start;
    *count = 1;
  } else {
    *count = (clip - start + stride - 1) / stride;
  }
}

hid_t space_of(int rank, const hsize_t* dims) {
  hid_t s = H5Screate_simple(rank, dims, nullptr);
  if (s < 0) fail_arg("cannot create a dataspace for a virtual mapping");
  return s;
}

}  // namespace

UnlimitedHyperslab UnlimitedHyperslab::of(hid_t space) {
  UnlimitedHyperslab h;
  if (H5Sget_select_type(space) != H5S_SEL_HYPERSLABS || H5Sis_regular_hyperslab(space) <= 0) return h;
  h.rank = H5Sget_simple_extent_ndims(space);
  if (h.rank <= 0) return h;
  h.start.resize(h.rank), h.stride.resize(h.rank), h.count.resize(h.rank), h.block.resize(h.rank);
  if (H5Sget_regular_hyperslab(space, h.start.data(), h.stride.data(), h.count.data(), h.block.data()) < 0)
    fail_arg("cannot read a virtual mapping's selection");
  for (int d = 0; d < h.rank; ++d)
    if (h.count[d] == H5S_UNLIMITED || h.block[d] == H5S_UNLIMITED) h.unlim = d;
  return h;
}

hsize_t UnlimitedHyperslab::slices_below(hsize_t clip) const {
  const int u = unlim;
  hsize_t count = this->count[u], block = this->block[u];
  clip_diminfo(start[u], stride[u], &count, &block, clip);
  if (block == 0 || count == 0) return 0;
  if (count == 1) return block;
  hsize_t n = block * count;
  const hsize_t end = stride[u] * (count - 1) + block;  // relative to start
  if (end > clip - start[u]) n -= end - (clip - start[u]);  // the last block is cut
  return n;
}

hsize_t UnlimitedHyperslab::extent_for_slices(hsize_t slices, bool incl_trail) const {
  const int u = unlim;
  if (slices == 0) return incl_trail ? start[u] : 0;
  if (block[u] == H5S_UNLIMITED || block[u] == stride[u]) return start[u] + slices;
  const hsize_t full = slices / block[u], rem = slices - full * block[u];
  if (rem > 0) return start[u] + full * stride[u] + rem;
  if (incl_trail) return start[u] + full * stride[u];
  return start[u] + (full - 1) * stride[u] + block[u];
}

hid_t UnlimitedHyperslab::clipped(const hsize_t* dims, hsize_t clip) const {
  hid_t s = space_of(rank, dims);
  const int u = unlim;
  std::vector<hsize_t> cnt = count, blk = block;
  clip_diminfo(start[u], stride[u], &cnt[u], &blk[u], clip);
  bool ok = true;
  if (cnt[u] == 0 || blk[u] == 0) {
    ok = H5Sselect_none(s) >= 0;
  } else {
    ok = H5Sselect_hyperslab(s, H5S_SELECT_SET, start.data(), stride.data(), cnt.data(), blk.data()) >= 0;
    // A last block that reaches past the clip: keep only what lies below it.
    if (ok && cnt[u] > 1 && stride[u] * (cnt[u] - 1) + blk[u] > clip - start[u]) {
      std::vector<hsize_t> lo(rank, 0), hi(rank);
      for (int d = 0; d < rank; ++d) hi[d] = d == u ? clip : dims[d];
      ok = H5Sselect_hyperslab(s, H5S_SELECT_AND, lo.data(), nullptr, hi.data(), nullptr) >= 0;
    }
  }
  if (!ok) {
    H5Sclose(s);
    fail_arg("cannot clip a virtual mapping's unlimited selection");
  }
  return s;
}

hid_t UnlimitedHyperslab::block_at(const hsize_t* dims, hsize_t k) const {
  hid_t s = space_of(rank, dims);
  std::vector<hsize_t> st = start, cnt = count;
  st[unlim] = start[unlim] + k * stride[unlim];
  cnt[unlim] = 1;
  if (H5Sselect_hyperslab(s, H5S_SELECT_SET, st.data(), stride.data(), cnt.data(), block.data()) < 0) {
    H5Sclose(s);
    fail_arg("cannot select a block of a virtual mapping's unlimited selection");
  }
  return s;
}

}  // namespace tessera_vol
