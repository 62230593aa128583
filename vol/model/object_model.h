// object_model.h — HDF5's object model stored in a tessera container's catalog.
//
// One SharedFile exists per open container per process; every file handle, group,
// dataset, datatype and attribute object of that container points at it, so several
// H5Fopen calls of one container share state (HDF5 semantics).  Records live in the
// engine's crash-safe catalog; every multi-record change is one atomic catalog batch.
//
// SharedFile is a facade over its parts, each owning its fields in its own header:
// object_store.h (object records, open objects), link_graph.h (links, paths, deletion),
// attr_store.h (attributes), file_arrays.h (the engine arrays, flush and MPI epochs),
// parallel_state.h (the communicator and epoch) and swmr_state.h (intent, locking).  Its
// own shared_file.cc opens, creates and closes the container.  The records themselves
// and the key helpers are records.h: code that needs only them includes that.
//
// Parallel files (an MPI-IO fapl; parallel.h, docs/parallel.md): every rank holds a
// SharedFile with the same records — rank 0's catalog persists them, the others' are
// shadows — and the array/flush/extent calls below become collective, with flush as an
// epoch commit across ranks.
//
// Catalog keys (hex16 = 16 lowercase hex digits of an object id):
//   sys/next_oid                 next object id (decimal text)
//   o/<hex16>                    ObjectRecord of a group, dataset or committed datatype
//   l/<hex16 parent>/<name>      LinkRecord in a group
//   a/<hex16 owner>/<name>       AttrRecord on an object
//   sys/ud_links                 "0" until an external or user-defined link is created,
//                                then "1" (paths with no such link never leave the file)
//   gs/<hex16 group>             how native HDF5 would store the group's links (link_storage.h)
//   ae/<hex16 dataset>           LATE chunked datasets: the region allocated at the first write (allocation.h)
// The root group has object id 1.  Tokens are the object id in the first 8 bytes.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/context/options.h"
#include "vol/base/error.h"
#include "vol/base/plist_cache.h"
#include "vol/model/attr_store.h"
#include "vol/model/file_arrays.h"
#include "vol/model/link_graph.h"
#include "vol/model/object_store.h"
#include "vol/model/parallel_state.h"
#include "vol/model/records.h"
#include "vol/model/swmr_state.h"

namespace tessera_vol {

class Parallel;  // parallel.h

class SharedFile {
 public:
  // Opens or creates; shares an already open container with the same real path.
  static std::shared_ptr<SharedFile> create(const std::string& name, unsigned flags, hid_t fcpl, hid_t fapl);
  static std::shared_ptr<SharedFile> open(const std::string& name, unsigned flags, hid_t fapl);
  ~SharedFile();

  const std::string& name() const { return name_; }
  // A foreign-driver file (file_image.h) whose bytes must be written back when it changes.
  bool writes_back() const { return foreign_ && writable() && !writing_back_; }
  unsigned intent() const { return swmr_.intent; }
  bool writable() const { return swmr_.writable(); }
  void add_intent(unsigned bits) { swmr_.intent |= bits; }  // SWMR bits (swmr.h)
  // H5Fget_vfd_handle: a pointer to a descriptor of the container's directory.
  void* directory_handle();
  hid_t fcpl() const { return fcpl_; }
  hid_t fapl() const { return fapl_; }
  tessera::Container& container() { return *container_; }
  std::recursive_mutex& mu() { return mu_; }
  uint64_t fileno() const { return fileno_; }
  // Parallel files (MPI-IO fapl): the communicator; nullptr for serial access.
  Parallel* parallel() const { return par_.comm.get(); }
  // The settings this file was opened with (connector_info.h): index options, ...
  const tessera::EngineOptions& engine_options() const { return options_; }

