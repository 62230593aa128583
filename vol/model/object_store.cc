// object_store.cc — a file's object records (find/put/allocate, reference counts) and the
// registry of open objects (object_store.h).
#include "vol/model/object_store.h"

#include <cstdlib>
#include <string>

#include "vol/base/error.h"
#include "vol/model/catalog_keys.h"
#include "vol/model/link_storage.h"
#include "vol/model/object_model.h"
#include "vol/model/objects.h"  // Obj: open handles keep unreferenced objects

namespace tessera_vol {

// ---------------------------------------------------------------- objects

std::shared_ptr<const ObjectRecord> ObjectStore::find_object_ref(uint64_t oid) {
  tessera::Catalog& cat = f_.container_->catalog();
  const uint64_t version = cat.version();  // before the read: the record is at least this new
  {
    std::lock_guard<std::mutex> g(objects_mu_);
    for (const CachedObject& c : objects_)
      if (c.oid == oid && c.version == version) return c.rec;
  }
  std::shared_ptr<const ObjectRecord> r;
  check(tessera::guard([&] {
    cat.read(id_key("o/", oid), [&](std::string_view v) { r = std::make_shared<ObjectRecord>(ObjectRecord::deserialize(v)); });
  }));
  if (r) {
    std::lock_guard<std::mutex> g(objects_mu_);
    objects_[next_object_++ % (sizeof objects_ / sizeof *objects_)] = CachedObject{version, oid, r};
  }
  return r;
}

std::shared_ptr<const ObjectRecord> ObjectStore::object_ref(uint64_t oid) {
  auto r = find_object_ref(oid);
  if (!r) fail_arg("object " + std::to_string(oid) + " does not exist in '" + f_.name_ + "'");
  return r;
}

std::optional<ObjectRecord> ObjectStore::find_object(uint64_t oid) {
  auto r = find_object_ref(oid);
  if (!r) return std::nullopt;
  return *r;
}

ObjectRecord ObjectStore::object(uint64_t oid) { return *object_ref(oid); }

void ObjectStore::put_object(tessera::CatalogBatch& b, uint64_t oid, const ObjectRecord& r) {
  b.put(id_key("o/", oid), r.serialize());
}

uint64_t ObjectStore::allocate_oid(tessera::CatalogBatch& b) {
  // The batch may already hold an allocation: read the newest value from it.
  uint64_t next = kRootOid + 1;
  bool found = false;
  for (auto it = b.ops().rbegin(); it != b.ops().rend(); ++it)
    if (it->put && it->key == "sys/next_oid") {
      next = std::strtoull(it->value.c_str(), nullptr, 10);
      found = true;
      break;
    }
  if (!found)
    if (auto v = f_.container_->catalog().get("sys/next_oid")) next = std::strtoull(v->c_str(), nullptr, 10);
  b.put("sys/next_oid", std::to_string(next + 1));
  return next;
}

uint64_t ObjectStore::create_group_record(tessera::CatalogBatch& b, hid_t gcpl) {
  uint64_t oid = allocate_oid(b);
  ObjectRecord g;
  g.type = ObjType::kGroup;
  g.rc = 0;  // add_link counts the link
  g.stamp_times(gcpl);
  if (gcpl != H5P_DEFAULT && gcpl >= 0) {
    size_t sz = 0;
    if (H5Pencode2(gcpl, nullptr, &sz, H5P_DEFAULT) >= 0 && sz > 0) {
      g.cpl.resize(sz);
      if (H5Pencode2(gcpl, g.cpl.data(), &sz, H5P_DEFAULT) < 0) g.cpl.clear();
    }
  }
  put_object(b, oid, g);
  link_storage_created(f_, b, oid, gcpl);
  return oid;
}

void ObjectStore::ref_object(tessera::CatalogBatch& b, uint64_t oid) {
  bool deleted;
  ObjectRecord t;
  if (auto v = from_batch(b, id_key("o/", oid), &deleted)) t = ObjectRecord::deserialize(*v);
  else if (deleted) fail_arg("object " + std::to_string(oid) + " is being deleted");
  else t = object(oid);
  t.rc++;
  put_object(b, oid, t);
}

void ObjectStore::unref_object(tessera::CatalogBatch& b, uint64_t oid) {
  bool deleted;
  ObjectRecord t;
  if (auto v = from_batch(b, id_key("o/", oid), &deleted)) t = ObjectRecord::deserialize(*v);
  else if (deleted) return;  // deleted earlier in this batch (reference cycles)
  else if (auto r = find_object(oid)) t = *r;
  else return;
  if (t.rc > 0) t.rc--;
  // An unreferenced object that is still open stays (refcount 0) until its last handle
  // closes, as in native HDF5; datatype_close removes such a committed type then.
  bool open = false;
  for (auto& [p, type] : open_)
    if (type == H5I_DATATYPE && static_cast<Obj*>(p)->oid == oid) open = true;
  if (t.rc == 0 && !open) f_.links_.delete_object(oid, b, 1);
  else put_object(b, oid, t);
}

}  // namespace tessera_vol
