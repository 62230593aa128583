// virtual_dataset.cc — see virtual_dataset.h.
#include "vol/io/virtual_dataset.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "vol/io/dataset_io.h"
#include "vol/base/file_prefix.h"
#include "vol/model/objects.h"
#include "vol/base/tessera_vol.h"

namespace tessera_vol {

extern void* dataset_open_oid(std::shared_ptr<SharedFile> f, uint64_t oid, const std::string& path);

namespace {

constexpr hsize_t kUndef = std::numeric_limits<hsize_t>::max();

// Owns a dataspace ID for the length of a scope.
struct Space {
  hid_t id = H5I_INVALID_HID;
  explicit Space(hid_t s = H5I_INVALID_HID) : id(s) {}
  ~Space() {
    if (id >= 0) H5Sclose(id);
  }
  Space(const Space&) = delete;
  Space& operator=(const Space&) = delete;
  hid_t release() {
    hid_t s = id;
    id = H5I_INVALID_HID;
    return s;
  }
};

std::string get_name(hid_t dcpl, size_t i, bool file) {
  ssize_t n = file ? H5Pget_virtual_filename(dcpl, i, nullptr, 0) : H5Pget_virtual_dsetname(dcpl, i, nullptr, 0);
  if (n < 0) fail_arg("cannot read a virtual mapping's source name");
  std::string s(static_cast<size_t>(n) + 1, '\0');
  if (file) H5Pget_virtual_filename(dcpl, i, s.data(), s.size());
  else H5Pget_virtual_dsetname(dcpl, i, s.data(), s.size());
  s.resize(static_cast<size_t>(n));
  return s;
}

bool has_printf(const std::string& s) {
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] != '%') continue;
    if (s[i + 1] == 'b') return true;
    ++i;  // "%%"
  }
  return false;
}

// A printf-style source name for block k: "%b" is k, "%%" is '%' (H5D_virtual_parse_source_name).
std::string substitute(const std::string& s, hsize_t k) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 1 < s.size() && s[i + 1] == 'b') {
      out += std::to_string(k);
      ++i;
    } else if (s[i] == '%' && i + 1 < s.size() && s[i + 1] == '%') {
      out += '%';
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<hsize_t> dims_of(hid_t space) {
  int r = H5Sget_simple_extent_ndims(space);
  if (r < 0) fail_arg("invalid dataspace");
  std::vector<hsize_t> d(static_cast<size_t>(r));
  if (r > 0) H5Sget_simple_extent_dims(space, d.data(), nullptr);
  return d;
}

hid_t simple_space(const std::vector<hsize_t>& dims) {
  hid_t s = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  if (s < 0) fail_arg("cannot create a dataspace");
  return s;
}

// The source selection of a limited mapping over the source's current extent.
hid_t source_selection(hid_t sspace, const std::vector<hsize_t>& src_dims) {
  Space s(simple_space(src_dims));
  bool ok;
  if (H5Sget_select_type(sspace) == H5S_SEL_ALL) {
    std::vector<hsize_t> orig = dims_of(sspace), zero(orig.size(), 0);
    ok = H5Sselect_hyperslab(s.id, H5S_SELECT_SET, zero.data(), nullptr, orig.data(), nullptr) >= 0;
  } else {
    ok = H5Sselect_copy(s.id, sspace) >= 0;
  }
  if (!ok) fail_arg("cannot place a virtual mapping's source selection");
  return s.release();
}

hid_t project(hid_t src, hid_t dst, hid_t intersect) {
  hid_t p = H5Sselect_project_intersection(src, dst, intersect);
  if (p < 0) fail_arg("cannot project a selection through a virtual mapping");
  return p;
}

hssize_t npoints(hid_t s) {
  hssize_t n = H5Sget_select_npoints(s);
  if (n < 0) fail_arg("invalid selection");
  return n;
}

// The dapl's view and printf gap; the gap counts only with LAST_AVAILABLE (as native).
void view_and_gap(DatasetObj& d, H5D_vds_view_t* view, hsize_t* gap) {
  if (H5Pget_virtual_view(d.dapl, view) < 0 || H5Pget_virtual_printf_gap(d.dapl, gap) < 0)
    fail_arg("cannot read the virtual dataset access properties");
  if (*view != H5D_VDS_LAST_AVAILABLE) *gap = 0;
}

// The source dataset's current dims (its array's extent is authoritative).
std::vector<hsize_t> source_dims(DatasetObj& s) {
  dataset_sync_space(s);
  return dims_of(s.space);
}

}  // namespace

