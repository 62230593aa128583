// reference.cc — see reference.h.
#include "vol/model/reference.h"

#include <cstring>
#include <string>
#include <vector>

#include "engine/util/bytes.h"
#include "vol/model/object_model.h"
#include "vol/model/objects.h"
#include "vol/model/region_store.h"
#include "vol/base/tessera_vol.h"
#include "vol/types/stored_type.h"
#include "vol/types/vlen.h"

namespace tessera_vol {

namespace {

constexpr size_t kStored = H5R_REF_BUF_SIZE;  // 64, the size of H5R_ref_t
constexpr uint8_t kMagic = 'R', kVersion = 1;

// An ID closed on scope exit with the right close call.
class Id {
 public:
  explicit Id(hid_t id = H5I_INVALID_HID) : id_(id) {}
  ~Id() {
    if (id_ < 0) return;
    switch (H5Iget_type(id_)) {
      case H5I_FILE: H5Fclose(id_); break;
      case H5I_DATASPACE: H5Sclose(id_); break;
      default: H5Oclose(id_); break;
    }
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return id_; }

 private:
  hid_t id_;
};

struct Extra {
  std::string file;     // external references: the target's file name
  uint8_t kind = 0;     // 0 none, 1 region (payload: H5Sencode2), 2 attribute (payload: name)
  std::string payload;
  bool empty() const { return file.empty() && kind == 0; }
  std::string serialize() const {
    tessera::ByteWriter w;
    w.u8(kVersion);
    w.str(file);
    w.u8(kind);
    w.str(payload);
    return std::string(w.buf().begin(), w.buf().end());
  }
  static Extra deserialize(const std::string& s) {
    tessera::ByteReader r(reinterpret_cast<const uint8_t*>(s.data()), s.size(), "reference record");
    Extra e;
    if (r.u8() != kVersion) fail_arg("unknown reference record version");
    e.file = r.str();
    e.kind = r.u8();
    e.payload = r.str();
    return e;
  }
};

std::string extra_key(uint64_t id) { return id_key("rx/", id); }

std::string ref_file_name(const H5R_ref_t* ref) {
  ssize_t n = H5Rget_file_name(ref, nullptr, 0);
  if (n < 0) fail_arg("cannot read a reference's file name");
  std::string s(static_cast<size_t>(n) + 1, '\0');
  H5Rget_file_name(ref, s.data(), s.size());
  s.resize(static_cast<size_t>(n));
  return s;
}

// An external reference's file, opened read-only (the caller's fapl first, so another
// tessera container opens with tessera; else whatever the default connector opens).
hid_t external_file(const std::shared_ptr<SharedFile>& f, const std::string& name) {
  hid_t fapl = H5Pcopy(f->fapl());
  hid_t id = H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl >= 0 ? fapl : H5P_DEFAULT);
  if (fapl >= 0) H5Pclose(fapl);
  if (id < 0) {
    H5E_BEGIN_TRY { id = H5Fopen(name.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT); }
    H5E_END_TRY;
  }
  if (id < 0) fail_arg("cannot open '" + name + "', the file of an external reference");
  return id;
}

// An ID for the object `token` of the container `at` belongs to, opened through `at`
// (no new file handle: closing one would flush the container — collectively, in a
// parallel file — for every reference read).
hid_t open_in_container(Obj* at, const H5O_token_t& token) {
  H5O_token_t t = token;
  H5VL_loc_params_t lp{};
  lp.type = H5VL_OBJECT_BY_TOKEN;
  lp.obj_type = H5I_GROUP;
  lp.loc_data.loc_by_token.token = &t;
  H5I_type_t type = H5I_BADID;
  void* obj = object_open(at, &lp, &type, H5P_DATASET_XFER_DEFAULT, nullptr);
  if (!obj) fail_arg("a reference names an object that no longer exists");
  hid_t id = H5VLwrap_register(obj, type);
  if (id < 0) {
    delete static_cast<Obj*>(obj);
    fail_arg("cannot register an ID for a referenced object");
  }
  return id;
}

}  // namespace

