// object_store.h — a file's object records (o/<hex16>): found through a small cache per
// catalog version, put, allocated ids, reference-counted (committed types), and the
// registry of open objects.  One part of SharedFile (object_model.h); object_store.cc.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "engine/catalog/catalog.h"
#include "vol/model/records.h"

namespace tessera_vol {

class SharedFile;

class ObjectStore {
 public:
  explicit ObjectStore(SharedFile& f) : f_(f) {}
  // SharedFile's calls of the same names (object_model.h) say what each does.
  std::optional<ObjectRecord> find_object(uint64_t oid);
  ObjectRecord object(uint64_t oid);
  std::shared_ptr<const ObjectRecord> find_object_ref(uint64_t oid);
  std::shared_ptr<const ObjectRecord> object_ref(uint64_t oid);
  void put_object(tessera::CatalogBatch& b, uint64_t oid, const ObjectRecord& r);
  void ref_object(tessera::CatalogBatch& b, uint64_t oid);
  void unref_object(tessera::CatalogBatch& b, uint64_t oid);
  uint64_t allocate_oid(tessera::CatalogBatch& b);
  uint64_t create_group_record(tessera::CatalogBatch& b, hid_t gcpl);

  void register_open(void* obj, H5I_type_t type) { open_[obj] = type; }
  void unregister_open(void* obj) { open_.erase(obj); }
  std::vector<std::pair<void*, H5I_type_t>> open_objects() const {
    return std::vector<std::pair<void*, H5I_type_t>>(open_.begin(), open_.end());
  }

 private:
  SharedFile& f_;
  struct CachedObject {  // find_object_ref's recent records
    uint64_t version = UINT64_MAX, oid = 0;
    std::shared_ptr<const ObjectRecord> rec;
  };
  std::mutex objects_mu_;
  CachedObject objects_[8];
  unsigned next_object_ = 0;
  std::map<void*, H5I_type_t> open_;
};

}  // namespace tessera_vol
