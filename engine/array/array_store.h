// array_store.h — where an array keeps what is not a fragment file: its schema, its
// small fragments and, for a compact array, its cells.  Two kinds:
//
//   DirStore      the array's own directory: <dir>/schema is a file, every fragment a
//                 .tfr file (standalone arrays, arrays of parallel files); in a container
//                 the catalog still records its fragment files (file_records.h);
//   CatalogStore  a container's catalog (CatalogBinding, array.h): the schema and small
//                 fragments are catalog records published with the catalog's batches, and
//                 <dir> is created only when the array first needs a file.
//
// Array works through this interface and never asks which kind it has; where the two
// differ in what a flush must do, the store says so (publishes_with_catalog()).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/catalog/catalog.h"
#include "engine/context/context.h"
#include "engine/fragment/fragment.h"
#include "engine/fragment/fragment_set.h"
#include "engine/schema/schema.h"

namespace tessera {

struct ArrayOptions;
struct CatalogBinding;

class ArrayStore {
 public:
  virtual ~ArrayStore() = default;

  // --- schema
  // The stored schema (and the extent change it records) for an opener; `known`: the
  // schema the caller just created the array with (nothing to read back).
  virtual Schema open(bool writable, const Schema* known, FragmentId* extent_id) = 0;
  // The stored schema again (another writer may have changed it).
  virtual Schema load_schema(FragmentId* extent_id) = 0;
  // Stores the schema now (an extent change in durable mode, a repair, a journal's
  // schema after a crash); durable: synced before it returns.
  virtual void store_schema(const Schema& s, const FragmentId& extent_id, bool durable) = 0;
  // How a flush publishes schema changes and inline fragments: true, as records in the
  // catalog's batch (a schema change is then not a file the flush must sync, and needs
  // no journal of its own); false, a schema change is a file in the array's directory.
  virtual bool publishes_with_catalog() const = 0;
  // Publishes a flush's inline fragments and schema change (null: none), after its files
  // were renamed into place, and records those files (record_files): into the caller's
  // catalog batch, or committed now (and synced unless `synced`).  A DirStore writes the
  // schema file (synced unless `synced`).
  virtual void publish(const std::vector<std::shared_ptr<Fragment>>& inline_frags, const Schema* schema,
                       const FragmentId& extent_id, const std::vector<std::pair<FragmentId, uint64_t>>& files,
                       bool synced, CatalogBatch* into) = 0;

  // --- the array's directory
  virtual bool dir_exists() const = 0;
  // Creates <dir>/frag (and heap/) if missing; durable: synced with its parents.
  virtual void ensure_dir(bool durable, bool heap) = 0;
  // Picks up what another process wrote: the directory it created and, with `records`,
  // its catalog records (a read-only catalog is reloaded).
  virtual void refresh(bool records) = 0;

  // --- inline fragments (a DirStore has none)
  // The largest fragment the array may keep inline now (0: files only).
  virtual uint64_t inline_limit(bool writable, const ArrayOptions& opts) const = 0;
  // The inline fragments stored for the array; `known` ones are reused, not reopened;
  // `pending`: unpublished inline fragments (they count against the budget).
  virtual void list_inline(const FragmentSet& known, const std::vector<std::shared_ptr<Fragment>>& pending,
                           const Schema& schema, const std::shared_ptr<Context>& ctx,
                           std::vector<std::shared_ptr<Fragment>>* out) = 0;
  // The record key of inline fragment `id`, and the label messages name it by.
  virtual std::string inline_key(const FragmentId& id) const = 0;
  virtual std::string inline_label(const std::string& key) const = 0;
  // Takes room for a finished inline fragment of `bytes` from the array's and the
  // container's budgets, in one step; false: no room, the fragment must be a file (the
  // limit a writer was given may have been taken by another writer since).
  virtual bool reserve_inline(uint64_t bytes, const ArrayOptions& opts) = 0;
  // An inline fragment of `bytes` was dropped (or added, outside reserve_inline): the
  // budgets follow.
  virtual void count_inline(int64_t bytes) = 0;
  // Commits record changes (inline fragments added or dropped); sync: durable now.
  virtual void commit(CatalogBatch b, bool sync) = 0;

