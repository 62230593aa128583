// objects.cc — object lifetime, locations, tokens and error translation.
#include "vol/model/objects.h"

#include "vol/types/external_storage.h"
#include "vol/types/stored_space.h"
#include "vol/base/tessera_vol.h"

#include <algorithm>
#include <cstring>

namespace tessera_vol {

Obj::Obj(H5I_type_t t, std::shared_ptr<SharedFile> f, uint64_t o, std::string p)
    : type(t), file(std::move(f)), oid(o), path(std::move(p)) {
  file->register_open(this, type);
}

Obj::~Obj() { file->unregister_open(this); }

DatasetObj::~DatasetObj() {
  if (space >= 0) H5Sclose(space);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (dapl >= 0) H5Pclose(dapl);
}

H5S_class_t DatasetObj::space_class() const {
  if (space_class_ == H5S_NO_CLASS) space_class_ = H5Sget_simple_extent_type(space);
  return space_class_;
}

bool DatasetObj::uses_external() const {
  if (external_ < 0) external_ = ExternalStorage::used(dcpl) ? 1 : 0;
  return external_ == 1;
}

H5D_layout_t DatasetObj::layout() const {
  if (layout_ == H5D_LAYOUT_ERROR) layout_ = H5Pget_layout(dcpl);
  return layout_;
}

DatatypeObj::~DatatypeObj() {
  if (tcpl >= 0) H5Pclose(tcpl);
}

AttrObj::~AttrObj() {
  if (space_ >= 0) H5Sclose(space_);
}

hid_t AttrObj::space_id() {
  if (space_ < 0) space_ = decode_space(space_enc);
  if (space_ < 0) fail_arg("attribute '" + name + "' has an unreadable dataspace");
  return space_;
}

Obj* as_obj(void* p) {
  if (!p) fail_arg("NULL object");
  return static_cast<Obj*>(p);
}

std::string join(const std::string& parent, const std::string& name) {
  if (!name.empty() && name[0] == '/') return name;
  if (name == ".") return parent.empty() ? "/" : parent;  // the location itself (an external link's target)
  if (parent.empty() || parent == "/") return "/" + name;
  return parent + "/" + name;
}

void oid_to_token(uint64_t oid, H5O_token_t* token) {
  std::memset(token, 0, sizeof *token);
  std::memcpy(token->__data, &oid, sizeof oid);
}

uint64_t token_to_oid(const H5O_token_t* token) {
  uint64_t oid;
  std::memcpy(&oid, token->__data, sizeof oid);
  return oid;
}

std::vector<std::pair<std::string, LinkRecord>> ordered_links(SharedFile& f, uint64_t group, H5_index_t idx,
                                                              H5_iter_order_t order) {
  auto v = f.links(group);  // sorted by name
  order_by_index(v, idx, order);
  return v;
}

herr_t walk_links(SharedFile& f, uint64_t group, H5_index_t idx, H5_iter_order_t order, std::set<uint64_t>& descended,
                  const std::function<herr_t(const std::string&, const LinkRecord&, bool)>& fn,
                  const std::string& prefix, int depth) {
  if (depth > 1000) fail_arg("group hierarchy too deep");
  const bool tracked = group_tracks_corder(f, group);
  const H5_index_t by = idx == H5_INDEX_CRT_ORDER && !tracked ? H5_INDEX_NAME : idx;
  for (auto& [name, l] : ordered_links(f, group, by, order)) {
    const std::string path = prefix.empty() ? name : prefix + "/" + name;
    herr_t rc = fn(path, l, tracked);
    if (rc != 0) return rc;
    if (l.type != H5L_TYPE_HARD || descended.count(l.target)) continue;
    auto rec = f.find_object_ref(l.target);
    if (!rec || rec->type != ObjType::kGroup) continue;
    descended.insert(l.target);
    rc = walk_links(f, l.target, idx, order, descended, fn, path, depth + 1);
    if (rc != 0) return rc;
  }
  return 0;
}

uint64_t locate(Obj* obj, const H5VL_loc_params_t* lp, std::string* path_out) {
  if (!obj) fail_arg("NULL object");
  SharedFile& f = *obj->file;
  switch (lp->type) {
    case H5VL_OBJECT_BY_SELF:
      if (path_out) *path_out = obj->path;
      return obj->oid;
    case H5VL_OBJECT_BY_NAME: {
      std::string name = lp->loc_data.loc_by_name.name;
      if (path_out) *path_out = join(obj->path, name);
      return f.resolve(obj->oid, name);
    }
    case H5VL_OBJECT_BY_IDX: {
      const auto& bi = lp->loc_data.loc_by_idx;
      uint64_t g = f.resolve(obj->oid, bi.name);
      auto links = ordered_links(f, g, bi.idx_type, bi.order);
      if (bi.n >= links.size()) fail_arg("index " + std::to_string(bi.n) + " out of range");
      const auto& [name, l] = links[bi.n];
      std::string gpath = join(obj->path, bi.name);
      if (path_out) *path_out = join(gpath, name);
      if (l.type == H5L_TYPE_HARD) return l.target;
      return f.resolve(g, name);
    }
    case H5VL_OBJECT_BY_TOKEN: {
      uint64_t oid = token_to_oid(lp->loc_data.loc_by_token.token);
      if (!f.find_object(oid)) fail_arg("no object with this token");
      if (path_out) path_out->clear();
      return oid;
    }
  }
  fail_arg("unknown location type");
}

void report(const char* func, const char* what) noexcept {
  try {
    throw;
  } catch (const VolError& e) {
    push_error_at(__FILE__, __LINE__, func, static_cast<ErrorKind>(e.kind), "%s: %s", what, e.msg.c_str());
  } catch (const tessera::Error& e) {
    push_error_at(__FILE__, __LINE__, func, error_kind(e.code()), "%s: %s", what, e.what());
  } catch (const std::bad_alloc&) {
    push_error_at(__FILE__, __LINE__, func, ErrorKind::kEngine, "%s: out of memory", what);
  } catch (const std::exception& e) {
    push_error_at(__FILE__, __LINE__, func, ErrorKind::kEngine, "%s: %s", what, e.what());
  } catch (...) {
    push_error_at(__FILE__, __LINE__, func, ErrorKind::kEngine, "%s: unknown error", what);
  }
}

DatasetObj* as_dataset(void* p) {
  auto* o = static_cast<Obj*>(p);
  if (!o || o->type != H5I_DATASET) fail_arg("not a dataset");
  return static_cast<DatasetObj*>(o);
}

void require_write_intent(const SharedFile& f) {
  if (!f.writable()) fail_arg("file '" + f.name() + "' is open read-only (no write intent)");
}

}  // namespace tessera_vol