VirtualDataset::VirtualDataset(hid_t dcpl) {
  size_t n = 0;
  if (H5Pget_virtual_count(dcpl, &n) < 0) fail_arg("cannot read the virtual dataset's mappings");
  for (size_t i = 0; i < n; ++i) {
    Mapping m;
    m.vspace = H5Pget_virtual_vspace(dcpl, i);
    m.sspace = H5Pget_virtual_srcspace(dcpl, i);
    maps_.push_back(m);  // owned from here (the destructor closes them)
    if (m.vspace < 0 || m.sspace < 0) fail_arg("cannot read virtual mapping " + std::to_string(i));
    Mapping& k = maps_.back();
    k.file = get_name(dcpl, i, true);
    k.dset = get_name(dcpl, i, false);
    k.vu = UnlimitedHyperslab::of(k.vspace);
    k.su = UnlimitedHyperslab::of(k.sspace);
    k.printf = k.vu.unlim >= 0 && k.su.unlim < 0 && (has_printf(k.file) || has_printf(k.dset));
    // Smallest extent holding the mapping's limited dimensions (H5D_virtual_update_min_dims).
    std::vector<hsize_t> v = dims_of(k.vspace);
    if (min_dims_.size() < v.size()) min_dims_.resize(v.size(), 0);
    H5S_sel_type st = H5Sget_select_type(k.vspace);
    if (st == H5S_SEL_ALL || st == H5S_SEL_NONE) continue;
    std::vector<hsize_t> lo(v.size()), hi(v.size());
    if (k.vu.unlim >= 0) {
      for (size_t d = 0; d < v.size(); ++d)
        hi[d] = k.vu.start[d] + (k.vu.count[d] - 1) * k.vu.stride[d] + k.vu.block[d] - 1;
    } else if (npoints(k.vspace) > 0 && H5Sget_select_bounds(k.vspace, lo.data(), hi.data()) < 0) {
      fail_arg("cannot read the bounds of virtual mapping " + std::to_string(i));
    } else if (npoints(k.vspace) == 0) {
      continue;
    }
    for (size_t d = 0; d < v.size(); ++d)
      if (static_cast<int>(d) != k.vu.unlim) min_dims_[d] = std::max(min_dims_[d], hi[d] + 1);
  }
}

VirtualDataset::~VirtualDataset() {
  for (auto& [key, s] : sources_) delete s.dset;
  for (auto& m : maps_) {
    if (m.vspace >= 0) H5Sclose(m.vspace);
    if (m.sspace >= 0) H5Sclose(m.sspace);
  }
}

void VirtualDataset::check_dims(const hsize_t* dims, int rank) const {
  for (int d = 0; d < rank && d < static_cast<int>(min_dims_.size()); ++d)
    if (dims[d] < min_dims_[d])
      fail_arg("virtual dataset dimensions not large enough to contain all limited dimensions in all selections");
}

