// link_graph.cc — a file's links, paths and the deletion of unreferenced objects
// (link_graph.h).
#include "vol/model/link_graph.h"

#include <algorithm>

#include "vol/base/error.h"
#include "vol/model/catalog_keys.h"
#include "vol/model/link_storage.h"
#include "vol/model/object_model.h"

namespace tessera_vol {

// ---------------------------------------------------------------- links

bool LinkGraph::may_have_ud_links() {
  const uint64_t version = f_.container_->catalog().version();
  if (version != ud_version_) {
    auto v = f_.container_->catalog().get(SharedFile::kUdLinksKey);
    ud_links_ = !v || *v != "0";  // containers from before the key: unknown
    ud_version_ = version;
  }
  return ud_links_;
}

std::optional<LinkRecord> LinkGraph::find_link(uint64_t group, const std::string& name) {
  std::optional<LinkRecord> r;
  check(tessera::guard([&] {
    f_.container_->catalog().read(link_key(group, name), [&](std::string_view v) { r = LinkRecord::deserialize(v); });
  }));
  return r;
}

std::vector<std::pair<std::string, LinkRecord>> LinkGraph::links(uint64_t group) {
  std::string prefix = id_key("l/", group, "/");
  std::vector<std::pair<std::string, LinkRecord>> out;
  check(tessera::guard([&] {
    f_.container_->catalog().scan_each(prefix, [&](std::string_view k, std::string_view v) {
      out.emplace_back(std::string(k.substr(prefix.size())), LinkRecord::deserialize(v));
    });
  }));
  return out;
}

void LinkGraph::add_link(tessera::CatalogBatch& b, uint64_t group, const std::string& name, LinkRecord rec,
                          bool target_counted) {
  if (name.empty() || name == "." || name.find('/') != std::string::npos)
    fail_arg("invalid link name '" + name + "'");
  bool deleted;
  auto pending = from_batch(b, link_key(group, name), &deleted);
  if (pending || (!deleted && find_link(group, name)))
    fail_arg("link '" + name + "' already exists");
  // The group's record (possibly new in this batch) is read only the first time.
  if (link_corders_.find(group) == link_corders_.end()) {
    ObjectRecord g;
    if (auto v = from_batch(b, id_key("o/", group), &deleted)) g = ObjectRecord::deserialize(*v);
    else g = f_.object(group);
    if (g.type != ObjType::kGroup) fail_arg("link parent is not a group");
    peek_link_corder(group, g);
  }
  if (rec.corder_kept) ++link_corders_[group];  // the link brings its order (LinkRecord)
  else rec.corder = link_corders_[group]++;
  link_storage_adding(f_, b, group);
  if (rec.type != H5L_TYPE_HARD && rec.type != H5L_TYPE_SOFT) b.put(SharedFile::kUdLinksKey, "1");
  if (rec.type == H5L_TYPE_HARD && !target_counted) {
    ObjectRecord t;
    if (auto v = from_batch(b, id_key("o/", rec.target), &deleted)) t = ObjectRecord::deserialize(*v);
    else t = f_.object(rec.target);
    t.rc++;
    f_.put_object(b, rec.target, t);
  }
  b.put(link_key(group, name), rec.serialize());
}

int64_t LinkGraph::peek_link_corder(uint64_t group, const ObjectRecord& rec) {
  auto it = link_corders_.find(group);
  if (it == link_corders_.end()) {
    int64_t next = rec.next_link_corder;
    for (auto& [name, l] : links(group)) next = std::max(next, l.corder + 1);
    it = link_corders_.emplace(group, next).first;
  }
  return it->second;
}

void LinkGraph::keep_link_corder(tessera::CatalogBatch& b, uint64_t group, int64_t removed) {
  bool deleted;
  ObjectRecord g;
  if (auto v = from_batch(b, id_key("o/", group), &deleted)) g = ObjectRecord::deserialize(*v);
  else if (deleted) return;  // the group itself goes in this batch
  else if (auto r = f_.find_object(group)) g = *r;
  else return;
  if (g.next_link_corder > removed) return;
  g.next_link_corder = removed + 1;
  f_.put_object(b, group, g);
}

void LinkGraph::remove_link(uint64_t group, const std::string& name) {
  auto l = find_link(group, name);
  if (!l) fail_arg("link '" + name + "' does not exist");
  tessera::CatalogBatch b;
  b.del(link_key(group, name));
  link_storage_removing(f_, b, group);
  if (l->type == H5L_TYPE_HARD) {
    ObjectRecord t = f_.object(l->target);
    if (t.rc > 0) t.rc--;
    if (t.rc == 0) delete_object(l->target, b, 0);
    else f_.put_object(b, l->target, t);
  }
  keep_link_corder(b, group, l->corder);  // after: the target may be the group itself
  f_.commit(b);
}

void LinkGraph::delete_object(uint64_t oid, tessera::CatalogBatch& b, int depth) {
  if (depth > 1000) fail_arg("object graph too deep to delete");
  auto rec = f_.find_object(oid);
  if (!rec) return;
  b.del(id_key("o/", oid));
  if (rec->type == ObjType::kGroup) link_storage_deleted(b, oid);
  if (rec->type == ObjType::kDataset) b.del(id_key("ae/", oid));  // allocation.h
  for (auto& [name, a] : f_.attrs(oid)) {
    b.del(attr_key(oid, name));
    if (a.committed_type && a.committed_type != oid) f_.unref_object(b, a.committed_type);
  }
  if (rec->type == ObjType::kGroup) {
    for (auto& [name, l] : links(oid)) {
      b.del(link_key(oid, name));
      if (l.type != H5L_TYPE_HARD || l.target == oid) continue;
      bool deleted;
      ObjectRecord t;
      if (auto v = from_batch(b, id_key("o/", l.target), &deleted)) t = ObjectRecord::deserialize(*v);
      else if (deleted) continue;
      else if (auto f = f_.find_object(l.target)) t = *f;
      else continue;
      if (t.rc > 0) t.rc--;
      if (t.rc == 0) delete_object(l.target, b, depth + 1);
      else f_.put_object(b, l.target, t);
    }
  } else if (rec->type == ObjType::kDataset) {
    f_.drop_array(rec->array_id);
    if (rec->committed_type) f_.unref_object(b, rec->committed_type);
  }
}

// ---------------------------------------------------------------- paths

std::optional<uint64_t> LinkGraph::try_resolve(uint64_t start, const std::string& path, bool follow_last) {
  uint64_t cur = path.size() && path[0] == '/' ? kRootOid : start;
  std::vector<std::string> parts = path_components(path);
  int soft_budget = 64;  // HDF5's default limit on soft link traversals is 16; be generous
  for (size_t k = 0; k < parts.size(); ++k) {
    auto l = find_link(cur, parts[k]);
    if (!l) return std::nullopt;
    bool last = k + 1 == parts.size();
    if (l->type == H5L_TYPE_HARD) {
      cur = l->target;
    } else if (l->type == H5L_TYPE_SOFT) {
      if (last && !follow_last) return std::nullopt;
      if (--soft_budget < 0) fail_arg("too many soft links while resolving '" + path + "'");
      auto t = try_resolve(cur, l->soft_path, true);
      if (!t) return std::nullopt;  // dangling
      cur = *t;
    } else {
      return std::nullopt;  // external links are not followed
    }
    if (!last) {
      auto o = f_.find_object_ref(cur);
      if (!o || o->type != ObjType::kGroup) return std::nullopt;
    }
  }
  return cur;
}

uint64_t LinkGraph::resolve(uint64_t start, const std::string& path, bool follow_last) {
  auto r = try_resolve(start, path, follow_last);
  if (!r) fail_arg("object '" + path + "' doesn't exist");
  return *r;
}

std::pair<uint64_t, std::string> LinkGraph::resolve_parent(uint64_t start, const std::string& path,
                                                            bool create_intermediate, tessera::CatalogBatch* b) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t slash = p.rfind('/');
  std::string parent = slash == std::string::npos ? "" : p.substr(0, slash);
  std::string last = slash == std::string::npos ? p : p.substr(slash + 1);
  if (last.empty() || last == ".") fail_arg("invalid object name '" + path + "'");
  uint64_t cur = slash == 0 || (p.size() && p[0] == '/') ? kRootOid : start;
  size_t i = 0;
  while (i < parent.size()) {
    size_t j = parent.find('/', i);
    if (j == std::string::npos) j = parent.size();
    std::string part = parent.substr(i, j - i);
    i = j + 1;
    if (part.empty() || part == ".") continue;
    bool deleted = false;
    std::optional<LinkRecord> l;
    if (b) {
      if (auto v = from_batch(*b, link_key(cur, part), &deleted)) l = LinkRecord::deserialize(*v);
    }
    if (!l && !deleted) l = find_link(cur, part);
    if (!l) {
      if (!create_intermediate || !b) fail_arg("parent group '" + parent + "' of '" + path + "' doesn't exist");
      uint64_t g = f_.create_group_record(*b, H5P_DEFAULT);
      add_link(*b, cur, part, LinkRecord::hard(g), false);
      cur = g;
      continue;
    }
    auto t = l->type == H5L_TYPE_HARD ? std::optional<uint64_t>(l->target)
                                      : l->type == H5L_TYPE_SOFT ? try_resolve(cur, l->soft_path, true) : std::nullopt;
    if (!t) fail_arg("parent '" + part + "' of '" + path + "' cannot be resolved");
    cur = *t;
  }
  return {cur, last};
}

}  // namespace tessera_vol