void refs_to_stored(const std::shared_ptr<SharedFile>& f, const void* refs, size_t n, uint8_t* out) {
  // H5Ropen_* and H5Rget_* take non-const pointers but do not change the reference.
  auto* in = const_cast<H5R_ref_t*>(static_cast<const H5R_ref_t*>(refs));
  std::memset(out, 0, n * kStored);
  tessera::CatalogBatch b;
  for (size_t i = 0; i < n; ++i) {
    static const H5R_ref_t zero{};
    if (std::memcmp(&in[i], &zero, sizeof zero) == 0) continue;  // never set
    H5R_type_t type = H5Rget_type(&in[i]);
    if (type != H5R_OBJECT2 && type != H5R_DATASET_REGION2 && type != H5R_ATTR)
      fail_arg("reference " + std::to_string(i) + " is not a valid reference");
    Extra extra;
    std::string file = ref_file_name(&in[i]);
    if (file != f->name()) extra.file = file;
    Id obj(H5Ropen_object(&in[i], H5P_DEFAULT, H5P_DEFAULT));
    if (obj.get() < 0) fail_arg("reference " + std::to_string(i) + " names an object that cannot be opened");
    H5O_info2_t oi;
    if (H5Oget_info3(obj.get(), &oi, H5O_INFO_BASIC) < 0) fail_arg("cannot read a referenced object's token");
    if (type == H5R_DATASET_REGION2) {
      Id space(H5Ropen_region(&in[i], H5P_DEFAULT, H5P_DEFAULT));
      size_t sz = 0;
      if (space.get() < 0 || H5Sencode2(space.get(), nullptr, &sz, H5P_DEFAULT) < 0)
        fail_arg("cannot read a region reference's selection");
      extra.kind = 1;
      extra.payload.resize(sz);
      H5Sencode2(space.get(), extra.payload.data(), &sz, H5P_DEFAULT);
    } else if (type == H5R_ATTR) {
      ssize_t len = H5Rget_attr_name(&in[i], nullptr, 0);
      if (len < 0) fail_arg("cannot read an attribute reference's name");
      extra.kind = 2;
      extra.payload.assign(static_cast<size_t>(len) + 1, '\0');
      H5Rget_attr_name(&in[i], extra.payload.data(), extra.payload.size());
      extra.payload.resize(static_cast<size_t>(len));
    }
    uint8_t* o = out + i * kStored;
    o[0] = kMagic, o[1] = kVersion, o[2] = static_cast<uint8_t>(type);
    std::memcpy(o + 8, oi.token.__data, sizeof oi.token.__data);
    if (!extra.empty()) {
      uint64_t id = f->allocate_oid(b);
      b.put(extra_key(id), extra.serialize());
      std::memcpy(o + 24, &id, sizeof id);
    }
  }
  if (!b.empty()) f->commit(b);
}

