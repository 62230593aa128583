// link_graph.h — a file's links (l/<hex16 group>/<name>): finding, adding and removing
// them with the reference counts of their targets, creation order, and path resolution.
// One part of SharedFile (object_model.h); link_graph.cc.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/catalog/catalog.h"
#include "vol/model/records.h"

namespace tessera_vol {

class SharedFile;

class LinkGraph {
 public:
  explicit LinkGraph(SharedFile& f) : f_(f) {}
  // SharedFile's calls of the same names (object_model.h) say what each does.
  std::optional<LinkRecord> find_link(uint64_t group, const std::string& name);
  bool may_have_ud_links();
  std::vector<std::pair<std::string, LinkRecord>> links(uint64_t group);
  void add_link(tessera::CatalogBatch& b, uint64_t group, const std::string& name, LinkRecord rec,
                bool target_counted);
  void remove_link(uint64_t group, const std::string& name);
  int64_t peek_link_corder(uint64_t group, const ObjectRecord& rec);
  void keep_link_corder(tessera::CatalogBatch& b, uint64_t group, int64_t removed);
  void reset_link_corder(uint64_t group) { link_corders_.erase(group); }

  uint64_t resolve(uint64_t start, const std::string& path, bool follow_last);
  std::optional<uint64_t> try_resolve(uint64_t start, const std::string& path, bool follow_last);
  std::pair<uint64_t, std::string> resolve_parent(uint64_t start, const std::string& path,
                                                  bool create_intermediate, tessera::CatalogBatch* b);
  // Deletes an object's records, its links' unreferenced targets (recursively), its
  // attributes and its array, inside b.
  void delete_object(uint64_t oid, tessera::CatalogBatch& b, int depth);

 private:
  SharedFile& f_;
  std::unordered_map<uint64_t, int64_t> link_corders_;  // peek_link_corder: next order per group
  // may_have_ud_links' answer, valid while the catalog's version is ud_version_ (every
  // path walk asks; the catalog changes between the walks of a write, not of a read).
  uint64_t ud_version_ = UINT64_MAX;
  bool ud_links_ = true;
};

}  // namespace tessera_vol