DatasetObj* VirtualDataset::source(DatasetObj& d, const std::string& file, const std::string& dset) {
  auto key = std::make_pair(file, dset);
  if (auto it = sources_.find(key); it != sources_.end()) return it->second.dset;
  std::shared_ptr<SharedFile> sf;
  if (file == ".") {
    sf = d.file;
  } else {
    // The prefix of the dapl of the open (set_access): none for the default dapl, as
    // native's (default_plists.h), whatever the handle's copy of that list holds.
    const std::string prefix = d.kept_access ? d.kept_access->vds_prefix : dapl_vds_prefix(d.dapl);
    for (const std::string& t : prefix_candidates(d.file->name(), file, "HDF5_VDS_PREFIX", prefix)) {
      if (is_tessera_container(t.c_str())) {
        const unsigned want = d.file->intent() & (H5F_ACC_RDWR | H5F_ACC_SWMR_READ);
        try {
          sf = SharedFile::open(t, want, d.file->fapl());
        } catch (const VolError&) {
          if (!(want & H5F_ACC_RDWR)) throw;
          sf = SharedFile::open(t, want & ~H5F_ACC_RDWR, d.file->fapl());  // already open read-only here
        }
        break;
      }
      if (is_native_hdf5(t))
        fail_unsupported("virtual dataset source file '" + t + "' is a native HDF5 file; tessera reads virtual "
                         "dataset sources only from tessera containers");
    }
    if (!sf) return nullptr;  // a missing source reads as the fill value
  }
  uint64_t oid = 0;
  try {
    std::lock_guard<std::recursive_mutex> g(sf->mu());
    oid = sf->resolve(kRootOid, dset);
    if (sf->object(oid).type != ObjType::kDataset) return nullptr;
  } catch (const VolError&) {
    return nullptr;  // no such dataset (yet): fill value
  } catch (const tessera::Error&) {
    return nullptr;
  }
  auto* ds = static_cast<DatasetObj*>(dataset_open_oid(sf, oid, dset));
  sources_[key] = Source{sf, ds};
  return ds;
}

hsize_t VirtualDataset::printf_found(DatasetObj& d, const Mapping& m, hsize_t gap) {
  hsize_t first_missing = 0;
  for (hsize_t j = 0; j <= gap + first_missing; ++j)
    if (source(d, substitute(m.file, j), substitute(m.dset, j))) first_missing = j + 1;
  return first_missing;
}

hsize_t VirtualDataset::reach(DatasetObj& d, const Mapping& m, H5D_vds_view_t view, hsize_t gap) {
  const int u = m.vu.unlim;
  if (!m.printf) {
    DatasetObj* s = source(d, m.file, m.dset);
    if (!s) return 0;
    const hsize_t e = source_dims(*s)[static_cast<size_t>(m.su.unlim)];
    return m.vu.extent_for_slices(m.su.slices_below(e), view == H5D_VDS_FIRST_MISSING);
  }
  const hsize_t k = printf_found(d, m, gap);
  if (k == 0) return 0;
  if (view == H5D_VDS_LAST_AVAILABLE) return m.vu.start[u] + (k - 1) * m.vu.stride[u] + m.vu.block[u];
  return m.vu.start[u] + k * m.vu.stride[u];
}

void VirtualDataset::update_extent(DatasetObj& d) {
  H5D_vds_view_t view = H5D_VDS_LAST_AVAILABLE;
  hsize_t gap = 0;
  view_and_gap(d, &view, &gap);
  const int r = H5Sget_simple_extent_ndims(d.space);
  if (r <= 0) return;
  std::vector<hsize_t> cur(static_cast<size_t>(r)), mx(static_cast<size_t>(r));
  H5Sget_simple_extent_dims(d.space, cur.data(), mx.data());
  std::vector<hsize_t> want(static_cast<size_t>(r), kUndef);
  for (const Mapping& m : maps_) {
    if (m.vu.unlim < 0 || m.vu.unlim >= r) continue;
    const hsize_t c = reach(d, m, view, gap);
    hsize_t& w = want[static_cast<size_t>(m.vu.unlim)];
    if (w == kUndef || (view == H5D_VDS_FIRST_MISSING ? c < w : c > w)) w = c;
  }
  bool changed = false;
  for (size_t i = 0; i < cur.size(); ++i) {
    if (want[i] == kUndef) want[i] = cur[i];
    else if (i < min_dims_.size() && want[i] < min_dims_[i]) want[i] = min_dims_[i];
    changed |= want[i] != cur[i];
  }
  if (changed && H5Sset_extent_simple(d.space, r, want.data(), mx.data()) < 0)
    fail_arg("cannot update the virtual dataset's extent");
}