namespace {

// One reference to `token` (in the container of `at`, or in extra.file) of `type`.
herr_t make_ref(Obj* at, H5R_type_t type, const H5O_token_t& token, const Extra& extra, H5R_ref_t* out) {
  Id file(extra.file.empty() ? H5I_INVALID_HID : external_file(at->file, extra.file));
  Id obj(extra.file.empty() ? open_in_container(at, token) : H5Oopen_by_token(file.get(), token));
  if (obj.get() < 0) fail_arg("a reference names an object that no longer exists");
  if (type == H5R_OBJECT2) return H5Rcreate_object(obj.get(), ".", H5P_DEFAULT, out);
  if (type == H5R_DATASET_REGION2 && extra.kind == 1) {
    Id space(H5Sdecode(extra.payload.data()));
    return space.get() < 0 ? -1 : H5Rcreate_region(obj.get(), ".", space.get(), H5P_DEFAULT, out);
  }
  if (type == H5R_ATTR && extra.kind == 2) return H5Rcreate_attr(obj.get(), ".", extra.payload.c_str(), H5P_DEFAULT, out);
  return -1;
}

// Rebuilds n references; `next(i, &type, &token, &extra)` describes element i (false:
// a null reference).  On failure every reference made so far is released.
template <typename Describe>
void rebuild(Obj* at, size_t n, void* refs, Describe next) {
  auto* out = static_cast<H5R_ref_t*>(refs);
  std::memset(out, 0, n * sizeof(H5R_ref_t));
  for (size_t i = 0; i < n; ++i) {
    H5R_type_t type = H5R_BADTYPE;
    H5O_token_t token{};
    Extra extra;
    herr_t rc = -1;
    try {
      if (!next(i, &type, &token, &extra)) continue;  // null: left zeroed, as native's fill
      rc = make_ref(at, type, token, extra, &out[i]);
    } catch (...) {
      rc = -1;
    }
    if (rc < 0) {
      for (size_t k = 0; k < i; ++k)
        if (H5Rget_type(&out[k]) != H5R_BADTYPE) H5Rdestroy(&out[k]);
      std::memset(out, 0, n * sizeof(H5R_ref_t));
      fail_arg("cannot rebuild stored reference " + std::to_string(i) + " (its target is gone or damaged)");
    }
  }
}

}  // namespace

void stored_to_refs(Obj* at, const uint8_t* stored, size_t n, void* refs) {
  SharedFile* f = at->file.get();
  rebuild(at, n, refs, [&](size_t i, H5R_type_t* type, H5O_token_t* token, Extra* extra) {
    const uint8_t* s = stored + i * kStored;
    bool zero = true;
    for (size_t k = 0; k < kStored && zero; ++k) zero = s[k] == 0;
    if (zero) return false;
    if (s[0] != kMagic || s[1] != kVersion) fail_arg("damaged stored reference " + std::to_string(i));
    *type = static_cast<H5R_type_t>(s[2]);
    std::memcpy(token->__data, s + 8, sizeof token->__data);
    uint64_t xid;
    std::memcpy(&xid, s + 24, sizeof xid);
    if (xid) {
      auto v = f->container().catalog().get(extra_key(xid));
      if (!v) fail_arg("stored reference " + std::to_string(i) + " lost its record");
      *extra = Extra::deserialize(*v);
    }
    return true;
  });
}

void dsetregs_to_refs(Obj* at, const uint8_t* regrefs, size_t n, void* refs) {
  SharedFile* f = at->file.get();
  rebuild(at, n, refs, [&](size_t i, H5R_type_t* type, H5O_token_t* token, Extra* extra) {
    const uint8_t* s = regrefs + i * H5R_DSET_REG_REF_BUF_SIZE;
    uint64_t oid;
    uint32_t id;
    std::memcpy(&oid, s, sizeof oid);
    std::memcpy(&id, s + sizeof oid, sizeof id);
    if (oid == 0 || oid == HADDR_UNDEF) return false;
    *type = H5R_DATASET_REGION2;
    oid_to_token(oid, token);
    extra->kind = 1;
    extra->payload = region_selection(*f, id);
    return true;
  });
}

void objrefs_to_refs(Obj* at, const uint8_t* objrefs, size_t n, void* refs) {
  std::vector<uint8_t> stored(n * kStored, 0);
  for (size_t i = 0; i < n; ++i) {
    uint64_t id;
    std::memcpy(&id, objrefs + i * sizeof(haddr_t), sizeof id);
    if (id == 0 || id == HADDR_UNDEF) continue;  // a null hobj_ref_t
    uint8_t* o = stored.data() + i * kStored;
    o[0] = kMagic, o[1] = kVersion, o[2] = H5R_OBJECT2;
    H5O_token_t token;
    oid_to_token(id, &token);
    std::memcpy(o + 8, token.__data, sizeof token.__data);
  }
  stored_to_refs(at, stored.data(), n, refs);
}

