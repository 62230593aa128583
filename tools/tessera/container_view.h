// container_view.h — a container as the `tessera` tool sees it: the engine's container
// (catalog and arrays) and the HDF5 objects its catalog records (vol/model/object_model.h),
// read straight from the catalog, without the connector or HDF5's file layer.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/container/container.h"
#include "tools/tessera/h5util.h"
#include "vol/model/records.h"

namespace tool {

struct ObjectView {
  uint64_t oid = 0;
  tessera_vol::ObjType type = tessera_vol::ObjType::kGroup;
  std::string path;                  // the first path to it (names in order)
  std::vector<std::string> aliases;  // its other hard-link paths
  tessera_vol::ObjectRecord rec;
};

struct LinkView {
  std::string path;  // where the link is
  H5L_type_t type = H5L_TYPE_SOFT;
  std::string target;  // soft: the path; external: "FILE:OBJECT"
};

// What a dataset is, decoded from its record and its array's schema.
struct DatasetView {
  std::string type;                  // type_text
  std::string space_kind;            // "simple", "scalar", "null"
  std::vector<uint64_t> dims, maxdims;  // current (the array's extent) and maximum
  std::string layout;                // "chunked", "contiguous", "compact", "virtual", "external"
  std::vector<uint64_t> chunk;       // HDF5 chunk dims (chunked layout)
  std::vector<std::string> filters;  // HDF5 filters (filter_texts)
  uint64_t elem_size = 0;            // bytes per element as stored
  bool has_array = false;            // an engine array exists (virtual/external: data elsewhere)
  tessera::Schema schema;            // the array's
};

class ContainerView {
 public:
  // Opens the container: read-only (no lock: works while another process writes it) or
  // writable (takes the writer lock; fails when a writer has it open).  Throws Failure.
  // as_of (not empty): read-only, as of that past commit (engine/catalog/history.h).
  static std::unique_ptr<ContainerView> open(const std::string& path, bool writable, const std::string& as_of = "");

  const std::string& path() const { return path_; }
  tessera::Container& container() { return *c_; }
  // Every object reachable from the root, in path order (the root first).
  const std::vector<ObjectView>& objects() const { return objects_; }
  const std::vector<LinkView>& links() const { return links_; }
  // The object a path names (hard and soft links followed; "/" is the root).  Throws
  // Failure naming what is wrong (missing, external link).
  const ObjectView& resolve(const std::string& path) const;
  const ObjectView* find(uint64_t oid) const;
  std::vector<std::pair<std::string, tessera_vol::AttrRecord>> attrs(uint64_t oid) const;
  DatasetView dataset(const ObjectView& o) const;
  // Opens a dataset's engine array (throws Failure).
  std::unique_ptr<tessera::Array> open_array(const ObjectView& o, bool writable,
                                             const tessera::ArrayOptions& opts = {}) const;
  // The datasets among objects() (those with an array), or just `only` if given.
  std::vector<const ObjectView*> datasets(const std::string& only = "") const;

 private:
  void walk();
  std::string path_;
  std::unique_ptr<tessera::Container> c_;
  std::vector<ObjectView> objects_;
  std::map<uint64_t, size_t> by_oid_;
  std::vector<LinkView> links_;
};

}  // namespace tool

namespace tool {

// "dense", "sparse", "dense+sparse", "erase", "fill" (an extent shrink), ... — what a
// fragment holds.
std::string fragment_kind(const tessera::FragmentInfo& f);
// "row-major" / "column-major".
std::string order_text(tessera::Order o);
// The engine's tile pipeline: "shuffle, zlib(6)", or "none".
std::string pipeline_text(const tessera::FilterPipeline& p);

// A dataset's fragments summed up (live ones; replaced ones kept for vacuum apart).
struct FragmentTotals {
  uint64_t count = 0, bytes = 0, cells = 0, min_bytes = 0, max_bytes = 0;
  uint64_t first_ns = 0, last_ns = 0;  // time range of the fragments' timestamps
  uint64_t inline_count = 0;
  std::map<std::string, uint64_t> kinds;  // fragment_kind -> count
  uint64_t replaced = 0, replaced_bytes = 0;
};
FragmentTotals totals_of(const std::vector<tessera::FragmentInfo>& live,
                         const std::vector<tessera::FragmentInfo>& replaced);

}  // namespace tool
