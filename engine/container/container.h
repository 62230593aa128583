// A container: the directory an application names in H5Fcreate.  It holds a small header
// file (`tessera.container`), the catalog of HDF5 objects (catalog.h), and the arrays.
// An array's schema and its small fragments are catalog records (array.h, "catalog-bound");
// its directory under `arrays/`, named by a numeric id — never by a user string, so no
// object name can escape the container — exists only once the array needs a file.
// A parallel file's arrays keep their schema in their directory (a schema file).
// Byte layout: docs/format.md.
#pragma once
#include <cstdint>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/catalog/catalog.h"
#include "engine/util/error.h"

namespace tessera {

class Container {
 public:
  enum class CreateMode { kTruncate, kExclusive };
  // Where a new container's tree lives: a directory, or one regular file (a pack,
  // docs/format.md "The one-file container") that begins with `wrapper` — the bytes of a
  // small HDF5 file the caller made (empty: none; the engine never includes HDF5).
  struct Form {
    bool one_file = false;
    std::vector<uint8_t> wrapper;
  };
  // ctx: the Context (context.h) of the container's file-system calls (its Env) and of
  // the arrays it opens whose ArrayOptions name none; null: POSIX and the process's.
  // A one-file container's arrays get a Context sharing ctx's all but its Env (the pack's).
  static Status create(const std::string& path, CreateMode mode, std::unique_ptr<Container>* out,
                       const std::shared_ptr<Context>& ctx = nullptr);
  static Status create(const std::string& path, CreateMode mode, std::unique_ptr<Container>* out,
                       const std::shared_ptr<Context>& ctx, const Form& form);
  // open, open_as_of: a directory or a one-file container, whichever `path` is.  A
  // one-file container has one writer process at a time (another gets kBusy) and any
  // number of readers; open_shadow (MPI ranks) refuses it (kUnsupported).
  static Status open(const std::string& path, bool writable, std::unique_ptr<Container>* out,
                     const std::shared_ptr<Context>& ctx = nullptr);
  // Read-only, as of a past commit (history.h): `when` as find_commit takes it ("12",
  // "@<ns>", "2026-11-26T10:41:09Z").  The catalog is the one of that moment and every
  // array opened shows what that commit left (ArrayOptions::as_of_ts).
  static Status open_as_of(const std::string& path, const std::string& when, std::unique_ptr<Container>* out,
                           const std::shared_ptr<Context>& ctx = nullptr);
  // The commit an as-of container shows (seq 0: the live container).
  uint64_t as_of_commit() const { return as_of_seq_; }
  // MPI ranks other than 0 of a parallel file: a writable view whose catalog is a shadow
  // (catalog.h) and whose array creation/removal only allocates ids — rank 0 runs the same
  // calls and does the disk work.  Rank 0 must have created or opened the container first.
  static Status open_shadow(const std::string& path, std::unique_ptr<Container>* out,
                            const std::shared_ptr<Context>& ctx = nullptr);
  // True for a directory holding a valid container header, of any format version (one
  // this build does not read is refused by open, and may be truncated by create); never
  // throws.
  static bool is_container(const std::string& path, Env& env = Env::posix());
  // True for what a power loss during a creation that committed nothing leaves behind
  // (no valid header, an empty catalog, only the container's own names): create may
  // truncate it.  Never throws.
  static bool is_unfinished(Env& env, const std::string& path);
  static Status remove(const std::string& path, Env& env = Env::posix());

  const std::string& path() const { return path_; }
  bool one_file() const { return one_file_; }
  Env& env() const { return *env_; }  // every file-system call of the container
  // The context its arrays and fragments are opened with (null: the process's); a
  // one-file container's carries the pack's Env.
  const std::shared_ptr<Context>& context() const { return ctx_; }
  bool writable() const { return writable_; }
  bool shadow() const { return shadow_; }
  // Parallel files: new arrays get a directory and schema file at creation (not catalog
  // records), so the epoch protocol (docs/parallel.md) publishes everything as files.
  void set_file_arrays(bool on) { file_arrays_ = on; }
  // Parallel commits (docs/parallel.md): the last epoch whose per-rank publish journals
  // are committed.  open_array passes it on, so recovery rolls those journals forward and
  // later ones back.
  static constexpr const char* kEpochKey = Catalog::kEpochKey;
  uint64_t committed_epoch() const;
  Catalog& catalog() { return *catalog_; }
  // Catalog key prefix of an array's records: "arr/<hex16 id>/".
  static std::string array_prefix(uint64_t id);
  // Total inline bytes the catalog may hold (TESSERA_INLINE_TOTAL_MB, default 256).
  const std::shared_ptr<InlineBudget>& inline_budget() const { return budget_; }
  // The most inline bytes the catalog may hold (EngineOptions::inline_total_mb).
  void set_inline_cap(uint64_t bytes) { budget_->cap = bytes; }

