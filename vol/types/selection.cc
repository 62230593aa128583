// selection.cc — see selection.h.
#include "vol/types/selection.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>

#include "engine/util/checked.h"
#include "vol/types/dcpl.h"
#include "vol/base/error.h"

namespace tessera_vol {

namespace {

// HDF5's selection iterator over `space` in pairing order: f(byte offset, byte length).
template <class F>
void for_each_seq(hid_t space, size_t es, F f) {
  struct Iter {
    hid_t id;
    ~Iter() {
      if (id >= 0) H5Ssel_iter_close(id);
    }
  } it{H5Ssel_iter_create(space, es, 0)};
  if (it.id < 0) fail_arg("cannot iterate over the selection");
  constexpr size_t kMaxSeq = 1024;
  hsize_t off[kMaxSeq];
  size_t len[kMaxSeq];
  for (;;) {
    size_t nseq = 0, nelem = 0;
    if (H5Ssel_iter_get_seq_list(it.id, kMaxSeq, SIZE_MAX, &nseq, &nelem, off, len) < 0)
      fail_arg("cannot iterate over the selection");
    if (nseq == 0) break;
    for (size_t i = 0; i < nseq; ++i) f(static_cast<size_t>(off[i]), len[i]);
  }
}

tessera::Coords space_dims(hid_t space) {
  hsize_t d[H5S_MAX_RANK];
  int r = H5Sget_simple_extent_dims(space, d, nullptr);
  if (r <= 0) return {1};  // scalar
  return tessera::Coords(d, d + r);
}

// Splits the row-major linear range [a, a+len) of an array of extent E into few boxes,
// in order: f(box, cells).  Each box is contiguous in row-major order, so its cells
// follow each other in the packed buffer.
template <class F>
void range_boxes(uint64_t a, uint64_t len, const tessera::Coords& E, F f) {
  const int r = static_cast<int>(E.size());
  std::vector<uint64_t> P(r, 1);  // P[k]: cells per step of dimension k
  for (int k = r - 2; k >= 0; --k) P[k] = P[k + 1] * E[k + 1];
  tessera::Coords c(r);
  while (len > 0) {
    uint64_t rem = a;
    for (int k = 0; k < r; ++k) {
      c[k] = rem / P[k];
      rem %= P[k];
    }
    // Outermost dimension k at which `a` starts a whole step and len covers one.
    int k = 0;
    for (; k < r - 1; ++k) {
      bool aligned = a % P[k] == 0;
      if (aligned && len >= P[k]) break;
    }
    uint64_t q = std::min(len / P[k], E[k] - c[k]);
    // HDF5 1.14.5 can iterate a union of hyperslabs past the bounds it reports (an OR
    // of a regular hyperslab with a larger one): refuse instead of looping forever.
    if (q == 0 || c[0] >= E[0])
      fail_arg("the file selection's elements run past the dataspace extent (" + std::to_string(a) +
               " elements in); HDF5 built an inconsistent selection");
    tessera::Box b(c, c);
    b.hi[k] = c[k] + q - 1;
    for (int d = k + 1; d < r; ++d) {
      b.lo[d] = 0;
      b.hi[d] = E[d] - 1;
    }
    f(b, q * P[k]);
    a += q * P[k];
    len -= q * P[k];
  }
}

std::vector<uint64_t> irregular_coords(const FileSelection& fs);

// Reads an irregular selection: the bounding box once when it is dense enough, a point
// read when it is many short runs, else one engine read per box of each sequence.
void read_irregular(tessera::Array& a, const FileSelection& fs, uint8_t* out) {
  const size_t es = a.schema().elem_size;
  const tessera::Coords E = space_dims(fs.space);
  const int r = static_cast<int>(E.size());
  hsize_t lo[H5S_MAX_RANK], hi[H5S_MAX_RANK];
  if (H5Sget_select_bounds(fs.space, lo, hi) < 0) fail_arg("cannot get the selection bounds");
  tessera::Box bb(tessera::Coords(lo, lo + r), tessera::Coords(hi, hi + r));
  const uint64_t bcells = bb.cells();
  size_t pos = 0;
  if (bcells <= 4 * fs.n + 65536 && bcells * es <= (uint64_t{256} << 20)) {
    std::vector<uint8_t> tmp(bcells * es);
    check(a.read(tessera::Selection::from_box(bb), tmp.data()));
    std::vector<uint64_t> bstride(r, 1);  // strides of the bbox buffer
    for (int d = r - 2; d >= 0; --d) bstride[d] = bstride[d + 1] * (bb.hi[d + 1] - bb.lo[d + 1] + 1);
    tessera::Coords c(r);
    for_each_seq(fs.space, 1, [&](size_t off, size_t len) {
      uint64_t lin = off;
      while (len > 0) {  // one row segment at a time
        uint64_t rem = lin;
        for (int d = r - 1; d >= 0; --d) {
          c[d] = rem % E[d];
          rem /= E[d];
        }
        uint64_t seg = std::min<uint64_t>(len, E[r - 1] - c[r - 1]);
        uint64_t bo = 0;
        for (int d = 0; d < r; ++d) bo += (c[d] - bb.lo[d]) * bstride[d];
        std::memcpy(out + pos * es, tmp.data() + bo * es, seg * es);
        pos += seg;
        lin += seg;
        len -= seg;
      }
    });
    return;
  }
  // Many short runs (clusters of a few pixels over a frame): one point read of all their
  // cells costs a lookup per cell, where a read per run pays the planning each time.
  size_t runs = 0;
  for_each_seq(fs.space, 1, [&](size_t, size_t) { ++runs; });
  if (runs > 16 && fs.n <= 64 * runs && fs.n <= (1u << 20)) {
    std::vector<uint64_t> pts = irregular_coords(fs);
    check(a.read_points(pts.data(), fs.n, out));
    return;
  }
  for_each_seq(fs.space, 1, [&](size_t off, size_t len) {
    range_boxes(off, len, E, [&](const tessera::Box& b, uint64_t cells) {
      check(a.read(tessera::Selection::from_box(b), out + pos * es));
      pos += cells;
    });
  });
}

}  // namespace


FileSelection whole_selection(const tessera::Coords& dims) {
  const std::optional<uint64_t> n = tessera::checked_product(dims.data(), dims.size());
  if (!n || *n > static_cast<uint64_t>(INT64_MAX))
    fail_arg("the selection has 2^63 elements or more (the whole of a dataset that large): too many to transfer "
             "at once; select part of it");
  return whole_boxes(dims);
}

FileSelection whole_boxes(const tessera::Coords& dims) {
  FileSelection fs;
  fs.n = tessera::checked_product(dims.data(), dims.size()).value_or(UINT64_MAX);
  if (fs.n == 0) return fs;  // kNone
  tessera::Box dom(tessera::Coords(dims.size(), 0), dims);
  for (auto& h : dom.hi) h -= 1;
  fs.kind = FileSelection::kSlab;
  fs.slab = tessera::Selection::from_box(dom);
  return fs;
}

FileSelection resolve_file_selection(hid_t fspace, hid_t dspace) {
  FileSelection fs;
  int frank = H5Sget_simple_extent_ndims(fspace), drank = H5Sget_simple_extent_ndims(dspace);
  if (frank < 0) fail_arg("invalid file dataspace");
  if (frank != drank)
    fail_arg("file dataspace has rank " + std::to_string(frank) + ", the dataset has rank " + std::to_string(drank));
  hssize_t n = H5Sget_select_npoints(fspace);
  if (n < 0)  // HDF5 counts in hssize_t: negative for an invalid selection, or 2^63 elements and more
    fail_arg("invalid file selection, or one of 2^63 elements or more (too many to transfer at once)");
  fs.n = static_cast<uint64_t>(n);
  if (fs.n == 0) return fs;  // kNone
  const tessera::Coords dims = engine_dims(dspace);
  const int r = static_cast<int>(dims.size());
  // Bounds (and selection iterators) include the selection offset (H5Soffset_simple,
  // which h5py uses to broadcast); the regular-hyperslab and point-list queries do not,
  // and HDF5 has no getter for the offset: it is bounds.lo minus the un-offset minimum.
  hsize_t lo[H5S_MAX_RANK] = {0}, hi[H5S_MAX_RANK] = {0};
  if (drank > 0) {
    if (H5Sget_select_bounds(fspace, lo, hi) < 0) fail_arg("cannot get the file selection bounds");
    for (int d = 0; d < r; ++d)
      if (hi[d] >= dims[d])
        fail_arg("file selection (up to index " + std::to_string(hi[d]) + " in dimension " + std::to_string(d) +
                 ") is not within the dataset extent (" + std::to_string(dims[d]) + ")");
  }
  H5S_sel_type st = H5Sget_select_type(fspace);
  if (st == H5S_SEL_ALL || drank == 0) {
    FileSelection all = whole_selection(dims);
    if (all.n != fs.n) fail_arg("file dataspace extent differs from the dataset extent");
    return all;
  }
  if (st == H5S_SEL_POINTS) {
    fs.kind = FileSelection::kPoints;
    static_assert(std::is_same<hsize_t, uint64_t>::value, "the point list is read straight into fs.points");
    fs.points.resize(fs.n * r);
    const uint64_t* pts = fs.points.data();
    if (H5Sget_select_elem_pointlist(fspace, 0, fs.n, fs.points.data()) < 0) fail_arg("cannot get the point list");
    tessera::Coords mn(pts, pts + r);
    for (uint64_t i = 1; i < fs.n; ++i)
      for (int d = 0; d < r; ++d) mn[d] = std::min<uint64_t>(mn[d], pts[i * r + d]);
    bool shifted = false;
    for (int d = 0; d < r; ++d) shifted |= mn[d] != lo[d];
    if (shifted)
      for (uint64_t i = 0; i < fs.n; ++i)
        for (int d = 0; d < r; ++d) fs.points[i * r + d] += lo[d] - mn[d];
    return fs;
  }
  if (st != H5S_SEL_HYPERSLABS) fail_arg("unknown file selection type");
  if (H5Sis_regular_hyperslab(fspace) > 0) {
    hsize_t start[H5S_MAX_RANK], stride[H5S_MAX_RANK], count[H5S_MAX_RANK], block[H5S_MAX_RANK];
    if (H5Sget_regular_hyperslab(fspace, start, stride, count, block) >= 0) {
      for (int d = 0; d < r; ++d) start[d] = lo[d];  // the first block starts at start + offset
      try {
        fs.slab = tessera::Selection::from_hyperslab(tessera::Coords(start, start + r), tessera::Coords(stride, stride + r),
                                                     tessera::Coords(count, count + r), tessera::Coords(block, block + r));
        if (fs.slab.cells() == fs.n) {
          fs.kind = FileSelection::kSlab;
          return fs;
        }
      } catch (const tessera::Error&) {
        // overlapping blocks: take the general path below
      }
    }
  }
  fs.kind = FileSelection::kIrregular;
  fs.space = fspace;
  return fs;
}

void read_selection(tessera::Array& a, const FileSelection& fs, void* packed) {
  auto* out = static_cast<uint8_t*>(packed);
  switch (fs.kind) {
    case FileSelection::kNone: return;
    case FileSelection::kSlab: check(a.read(fs.slab, out)); return;
    case FileSelection::kPoints: check(a.read_points(fs.points.data(), fs.n, out)); return;
    case FileSelection::kIrregular: read_irregular(a, fs, out); return;
  }
}

void write_selection(tessera::Array& a, FileSelection& fs, const void* packed) {
  const auto* in = static_cast<const uint8_t*>(packed);
  switch (fs.kind) {
    case FileSelection::kNone: return;
    case FileSelection::kSlab: check(a.write(fs.slab, in)); return;
    case FileSelection::kPoints: check(a.write_points(std::move(fs.points), in)); return;
    case FileSelection::kIrregular: {
      // One engine call for the whole selection: its large boxes become one fragment
      // (Array::write_boxes), never one each.
      const tessera::Coords E = space_dims(fs.space);
      std::vector<tessera::Box> boxes;
      for_each_seq(fs.space, 1, [&](size_t off, size_t len) {
        range_boxes(off, len, E, [&](const tessera::Box& b, uint64_t) { boxes.push_back(b); });
      });
      check(a.write_boxes(boxes, in));
      return;
    }
  }
}

std::vector<tessera::Box> selection_boxes(const FileSelection& fs) {
  std::vector<tessera::Box> out;
  if (fs.kind == FileSelection::kIrregular) {
    const tessera::Coords E = space_dims(fs.space);
    for_each_seq(fs.space, 1, [&](size_t off, size_t len) {
      range_boxes(off, len, E, [&](const tessera::Box& b, uint64_t) { out.push_back(b); });
    });
    return out;
  }
  if (fs.kind != FileSelection::kSlab || fs.slab.empty()) return out;
  // The product of the per-dimension intervals, row-major.
  const int r = fs.slab.rank();
  std::vector<size_t> at(r, 0);
  for (;;) {
    tessera::Box b{tessera::Coords(r), tessera::Coords(r)};
    for (int d = 0; d < r; ++d) {
      b.lo[d] = fs.slab.dim(d).ivs[at[d]].lo;
      b.hi[d] = fs.slab.dim(d).ivs[at[d]].hi;
    }
    out.push_back(std::move(b));
    int d = r - 1;
    for (; d >= 0; --d) {
      if (++at[d] < fs.slab.dim(d).ivs.size()) break;
      at[d] = 0;
    }
    if (d < 0) return out;
  }
}

namespace {
// Coordinates of an irregular selection's cells in pairing order.
std::vector<uint64_t> irregular_coords(const FileSelection& fs) {
  const tessera::Coords E = space_dims(fs.space);
  const int r = static_cast<int>(E.size());
  std::vector<uint64_t> out;
  out.reserve(fs.n * r);
  tessera::Coords c(r);
  for_each_seq(fs.space, 1, [&](size_t off, size_t len) {
    for (uint64_t lin = off; lin < off + len; ++lin) {
      uint64_t rem = lin;
      for (int d = r - 1; d >= 0; --d) {
        c[d] = rem % E[d];
        rem /= E[d];
      }
      out.insert(out.end(), c.begin(), c.end());
    }
  });
  return out;
}
}  // namespace

void read_selection_var(tessera::Array& a, const FileSelection& fs, std::vector<uint64_t>* lengths,
                        std::vector<uint8_t>* data) {
  lengths->clear();
  data->clear();
  switch (fs.kind) {
    case FileSelection::kNone: return;
    case FileSelection::kSlab: check(a.read_var(fs.slab, lengths, data)); return;
    case FileSelection::kPoints: check(a.read_points_var(fs.points.data(), fs.n, lengths, data)); return;
    case FileSelection::kIrregular: {
      std::vector<uint64_t> pts = irregular_coords(fs);
      check(a.read_points_var(pts.data(), fs.n, lengths, data));
      return;
    }
  }
}

void write_selection_var(tessera::Array& a, const FileSelection& fs, const uint64_t* lengths,
                         const void* data) {
  switch (fs.kind) {
    case FileSelection::kNone: return;
    case FileSelection::kSlab: check(a.write_var(fs.slab, lengths, data)); return;
    case FileSelection::kPoints: check(a.write_points_var(fs.points.data(), fs.n, lengths, data)); return;
    case FileSelection::kIrregular: {
      std::vector<uint64_t> pts = irregular_coords(fs);
      check(a.write_points_var(pts.data(), fs.n, lengths, data));
      return;
    }
  }
}

bool memory_contiguous(hid_t mspace, size_t es, uint64_t n, size_t* offset) {
  H5S_sel_type st = H5Sget_select_type(mspace);
  if (st == H5S_SEL_ALL) {
    *offset = 0;
    return true;
  }
  if (st == H5S_SEL_NONE) return false;
  // One sequence covering everything?  Ask for two: a second one means "no".
  struct Iter {
    hid_t id;
    ~Iter() {
      if (id >= 0) H5Ssel_iter_close(id);
    }
  } it{H5Ssel_iter_create(mspace, es, 0)};
  if (it.id < 0) fail_arg("cannot iterate over the memory selection");
  hsize_t off[2];
  size_t len[2], nseq = 0, nelem = 0;
  if (H5Ssel_iter_get_seq_list(it.id, 2, SIZE_MAX, &nseq, &nelem, off, len) < 0)
    fail_arg("cannot iterate over the memory selection");
  if (nseq != 1 || len[0] != n * es) return false;
  *offset = static_cast<size_t>(off[0]);
  return true;
}

void gather(hid_t mspace, size_t es, const void* buf, void* packed) {
  const auto* src = static_cast<const uint8_t*>(buf);
  auto* dst = static_cast<uint8_t*>(packed);
  size_t pos = 0;
  for_each_seq(mspace, es, [&](size_t off, size_t len) {
    std::memcpy(dst + pos, src + off, len);
    pos += len;
  });
}

void scatter(hid_t mspace, size_t es, const void* packed, void* buf) {
  const auto* src = static_cast<const uint8_t*>(packed);
  auto* dst = static_cast<uint8_t*>(buf);
  size_t pos = 0;
  for_each_seq(mspace, es, [&](size_t off, size_t len) {
    std::memcpy(dst + off, src + pos, len);
    pos += len;
  });
}

}  // namespace tessera_vol
