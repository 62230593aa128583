// object_model.h — HDF5's object model stored in a tessera container's catalog.
//
// One SharedFile exists per open container per process; every file handle, group,
// dataset, datatype and attribute object of that container points at it, so several
// H5Fopen calls of one container share state (HDF5 semantics).  Records live in the
// engine's crash-safe catalog; every multi-record change is one atomic catalog batch.
//
// SharedFile is implemented by concern: shared_file.cc (open, create, settings, close),
// records.cc (the record codecs below), object_model.cc (object records, plist caches,
// open objects), link_graph.cc (links, paths, deletion), attr_store.cc (attributes),
// file_arrays.cc (the engine arrays, flush and MPI epochs).
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
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/context/options.h"
#include "vol/base/error.h"
#include "vol/base/file_settings.h"
#include "vol/base/plist_cache.h"

namespace tessera_vol {

class Parallel;  // parallel.h

enum class ObjType : uint8_t { kGroup = 1, kDataset = 2, kDatatype = 3 };
constexpr uint64_t kRootOid = 1;

struct ObjectRecord {
  ObjType type = ObjType::kGroup;
  uint64_t rc = 0;              // hard links to this object
  std::string cpl;              // H5Pencode2 of the creation plist (gcpl/dcpl/tcpl)
  std::string type_enc;         // H5Tencode of the datatype (datasets, committed types)
  std::string space_enc;        // H5Sencode2 of the dataspace at creation (datasets)
  uint64_t array_id = 0;        // engine array (datasets)
  int64_t next_link_corder = 0; // groups: creation order of the next link
  int64_t next_attr_corder = 0;
  std::string comment;
  uint64_t committed_type = 0;  // datasets: the committed type they were created with, 0: none
  // Datasets of a variable-length type with a user fill value: the value as vlen.h's
  // stream.  H5Pencode2 would store the fill value's char*/hvl_t pointers, which dangle
  // in any later use, so `cpl` holds the dcpl with its fill value cleared (dataset.cc).
  std::string vlen_fill;
  // Creation time (seconds since the epoch) when the creation plist tracks object times
  // (H5Pset_obj_track_times, on by default), else 0: H5Oget_info's atime/mtime/ctime/btime
  // and H5Gget_objinfo's mtime, as native sets them at creation.
  int64_t times = 0;
  std::string serialize() const;
  static ObjectRecord deserialize(std::string_view s);
  // Sets `times` from the creation plist (H5P_DEFAULT: tracked, as native's default).
  void stamp_times(hid_t cpl);
  void stamp_times_tracking(bool track);  // the same, when the cpl's answer is known
};

struct LinkRecord {
  H5L_type_t type = H5L_TYPE_HARD;
  uint64_t target = 0;      // hard
  std::string soft_path;    // soft: the path; external: file name (raw value if target == 1, elink.h)
  std::string ext_obj;      // external: object path in that file
  int64_t corder = 0;
  H5T_cset_t cset = H5T_CSET_ASCII;
  // The link was moved or copied, with a valid creation order, into a group that does not
  // track creation order but stores links as messages (link storage c/d): native HDF5
  // keeps the link message's order there (H5G__obj_insert only renumbers for tracking
  // groups), and H5Lget_info reports it.  `corder` then holds that order.
  bool corder_kept = false;
  std::string serialize() const;
  static LinkRecord deserialize(std::string_view s);
  // A hard link to `target`, with the name encoding an lcpl asks for (H5P_DEFAULT: ASCII).
  static LinkRecord hard(uint64_t target, hid_t lcpl = H5P_DEFAULT);
};

struct AttrRecord {
  std::string type_enc, space_enc;
  std::string data;         // file-type bytes; variable-length data serialized (attr.cc)
  int64_t corder = 0;
  H5T_cset_t cset = H5T_CSET_ASCII;
  uint64_t committed_type = 0;  // object id of the committed type it was created with, 0: none
  std::string serialize() const;
  static AttrRecord deserialize(std::string_view s);
};

class SharedFile {
 public:
  // Opens or creates; shares an already open container with the same real path.
  static std::shared_ptr<SharedFile> create(const std::string& name, unsigned flags, hid_t fcpl, hid_t fapl);
  static std::shared_ptr<SharedFile> open(const std::string& name, unsigned flags, hid_t fapl);
  ~SharedFile();