std::vector<VirtualDataset::Piece> VirtualDataset::pieces(DatasetObj& d, const hsize_t* dims) {
  H5D_vds_view_t view = H5D_VDS_LAST_AVAILABLE;
  hsize_t gap = 0;
  view_and_gap(d, &view, &gap);
  std::vector<Piece> out;
  try {
    for (const Mapping& m : maps_) {
      if (m.vu.unlim < 0 && m.su.unlim < 0) {  // limited
        DatasetObj* s = source(d, m.file, m.dset);
        if (!s) continue;
        Space v(H5Scopy(m.vspace));
        Space src(source_selection(m.sspace, source_dims(*s)));
        out.push_back(Piece{v.release(), src.release(), s});
      } else if (!m.printf) {  // both unlimited: the source's extent decides
        DatasetObj* s = source(d, m.file, m.dset);
        if (!s) continue;
        const std::vector<hsize_t> sd = source_dims(*s);
        const hsize_t e = sd[static_cast<size_t>(m.su.unlim)];
        const hsize_t vd = dims[m.vu.unlim];
        hsize_t vclip, sclip;
        if (view == H5D_VDS_LAST_AVAILABLE) {
          vclip = std::min(vd, m.vu.extent_for_slices(m.su.slices_below(e), false));
          sclip = m.su.extent_for_slices(m.vu.slices_below(vclip), false);
        } else {
          vclip = vd;
          sclip = m.su.extent_for_slices(m.vu.slices_below(vd), false);
        }
        Space v(m.vu.clipped(dims, vclip));
        Space src(m.su.clipped(sd.data(), std::min(sclip, e)));
        if (npoints(v.id) != npoints(src.id)) continue;  // nothing consistent to map yet
        out.push_back(Piece{v.release(), src.release(), s});
      } else {  // printf: one source per block
        const hsize_t k = printf_found(d, m, gap);
        const int u = m.vu.unlim;
        for (hsize_t j = 0; j < k; ++j) {
          DatasetObj* s = source(d, substitute(m.file, j), substitute(m.dset, j));
          if (!s) continue;
          Space v(m.vu.block_at(dims, j));
          Space src(source_selection(m.sspace, source_dims(*s)));
          if (m.vu.start[u] + j * m.vu.stride[u] >= dims[u]) continue;
          if (m.vu.start[u] + j * m.vu.stride[u] + m.vu.block[u] > dims[u]) {
            // A block the extent cuts (FIRST_MISSING): its part below the extent.
            std::vector<hsize_t> zero(static_cast<size_t>(m.vu.rank), 0), box(dims, dims + m.vu.rank);
            Space cut(H5Scopy(v.id));
            if (cut.id < 0 || H5Sselect_hyperslab(cut.id, H5S_SELECT_AND, zero.data(), nullptr, box.data(), nullptr) < 0)
              fail_arg("cannot clip a virtual mapping block");
            Space part(project(v.id, src.id, cut.id));
            out.push_back(Piece{cut.release(), part.release(), s});
          } else {
            out.push_back(Piece{v.release(), src.release(), s});
          }
        }
      }
    }
  } catch (...) {
    close_pieces(out);
    throw;
  }
  return out;
}

void VirtualDataset::close_pieces(std::vector<Piece>& p) {
  for (Piece& x : p) {
    if (x.vsel >= 0) H5Sclose(x.vsel);
    if (x.ssel >= 0) H5Sclose(x.ssel);
  }
  p.clear();
}