  // --- objects
  std::optional<ObjectRecord> find_object(uint64_t oid) { return objects_.find_object(oid); }
  ObjectRecord object(uint64_t oid) { return objects_.object(oid); }  // throws if missing
  // The same record without a copy (null / throws if missing): a read-only view, valid
  // as long as the caller holds it.  A few recently decoded records are kept per catalog
  // version: reopening a dataset asks for its record five times (the listing, H5Oget_info,
  // the path walk, H5Dopen, H5Aiterate), and each lookup was a tree walk and a decode
  // (issue 20).
  std::shared_ptr<const ObjectRecord> find_object_ref(uint64_t oid) { return objects_.find_object_ref(oid); }
  std::shared_ptr<const ObjectRecord> object_ref(uint64_t oid) { return objects_.object_ref(oid); }
  void put_object(tessera::CatalogBatch& b, uint64_t oid, const ObjectRecord& r) {
    objects_.put_object(b, oid, r);
  }
  // A dataset or attribute created with committed type `oid` references it (native: the
  // type's object header refcount): +1 now, -1 when the user goes; a type whose count
  // reaches 0 is deleted.  Both read the record from b if b already changed it.
  void ref_object(tessera::CatalogBatch& b, uint64_t oid) { objects_.ref_object(b, oid); }
  void unref_object(tessera::CatalogBatch& b, uint64_t oid) { objects_.unref_object(b, oid); }
  uint64_t allocate_oid(tessera::CatalogBatch& b) { return objects_.allocate_oid(b); }
  void commit(tessera::CatalogBatch& b);
  void require_writable(const char* what);

  // --- links
  std::optional<LinkRecord> find_link(uint64_t group, const std::string& name) {
    return links_.find_link(group, name);
  }
  // False when no external or user-defined link was ever created in the file: path
  // walks then need not look for one (ExternalHop).
  bool may_have_ud_links() { return links_.may_have_ud_links(); }
  static constexpr const char* kUdLinksKey = "sys/ud_links";
  // Links of a group as (name, record), sorted by name.
  std::vector<std::pair<std::string, LinkRecord>> links(uint64_t group) { return links_.links(group); }
  // Creates `name` in `group` (bumping the group's creation-order counter and, for hard
  // links, the target's refcount) inside batch b.  Fails if the name exists.
  // target_counted: a hard link to an object put in this batch with the link already
  // counted in its rc (a creation: no second decode and put of the new record).
  void add_link(tessera::CatalogBatch& b, uint64_t group, const std::string& name, LinkRecord rec,
                bool target_counted = false) {
    links_.add_link(b, group, name, std::move(rec), target_counted);
  }
  // Removes a link; a hard link's target loses a reference and is deleted (recursively
  // for groups) when none remain.
  void remove_link(uint64_t group, const std::string& name) { links_.remove_link(group, name); }
  // Link creation order, counted like attributes' (take_attr_corder): the group record's
  // next_link_corder is a lower bound, the next order is max(it, largest stored link
  // order + 1), computed once per group and then kept in memory, so adding a link does
  // not rewrite its group's record.  A deleted link's order is written into the record
  // (keep_link_corder, in the deleting batch) so it is never handed out again; a group
  // that loses its last link restarts at 0 as native's (reset_link_corder).
  int64_t peek_link_corder(uint64_t group, const ObjectRecord& rec) {
    return links_.peek_link_corder(group, rec);
  }
  void keep_link_corder(tessera::CatalogBatch& b, uint64_t group, int64_t removed) {
    links_.keep_link_corder(b, group, removed);
  }
  void reset_link_corder(uint64_t group) { links_.reset_link_corder(group); }

  // --- paths
  // Resolves `path` (absolute, or relative to `start`) to an object id; follows soft links
  // (also in the last component unless follow_last is false).  Throws if not found.
  uint64_t resolve(uint64_t start, const std::string& path, bool follow_last = true) {
    return links_.resolve(start, path, follow_last);
  }
  std::optional<uint64_t> try_resolve(uint64_t start, const std::string& path, bool follow_last = true) {
    return links_.try_resolve(start, path, follow_last);
  }
  // Splits path into (parent group id, last name), creating intermediate groups when
  // `create_intermediate` (inside batch b).  Throws if a parent is missing.
  std::pair<uint64_t, std::string> resolve_parent(uint64_t start, const std::string& path,
                                                  bool create_intermediate, tessera::CatalogBatch* b) {
    return links_.resolve_parent(start, path, create_intermediate, b);
  }
  // A creation-ordered-by-default group needs its gcpl: creates a group record in b.
  uint64_t create_group_record(tessera::CatalogBatch& b, hid_t gcpl) {
    return objects_.create_group_record(b, gcpl);
  }