  const std::string& name() const { return name_; }
  // A foreign-driver file (file_image.h) whose bytes must be written back when it changes.
  bool writes_back() const { return foreign_ && writable() && !writing_back_; }
  unsigned intent() const { return intent_; }
  bool writable() const { return (intent_ & H5F_ACC_RDWR) != 0; }
  void add_intent(unsigned bits) { intent_ |= bits; }  // SWMR bits (swmr.h)
  // H5Fget_vfd_handle: a pointer to a descriptor of the container's directory.
  void* directory_handle();
  hid_t fcpl() const { return fcpl_; }
  hid_t fapl() const { return fapl_; }
  tessera::Container& container() { return *container_; }
  std::recursive_mutex& mu() { return mu_; }
  uint64_t fileno() const { return fileno_; }
  // Parallel files (MPI-IO fapl): the communicator; nullptr for serial access.
  Parallel* parallel() const { return par_.get(); }
  // The settings this file was opened with (connector_info.h): index options, ...
  const tessera::EngineOptions& engine_options() const { return options_; }

  // --- objects
  std::optional<ObjectRecord> find_object(uint64_t oid);
  ObjectRecord object(uint64_t oid);  // throws if missing
  // The same record without a copy (null / throws if missing): a read-only view, valid
  // as long as the caller holds it.  A few recently decoded records are kept per catalog
  // version: reopening a dataset asks for its record five times (the listing, H5Oget_info,
  // the path walk, H5Dopen, H5Aiterate), and each lookup was a tree walk and a decode
  // (issue 20).
  std::shared_ptr<const ObjectRecord> find_object_ref(uint64_t oid);
  std::shared_ptr<const ObjectRecord> object_ref(uint64_t oid);
  void put_object(tessera::CatalogBatch& b, uint64_t oid, const ObjectRecord& r);
  // A dataset or attribute created with committed type `oid` references it (native: the
  // type's object header refcount): +1 now, -1 when the user goes; a type whose count
  // reaches 0 is deleted.  Both read the record from b if b already changed it.
  void ref_object(tessera::CatalogBatch& b, uint64_t oid);
  void unref_object(tessera::CatalogBatch& b, uint64_t oid);
  uint64_t allocate_oid(tessera::CatalogBatch& b);
  void commit(tessera::CatalogBatch& b);
  void require_writable(const char* what);

  // --- links
  std::optional<LinkRecord> find_link(uint64_t group, const std::string& name);
  // False when no external or user-defined link was ever created in the file: path
  // walks then need not look for one (ExternalHop).
  bool may_have_ud_links();
  static constexpr const char* kUdLinksKey = "sys/ud_links";
  // Links of a group as (name, record), sorted by name.
  std::vector<std::pair<std::string, LinkRecord>> links(uint64_t group);
  // Creates `name` in `group` (bumping the group's creation-order counter and, for hard
  // links, the target's refcount) inside batch b.  Fails if the name exists.
  // target_counted: a hard link to an object put in this batch with the link already
  // counted in its rc (a creation: no second decode and put of the new record).
  void add_link(tessera::CatalogBatch& b, uint64_t group, const std::string& name, LinkRecord rec,
                bool target_counted = false);
  // Removes a link; a hard link's target loses a reference and is deleted (recursively
  // for groups) when none remain.
  void remove_link(uint64_t group, const std::string& name);
  // Link creation order, counted like attributes' (take_attr_corder): the group record's
  // next_link_corder is a lower bound, the next order is max(it, largest stored link
  // order + 1), computed once per group and then kept in memory, so adding a link does
  // not rewrite its group's record.  A deleted link's order is written into the record
  // (keep_link_corder, in the deleting batch) so it is never handed out again; a group
  // that loses its last link restarts at 0 as native's (reset_link_corder).
  int64_t peek_link_corder(uint64_t group, const ObjectRecord& rec);
  void keep_link_corder(tessera::CatalogBatch& b, uint64_t group, int64_t removed);
  void reset_link_corder(uint64_t group) { link_corders_.erase(group); }

  // --- paths
  // Resolves `path` (absolute, or relative to `start`) to an object id; follows soft links
  // (also in the last component unless follow_last is false).  Throws if not found.
  uint64_t resolve(uint64_t start, const std::string& path, bool follow_last = true);
  std::optional<uint64_t> try_resolve(uint64_t start, const std::string& path, bool follow_last = true);
  // Splits path into (parent group id, last name), creating intermediate groups when
  // `create_intermediate` (inside batch b).  Throws if a parent is missing.
  std::pair<uint64_t, std::string> resolve_parent(uint64_t start, const std::string& path,
                                                  bool create_intermediate, tessera::CatalogBatch* b);
  // A creation-ordered-by-default group needs its gcpl: creates a group record in b.
  uint64_t create_group_record(tessera::CatalogBatch& b, hid_t gcpl);

