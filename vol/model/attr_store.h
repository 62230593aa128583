// attr_store.h — a file's attributes (a/<hex16 owner>/<name>): records per owner, the one
// last found, the deferred creation, and creation order.  One part of SharedFile
// (object_model.h); attr_store.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/catalog/catalog.h"
#include "vol/model/records.h"

namespace tessera_vol {

class SharedFile;

class AttrStore {
 public:
  explicit AttrStore(SharedFile& f) : f_(f) {}
  // SharedFile's calls of the same names (object_model.h) say what each does.
  struct DeferredAttr {
    uint64_t owner;
    std::string name;
    std::shared_ptr<const AttrRecord> rec;
    tessera::CatalogBatch extra;
  };
  struct AttrOrder {
    int64_t corder;
    bool tracked;
  };
  std::vector<std::pair<std::string, AttrRecord>> attrs(uint64_t owner);
  uint64_t attr_count(uint64_t owner);
  std::shared_ptr<const AttrRecord> find_attr(uint64_t owner, const std::string& name);
  void remember_attr(uint64_t owner, const std::string& name, std::shared_ptr<const AttrRecord> r);
  void remember_attr_at(uint64_t version, uint64_t owner, const std::string& name,
                        std::shared_ptr<const AttrRecord> r);
  void defer_attr_create(DeferredAttr d);
  std::optional<DeferredAttr> take_deferred_attr(uint64_t owner, const std::string& name);
  void commit_deferred_attr();
  void commit_attr_create(DeferredAttr&& d);
  bool has_attr(uint64_t owner, const std::string& name);
  void put_attr(tessera::CatalogBatch& b, uint64_t owner, const std::string& name, const AttrRecord& r);
  void del_attr(tessera::CatalogBatch& b, uint64_t owner, const std::string& name);
  AttrOrder take_attr_corder(uint64_t owner);
  void note_new_object(uint64_t oid, bool attr_order_tracked) { attr_corders_[oid] = AttrOrder{0, attr_order_tracked}; }
  bool tracks_attr_corder(uint64_t owner, const ObjectRecord& rec);

 private:
  // Takes deferred_attr_ out and clears g_deferred_attr_file if it names this file.
  std::optional<DeferredAttr> release_deferred_attr();

  SharedFile& f_;
  std::unordered_map<uint64_t, AttrOrder> attr_corders_;  // take_attr_corder: next order per owner
  struct LastAttr {  // find_attr's cache of one record
    uint64_t version, owner;
    std::string name;
    std::shared_ptr<const AttrRecord> rec;
  };
  std::optional<LastAttr> last_attr_;
  std::optional<DeferredAttr> deferred_attr_;  // defer_attr_create
};

}  // namespace tessera_vol