void refs_to_stored_at(const std::shared_ptr<SharedFile>& f, uint8_t* buf, const std::vector<size_t>& at) {
  if (at.empty()) return;
  std::vector<uint8_t> refs(at.size() * kStored), stored(at.size() * kStored);
  for (size_t i = 0; i < at.size(); ++i) std::memcpy(&refs[i * kStored], buf + at[i], kStored);
  refs_to_stored(f, refs.data(), at.size(), stored.data());
  for (size_t i = 0; i < at.size(); ++i) std::memcpy(buf + at[i], &stored[i * kStored], kStored);
}

void stored_to_refs_at(Obj* obj, uint8_t* buf, const std::vector<size_t>& at) {
  if (at.empty()) return;
  std::vector<uint8_t> stored(at.size() * kStored), refs(at.size() * kStored);
  for (size_t i = 0; i < at.size(); ++i) std::memcpy(&stored[i * kStored], buf + at[i], kStored);
  stored_to_refs(obj, stored.data(), at.size(), refs.data());
  for (size_t i = 0; i < at.size(); ++i) std::memcpy(buf + at[i], &refs[i * kStored], kStored);
}

std::vector<size_t> element_ref_offsets(const std::vector<size_t>& offsets, size_t elem, size_t n) {
  std::vector<size_t> at;
  if (offsets.empty()) return at;
  at.reserve(offsets.size() * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t o : offsets) at.push_back(i * elem + o);
  return at;
}

bool plain_ref_transfer(hid_t ftype, hid_t mtype) {
  return H5Tget_class(ftype) == H5T_REFERENCE || H5Tget_class(mtype) == H5T_REFERENCE;
}

void read_plain_refs(Obj* at, hid_t ftype, hid_t mtype, const uint8_t* stored, size_t n, void* refs) {
  const bool from_new = H5Tequal(ftype, H5T_STD_REF) > 0, from_obj = H5Tequal(ftype, H5T_STD_REF_OBJ) > 0,
             from_reg = H5Tequal(ftype, H5T_STD_REF_DSETREG) > 0;
  if (H5Tequal(mtype, H5T_STD_REF) <= 0 || !(from_new || from_obj || from_reg))
    fail_unsupported("references (H5T_STD_REF) converted to or from other types (but old-style ones read as "
                     "H5T_STD_REF) are not supported by tessera containers");
  if (from_new) stored_to_refs(at, stored, n, refs);
  else if (from_obj) objrefs_to_refs(at, stored, n, refs);
  else dsetregs_to_refs(at, stored, n, refs);
}

namespace {

[[noreturn]] void nested_unsupported(const char* why) {
  fail_unsupported(std::string("references (H5T_STD_REF) inside compound, array or variable-length values: ") + why);
}

// The memory type holds references, none of them new-style ones.
bool other_refs(hid_t mtype) { return H5Tdetect_class(mtype, H5T_REFERENCE) > 0 && !holds_std_ref(mtype); }

std::vector<size_t> nested_offsets(hid_t type, bool vlen, const std::string& value, size_t n) {
  if (vlen) return stream_ref_offsets(type, n, reinterpret_cast<const uint8_t*>(value.data()), value.size());
  return element_ref_offsets(fixed_ref_offsets(type), H5Tget_size(type), n);
}

}  // namespace

std::string nested_refs_read(Obj* at, hid_t ftype, hid_t mtype, bool vlen, const std::string& stored, size_t n) {
  std::string out = stored;
  if (!holds_std_ref(ftype)) nested_unsupported("old-style ones cannot be read as H5T_STD_REF there");
  if (other_refs(mtype)) nested_unsupported("they are stored as H5T_STD_REF and read only as such");
  if (!holds_std_ref(mtype)) return out;  // dropped by the conversion (a member subset)
  if (vlen && H5Tequal(ftype, mtype) <= 0)
    nested_unsupported("variable-length values holding them are read only with their own datatype");
  stored_to_refs_at(at, reinterpret_cast<uint8_t*>(out.data()), nested_offsets(ftype, vlen, out, n));
  return out;
}