  // --- attributes
  std::vector<std::pair<std::string, AttrRecord>> attrs(uint64_t owner);  // sorted by name
  uint64_t attr_count(uint64_t owner);  // counted in the catalog, nothing decoded
  // The record, or null.  The one last found is kept while the catalog does not change
  // (H5Aopen, H5Aget_type and H5Aread of one attribute each need it): shared, not copied.
  std::shared_ptr<const AttrRecord> find_attr(uint64_t owner, const std::string& name);
  // Right after the commit that put `r` for (owner, name): find_attr's cache holds it, so
  // the H5Awrite that follows an H5Acreate (or the read after a write) needs no catalog
  // get and no decode.
  void remember_attr(uint64_t owner, const std::string& name, std::shared_ptr<const AttrRecord> r);
  // Same for a record read from the catalog at `version` (catalog_version() then): kept
  // only while the catalog stays at that version.  H5Aiterate hands each record it listed
  // to the H5Aopen / H5Aread its callback usually does.
  void remember_attr_at(uint64_t version, uint64_t owner, const std::string& name,
                        std::shared_ptr<const AttrRecord> r);
  uint64_t catalog_version();
  // H5Acreate's record waits for the H5Awrite that nearly always follows, so the pair
  // costs one catalog put, not two (issue 20).  Every other callback commits it first
  // (vol_call: commit_deferred_attr_create), so nothing but that write ever runs while
  // the catalog lacks it.  `extra`: the creation's other changes (a committed type's
  // reference count).
  struct DeferredAttr {
    uint64_t owner;
    std::string name;
    std::shared_ptr<const AttrRecord> rec;
    tessera::CatalogBatch extra;
  };
  void defer_attr_create(DeferredAttr d);
  // The deferred creation if it is (owner, name)'s, taken out (the caller commits it,
  // with the written value), else nothing.
  std::optional<DeferredAttr> take_deferred_attr(uint64_t owner, const std::string& name);
  // Commits the deferred creation, if any (callers hold mu()).
  void commit_deferred_attr();
  // Commits d as created (no value written).
  void commit_attr_create(DeferredAttr&& d);
  bool has_attr(uint64_t owner, const std::string& name);
  void put_attr(tessera::CatalogBatch& b, uint64_t owner, const std::string& name, const AttrRecord& r);
  void del_attr(tessera::CatalogBatch& b, uint64_t owner, const std::string& name);
  // The creation order of owner's next attribute, counted: max(rec.next_attr_corder, the
  // largest stored attribute corder + 1), computed once per owner and then kept in memory,
  // so creating an attribute does not read or rewrite its owner's record.  Deleting the
  // attribute that holds the largest order writes that order + 1 into the owner's record
  // (the counter never goes back, as native's).  tracked: the owner's creation plist
  // asks for attribute creation order tracking (H5Pset_attr_creation_order).
  struct AttrOrder {
    int64_t corder;
    bool tracked;
  };
  AttrOrder take_attr_corder(uint64_t owner);
  // A just-created object has no attributes: its counter starts at 0 without reading
  // anything back (attr_order_tracked: its creation plist tracks attribute creation order).
  void note_new_object(uint64_t oid, bool attr_order_tracked);
  // Whether owner's creation plist tracks attribute creation order.
  bool tracks_attr_corder(uint64_t owner, const ObjectRecord& rec);

  // --- arrays (shared by all dataset handles of the container)
  // In a parallel file these are collective (docs/parallel.md): every rank calls them.
  std::shared_ptr<tessera::Array> array(uint64_t array_id);
  // Parallel files: a new array committed on its own, collectively; unsynced until flush.
  void create_array(const tessera::Schema& schema, uint64_t* id);
  // A new array whose records go into `b`, committed with the caller's own (serial files:
  // Container::create_and_open_array_into; opened too); returns false when they were
  // committed apart (parallel files: create_array).  If the caller's commit then fails:
  // abandon_array when this returned true, else drop_array.
  bool create_array_into(const tessera::Schema& schema, tessera::CatalogBatch* b, uint64_t* id);
  void abandon_array(uint64_t array_id);
  void set_extent(tessera::Array& a, const tessera::Coords& extent);
  void flush_arrays();
  // Parallel files (docs/parallel.md, "Visibility"): a dataset open picks up fragments
  // other ranks published at H5Dclose; H5Dclose publishes this rank's writes on its own.
  std::shared_ptr<tessera::Array> open_array(uint64_t array_id);
  void publish_own(tessera::Array& a);