  // --- attributes
  // sorted by name
  std::vector<std::pair<std::string, AttrRecord>> attrs(uint64_t owner) {
    return attrs_.attrs(owner);
  }
  // counted in the catalog, nothing decoded
  uint64_t attr_count(uint64_t owner) {
    return attrs_.attr_count(owner);
  }
  // The record, or null.  The one last found is kept while the catalog does not change
  // (H5Aopen, H5Aget_type and H5Aread of one attribute each need it): shared, not copied.
  std::shared_ptr<const AttrRecord> find_attr(uint64_t owner, const std::string& name) {
    return attrs_.find_attr(owner, name);
  }
  // Right after the commit that put `r` for (owner, name): find_attr's cache holds it, so
  // the H5Awrite that follows an H5Acreate (or the read after a write) needs no catalog
  // get and no decode.
  void remember_attr(uint64_t owner, const std::string& name, std::shared_ptr<const AttrRecord> r) {
    attrs_.remember_attr(owner, name, std::move(r));
  }
  // Same for a record read from the catalog at `version` (catalog_version() then): kept
  // only while the catalog stays at that version.  H5Aiterate hands each record it listed
  // to the H5Aopen / H5Aread its callback usually does.
  void remember_attr_at(uint64_t version, uint64_t owner, const std::string& name,
                        std::shared_ptr<const AttrRecord> r) {
    attrs_.remember_attr_at(version, owner, name, std::move(r));
  }
  uint64_t catalog_version() { return container_->catalog().version(); }
  // H5Acreate's record waits for the H5Awrite that nearly always follows, so the pair
  // costs one catalog put, not two (issue 20).  Every other callback commits it first
  // (vol_call: commit_deferred_attr_create), so nothing but that write ever runs while
  // the catalog lacks it.  `extra`: the creation's other changes (a committed type's
  // reference count).
  using DeferredAttr = AttrStore::DeferredAttr;
  void defer_attr_create(DeferredAttr d) { attrs_.defer_attr_create(std::move(d)); }
  // The deferred creation if it is (owner, name)'s, taken out (the caller commits it,
  // with the written value), else nothing.
  std::optional<DeferredAttr> take_deferred_attr(uint64_t owner, const std::string& name) {
    return attrs_.take_deferred_attr(owner, name);
  }
  // Commits the deferred creation, if any (callers hold mu()).
  void commit_deferred_attr() { attrs_.commit_deferred_attr(); }
  // Commits d as created (no value written).
  void commit_attr_create(DeferredAttr&& d) { attrs_.commit_attr_create(std::move(d)); }
  bool has_attr(uint64_t owner, const std::string& name) { return attrs_.has_attr(owner, name); }
  void put_attr(tessera::CatalogBatch& b, uint64_t owner, const std::string& name, const AttrRecord& r) {
    attrs_.put_attr(b, owner, name, r);
  }
  void del_attr(tessera::CatalogBatch& b, uint64_t owner, const std::string& name) {
    attrs_.del_attr(b, owner, name);
  }
  // The creation order of owner's next attribute, counted: max(rec.next_attr_corder, the
  // largest stored attribute corder + 1), computed once per owner and then kept in memory,
  // so creating an attribute does not read or rewrite its owner's record.  Deleting the
  // attribute that holds the largest order writes that order + 1 into the owner's record
  // (the counter never goes back, as native's).  tracked: the owner's creation plist
  // asks for attribute creation order tracking (H5Pset_attr_creation_order).
  using AttrOrder = AttrStore::AttrOrder;
  AttrOrder take_attr_corder(uint64_t owner) { return attrs_.take_attr_corder(owner); }
  // A just-created object has no attributes: its counter starts at 0 without reading
  // anything back (attr_order_tracked: its creation plist tracks attribute creation order).
  void note_new_object(uint64_t oid, bool attr_order_tracked) {
    attrs_.note_new_object(oid, attr_order_tracked);
  }
  // Whether owner's creation plist tracks attribute creation order.
  bool tracks_attr_corder(uint64_t owner, const ObjectRecord& rec) {
    return attrs_.tracks_attr_corder(owner, rec);
  }

