// attr_store.cc — attributes in the catalog: records per owner, creation order
// (attr_store.h).
#include "vol/model/attr_store.h"

#include <algorithm>
#include <atomic>

#include "vol/base/error.h"
#include "vol/model/catalog_keys.h"
#include "vol/model/object_model.h"
#include "vol/model/objects.h"  // g_deferred_attr_file

namespace tessera_vol {

// ---------------------------------------------------------------- attributes

std::vector<std::pair<std::string, AttrRecord>> AttrStore::attrs(uint64_t owner) {
  std::string prefix = id_key("a/", owner, "/");
  std::vector<std::pair<std::string, AttrRecord>> out;
  check(tessera::guard([&] {
    f_.container_->catalog().scan_each(prefix, [&](std::string_view k, std::string_view v) {
      out.emplace_back(std::string(k.substr(prefix.size())), AttrRecord::deserialize(v));
    });
  }));
  return out;
}

uint64_t AttrStore::attr_count(uint64_t owner) {
  uint64_t n = 0;
  check(tessera::guard([&] { n = f_.container_->catalog().count(id_key("a/", owner, "/"), UINT64_MAX); }));
  return n;
}

std::shared_ptr<const AttrRecord> AttrStore::find_attr(uint64_t owner, const std::string& name) {
  const uint64_t version = f_.container_->catalog().version();
  if (last_attr_ && last_attr_->version == version && last_attr_->owner == owner && last_attr_->name == name)
    return last_attr_->rec;
  std::shared_ptr<AttrRecord> r;
  check(tessera::guard([&] {
    f_.container_->catalog().read(attr_key(owner, name),
                               [&](std::string_view v) { r = std::make_shared<AttrRecord>(AttrRecord::deserialize(v)); });
  }));
  if (!r) return nullptr;
  last_attr_ = LastAttr{version, owner, name, r};
  return r;
}

void AttrStore::remember_attr(uint64_t owner, const std::string& name, std::shared_ptr<const AttrRecord> r) {
  last_attr_ = LastAttr{f_.container_->catalog().version(), owner, name, std::move(r)};
}

void AttrStore::remember_attr_at(uint64_t version, uint64_t owner, const std::string& name,
                                  std::shared_ptr<const AttrRecord> r) {
  last_attr_ = LastAttr{version, owner, name, std::move(r)};
}

std::atomic<SharedFile*> g_deferred_attr_file{nullptr};

void commit_deferred_attr_create() {
  SharedFile* f = g_deferred_attr_file.load();
  if (!f) return;
  std::lock_guard<std::recursive_mutex> g(f->mu());
  f->commit_deferred_attr();
}

void AttrStore::defer_attr_create(DeferredAttr d) {
  commit_deferred_attr_create();  // at most one, in any file (callbacks committed it already)
  deferred_attr_ = std::move(d);
  g_deferred_attr_file.store(&f_);
}

std::optional<AttrStore::DeferredAttr> AttrStore::release_deferred_attr() {
  std::optional<DeferredAttr> d = std::move(deferred_attr_);
  deferred_attr_.reset();
  SharedFile* self = &f_;
  g_deferred_attr_file.compare_exchange_strong(self, nullptr);
  return d;
}

std::optional<AttrStore::DeferredAttr> AttrStore::take_deferred_attr(uint64_t owner, const std::string& name) {
  if (deferred_attr_ && deferred_attr_->owner == owner && deferred_attr_->name == name) return release_deferred_attr();
  commit_deferred_attr_create();
  return std::nullopt;
}

void AttrStore::commit_deferred_attr() {
  if (std::optional<DeferredAttr> d = release_deferred_attr()) commit_attr_create(std::move(*d));
}

void AttrStore::commit_attr_create(DeferredAttr&& d) {
  put_attr(d.extra, d.owner, d.name, *d.rec);
  f_.commit(d.extra);
  remember_attr(d.owner, d.name, std::move(d.rec));
}

void AttrStore::put_attr(tessera::CatalogBatch& b, uint64_t owner, const std::string& name, const AttrRecord& r) {
  b.put(attr_key(owner, name), r.serialize());
}

void AttrStore::del_attr(tessera::CatalogBatch& b, uint64_t owner, const std::string& name) {
  b.del(attr_key(owner, name));
}

bool AttrStore::has_attr(uint64_t owner, const std::string& name) {
  return f_.container_->catalog().contains(attr_key(owner, name));
}

bool AttrStore::tracks_attr_corder(uint64_t owner, const ObjectRecord& rec) {
  hid_t pl = H5I_INVALID_HID;
  if (!rec.cpl.empty()) pl = f_.decoded_plist(rec.cpl);
  else if (owner == kRootOid) pl = f_.fcpl();
  unsigned flags = 0;
  if (pl >= 0 && H5Pget_attr_creation_order(pl, &flags) < 0) flags = 0;
  return (flags & H5P_CRT_ORDER_TRACKED) != 0;
}

AttrStore::AttrOrder AttrStore::take_attr_corder(uint64_t owner) {
  auto it = attr_corders_.find(owner);
  if (it == attr_corders_.end()) {
    const ObjectRecord rec = f_.object(owner);
    int64_t next = rec.next_attr_corder;
    for (auto& [name, a] : attrs(owner)) next = std::max(next, a.corder + 1);
    it = attr_corders_.emplace(owner, AttrOrder{next, tracks_attr_corder(owner, rec)}).first;
  }
  AttrOrder taken = it->second;
  ++it->second.corder;
  return taken;
}

}  // namespace tessera_vol