  // --- the record of published fragment files (file_records.h: one catalog record
  // "<prefix>file/<fragment id>" holding the file's u64 size per file; a standalone
  // DirStore keeps none).  A recorded file that is missing and replaced by no present
  // fragment was lost (Array::open fails, `tessera verify` reports it).
  virtual std::map<FragmentId, uint64_t> recorded_files() const = 0;
  // Records `add` and forgets `drop`: into the caller's batch, or committed now (synced
  // when `sync`); nothing if the array was deleted meanwhile.
  virtual void record_files(const std::vector<std::pair<FragmentId, uint64_t>>& add,
                            const std::vector<FragmentId>& drop, CatalogBatch* into, bool sync) = 0;
  // Whether the records name every committed fragment file ("<prefix>files", put when the
  // array is created, or by the serial writer that recorded every file of an array a
  // parallel job wrote): then
  // a file without a record was never committed — a flush a crash cut short before its
  // catalog batch, or a file that does not belong here — and readers ignore it.  Arrays
  // a parallel file's ranks publish into are not complete: the epoch commit records the
  // files it publishes, but a rank's H5Dclose publishes files on its own (durable at
  // once, recorded by the next epoch); nor is a DirStore ever (its schema is a file).
  virtual bool files_complete() const = 0;
  // Sets or clears that mark: into the caller's batch, or committed now (durable at the
  // catalog's next sync).
  virtual void mark_files_complete(bool on, CatalogBatch* into) = 0;
  // Whether the array keeps file records at all (in a container's catalog).
  virtual bool has_records() const = 0;
  // Whether every committed fragment file is recorded or named in a publish log
  // ("<prefix>logged", publish_log.h): then a file that is neither was never published
  // here (copied in from elsewhere) and reading the array fails naming it.  Put when a
  // parallel file's array is created, or by MPI rank 0 when it opens a catalog-bound array
  // (having recorded every file present).
  virtual bool files_logged() const = 0;
  // Sets that mark into the caller's batch (nothing without records, or if set).
  virtual void mark_files_logged(CatalogBatch& into) = 0;
  // The last committed MPI epoch the catalog holds ("sys/epoch", 0 if none); nullopt
  // without a catalog (a standalone array: its opener says).  A read-only view whose
  // catalog was reloaded rolls epoch journals by it again (Array::reread_journals).
  virtual std::optional<uint64_t> committed_epoch() const = 0;
  // Whether the stored schema (its extent set by extent_id) is newer than the last
  // commit the records hold: a schema file rank 0 rewrote for an epoch (or a serial
  // writer for its flush) whose commit this reader's catalog lacks.  Never for a
  // schema that is itself a record, or without records.
  virtual bool schema_ahead_of_records(const FragmentId& extent_id) const = 0;

  // --- compact arrays (a CatalogStore only): all cells in one record
  // The cells record, if written; *label names it in messages.
  virtual std::optional<std::string> compact_record(std::string* label) = 0;
  // Stores the cells record (of `bytes` cells), into the caller's batch or committed now
  // (synced unless `synced`); nothing if the array was deleted meanwhile.
  virtual void publish_compact(const std::string& record, uint64_t bytes, bool synced, CatalogBatch* into) = 0;
};

// dir: the array's directory; frag_dir: its fragment directory.
// env: the array's (its Context's).  A DirStore of a container array keeps its file
// records in the container's catalog (`records`, under `prefix`); standalone: none.
std::unique_ptr<ArrayStore> make_dir_store(Env& env, const std::string& dir, std::shared_ptr<Catalog> records = nullptr,
                                           const std::string& prefix = "");
// frag_dir: join_path(dir, kFragDir), which the caller has already built.
std::unique_ptr<ArrayStore> make_catalog_store(Env& env, const std::string& dir, const std::string& frag_dir,
                                               CatalogBinding binding);

}  // namespace tessera