  // --- arrays (shared by all dataset handles of the container)
  // In a parallel file these are collective (docs/parallel.md): every rank calls them.
  std::shared_ptr<tessera::Array> array(uint64_t array_id) { return arrays_.array(array_id); }
  // Parallel files: a new array committed on its own, collectively; unsynced until flush.
  void create_array(const tessera::Schema& schema, uint64_t* id) { arrays_.create_array(schema, id); }
  // A new array whose records go into `b`, committed with the caller's own (serial files:
  // Container::create_and_open_array_into; opened too); returns false when they were
  // committed apart (parallel files: create_array).  If the caller's commit then fails:
  // abandon_array when this returned true, else drop_array.
  bool create_array_into(const tessera::Schema& schema, tessera::CatalogBatch* b, uint64_t* id) {
    return arrays_.create_array_into(schema, b, id);
  }
  void abandon_array(uint64_t array_id) { arrays_.abandon_array(array_id); }
  void set_extent(tessera::Array& a, const tessera::Coords& extent) { arrays_.set_extent(a, extent); }
  void flush_arrays() { arrays_.flush_arrays(); }
  // Parallel files (docs/parallel.md, "Visibility"): a dataset open picks up fragments
  // other ranks published at H5Dclose; H5Dclose publishes this rank's writes on its own.
  std::shared_ptr<tessera::Array> open_array(uint64_t array_id) { return arrays_.open_array(array_id); }
  void publish_own(tessera::Array& a) { arrays_.publish_own(a); }

  // --- open object registry (H5Fget_obj_count / H5Fget_obj_ids)
  void register_open(void* obj, H5I_type_t type) { objects_.register_open(obj, type); }
  void unregister_open(void* obj) { objects_.unregister_open(obj); }
  std::vector<std::pair<void*, H5I_type_t>> open_objects() { return objects_.open_objects(); }

  // Pending removal of an engine array whose dataset was deleted while open.
  void drop_array(uint64_t array_id) { arrays_.drop_array(array_id); }
  // The last handle of a dataset goes (H5Dclose): a compact array (one catalog record,
  // engine/array/compact_array.h) publishes its cells into the catalog now — durable with the
  // next flush, as before — and is released, so that a file of many small datasets keeps
  // only the open ones in memory and its flush and close walk only those (issue 20).
  // Other arrays, parallel files and arrays other handles share stay until the file closes.
  void release_array(uint64_t array_id, const std::shared_ptr<tessera::Array>& held) {
    arrays_.release_array(array_id, held);
  }

  // A stored creation plist (H5Pencode2 bytes) decoded once per distinct encoding and
  // owned here: callers H5Pcopy it or query it, never close it.  Opening 10,000 datasets
  // with the same dcpl then decodes it once.  H5I_INVALID_HID if it does not decode.
  hid_t decoded_plist(const std::string& enc) { return plists_.decoded(enc); }
  // What dataset create and open read from a dcpl, per encoding (plist_cache.h).
  std::shared_ptr<const DcplFacts> dcpl_facts(const std::string& enc, hid_t source = H5I_INVALID_HID) {
    return plists_.dcpl_facts(enc, source);
  }
  // An acpl with only the character encoding set, shared by attribute handles.
  hid_t shared_acpl(H5T_cset_t cset);


 private:
  SharedFile() = default;
  // The parts own their fields and call back through the file (object_model.h, top).
  friend class ObjectStore;
  friend class LinkGraph;
  friend class AttrStore;
  friend class FileArrays;
  void apply_options();

  std::string name_, real_;
  std::string temporary_;  // a core-driver container removed at close (file_settings.h)
  // The file's bytes live with a foreign driver in native format (file_image.h): written
  // back at flush and close when writable.  `writing_back_`: a write-back is under way
  // (its own open and close of the container must not start another).
  bool foreign_ = false, writing_back_ = false;
  friend struct WriteBack;
  int dir_fd_ = -1;        // directory_handle()
  hid_t fcpl_ = H5I_INVALID_HID, fapl_ = H5I_INVALID_HID;
  std::unique_ptr<tessera::Container> container_;
  std::recursive_mutex mu_;
  tessera::EngineOptions options_;  // the settings this file was opened with (connector_info.h)
  PlistCache plists_;  // decoded_plist, dcpl_facts
  std::map<int, hid_t> acpls_;  // shared_acpl
  uint64_t fileno_ = 0;

  SwmrState swmr_;
  ParallelState par_;
  ObjectStore objects_{*this};
  LinkGraph links_{*this};
  AttrStore attrs_{*this};
  FileArrays arrays_{*this};
};

}  // namespace tessera_vol
