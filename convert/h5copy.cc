// h5copy.cc — h5copy.h.
#include "convert/h5copy.h"

#include <H5VLconnector.h>
#include <H5VLnative.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "convert/failure.h"
#include "convert/hid.h"
#include "tessera/region_ops.h"

namespace tool {

namespace {

[[noreturn]] void h5fail(const std::string& what) {
  std::string m = h5_error_message();
  H5Eclear2(H5E_DEFAULT);
  fail(what + (m.empty() ? "" : ": " + m));
}
hid_t ok(hid_t id, const std::string& what) {
  if (id < 0) h5fail(what);
  return id;
}
void ok_herr(herr_t rc, const std::string& what) {
  if (rc < 0) h5fail(what);
}

std::string token_key(const H5O_token_t& t) {
  return std::string(reinterpret_cast<const char*>(t.__data), sizeof t.__data);
}

std::string child_path(const std::string& group, const std::string& name) {
  return group == "/" ? "/" + name : group + "/" + name;
}

// True when `leaf` holds for the type or any type inside it (compound members, array and
// sequence elements).
template <class Leaf>
bool type_holds(hid_t t, Leaf leaf) {
  if (leaf(t)) return true;
  switch (H5Tget_class(t)) {
    case H5T_COMPOUND: {
      const int n = H5Tget_nmembers(t);
      for (int i = 0; i < n; ++i) {
        Hid m(H5Tget_member_type(t, static_cast<unsigned>(i)));
        if (m.valid() && type_holds(m, leaf)) return true;
      }
      return false;
    }
    case H5T_ARRAY:
    case H5T_VLEN: {
      Hid b(H5Tget_super(t));
      return b.valid() && type_holds(b, leaf);
    }
    default: return false;
  }
}

// Variable-length data anywhere (sequences or strings): converted through memory.
bool has_vlen(hid_t t) {
  return type_holds(t, [](hid_t x) {
    return H5Tget_class(x) == H5T_VLEN || (H5Tget_class(x) == H5T_STRING && H5Tis_variable_str(x) > 0);
  });
}

bool has_reference(hid_t t) {
  return type_holds(t, [](hid_t x) { return H5Tget_class(x) == H5T_REFERENCE; });
}

// Names of a group's links (or an object's attributes) in the order to copy them:
// creation order where it is tracked, else name order.
herr_t collect_name(hid_t, const char* name, const H5L_info2_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}
herr_t collect_attr(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

// Names listed by iterate(index, &names) in creation order where it is tracked (and the
// index can be used), else in name order.
template <class Iterate>
std::vector<std::string> ordered_names(bool tracked, Iterate iterate, const std::string& what) {
  std::vector<std::string> names;
  herr_t rc = -1;
  if (tracked) {
    H5E_BEGIN_TRY { rc = iterate(H5_INDEX_CRT_ORDER, &names); }
    H5E_END_TRY
  }
  if (rc < 0) {
    names.clear();
    ok_herr(iterate(H5_INDEX_NAME, &names), what);
  }
  return names;
}

// The shape of slabs: whole chunks (or whole rows), grown along the fastest dimensions
// first, at most `max_bytes` (at least one chunk or one row).
std::vector<hsize_t> slab_shape(const std::vector<hsize_t>& dims, const std::vector<hsize_t>& chunk, size_t elem,
                                uint64_t max_bytes) {
  const size_t r = dims.size();
  std::vector<hsize_t> b(r, 1);
  if (!chunk.empty()) {
    for (size_t d = 0; d < r; ++d) b[d] = std::max<hsize_t>(1, std::min(chunk[d], dims[d]));
  } else if (r > 0) {
    b[r - 1] = std::max<hsize_t>(1, dims[r - 1]);  // whole rows
  }
  auto bytes = [&] {
    uint64_t x = elem;
    for (hsize_t v : b) x *= v;
    return x;
  };
  for (size_t i = r; i-- > 0;) {
    const hsize_t unit = chunk.empty() ? 1 : b[i];
    if (b[i] < dims[i] && bytes() < max_bytes) {
      const uint64_t per_unit = bytes() / b[i] * unit;
      const uint64_t units = std::max<uint64_t>(1, max_bytes / per_unit);
      b[i] = static_cast<hsize_t>(std::min<uint64_t>(dims[i], units * unit));
    }
    if (b[i] < dims[i]) break;  // slabs stay runs of whole chunks (or rows)
  }
  return b;
}

// Calls f(start, count) for every slab of shape `b` covering `dims`, in row-major order.
template <class F>
void for_each_slab(const std::vector<hsize_t>& dims, const std::vector<hsize_t>& b, F f) {
  const size_t r = dims.size();
  std::vector<hsize_t> start(r, 0), count(r);
  for (size_t d = 0; d < r; ++d)
    if (dims[d] == 0) return;
  for (;;) {
    for (size_t d = 0; d < r; ++d) count[d] = std::min(b[d], dims[d] - start[d]);
    f(start, count);
    size_t d = r;
    while (d-- > 0) {
      start[d] += b[d];
      if (start[d] < dims[d]) break;
      start[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

struct Chunk {
  std::vector<hsize_t> offset;
  uint32_t mask;
  hsize_t size;
};
int collect_chunk(const hsize_t* offset, unsigned mask, haddr_t, hsize_t size, void* data) {
  auto* v = static_cast<std::pair<int, std::vector<Chunk>>*>(data);
  v->second.push_back(Chunk{std::vector<hsize_t>(offset, offset + v->first), mask, size});
  return 0;
}

// No filters, or only filters that tessera keeps as HDF5's own chunk bytes
// (vol/io/chunk_io.cc): stored chunks can move unchanged in both directions, and chunks
// never written stay unallocated in the target.
bool shared_filters(hid_t dcpl) {
  const int n = H5Pget_nfilters(dcpl);
  if (n < 0) return false;
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, cd[8] = {};
    size_t ncd = 8;
    H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &ncd, cd, 0, nullptr, nullptr);
    if (id != H5Z_FILTER_DEFLATE && id != H5Z_FILTER_SHUFFLE) return false;
  }
  return true;
}

class Copier {
 public:
  Copier(hid_t sf, hid_t df, const CopyOptions& o) : sf_(sf), df_(df), o_(o) {
    src_native_ = connector(sf) == "native";
    dst_native_ = connector(df) == "native";
  }

  CopyStats run() {
    total_ = logical_bytes(sf_);
    Hid sroot(ok(H5Gopen2(sf_, "/", H5P_DEFAULT), "opening the source's root group"));
    Hid droot(ok(H5Gopen2(df_, "/", H5P_DEFAULT), "opening the target's root group"));
    H5O_info2_t oi;
    ok_herr(H5Oget_info3(sroot, &oi, H5O_INFO_BASIC), "reading the root group");
    done_[token_key(oi.token)] = "/";
    copy_attrs(sroot, droot, "/");
    copy_comment(sroot, droot, "/");
    copy_group(sroot, droot, "/");
    for (auto& d : deferred_) d();  // data holding references: every object exists now
    return stats_;
  }

 private:
  static std::string connector(hid_t f) {
    char name[64] = "";
    if (H5VLget_connector_name(f, name, sizeof name) < 0) return "";
    return name;
  }

  void progress() {
    if (o_.progress) o_.progress(stats_.bytes, std::max(total_, stats_.bytes));
  }

  Hid lcpl_for(H5T_cset_t cset) {
    Hid l(ok(H5Pcreate(H5P_LINK_CREATE), "creating a link creation property list"));
    ok_herr(H5Pset_char_encoding(l, cset), "setting a link's character set");
    return l;
  }

  void copy_comment(hid_t so, hid_t dobj, const std::string& path) {
    ssize_t n = H5Oget_comment(so, nullptr, 0);
    if (n <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return;
    }
    std::string c(static_cast<size_t>(n) + 1, '\0');
    ok(H5Oget_comment(so, c.data(), c.size()), "reading the comment of '" + path + "'");
    c.resize(static_cast<size_t>(n));
    ok_herr(H5Oset_comment(dobj, c.c_str()), "setting the comment of '" + path + "'");
  }

  void copy_group(hid_t sg, hid_t dg, const std::string& path) {
    Hid gcpl(ok(H5Gget_create_plist(sg), "reading the creation properties of '" + path + "'"));
    unsigned order = 0;
    H5Pget_link_creation_order(gcpl, &order);
    auto names = ordered_names(
        order & H5P_CRT_ORDER_TRACKED,
        [&](H5_index_t idx, std::vector<std::string>* n) {
          return H5Literate2(sg, idx, H5_ITER_INC, nullptr, collect_name, n);
        },
        "listing the links of '" + path + "'");
    for (const std::string& name : names) copy_link(sg, dg, path, name);
  }

  void copy_link(hid_t sg, hid_t dg, const std::string& gpath, const std::string& name) {
    const std::string p = child_path(gpath, name);
    H5L_info2_t li;
    ok_herr(H5Lget_info2(sg, name.c_str(), &li, H5P_DEFAULT), "reading link '" + p + "'");
    Hid lcpl = lcpl_for(li.cset);
    stats_.links++;
    switch (li.type) {
      case H5L_TYPE_HARD: {
        auto it = done_.find(token_key(li.u.token));
        if (it != done_.end()) {
          ok_herr(H5Lcreate_hard(df_, it->second.c_str(), dg, name.c_str(), lcpl, H5P_DEFAULT),
                  "linking '" + p + "' to '" + it->second + "'");
          return;
        }
        copy_object(sg, dg, name, p, li.u.token, lcpl);
        return;
      }
      case H5L_TYPE_SOFT: {
        std::vector<char> v(li.u.val_size + 1, '\0');
        ok_herr(H5Lget_val(sg, name.c_str(), v.data(), v.size(), H5P_DEFAULT), "reading soft link '" + p + "'");
        ok_herr(H5Lcreate_soft(v.data(), dg, name.c_str(), lcpl, H5P_DEFAULT), "creating soft link '" + p + "'");
        return;
      }
      case H5L_TYPE_EXTERNAL: {
        std::vector<char> v(li.u.val_size + 1, '\0');
        ok_herr(H5Lget_val(sg, name.c_str(), v.data(), v.size(), H5P_DEFAULT), "reading external link '" + p + "'");
        unsigned flags = 0;
        const char *file = nullptr, *obj = nullptr;
        ok_herr(H5Lunpack_elink_val(v.data(), li.u.val_size, &flags, &file, &obj), "reading external link '" + p + "'");
        ok_herr(H5Lcreate_external(file, obj, dg, name.c_str(), lcpl, H5P_DEFAULT),
                "creating external link '" + p + "'");
        return;
      }
      default:
        fail("'" + p + "' is a user-defined link (class " + std::to_string(static_cast<int>(li.type)) +
             "), which cannot be copied");
    }
  }

  void copy_object(hid_t sg, hid_t dg, const std::string& name, const std::string& p, const H5O_token_t& token,
                   hid_t lcpl) {
    Hid so(ok(H5Oopen(sg, name.c_str(), H5P_DEFAULT), "opening '" + p + "'"));
    const std::string key = token_key(token);
    switch (H5Iget_type(so)) {
      case H5I_GROUP: {
        Hid gcpl(ok(H5Gget_create_plist(so), "reading the creation properties of '" + p + "'"));
        Hid dgrp(ok(H5Gcreate2(dg, name.c_str(), lcpl, gcpl, H5P_DEFAULT), "creating group '" + p + "'"));
        done_[key] = p;
        stats_.groups++;
        copy_attrs(so, dgrp, p);
        copy_comment(so, dgrp, p);
        copy_group(so, dgrp, p);
        return;
      }
      case H5I_DATATYPE: {
        auto it = types_.find(key);
        if (it != types_.end()) {  // committed anonymously for a dataset or attribute seen first
          ok_herr(H5Olink(it->second, dg, name.c_str(), lcpl, H5P_DEFAULT), "linking committed datatype '" + p + "'");
        } else {
          Hid t(ok(H5Tcopy(so), "copying datatype '" + p + "'"));
          Hid tcpl(ok(H5Tget_create_plist(so), "reading the creation properties of '" + p + "'"));
          ok_herr(H5Tcommit2(dg, name.c_str(), t, lcpl, tcpl, H5P_DEFAULT), "committing datatype '" + p + "'");
          types_.emplace(key, std::move(t));
        }
        done_[key] = p;
        stats_.datatypes++;
        Hid dt(ok(H5Topen2(dg, name.c_str(), H5P_DEFAULT), "opening datatype '" + p + "'"));
        copy_attrs(so, dt, p);
        copy_comment(so, dt, p);
        return;
      }
      case H5I_DATASET:
        copy_dataset(so, dg, name, p, lcpl);
        done_[key] = p;
        return;
      default:
        fail("'" + p + "' is an object of a kind that cannot be copied");
    }
  }

  // The type to create a dataset or attribute with in the target: the target's copy of
  // a committed datatype (committed anonymously now if its link comes later), or a copy.
  hid_t target_type(hid_t stype, Hid* owned, const std::string& what) {
    if (H5Tcommitted(stype) <= 0) {
      owned->reset(ok(H5Tcopy(stype), "copying the datatype of " + what));
      return *owned;
    }
    H5O_info2_t oi;
    ok_herr(H5Oget_info3(stype, &oi, H5O_INFO_BASIC), "reading the committed datatype of " + what);
    const std::string key = token_key(oi.token);
    auto it = types_.find(key);
    if (it != types_.end()) return it->second;
    Hid st(ok(H5Oopen_by_token(sf_, oi.token), "opening the committed datatype of " + what));
    Hid t(ok(H5Tcopy(st), "copying the committed datatype of " + what));
    Hid tcpl(ok(H5Tget_create_plist(st), "reading the committed datatype of " + what));
    ok_herr(H5Tcommit_anon(df_, t, tcpl, H5P_DEFAULT), "committing the datatype of " + what);
    return types_.emplace(key, std::move(t)).first->second;
  }

  void copy_attrs(hid_t so, hid_t dobj, const std::string& path) {
    H5O_info2_t oi;
    ok_herr(H5Oget_info3(so, &oi, H5O_INFO_NUM_ATTRS), "reading '" + path + "'");
    if (oi.num_attrs == 0) return;
    Hid ocpl(create_plist(so));
    unsigned order = 0;
    if (ocpl.valid()) H5Pget_attr_creation_order(ocpl, &order);
    auto names = ordered_names(
        order & H5P_CRT_ORDER_TRACKED,
        [&](H5_index_t idx, std::vector<std::string>* n) {
          return H5Aiterate2(so, idx, H5_ITER_INC, nullptr, collect_attr, n);
        },
        "listing the attributes of '" + path + "'");
    for (const std::string& name : names) {
      const std::string what = "attribute '" + name + "' of '" + path + "'";
      Hid sa(ok(H5Aopen(so, name.c_str(), H5P_DEFAULT), "opening " + what));
      Hid atype(ok(H5Aget_type(sa), "reading the type of " + what));
      Hid aspace(ok(H5Aget_space(sa), "reading the dataspace of " + what));
      Hid acpl(ok(H5Aget_create_plist(sa), "reading the creation properties of " + what));
      Hid owned;
      hid_t dtype = target_type(atype, &owned, what);
      Hid da(ok(H5Acreate2(dobj, name.c_str(), dtype, aspace, acpl, H5P_DEFAULT), "creating " + what));
      stats_.attributes++;
      const hssize_t n = H5Sget_select_npoints(aspace);
      if (n <= 0 || H5Sget_simple_extent_type(aspace) == H5S_NULL) continue;
      if (has_reference(atype)) {
        // The referenced objects may not exist in the target yet.
        std::string obj_path = path, attr = name;
        deferred_.push_back([this, obj_path, attr] {
          Hid s(ok(H5Oopen(sf_, obj_path.c_str(), H5P_DEFAULT), "opening '" + obj_path + "'"));
          Hid d(ok(H5Oopen(df_, obj_path.c_str(), H5P_DEFAULT), "opening '" + obj_path + "' in the target"));
          Hid sa2(ok(H5Aopen(s, attr.c_str(), H5P_DEFAULT), "opening attribute '" + attr + "'"));
          Hid da2(ok(H5Aopen(d, attr.c_str(), H5P_DEFAULT), "opening attribute '" + attr + "' in the target"));
          Hid t(ok(H5Aget_type(sa2), "reading an attribute's type"));
          Hid sp(ok(H5Aget_space(sa2), "reading an attribute's dataspace"));
          copy_references(t, static_cast<size_t>(H5Sget_select_npoints(sp)),
                          [&](hid_t mt, void* buf) { ok_herr(H5Aread(sa2, mt, buf), "reading attribute '" + attr + "'"); },
                          [&](hid_t mt, const void* buf) {
                            ok_herr(H5Awrite(da2, mt, buf), "writing attribute '" + attr + "'");
                          },
                          "attribute '" + attr + "' of '" + obj_path + "'");
        });
        continue;
      }
      const bool vlen = has_vlen(atype);
      Hid mtype(ok(vlen ? H5Tget_native_type(atype, H5T_DIR_ASCEND) : H5Tcopy(atype), "a memory type for " + what));
      std::vector<unsigned char> buf(static_cast<size_t>(n) * H5Tget_size(mtype));
      ok_herr(H5Aread(sa, mtype, buf.data()), "reading " + what);
      herr_t wr = H5Awrite(da, mtype, buf.data());
      if (vlen) H5Treclaim(mtype, aspace, H5P_DEFAULT, buf.data());
      ok_herr(wr, "writing " + what);
    }
  }

  static hid_t create_plist(hid_t obj) {
    switch (H5Iget_type(obj)) {
      case H5I_GROUP: return H5Gget_create_plist(obj);
      case H5I_DATASET: return H5Dget_create_plist(obj);
      case H5I_DATATYPE: return H5Tget_create_plist(obj);
      default: return H5I_INVALID_HID;
    }
  }

  void copy_dataset(hid_t sd, hid_t dg, const std::string& name, const std::string& p, hid_t lcpl) {
    Hid ftype(ok(H5Dget_type(sd), "reading the type of '" + p + "'"));
    Hid space(ok(H5Dget_space(sd), "reading the dataspace of '" + p + "'"));
    Hid dcpl(ok(H5Dget_create_plist(sd), "reading the creation properties of '" + p + "'"));
    Hid owned;
    hid_t dtype = target_type(ftype, &owned, "'" + p + "'");
    Hid dd(ok(H5Dcreate2(dg, name.c_str(), dtype, space, lcpl, dcpl, H5P_DEFAULT), "creating dataset '" + p + "'"));
    stats_.datasets++;
    copy_attrs(sd, dd, p);
    copy_comment(sd, dd, p);
    const H5D_layout_t layout = H5Pget_layout(dcpl);
    if (layout == H5D_VIRTUAL || H5Pget_external_count(dcpl) > 0) return;  // the data lives elsewhere
    if (H5Sget_simple_extent_type(space) == H5S_NULL || H5Sget_simple_extent_npoints(space) == 0) return;
    if (has_reference(ftype)) {
      deferred_.push_back([this, p] {
        Hid s(ok(H5Dopen2(sf_, p.c_str(), H5P_DEFAULT), "opening '" + p + "'"));
        Hid d(ok(H5Dopen2(df_, p.c_str(), H5P_DEFAULT), "opening '" + p + "' in the target"));
        copy_data(s, d, p);
      });
      return;
    }
    copy_data(sd, dd, p);
  }

  void copy_data(hid_t sd, hid_t dd, const std::string& p) {
    Hid ftype(ok(H5Dget_type(sd), "reading the type of '" + p + "'"));
    Hid space(ok(H5Dget_space(sd), "reading the dataspace of '" + p + "'"));
    Hid dcpl(ok(H5Dget_create_plist(sd), "reading the creation properties of '" + p + "'"));
    const int rank = H5Sget_simple_extent_ndims(space);
    std::vector<hsize_t> dims(rank > 0 ? rank : 0);
    if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    const size_t fsize = H5Tget_size(ftype);
    if (rank == 0) {  // scalar
      copy_block(sd, dd, ftype, space, 1, p);
      return;
    }
    std::vector<hsize_t> chunk;
    if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
      chunk.resize(rank);
      H5Pget_chunk(dcpl, rank, chunk.data());
      if (!has_vlen(ftype) && !has_reference(ftype) && shared_filters(dcpl) && copy_stored_chunks(sd, dd, rank, p))
        return;
    }
    const bool vlen = has_vlen(ftype) || has_reference(ftype);
    // Variable-length data: at most a million elements per slab (their values are
    // allocated by HDF5 on top).
    const uint64_t max_bytes = vlen ? std::min<uint64_t>(o_.slab_bytes, (1u << 20) * fsize) : o_.slab_bytes;
    const std::vector<hsize_t> b = slab_shape(dims, chunk, fsize, max_bytes);
    for_each_slab(dims, b, [&](const std::vector<hsize_t>& start, const std::vector<hsize_t>& count) {
      Hid fs(ok(H5Scopy(space), "a dataspace"));
      ok_herr(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr), "a selection");
      hsize_t n = 1;
      for (hsize_t c : count) n *= c;
      copy_block(sd, dd, ftype, fs, n, p);
    });
  }

  // One slab: read `fs`'s selection, write it to the same selection of the target.
  void copy_block(hid_t sd, hid_t dd, hid_t ftype, hid_t fs, hsize_t n, const std::string& p) {
    Hid ms(ok(H5Screate_simple(1, &n, nullptr), "a memory dataspace"));
    if (has_reference(ftype)) {
      copy_references(ftype, n,
                      [&](hid_t mt, void* buf) { ok_herr(H5Dread(sd, mt, ms, fs, H5P_DEFAULT, buf), "reading '" + p + "'"); },
                      [&](hid_t mt, const void* buf) {
                        ok_herr(H5Dwrite(dd, mt, ms, fs, H5P_DEFAULT, buf), "writing '" + p + "'");
                      },
                      "'" + p + "'");
    } else {
      const bool vlen = has_vlen(ftype);
      Hid mtype(ok(vlen ? H5Tget_native_type(ftype, H5T_DIR_ASCEND) : H5Tcopy(ftype), "a memory type for '" + p + "'"));
      buf_.resize(static_cast<size_t>(n) * H5Tget_size(mtype));
      ok_herr(H5Dread(sd, mtype, ms, fs, H5P_DEFAULT, buf_.data()), "reading '" + p + "'");
      herr_t wr = H5Dwrite(dd, mtype, ms, fs, H5P_DEFAULT, buf_.data());
      if (vlen) H5Treclaim(mtype, ms, H5P_DEFAULT, buf_.data());
      ok_herr(wr, "writing '" + p + "'");
    }
    stats_.bytes += n * H5Tget_size(ftype);
    progress();
    if (buf_.capacity() > (o_.slab_bytes << 1)) std::vector<unsigned char>().swap(buf_);
  }

  // Stored chunks move unchanged (the filters are ones both sides store as HDF5 does).
  // False when the source cannot list its chunks (then slabs are copied instead).
  bool copy_stored_chunks(hid_t sd, hid_t dd, int rank, const std::string& p) {
    std::pair<int, std::vector<Chunk>> chunks{rank, {}};
    herr_t rc;
    H5E_BEGIN_TRY { rc = H5Dchunk_iter(sd, H5P_DEFAULT, collect_chunk, &chunks); }
    H5E_END_TRY
    if (rc < 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    // Ascending chunk order: a tessera target appends them to one fragment.
    std::sort(chunks.second.begin(), chunks.second.end(),
              [](const Chunk& a, const Chunk& b) { return a.offset < b.offset; });
    Hid ftype(ok(H5Dget_type(sd), "reading the type of '" + p + "'"));
    Hid dcpl(ok(H5Dget_create_plist(sd), "reading '" + p + "'"));
    std::vector<hsize_t> cdims(rank);
    H5Pget_chunk(dcpl, rank, cdims.data());
    uint64_t chunk_logical = H5Tget_size(ftype);
    for (hsize_t c : cdims) chunk_logical *= c;
    for (const Chunk& c : chunks.second) {
      buf_.resize(c.size);
      uint32_t mask = c.mask;
      ok_herr(H5Dread_chunk(sd, H5P_DEFAULT, c.offset.data(), &mask, buf_.data()),
              "reading a chunk of '" + p + "'");
      ok_herr(H5Dwrite_chunk(dd, H5P_DEFAULT, mask, c.offset.data(), c.size, buf_.data()),
              "writing a chunk of '" + p + "'");
      stats_.stored_chunks++;
      stats_.bytes += chunk_logical;
      progress();
    }
    return true;
  }

  // References are re-created in the target, naming the same objects by path.
  template <class Read, class Write>
  void copy_references(hid_t ftype, size_t n, Read read, Write write, const std::string& what) {
    if (H5Tget_class(ftype) != H5T_REFERENCE) {
      copy_nested_references(ftype, n, read, write, what);
      return;
    }
    if (H5Tequal(ftype, H5T_STD_REF) > 0) {
      std::vector<H5R_ref_t> in(n), out(n);
      read(H5T_STD_REF, in.data());
      std::memset(out.data(), 0, n * sizeof(H5R_ref_t));
      for (size_t i = 0; i < n; ++i) recreate_ref(&in[i], &out[i], what);
      write(H5T_STD_REF, out.data());
      for (size_t i = 0; i < n; ++i) {
        H5E_BEGIN_TRY {
          H5Rdestroy(&in[i]);
          H5Rdestroy(&out[i]);
        }
        H5E_END_TRY
      }
      return;
    }
    if (H5Tequal(ftype, H5T_STD_REF_OBJ) > 0) {
      // Old-style object references: the object's address (native) or id (tessera) —
      // in both, the first 8 bytes of its token.
      std::vector<uint64_t> v(n);
      read(ftype, v.data());
      for (uint64_t& x : v)
        if (x) x = target_ref(old_ref_path(x, what), what);
      write(ftype, v.data());
      return;
    }
    if (H5Tequal(ftype, H5T_STD_REF_DSETREG) > 0) {
      // Old-style region references (12 bytes): natively a global heap entry holding the
      // selection; in a container the dataset's id and the id of a catalog record of the
      // selection (include/tessera/region_ops.h) — each side read and written its own way.
      constexpr size_t kRef = H5R_DSET_REG_REF_BUF_SIZE;
      std::vector<unsigned char> v(n * kRef);
      read(ftype, v.data());
      static const unsigned char zero[kRef] = {};
      for (size_t i = 0; i < n; ++i) {
        unsigned char* r = v.data() + i * kRef;
        if (std::memcmp(r, zero, kRef) == 0) continue;
        std::string path;
        if (src_native_) {  // the first 8 bytes address the global heap, not the dataset
          Hid ds(ok(H5Rdereference2(sf_, H5P_DEFAULT, H5R_DATASET_REGION, r), what + ": a region reference's dataset"));
          path = object_path(ds, what);
        } else {
          uint64_t obj;
          std::memcpy(&obj, r, sizeof obj);
          path = old_ref_path(obj, what);
        }
        Hid sel = old_region(r, path, what);
        std::memset(r, 0, kRef);
        if (dst_native_) {
          ok_herr(H5Rcreate(r, df_, path.c_str(), H5R_DATASET_REGION, sel), what + ": re-creating a region reference");
        } else {
          uint32_t id = 0;
          region_put(path, sel, &id, what);
          const uint64_t target = target_ref(path, what);
          std::memcpy(r, &target, sizeof target);
          std::memcpy(r + sizeof target, &id, sizeof id);
        }
      }
      write(ftype, v.data());
      return;
    }
    fail(what + ": a reference type that cannot be copied");
  }

  // References inside compound, array or variable-length types — dimension scales'
  // REFERENCE_LIST (a compound of an object reference and an index) and DIMENSION_LIST
  // (variable-length sequences of object references), so every netCDF-4 file, old-style
  // natively and new-style on tessera (HDF5's H5DSwith_new_ref): the values are read into
  // memory, each reference in them is re-pointed at the target's object, and they are
  // written back.
  template <class Read, class Write>
  void copy_nested_references(hid_t ftype, size_t n, Read read, Write write, const std::string& what) {
    Hid mtype(ok(H5Tget_native_type(ftype, H5T_DIR_ASCEND), what + ": a memory type"));
    const size_t size = H5Tget_size(mtype);
    std::vector<unsigned char> buf(n * size);
    read(mtype, buf.data());
    hsize_t count = n;
    Hid space(ok(H5Screate_simple(1, &count, nullptr), what + ": a dataspace"));
    try {
      for (size_t i = 0; i < n; ++i) repoint(mtype, buf.data() + i * size, what);
      write(mtype, buf.data());
    } catch (...) {
      H5Treclaim(mtype, space, H5P_DEFAULT, buf.data());
      throw;
    }
    H5Treclaim(mtype, space, H5P_DEFAULT, buf.data());
  }

  // A new-style reference of the source re-created in the target, naming the same object
  // (and selection, or attribute) by path; `out` stays zeroed for a reference never set.
  void recreate_ref(H5R_ref_t* in, H5R_ref_t* out, const std::string& what) {
    static const H5R_ref_t zero{};
    const H5R_type_t t = H5Rget_type(in);
    // Never set: an invalid reference, or the zeros a never-written element reads as
    // (which H5Rget_type calls H5R_OBJECT1).
    if (t == H5R_BADTYPE || std::memcmp(in, &zero, sizeof zero) == 0) {
      H5Eclear2(H5E_DEFAULT);
      return;
    }
    std::vector<char> name(4096), attr(4096);
    if (H5Rget_obj_name(in, H5P_DEFAULT, name.data(), name.size()) < 0) h5fail(what + ": a reference's object");
    if (t == H5R_OBJECT2) {
      ok_herr(H5Rcreate_object(df_, name.data(), H5P_DEFAULT, out), what + ": re-creating a reference");
    } else if (t == H5R_DATASET_REGION2) {
      Hid sel(ok(H5Ropen_region(in, H5P_DEFAULT, H5P_DEFAULT), what + ": a region reference's selection"));
      ok_herr(H5Rcreate_region(df_, name.data(), sel, H5P_DEFAULT, out), what + ": re-creating a reference");
    } else if (t == H5R_ATTR) {
      if (H5Rget_attr_name(in, attr.data(), attr.size()) < 0) h5fail(what + ": a reference's attribute");
      ok_herr(H5Rcreate_attr(df_, name.data(), attr.data(), H5P_DEFAULT, out), what + ": re-creating a reference");
    } else {
      fail(what + ": a reference of an unknown kind");
    }
  }

  // Re-points the references inside one value of (memory) type t at p: old-style object
  // references by address, new-style ones re-created in the target (the source's is
  // released; H5Treclaim of the value releases the new one after the write).
  void repoint(hid_t t, unsigned char* p, const std::string& what) {
    switch (H5Tget_class(t)) {
      case H5T_REFERENCE: {
        if (H5Tequal(t, H5T_STD_REF) > 0) {
          H5R_ref_t in, out;
          std::memcpy(&in, p, sizeof in);
          std::memset(&out, 0, sizeof out);
          recreate_ref(&in, &out, what);
          H5E_BEGIN_TRY { H5Rdestroy(&in); }
          H5E_END_TRY
          std::memcpy(p, &out, sizeof out);
          return;
        }
        if (H5Tequal(t, H5T_STD_REF_OBJ) <= 0)
          fail(what + ": references inside compound, array or variable-length types can be copied only when "
                      "they are object references (old- or new-style), not old-style region references");
        uint64_t x;
        std::memcpy(&x, p, sizeof x);
        if (x) x = target_ref(old_ref_path(x, what), what);
        std::memcpy(p, &x, sizeof x);
        return;
      }
      case H5T_COMPOUND: {
        const int m = H5Tget_nmembers(t);
        for (int j = 0; j < m; ++j) {
          Hid mt(ok(H5Tget_member_type(t, static_cast<unsigned>(j)), what + ": a member type"));
          if (has_reference(mt)) repoint(mt, p + H5Tget_member_offset(t, static_cast<unsigned>(j)), what);
        }
        return;
      }
      case H5T_ARRAY: {
        Hid base(ok(H5Tget_super(t), what + ": an array's base type"));
        const int rank = H5Tget_array_ndims(t);
        std::vector<hsize_t> dims(rank > 0 ? rank : 0);
        if (rank > 0) H5Tget_array_dims2(t, dims.data());
        size_t k = 1;
        for (hsize_t d : dims) k *= d;
        const size_t bs = H5Tget_size(base);
        for (size_t i = 0; i < k; ++i) repoint(base, p + i * bs, what);
        return;
      }
      case H5T_VLEN: {
        Hid base(ok(H5Tget_super(t), what + ": a sequence's base type"));
        hvl_t v;
        std::memcpy(&v, p, sizeof v);
        const size_t bs = H5Tget_size(base);
        for (size_t i = 0; i < v.len; ++i) repoint(base, static_cast<unsigned char*>(v.p) + i * bs, what);
        return;
      }
      default: return;
    }
  }

  // The source path of the object an old-style reference's first 8 bytes name.
  std::string old_ref_path(uint64_t x, const std::string& what) {
    H5O_token_t tok{};
    if (src_native_) ok_herr(H5VLnative_addr_to_token(sf_, static_cast<haddr_t>(x), &tok), what);
    else std::memcpy(tok.__data, &x, sizeof x);
    Hid so(ok(H5Oopen_by_token(sf_, tok), what + ": the object a reference names"));
    return object_path(so, what);
  }

  static std::string object_path(hid_t so, const std::string& what) {
    ssize_t len = H5Iget_name(so, nullptr, 0);
    std::string path(len > 0 ? static_cast<size_t>(len) + 1 : 1, '\0');
    if (len <= 0 || H5Iget_name(so, path.data(), path.size()) < 0) h5fail(what + ": the path of a referenced object");
    path.resize(static_cast<size_t>(len));
    return path;
  }

  // The target's old-style reference value (first 8 bytes of the token) of `path`.
  uint64_t target_ref(const std::string& path, const std::string& what) {
    Hid dobj(ok(H5Oopen(df_, path.c_str(), H5P_DEFAULT), what + ": '" + path + "' in the target"));
    H5O_info2_t oi;
    ok_herr(H5Oget_info3(dobj, &oi, H5O_INFO_BASIC), what);
    if (dst_native_) {
      haddr_t a = 0;
      ok_herr(H5VLnative_token_to_addr(df_, oi.token, &a), what);
      return a;
    }
    uint64_t x;
    std::memcpy(&x, oi.token.__data, sizeof x);
    return x;
  }

  static int region_op(const char* name, const std::string& what) {
    int op = 0;
    herr_t rc;
    H5E_BEGIN_TRY { rc = H5VLfind_opt_operation(H5VL_SUBCLS_OBJECT, name, &op); }
    H5E_END_TRY
    if (rc < 0 || op <= 0) fail(what + ": the loaded tessera connector has no operation '" + name + "'");
    return op;
  }

  // The selection of an old-style region reference `r` to dataset `path` of the source.
  Hid old_region(const unsigned char* r, const std::string& path, const std::string& what) {
    Hid ds(ok(H5Dopen2(sf_, path.c_str(), H5P_DEFAULT), what + ": the dataset a region reference names"));
    if (src_native_) return Hid(ok(H5Rget_region(ds, H5R_DATASET_REGION, r), what + ": a region reference's selection"));
    tessera_region_get_t get{};
    std::memcpy(&get.id, r + sizeof(uint64_t), sizeof get.id);
    H5VL_optional_args_t args{region_op(TESSERA_OP_REGION_GET, what), &get};
    ok_herr(H5VLobject_optional_op(ds, ".", H5P_DEFAULT, &args, H5P_DEFAULT, H5ES_NONE), what + ": a region's selection");
    std::vector<unsigned char> enc(get.size);
    get.buf = enc.data();
    get.buf_size = enc.size();
    ok_herr(H5VLobject_optional_op(ds, ".", H5P_DEFAULT, &args, H5P_DEFAULT, H5ES_NONE), what + ": a region's selection");
    return Hid(ok(H5Sdecode(enc.data()), what + ": decoding a region's selection"));
  }

  void region_put(const std::string& path, hid_t sel, uint32_t* id, const std::string& what) {
    size_t size = 0;
    ok_herr(H5Sencode2(sel, nullptr, &size, H5P_DEFAULT), what + ": encoding a selection");
    std::vector<unsigned char> enc(size);
    ok_herr(H5Sencode2(sel, enc.data(), &size, H5P_DEFAULT), what + ": encoding a selection");
    tessera_region_put_t put{enc.data(), size, 0};
    H5VL_optional_args_t args{region_op(TESSERA_OP_REGION_PUT, what), &put};
    ok_herr(H5VLobject_optional_op(df_, path.c_str(), H5P_DEFAULT, &args, H5P_DEFAULT, H5ES_NONE),
            what + ": storing a region's selection");
    *id = put.id;
  }

  hid_t sf_, df_;
  const CopyOptions& o_;
  bool src_native_ = false, dst_native_ = false;
  uint64_t total_ = 0;
  CopyStats stats_;
  std::map<std::string, std::string> done_;  // source token -> target path
  std::map<std::string, Hid> types_;         // source committed type token -> target committed type
  std::vector<std::function<void()>> deferred_;
  std::vector<unsigned char> buf_;
};

herr_t add_bytes(hid_t obj, const char* name, const H5O_info2_t* info, void* data) {
  if (info->type != H5O_TYPE_DATASET) return 0;
  hid_t d = H5Dopen2(obj, name, H5P_DEFAULT);
  if (d < 0) return 0;
  hid_t t = H5Dget_type(d), s = H5Dget_space(d);
  if (t >= 0 && s >= 0) {
    hssize_t n = H5Sget_simple_extent_npoints(s);
    if (n > 0) *static_cast<uint64_t*>(data) += static_cast<uint64_t>(n) * H5Tget_size(t);
  }
  if (t >= 0) H5Tclose(t);
  if (s >= 0) H5Sclose(s);
  H5Dclose(d);
  return 0;
}

}  // namespace

uint64_t logical_bytes(hid_t file) {
  uint64_t n = 0;
  H5E_BEGIN_TRY { H5Ovisit3(file, H5_INDEX_NAME, H5_ITER_INC, add_bytes, &n, H5O_INFO_BASIC); }
  H5E_END_TRY
  return n;
}

CopyStats copy_file(hid_t src, hid_t dst, const CopyOptions& opts) { return Copier(src, dst, opts).run(); }

}  // namespace tool
