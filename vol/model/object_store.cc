// object_model.cc — SharedFile's object records (find/put/allocate), plist caches and the
// registry of open objects; the rest of SharedFile lives in shared_file.cc (open/create),
// records.cc, link_graph.cc, attr_store.cc and file_arrays.cc.
#include "vol/model/object_model.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "engine/util/bytes.h"
#include "vol/model/catalog_keys.h"
#include "vol/base/connector_info.h"
#include "vol/base/error.h"
#include "vol/base/file_settings.h"
#include "vol/model/link_storage.h"
#include "vol/model/objects.h"  // Obj: open handles keep unreferenced objects
#include "vol/model/parallel.h"
#include "vol/model/swmr.h"
#include "vol/model/value_filters.h"

namespace tessera_vol {

// ---------------------------------------------------------------- objects

std::shared_ptr<const ObjectRecord> SharedFile::find_object_ref(uint64_t oid) {
  tessera::Catalog& cat = container_->catalog();
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

std::shared_ptr<const ObjectRecord> SharedFile::object_ref(uint64_t oid) {
  auto r = find_object_ref(oid);
  if (!r) fail_arg("object " + std::to_string(oid) + " does not exist in '" + name_ + "'");
  return r;
}

std::optional<ObjectRecord> SharedFile::find_object(uint64_t oid) {
  auto r = find_object_ref(oid);
  if (!r) return std::nullopt;
  return *r;
}

ObjectRecord SharedFile::object(uint64_t oid) { return *object_ref(oid); }

void SharedFile::put_object(tessera::CatalogBatch& b, uint64_t oid, const ObjectRecord& r) {
  b.put(id_key("o/", oid), r.serialize());
}

uint64_t SharedFile::allocate_oid(tessera::CatalogBatch& b) {
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
    if (auto v = container_->catalog().get("sys/next_oid")) next = std::strtoull(v->c_str(), nullptr, 10);
  b.put("sys/next_oid", std::to_string(next + 1));
  return next;
}

uint64_t SharedFile::create_group_record(tessera::CatalogBatch& b, hid_t gcpl) {
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
  link_storage_created(*this, b, oid, gcpl);
  return oid;
}

hid_t SharedFile::shared_acpl(H5T_cset_t cset) {
  auto it = acpls_.find(static_cast<int>(cset));
  if (it != acpls_.end()) return it->second;
  hid_t acpl = H5Pcreate(H5P_ATTRIBUTE_CREATE);
  if (acpl >= 0 && H5Pset_char_encoding(acpl, cset) < 0) {
    H5Pclose(acpl);
    acpl = H5I_INVALID_HID;
  }
  if (acpl >= 0) acpls_[static_cast<int>(cset)] = acpl;
  return acpl;
}

void SharedFile::drop_array(uint64_t array_id) {
  arrays_.erase(array_id);
  if (writable()) (void)container_->remove_array(array_id);
}

// ---------------------------------------------------------------- open objects

void SharedFile::register_open(void* obj, H5I_type_t type) { open_[obj] = type; }
void SharedFile::unregister_open(void* obj) { open_.erase(obj); }
std::vector<std::pair<void*, H5I_type_t>> SharedFile::open_objects() {
  return std::vector<std::pair<void*, H5I_type_t>>(open_.begin(), open_.end());
}

}  // namespace tessera_vol