namespace {

// The file and memory selections of one transfer on the virtual dataset, as spaces.
struct Transfer {
  Space file, mem;
  hid_t fs = H5I_INVALID_HID, ms = H5I_INVALID_HID;
  hssize_t n = 0;
};

void prepare(DatasetObj& d, hid_t mspace, hid_t fspace, Transfer* t) {
  if (fspace == H5S_BLOCK || fspace == H5S_PLIST) fail_arg("H5S_BLOCK/H5S_PLIST are not allowed for the file dataspace");
  if (fspace == H5S_ALL) {
    t->file.id = H5Scopy(d.space);
    if (t->file.id < 0 || H5Sselect_all(t->file.id) < 0) fail_arg("cannot copy the dataspace");
    t->fs = t->file.id;
  } else {
    t->fs = fspace;
    if (npoints(fspace) > 0 && H5Sselect_valid(fspace) <= 0)
      fail_arg("file selection is not within the virtual dataset's extent");
  }
  t->n = npoints(t->fs);
  if (mspace == H5S_ALL) {
    t->ms = t->fs;
  } else if (mspace == H5S_BLOCK) {
    hsize_t n = static_cast<hsize_t>(t->n);
    t->mem.id = H5Screate_simple(1, &n, nullptr);
    t->ms = t->mem.id;
  } else if (mspace == H5S_PLIST) {
    fail_arg("H5S_PLIST is not allowed for the memory dataspace");
  } else {
    t->ms = mspace;
    if (npoints(mspace) != t->n)
      fail_arg("memory selection has " + std::to_string(npoints(mspace)) + " elements, the file selection has " +
               std::to_string(t->n));
  }
}

}  // namespace

void VirtualDataset::read(DatasetObj& d, hid_t mtype, hid_t mspace, hid_t fspace, hid_t dxpl, void* buf) {
  update_extent(d);
  Transfer t;
  prepare(d, mspace, fspace, &t);
  if (t.n == 0) return;
  if (!buf) fail_arg("NULL read buffer");
  // Everything first reads as the fill value; the sources then overwrite their share.
  std::vector<unsigned char> fill(std::max<size_t>(H5Tget_size(mtype), 1), 0);
  if (H5Pget_fill_value(d.dcpl, mtype, fill.data()) < 0) fail_arg("cannot convert the fill value to the memory type");
  if (H5Dfill(fill.data(), mtype, buf, mtype, t.ms) < 0) fail_arg("cannot fill the read buffer");
  std::vector<hsize_t> dims = dims_of(d.space);
  std::vector<Piece> ps = pieces(d, dims.data());
  try {
    for (Piece& p : ps) {
      if (npoints(p.vsel) == 0) continue;
      Space pm(project(t.fs, t.ms, p.vsel));
      if (npoints(pm.id) == 0) continue;
      Space src(project(p.vsel, p.ssel, t.fs));
      dataset_read_one(*p.src, mtype, pm.id, src.id, dxpl, buf);
    }
  } catch (...) {
    close_pieces(ps);
    throw;
  }
  close_pieces(ps);
}

void VirtualDataset::write(DatasetObj& d, hid_t mtype, hid_t mspace, hid_t fspace, hid_t dxpl, const void* buf) {
  update_extent(d);
  Transfer t;
  prepare(d, mspace, fspace, &t);
  if (t.n == 0) return;
  if (!buf) fail_arg("NULL write buffer");
  std::vector<hsize_t> dims = dims_of(d.space);
  std::vector<Piece> ps = pieces(d, dims.data());
  try {
    // As native: every selected element must go to some source.
    struct Move {
      hid_t mem, src;
      DatasetObj* dset;
    };
    std::vector<Move> moves;
    hssize_t covered = 0;
    for (Piece& p : ps) {
      if (npoints(p.vsel) == 0) continue;
      Space pm(project(t.fs, t.ms, p.vsel));
      if (npoints(pm.id) == 0) continue;
      covered += npoints(pm.id);
      Space src(project(p.vsel, p.ssel, t.fs));
      moves.push_back(Move{pm.release(), src.release(), p.src});
    }
    struct Close {
      std::vector<Move>& v;
      ~Close() {
        for (Move& x : v) H5Sclose(x.mem), H5Sclose(x.src);
      }
    } closer{moves};
    if (covered != t.n) fail_arg("write requested to unmapped portion of virtual dataset");
    for (Move& x : moves) dataset_write_one(*x.dset, mtype, x.mem, x.src, dxpl, buf);
  } catch (...) {
    close_pieces(ps);
    throw;
  }
  close_pieces(ps);
}

void VirtualDataset::refresh() {
  for (auto& [key, s] : sources_)
    if (s.dset && s.dset->array) check(s.dset->array->refresh());
}

}  // namespace tessera_vol