  // Array ids are allocated from a counter kept in the catalog; the schema is a catalog
  // record committed with the id (durable per the catalog's durability).  `durable`
  // matters for file arrays only (set_file_arrays): false leaves their new directory and
  // schema file to the commit's syncfs.
  // schema.compact is a request: the array is created compact only when it can be (a
  // catalog-bound container with inline budget left), else as an ordinary array.
  Status create_array(const Schema& schema, uint64_t* id, bool durable = true);
  // create_array, then open_array of the new array without reading back what was just
  // written (its schema, an empty fragment list).
  Status create_and_open_array(const Schema& schema, bool durable, bool writable, const ArrayOptions& opts,
                               uint64_t* id, std::unique_ptr<Array>* out);
  // create_and_open_array with the new array's records put into `into` instead of
  // committed: the caller commits them with its own, so an object and its array reach
  // the catalog in one commit (issue 20: a dataset's create paid two).  A catalog-bound
  // container's writer only (not a parallel file's).  The array is opened from what
  // was put (nothing is read back); until `into` commits, nothing is published and the
  // caller must not write through it.  If the commit fails, abandon_array(id) gives
  // back what the creation took (inline room) and the array object is dropped.  One
  // such creation at a time per container (the id counter is read from the catalog).
  Status create_and_open_array_into(const Schema& schema, bool writable, const ArrayOptions& opts,
                                    CatalogBatch* into, uint64_t* id, std::unique_ptr<Array>* out);
  void abandon_array(uint64_t id);
  // One syncfs(2) over the container's file system (see Array::prepare_flush).
  Status sync();
  // True when an array directory was created with durable = false since the last
  // sync() (a parallel file's array), or when many new names wait for their directory
  // syncs (pending_names.h): a commit then takes the syncfs route.
  bool has_unsynced_arrays() const { return *unsynced_arrays_ || catalog_->pending_names().size() > kPendingNamesMax; }
  static constexpr size_t kPendingNamesMax = 16;
  // Another process on this node ran the syncfs that covers this container (MPI commit).
  void note_synced() { *unsynced_arrays_ = false; }
  Status open_array(uint64_t id, bool writable, const ArrayOptions& opts, std::unique_ptr<Array>* out);
  // Removes the array's records; its directory goes too, except for an array kept in
  // the catalog, whose files stay for reads as of earlier commits until vacuum_removed.
  Status remove_array(uint64_t id);
  // Removes the directories of removed arrays (no schema record, no schema file): what
  // only reads of the past still needed (`tessera vacuum`).  Needs the writer.
  Status vacuum_removed(uint64_t* arrays, uint64_t* bytes);
  // Finishes every array's crash recovery now (publish journals rolled forward or back,
  // orphan temporary fragments removed) instead of at each array's first open.  A
  // parallel file's rank 0 calls it at open, so that the ranks may later open arrays
  // independently of each other.  Only arrays whose frag/ holds a journal or a temporary
  // file are opened.
  Status recover_arrays();
  std::string array_dir(uint64_t id) const;
  // Copies what array `src_id` of `src` stores (this container or another) into array
  // `dst_id` of this one, created empty with the same schema (H5Ocopy of a dataset).
  // kRecords: the inline fragments and the committed fragment files' records, one
  // commit; kFiles: those files, hard-linked (byte-copied where links are impossible;
  // published files never change) with the heap files.  A parallel file's ranks all put
  // the records in their catalog copy, rank 0 alone links the files.  The source's
  // buffered writes must have been flushed; compact arrays hold no fragments (not here).
  enum CopyParts : unsigned { kCopyRecords = 1, kCopyFiles = 2, kCopyAll = 3 };
  Status copy_array(Container& src, uint64_t src_id, uint64_t dst_id, unsigned parts = kCopyAll);
  // An array whose catalog records a caller committed before the flush (a connector
  // publishing a compact array's cells as its dataset closes): the next commit
  // (commit_arrays) counts it among the arrays it publishes (history.h).
  void note_published(uint64_t id);
  std::set<uint64_t> take_published();

 private:
  Container() = default;
  std::string path_;
  std::shared_ptr<Context> ctx_;  // may be null (the process's)
  Env* env_ = &Env::posix();
  bool writable_ = false;
  bool shadow_ = false;
  bool one_file_ = false;
  uint64_t as_of_seq_ = 0, as_of_ts_ = 0;
  // Arrays get their directory and schema file at creation, as before catalog-bound
  // arrays existed (parallel files: the epoch protocol publishes files only).
  bool file_arrays_ = false;
  // A parallel file's array directory was created (unsynced) since the last sync().
  // (A catalog-bound array's new directory is a pending name of the catalog instead.)
  std::shared_ptr<std::atomic<bool>> unsynced_arrays_ = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<Catalog> catalog_;
  std::shared_ptr<InlineBudget> budget_ = std::make_shared<InlineBudget>();
  void init_budget();
  // `into`: the records go there, uncommitted (create_and_open_array_into).
  void create_array_impl(const Schema& requested, uint64_t* id, bool durable, Schema* created,
                         CatalogBatch* into = nullptr);
  Status open_array_impl(uint64_t id, bool writable, const ArrayOptions& opts, const Schema* known,
                         std::unique_ptr<Array>* out);
  // Ids of the array directories under arrays/ (listed at open, then kept up to date).
  std::shared_ptr<std::mutex> dirs_mu_ = std::make_shared<std::mutex>();
  std::shared_ptr<std::set<uint64_t>> dirs_ = std::make_shared<std::set<uint64_t>>();
  std::mutex published_mu_;
  std::set<uint64_t> published_;  // note_published
};

}  // namespace tessera