void nested_refs_write(const std::shared_ptr<SharedFile>& f, hid_t ftype, hid_t mtype, bool vlen, std::string* value,
                       size_t n) {
  if (!holds_std_ref(ftype)) nested_unsupported("they cannot be written to old-style references or other types");
  if (vlen && H5Tequal(ftype, mtype) <= 0)
    nested_unsupported("variable-length values holding them are written only with their own datatype");
  if (other_refs(mtype)) nested_unsupported("they are stored as H5T_STD_REF and written only as such");
  if (!holds_std_ref(mtype)) return;  // a member subset: the background kept the stored records
  // A memory type holding only some of them would have the others' stored records
  // (the conversion's background) taken for its own references.
  if (!vlen && fixed_ref_offsets(mtype).size() != fixed_ref_offsets(ftype).size())
    nested_unsupported("the memory type must hold all of the stored type's references");
  refs_to_stored_at(f, reinterpret_cast<uint8_t*>(value->data()), nested_offsets(ftype, vlen, *value, n));
}

namespace {

// One stored record copied from `src` into `dst` (copy_stored_refs).
void copy_one_ref(SharedFile& src, SharedFile& dst, tessera::CatalogBatch& b, uint8_t* r,
                  const std::function<uint64_t(uint64_t)>& target) {
  if (r[0] != kMagic) return;  // never set: stays null
  uint64_t oid = 0, rx = 0;
  std::memcpy(&oid, r + 8, sizeof oid);
  std::memcpy(&rx, r + 24, sizeof rx);
  Extra extra;
  if (rx) {
    auto v = src.container().catalog().get(extra_key(rx));
    if (!v) fail_arg("a reference's record rx/" + hex16(rx) + " is missing");
    extra = Extra::deserialize(*v);
  }
  if (extra.file.empty()) {  // a target in the source file
    uint64_t to = target(oid);
    if (!to) {
      std::memset(r, 0, kStored);
      return;
    }
    std::memset(r + 8, 0, 16);
    std::memcpy(r + 8, &to, sizeof to);
  }
  if (rx && &src != &dst) {  // the copy owns its own record
    uint64_t id = dst.allocate_oid(b);
    b.put(extra_key(id), extra.serialize());
    std::memcpy(r + 24, &id, sizeof id);
  }
}

}  // namespace

void copy_stored_refs_at(SharedFile& src, SharedFile& dst, tessera::CatalogBatch& b, uint8_t* data,
                         const std::vector<size_t>& at, const std::function<uint64_t(uint64_t)>& target) {
  for (size_t o : at) copy_one_ref(src, dst, b, data + o, target);
}

void copy_stored_refs(SharedFile& src, SharedFile& dst, tessera::CatalogBatch& b, hid_t ftype, uint8_t* data,
                      size_t n, const std::function<uint64_t(uint64_t)>& target) {
  if (H5Tequal(ftype, H5T_STD_REF_OBJ) > 0) {  // old-style: the object id (docs/compat.md)
    for (size_t i = 0; i < n; ++i) {
      uint64_t oid;
      std::memcpy(&oid, data + i * sizeof oid, sizeof oid);
      if (oid) oid = target(oid);
      std::memcpy(data + i * sizeof oid, &oid, sizeof oid);
    }
    return;
  }
  if (H5Tequal(ftype, H5T_STD_REF) <= 0)
    fail_unsupported("copying old-style region references is not supported by tessera containers");
  for (size_t i = 0; i < n; ++i) copy_one_ref(src, dst, b, data + i * kStored, target);
}

}  // namespace tessera_vol
