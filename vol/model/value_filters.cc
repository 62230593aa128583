// value_filters.cc — see value_filters.h.
#include "vol/model/value_filters.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "engine/geometry/strided_copy.h"
#include "vol/model/object_model.h"  // fail_arg
#include "vol/model/objects.h"
#include "vol/types/selection.h"

namespace tessera_vol {

namespace {

// Filters the engine applies itself or stores as one of its lossless codecs (dcpl.cc).
bool lossless(H5Z_filter_t id) {
  switch (id) {
    case H5Z_FILTER_DEFLATE:
    case H5Z_FILTER_SHUFFLE:
    case H5Z_FILTER_FLETCHER32:
    case H5Z_FILTER_SZIP:
    case 307:
    case 32000:
    case 32001:
    case 32004:
    case 32008:
    case 32015:
    case 32026: return true;
    default: return false;
  }
}

// Copies between a box's packed cells and a whole tile's buffer (both row-major).
void copy_box(uint8_t* tile_buf, const tessera::Coords& tile, const tessera::Coords& box_lo_in_tile,
              const tessera::Coords& box_dims, uint8_t* packed, size_t es, bool to_tile) {
  const int r = static_cast<int>(tile.size());
  uint64_t tstride[tessera::kMaxRank], pstride[tessera::kMaxRank];
  uint64_t tn = 1, pn = 1, off = 0;
  for (int d = r - 1; d >= 0; --d) {
    tstride[d] = tn;
    pstride[d] = pn;
    off += box_lo_in_tile[d] * tn;
    tn *= tile[d];
    pn *= box_dims[d];
  }
  uint8_t* t = tile_buf + off * es;
  if (to_tile) tessera::strided_copy(r, box_dims.data(), packed, pstride, t, tstride, es);
  else tessera::strided_copy(r, box_dims.data(), t, tstride, packed, pstride, es);
}

}  // namespace

bool ValueFilters::needed(hid_t dcpl) {
  int n = H5Pget_nfilters(dcpl);
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, cd[16];
    size_t ncd = 16;
    H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &ncd, cd, 0, nullptr, nullptr);
    if (id >= 0 && !lossless(id)) return true;
  }
  return false;
}

ValueFilters::ValueFilters(hid_t ftype, hid_t dcpl, const tessera::Coords& tile) : chunk_(ftype, dcpl, tile) {}

void ValueFilters::note_written(const tessera::Schema& s, hid_t fspace) {
  const size_t r = s.extent.size();
  if (H5Sget_select_npoints(fspace) <= 0) return;
  std::vector<hsize_t> lo(r), hi(r);
  if (H5Sget_select_bounds(fspace, lo.data(), hi.data()) < 0) fail_arg("cannot read the selection's bounds");
  tessera::Coords t0(r), t1(r), t(r);
  for (size_t d = 0; d < r; ++d) t0[d] = lo[d] / s.tile_extent[d], t1[d] = hi[d] / s.tile_extent[d];
  t = t0;
  std::vector<hsize_t> b0(r), b1(r);
  for (;;) {
    for (size_t d = 0; d < r; ++d) {
      b0[d] = t[d] * s.tile_extent[d];
      b1[d] = std::min<hsize_t>(b0[d] + s.tile_extent[d], s.extent[d]) - 1;
    }
    if (H5Sselect_intersect_block(fspace, b0.data(), b1.data()) > 0) dirty_.insert(t);
    size_t d = r;
    while (d-- > 0) {  // next tile of the bounding box, row-major
      if (++t[d] <= t1[d]) break;
      t[d] = t0[d];
    }
    if (d == static_cast<size_t>(-1)) break;
  }
}

void ValueFilters::flush(tessera::Array& a, hid_t dspace) {
  std::set<tessera::Coords> tiles;
  tiles.swap(dirty_);
  for (const auto& t : tiles) refilter_tile(a, dspace, t);
}

void ValueFilters::refilter_tile(tessera::Array& a, hid_t dspace, const tessera::Coords& t) {
  const tessera::Schema& s = a.schema();
  const size_t r = s.extent.size(), es = s.elem_size;
  std::vector<hsize_t> b0(r), count(r);
  tessera::Coords in_tile(r, 0), dims(r);
  for (size_t d = 0; d < r; ++d) {
    b0[d] = t[d] * s.tile_extent[d];
    if (b0[d] >= s.extent[d]) return;  // cut off by an extent change since
    count[d] = dims[d] = std::min<hsize_t>(b0[d] + s.tile_extent[d], s.extent[d]) - b0[d];
  }
  uint64_t tile_cells = 1;
  for (uint64_t e : s.tile_extent) tile_cells *= e;
  // The whole chunk: the fill value, then the tile's cells inside the extent.
  std::vector<uint8_t> chunk(tile_cells * es);
  const uint8_t* fill = s.fill_value();
  for (uint64_t c = 0; c < tile_cells; ++c) std::memcpy(chunk.data() + c * es, fill, es);
  hid_t box = H5Scopy(dspace);
  if (box < 0) fail_arg("cannot select a chunk");
  std::vector<uint8_t> packed;
  try {
    if (H5Sselect_hyperslab(box, H5S_SELECT_SET, b0.data(), nullptr, count.data(), nullptr) < 0)
      fail_arg("cannot select a chunk");
    FileSelection sel = resolve_file_selection(box, dspace);
    packed.resize(sel.n * es);
    read_selection(a, sel, packed.data());
    copy_box(chunk.data(), s.tile_extent, in_tile, dims, packed.data(), es, true);
    chunk_.round_trip(chunk.data());
    copy_box(chunk.data(), s.tile_extent, in_tile, dims, packed.data(), es, false);
    write_selection(a, sel, packed.data());
  } catch (...) {
    H5Sclose(box);
    throw;
  }
  H5Sclose(box);
}

void flush_value_filters(SharedFile& f) {
  for (auto& [p, type] : f.open_objects()) {
    if (type != H5I_DATASET) continue;
    auto* d = static_cast<DatasetObj*>(p);
    if (d->value_filters && d->array) d->value_filters->flush(*d->array, d->space);
  }
}

}  // namespace tessera_vol