  // --- open object registry (H5Fget_obj_count / H5Fget_obj_ids)
  void register_open(void* obj, H5I_type_t type);
  void unregister_open(void* obj);
  std::vector<std::pair<void*, H5I_type_t>> open_objects();

  // Pending removal of an engine array whose dataset was deleted while open.
  void drop_array(uint64_t array_id);
  // The last handle of a dataset goes (H5Dclose): a compact array (one catalog record,
  // engine/array/compact_array.h) publishes its cells into the catalog now — durable with the
  // next flush, as before — and is released, so that a file of many small datasets keeps
  // only the open ones in memory and its flush and close walk only those (issue 20).
  // Other arrays, parallel files and arrays other handles share stay until the file closes.
  void release_array(uint64_t array_id, const std::shared_ptr<tessera::Array>& held);

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
  // Parallel create/open: rank 0 does the disk work, then the others open shadows.
  void open_container_parallel(const std::string& name, unsigned flags, bool create);
  // Parallel flush: the epoch commit (docs/parallel.md).
  void commit_epoch();
  void delete_object(uint64_t oid, tessera::CatalogBatch& b, int depth);

  std::string name_, real_;
  std::string temporary_;  // a core-driver container removed at close (file_settings.h)
  // The file's bytes live with a foreign driver in native format (file_image.h): written
  // back at flush and close when writable.  `writing_back_`: a write-back is under way
  // (its own open and close of the container must not start another).
  bool foreign_ = false, writing_back_ = false;
  friend struct WriteBack;
  int dir_fd_ = -1;        // directory_handle()
  LockingFlags locking_;
  unsigned intent_ = 0;
  hid_t fcpl_ = H5I_INVALID_HID, fapl_ = H5I_INVALID_HID;
  std::unique_ptr<tessera::Container> container_;
  std::recursive_mutex mu_;
  // Arrays stay open (write buffers alive) until the container closes.
  std::map<uint64_t, std::shared_ptr<tessera::Array>> arrays_;
  std::optional<tessera::ArrayOptions> array_opts_;  // array_options()
  tessera::EngineOptions options_;  // the settings this file was opened with (connector_info.h)
  void apply_options();
  tessera::ArrayOptions array_options();
  std::map<void*, H5I_type_t> open_;
  PlistCache plists_;  // decoded_plist, dcpl_facts
  std::unordered_map<uint64_t, AttrOrder> attr_corders_;  // take_attr_corder: next order per owner
  std::unordered_map<uint64_t, int64_t> link_corders_;    // peek_link_corder: next order per group
  std::map<int, hid_t> acpls_;  // shared_acpl
  struct LastAttr {  // find_attr's cache of one record
    uint64_t version, owner;
    std::string name;
    std::shared_ptr<const AttrRecord> rec;
  };
  std::optional<LastAttr> last_attr_;
  std::optional<DeferredAttr> deferred_attr_;  // defer_attr_create
  // Takes deferred_attr_ out and clears g_deferred_attr_file if it names this file.
  std::optional<DeferredAttr> release_deferred_attr();
  struct CachedObject {  // find_object_ref's recent records
    uint64_t version = UINT64_MAX, oid = 0;
    std::shared_ptr<const ObjectRecord> rec;
  };
  std::mutex objects_mu_;
  CachedObject objects_[8];
  unsigned next_object_ = 0;
  // may_have_ud_links' answer, valid while the catalog's version is ud_version_ (every
  // path walk asks; the catalog changes between the walks of a write, not of a read).
  uint64_t ud_version_ = UINT64_MAX;
  bool ud_links_ = true;
  uint64_t fileno_ = 0;
  std::unique_ptr<Parallel> par_;
  uint64_t epoch_ = 0;  // parallel: the last committed epoch
  std::map<uint64_t, size_t> own_published_;  // parallel: publish_own count per array since the epoch
};

std::string hex16(uint64_t v);
// tag + hex16(id) + tail + name (a key such as "o/<hex16>" or "a/<hex16>/<name>"), built
// in one allocation.
std::string id_key(std::string_view tag, uint64_t id, std::string_view tail = {}, std::string_view name = {});
// The names of an HDF5 path, without empty and "." components ("/a//./b" -> a, b).
std::vector<std::string> path_components(const std::string& path);

}  // namespace tessera_vol
