// One array: a schema plus a directory of immutable fragments and an in-memory write
// buffer.  This is the engine's public face for data (the connector maps one HDF5 dataset
// onto one Array).  Every method is thread-safe and returns a Status; nothing throws.
//
// Directory layout (docs/format.md): <dir>/schema, <dir>/frag/<fragment id>.tfr,
// <dir>/heap/<heap id>.thp (variable-length arrays).
//
// An array of a container lives in the container's catalog instead (CatalogBinding): its
// schema is a catalog record, fragments up to ArrayOptions::inline_fragment_bytes are
// inline records (the same bytes as a .tfr file, published by the same atomic catalog
// batch), and <dir> is created only when the array first needs a file (a larger
// fragment, a heap, a publish journal).  Thousands of small datasets then cost no inodes.
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/array/array_store.h"
#include "engine/write/blob_buffer.h"
#include "engine/catalog/catalog.h"
#include "engine/array/compact_array.h"
#include "engine/util/error.h"
#include "engine/fragment/fragment.h"
#include "engine/fragment/fragment_set.h"
#include "engine/fragment/fragment_writer.h"
#include "engine/index/index_builder.h"
#include "engine/index/query_term.h"
#include "engine/schema/schema.h"
#include "engine/publish/share_log.h"
#include "engine/fragment/var_heap.h"
#include "engine/write/write_budget.h"
#include "engine/write/write_buffer.h"

namespace tessera {

struct ArrayOptions {
  uint32_t writer_rank = 0;          // goes into fragment ids (MPI rank)
  // true: every write returns only once its fragment is durable and published.
  // false (HDF5's rule, used by the connector): fragments are written, filtered on the
  // pool while the caller goes on, and readable at once, but synced and published under
  // their final names only at flush() / close — a crash loses everything since the last
  // flush and nothing before it, and a reader never sees a half-written fragment.
  bool durable_writes = true;
  size_t max_open_writers = 4;       // deferred mode: dense writes filtered concurrently
  uint64_t buffer_budget = 64 << 20; // spill the write buffer past this many bytes
  uint64_t direct_cells = 16384;     // box writes of at least min(this, tile cells) bypass the buffer
  // Deferred mode: box writes of at least blob_min_cells cells and at most blob_bytes bytes
  // are buffered whole (blob_buffer.h) instead of as cells or a fragment of their own.
  uint64_t blob_min_cells = 64;
  uint64_t blob_bytes = 16 << 20;
  // MPI (docs/parallel.md).  collective: fragments are published only by epoch commits
  // (stage_prepared with an epoch) and whatever is unpublished when the array is destroyed
  // is discarded, never published on its own.  shadow: another rank (0) owns journal
  // recovery, the schema file, extent-shrink fill fragments and cleanup; this one only
  // writes its own fragments.  committed_epoch: recovery rolls per-rank journals of epochs
  // up to this one forward and later ones back (Container::open_array fills it in).
  bool collective = false;
  bool shadow = false;
  // MPI, collective arrays: the job's size when small writes are shared through share
  // logs (share_log.h; 0 or 1: every shared write ends a fragment file, and every
  // refresh lists the directory).
  uint32_t share_ranks = 0;
  // The bound of this rank's share log (share_log.h): once it holds this many bytes, the
  // next small write is shared through a file (a kShared record) and the log restarts.
  // On disk it stays below this plus one write's record (docs/parallel.md).
  uint64_t share_log_bytes = 4 << 20;
  // No other writer can be at work on the array (the opener holds the container's writer
  // lock, or is MPI rank 0 opening before the others): temporary fragment files left in
  // it after journal recovery are a crashed writer's garbage and are removed.
  bool sole_writer = false;
  uint64_t committed_epoch = 0;
  // Catalog-bound arrays only: fragments up to this many bytes are stored inline in the
  // catalog (0: never — e.g. MPI ranks that cannot commit to the catalog), as long as
  // the array's inline fragments stay within inline_array_bytes.
  uint64_t inline_fragment_bytes = 64 << 10;
  uint64_t inline_array_bytes = 1 << 20;
  // Consolidation keeps the fragments it merged (its result's `replaces` hides them from
  // reads) instead of removing them at once; vacuum() removes them later (the `tessera`
  // tool's consolidate and vacuum).  Opening an array never removes replaced fragments.
  bool keep_replaced = false;
  // Read-only, as of a past commit (history.h; Container::open_as_of fills it in): the
  // commit's time.  Fragment files count only if the (as-of) catalog records them, or
  // never recorded any and their timestamp is at most this; no journal is rolled.
  uint64_t as_of_ts = 0;
  // Value indexes (docs/queries.md): build the index of every file fragment this array
  // publishes (flush, consolidation) with these options.
  bool index_on_write = false;
  IndexOptions index;
  // The pools and the tile cache the array works with (context.h); null: the process's.
  std::shared_ptr<Context> context;
  // The environment's settings (EngineOptions::from_env, options.h); throws Error for a
  // bad value.
  static ArrayOptions from_env();
};

// Inline bytes a whole container may hold in its catalog (which lives in memory).  The
// arrays of a container flush concurrently (background flushes, threads), so room is
// taken in one atomic step (try_take): a check and an add apart would let two writers
// both see the last room and both take it.
struct InlineBudget {
  std::atomic<uint64_t> used{0};
  uint64_t cap = 256ull << 20;
  // Takes n bytes if they fit under cap.
  bool try_take(uint64_t n) {
    uint64_t u = used.load();
    do {
      if (n > cap || u > cap - n) return false;
    } while (!used.compare_exchange_weak(u, u + n));
    return true;
  }
  // Takes n bytes whether or not they fit (records already in the catalog).
  void take(uint64_t n) { used += n; }
  void give_back(uint64_t n) {
    uint64_t u = used.load();
    while (!used.compare_exchange_weak(u, u - std::min(u, n))) {
    }
  }
  // Compact arrays created by this process whose cells record is not written yet: their
  // cells' bytes were taken at creation (by array key prefix).
  std::mutex mu;
  std::map<std::string, uint64_t> compact_reserved;
  // The bytes reserved for `prefix`'s cells, now claimed (0: none were).
  uint64_t claim_compact(const std::string& prefix) {
    std::lock_guard<std::mutex> g(mu);
    auto it = compact_reserved.find(prefix);
    if (it == compact_reserved.end()) return 0;
    const uint64_t n = it->second;
    compact_reserved.erase(it);
    return n;
  }
};

// An array kept in a container's catalog (see the top of this file).
struct CatalogBinding {
  std::shared_ptr<Catalog> catalog;
  std::string prefix;  // "arr/<hex16 id>/": <prefix>schema, <prefix>frag/<fragment id>
  std::shared_ptr<InlineBudget> budget;
  // The container knows the directory does not exist (skips a stat per open of thousands
  // of small arrays); dir_created tells it when the array creates it (synced: its new
  // names are durable already).
  bool dir_absent = false;
  std::function<void(bool synced)> dir_created;
};

// What an array's value indexes cover (Array::index_info).
struct IndexInfo {
  uint64_t fragments = 0;         // file fragments (inline ones are always scanned)
  uint64_t indexed = 0;           // of those, with an index file
  uint64_t inline_fragments = 0;
  uint64_t data_bytes = 0;        // bytes of the file fragments
  uint64_t indexed_data_bytes = 0;  // bytes of the indexed ones
  uint64_t index_bytes = 0;       // bytes of their index files
  uint64_t unindexed_cells = 0;   // data cells a query would scan (file fragments without an index)
};

// An index build's work and result (Array::build_index).
struct IndexBuild {
  uint32_t part = 0, parts = 1;  // MPI: this rank builds fragment i when i % parts == part
  bool rebuild = false;          // also rebuild indexes that exist
  // Only fragments every rank sees (MPI: published ones, in the same order everywhere);
  // nothing is spilled.  Otherwise the write buffer is spilled first and every file
  // fragment, published or not, is indexed.
  bool published_only = false;
  // Called on the building thread as chunks finish: cells done, cells to do in all.
  std::function<void(uint64_t done, uint64_t total)> progress;
  // Out: fragments indexed, their cells, bytes of index written.
  uint64_t built = 0, cells = 0, bytes = 0;
};

struct FragmentInfo {
  FragmentId id;
  std::string path;  // the file, or for an inline fragment its catalog record's label
  uint64_t file_size = 0, cells = 0, dense_tiles = 0, sparse_tiles = 0;
  bool has_domain = false;
  Box domain;
  uint64_t fill_boxes = 0, erased_tiles = 0;  // dense entries that are fill boxes; erased tiles
  bool is_inline = false;
  bool sets_extent = false;
  std::vector<FragmentId> replaces;  // the fragments a consolidation merged into this one
  StorageOrder order;  // its tiles' and cells' order (Fragment::order): the schema's unless converted since
  static FragmentInfo of(const Fragment& f, const Schema& s);
};

// What Array::vacuum removed.
struct VacuumResult {
  uint64_t fragments = 0, bytes = 0;
};

class Array final : public BufferOwner {
 public:
  // An open or refresh lists the array's files again while a writer's commits overtake
  // each listing (Array::load_fragments); after this many in a row it gives up (kBusy).
  static constexpr int kMaxOvertaken = 64;
  // durable = false: nothing is synced (the caller syncs the file system before it
  // records the array anywhere, e.g. at its flush).
  // env: where the files go (the Context's of the arrays that will open it).
  static Status create(const std::string& dir, const Schema& schema, bool durable = true, Env& env = Env::posix());
  // records: an array of a container that keeps its schema in its directory (a parallel
  // file's array, an older container's) still has its fragment files recorded in the
  // container's catalog under records_prefix ("arr/<hex16 id>/", file_records.h).
  static Status open(const std::string& dir, bool writable, const ArrayOptions& opts,
                     std::unique_ptr<Array>* out, std::shared_ptr<Catalog> records = nullptr,
                     const std::string& records_prefix = "");
  // A catalog-bound array (Container::open_array); `dir` may not exist yet.
  // known: a schema the caller just created the array with (nothing to read back: no
  // record to decode, no fragments yet).
  static Status open_bound(const std::string& dir, CatalogBinding binding, bool writable,
                           const ArrayOptions& opts, std::unique_ptr<Array>* out, const Schema* known = nullptr);
  // The catalog record of a new bound array's schema (Container::create_array).
  static std::string schema_record(const Schema& schema);
  ~Array();  // flushes the write buffer (errors are lost: call flush() first to see them)
  // The context's write budget (write_budget.h) flushing this array's buffer: swaps the
  // buffer out and writes it as a fragment on the caller's (the flusher's) thread while
  // writes go on into a fresh buffer.
  void flush_in_background() noexcept override;

  const Schema& schema() const { return schema_; }
  const std::string& dir() const { return dir_; }

  // Writes the selected cells from src (selection row-major order; src_strides in elements
  // per dimension over the selection's ranks, or null for dense).
  Status write(const Selection& sel, const void* src, const uint64_t* src_strides = nullptr);
  // Disjoint boxes whose cells follow each other in src, each box's row-major (an
  // irregular HDF5 selection split into boxes): one call, so the large boxes become one
  // fragment together (as many as the most boxes sharing a tile) instead of one each,
  // and the others go to the buffer.
  Status write_boxes(const std::vector<Box>& boxes, const void* src);
  Status write_points(const uint64_t* coords, size_t n, const void* values);
  // The same, taking over `coords` (n * rank words): a large point list is not copied.
  Status write_points(std::vector<uint64_t>&& coords, const void* values);
  Status read(const Selection& sel, void* dst, const uint64_t* dst_strides = nullptr);
  Status read_points(const uint64_t* coords, size_t n, void* dst);

  // --- Sparse data (array_sparse.cc, docs/sparse.md).  A cell is *defined* once written
  // and until erased; an extent shrink undefines what it cuts off.
  // The defined cells among `region` (disjoint boxes inside the extent) as disjoint boxes
  // sorted by low corner (DefinedPlanner::defined); no values are read.
  Status defined(const std::vector<Box>& region, std::vector<Box>* out);
  // Whether each of n cells is defined (out[i] = 0 or 1).
  Status defined_points(const uint64_t* coords, size_t n, std::vector<uint8_t>* out);
  // Makes cells undefined again: they read as the fill value, defined() no longer reports
  // them, and consolidating the fragments they were written in drops them.  One call is
  // one fragment (fill boxes for the large boxes, an erased tile for scattered cells), so
  // a crash keeps all of it or none of it, newest-wins with writes like a write.  Boxes
  // must be disjoint; points may repeat.  A compact array cannot be erased (kUnsupported).
  Status erase(const std::vector<Box>& boxes);
  Status erase_points(const uint64_t* coords, size_t n);

  // --- Value indexes and queries (array_index.cc, docs/queries.md).
  // Builds the missing value indexes of the array's file fragments (after spilling the
  // write buffer, so everything written so far is in a fragment), on the context's filter
  // pool; fragments stay readable and writable meanwhile.  Elements must be numbers.
  Status build_index(const IndexOptions& o, IndexBuild* b);
  // Removes every index file (queries then scan).
  Status drop_index();
  Status index_info(IndexInfo* out);
  // One comparison over a subarray (query_term.h): count and/or positions of the cells
  // whose newest value satisfies it, through the indexes where fragments have them.
  Status evaluate(const TermQuery& q, TermAnswer* out);

  // Variable-length arrays (schema().var): each cell is a byte string.  Values are given
  // and returned in selection (or point) order: lengths[i] bytes each, concatenated.
  // Cells never written read as empty strings.
  Status write_var(const Selection& sel, const uint64_t* lengths, const void* data);
  Status write_points_var(const uint64_t* coords, size_t n, const uint64_t* lengths, const void* data);
  Status read_var(const Selection& sel, std::vector<uint64_t>* lengths, std::vector<uint8_t>* data);
  Status read_points_var(const uint64_t* coords, size_t n, std::vector<uint64_t>* lengths,
                         std::vector<uint8_t>* data);

  // Waits until no background flush of this array is queued or running (its fragment is
  // then listed by fragments()); the flush itself may still be pending durability.
  void settle();
  // Makes everything written so far durable (spills the write buffer into a fragment).
  Status flush();
  // flush() in three steps, for a caller that flushes many arrays with a few file-system
  // syncs (Container::sync) instead of one fsync per file:
  //   prepare_flush()        every pending fragment written (unsynced);   then sync
  //   stage_prepared(true)   the batch's publish journal written;         then sync
  //   publish_prepared(true) renames done, journal removed, schema;       then sync
  // With synced = false each step syncs what it wrote itself; fragments_synced = true
  // says the caller already synced the fragments (a syncfs after prepare_flush), so the
  // stage writes and syncs just its journal.
  // epoch > 0 (parallel commits): the batch always gets a journal, named per writer rank
  // and tagged with the epoch; it is published only if that epoch's record is committed.
  Status prepare_flush();
  Status stage_prepared(bool synced, uint64_t epoch = 0, bool fragments_synced = false);
  // True when stage_prepared would write a journal or publish log (which must follow the
  // fragments' sync); false when the batch's files go in place with the catalog batch
  // that records them (an array whose records are complete), or there are none.
  bool stage_writes(uint64_t epoch = 0) const;
  // into (catalog-bound arrays): the step's catalog records (inline fragments, schema)
  // are added to *into for the caller to commit and sync, instead of a commit per array
  // (flushing 10,000 small datasets is then one catalog batch).
  Status publish_prepared(bool synced, CatalogBatch* into = nullptr);
  // A serial flush of an array whose records are not complete (a parallel file's array
  // opened without MPI) whose batch needs a journal commits as an epoch does: the journal
  // is tagged with the next epoch and the caller's catalog batch — recording the files,
  // setting sys/epoch — is the commit point, made durable before publish_prepared renames
  // (docs/format.md, "Publish logs").  After stage_prepared: that epoch, the batch's file
  // records added to *into; 0: the batch publishes the usual way (renames, then batch).
  Status record_staged(CatalogBatch* into, uint64_t* epoch);
  // After prepare_flush: fragments (and extent changes) the next publish will make
  // visible; a caller publishing only a few may sync them file by file instead.
  size_t pending_publish() const;
  // Grows or shrinks the current extent.  Cells cut off by a shrink read as the fill value
  // if the extent grows back (as in HDF5).
  Status set_extent(const Coords& extent);
  // Picks up fragments published by other processes.
  Status refresh();
  // MPI: picks up fragments other ranks published on their own (publish_own) without
  // touching the schema (a shadow's in-memory extent may be ahead of the disk's).
  Status refresh_fragments();
  // MPI, collective arrays: publishes this writer's finished and buffered fragments on
  // its own, outside an epoch (H5Dclose in a parallel file, docs/parallel.md): each file
  // synced, then renamed to its final name oldest first, then the directory synced — a
  // crash leaves a prefix of them.  *published: how many.  Extent changes wait for the
  // epoch.
  Status publish_own(size_t* published);
  // MPI, collective arrays: makes this writer's finished and buffered fragments readable
  // by the other ranks of the job (H5Dwrite in a parallel file) without publishing them:
  // each is renamed to its shared name (array_files.h), which the epoch commit renames
  // to its final name like any unpublished fragment, and crash recovery removes.  No
  // sync: visibility between processes needs none, durability is the epoch's.
  Status share_own();
  // Newest fragment timestamp issued or seen; raise_timestamp makes every later fragment
  // sort after `ts` (MPI: ranks agree on the maximum at each collective point).
  uint64_t last_timestamp() const;
  void raise_timestamp(uint64_t ts);
  // Fragments finished but not yet published (deferred mode).
  size_t unpublished_count() const;
  // MPI, collective arrays: the files an epoch commit must record (file_records.h) —
  // those publish_own published since the last epoch (the first *alone of the list),
  // then the finished fragments the epoch publishes — as (id, size).  files_recorded:
  // the epoch record that names the first `alone` is durable (or applied, on a shadow).
  std::vector<std::pair<FragmentId, uint64_t>> files_to_record(size_t* alone) const;
  void files_recorded(size_t alone);
  // The catalog is synced: entries of this writer's publish log (publish_log.h) that it
  // records are dropped.  Failures are ignored: a log left longer costs nothing.
  void publish_log_recorded();

  // Consolidation (TileDB §4.3): merges fragments [first, last] (indexes into fragments(),
  // oldest first) into one, publishes it atomically, then removes the merged files.
  Status consolidate(size_t first, size_t last);
  Status consolidate_all();
  // Size-tiered: merges runs of >= `min_run` adjacent fragments whose sizes are within a
  // factor `ratio` of each other (LSM style); repeats until nothing qualifies.
  Status consolidate_auto(size_t min_run = 4, double ratio = 4.0);
  // Consolidation that converts (docs/layouts.md): merges every fragment into one in tile
  // order `tile` and cell order `cell` (parse_layout) and makes that the order of new
  // fragments — the schema change is published with the merged fragment (one catalog
  // batch; a standalone array's schema file right after the merged fragment's rename,
  // which already records its own order), so a crash leaves the old state or the new
  // one, both readable.  Fragments replaced but kept (keep_replaced, reads as of older
  // commits) stay in their order.  The same order as now: consolidate_all.
  // [first, last] (indexes into fragments()): convert only those (adjacent) fragments;
  // the others keep their order, and a later consolidation converts them.
  Status consolidate_layout(Order tile, Order cell, size_t first = 0, size_t last = SIZE_MAX);
  // Parallel consolidation (MPI tools): part `part` of `parts` writes the merge of all
  // fragments restricted to its share of the tiles (contiguous ranges in tile order), as
  // an unpublished fragment that replaces every input.  The parts together are the
  // merge; they must be published as one epoch (stage_prepared with an epoch) so that
  // no reader ever sees some parts without the others.  Every part must see the same
  // fragments (open or refresh the array after the last commit).
  Status consolidate_part(uint32_t part, uint32_t parts);

  std::vector<FragmentInfo> fragments();
  // Fragments kept although a newer fragment replaces them (ArrayOptions::keep_replaced,
  // or left by a crash between a consolidation's publish and its removals); reads ignore
  // them.  As listed at open, refresh or the last consolidation.
  std::vector<FragmentInfo> replaced_fragments() const;
  // Removes every replaced fragment: its catalog records (inline fragment, file record)
  // in one synced batch, then its file.  Safe while other processes read the array: a
  // fragment is replaced only once its replacement is durable, readers that have it open
  // keep reading it, and a reader that lists it and then finds it gone lists again.
  Status vacuum(VacuumResult* out);
  uint64_t storage_bytes();  // bytes of all fragments, files and inline records (written so far)
  // Tiles inside the current extent that hold at least one written cell — what HDF5
  // calls its allocated chunks (a tile the last extent change cut off entirely, and
  // never written since, does not count).  Tile coordinates in tile order (array_census.cc).
  Status written_tiles(std::vector<Coords>* tiles);
  // --- Tiles as HDF5 chunks (array_chunks.cc).  A chunk is one whole tile: the cells of
  // its full box (tile extents from tile * tile_extent, cells past the array's edge
  // included) in row-major order — HDF5's chunk layout.
  // The chunk's cells; cells outside the extent or never written read as the fill value.
  Status read_tile(const uint64_t* tile, void* dst);
  // Stores bytes that schema().filters encoded — skipping filter i where bit i of `skip`
  // is set — as the tile's data (HDF5's H5Dwrite_chunk).  The bytes are kept as given,
  // not decoded (a read decodes them, and fails naming the fragment if they are not what
  // the pipeline produces), unless the chunk's full box is cut by the maximum extent or
  // the cell order is not row-major: then they are decoded and written as cells.
  // Consecutive calls in ascending tile order with the same `skip` append to one fragment.
  Status write_tile_encoded(const uint64_t* tile, uint32_t skip, const void* bytes, size_t n);
  // The chunk as schema().filters encode it (HDF5's H5Dread_chunk): when its newest data
  // is one stored box covering the whole chunk, that box's stored bytes and skip mask,
  // unchanged; otherwise read_tile's cells encoded, *skip = 0.
  Status read_tile_encoded(const uint64_t* tile, std::vector<uint8_t>* bytes, uint32_t* skip);
  // The size and skip mask of what read_tile_encoded returns (a stored box: from the
  // footer, nothing read).
  Status tile_encoded_size(const uint64_t* tile, uint64_t* size, uint32_t* skip);
  // Writes a whole chunk's cells (row-major), those past the extent included where the
  // tile holds the whole chunk (as native stores a chunk), else those inside the extent.
  Status write_tile(const uint64_t* tile, const void* src);
  // After prepare_flush(): whether this flush has files to sync (else no syncfs needed).
  bool has_unsynced_files() const;
  size_t buffered_cells() const;

 private:
  // opts_.context, or the process's.  The first member, so the last destroyed: the files
  // the other members hold (the store's catalog, share logs, writers) close through its
  // Env, and an array may hold the last reference to its Context (its container closed
  // first).
  std::shared_ptr<Context> ctx_;

  Array() = default;
  void open_impl(bool writable, const Schema* known = nullptr);
  void load_fragments();
  // The catalog's file records name every committed fragment file of this array
  // (ArrayStore::files_complete; never for a parallel file's collective arrays).
  bool complete_records() const { return !opts_.collective && store_->files_complete(); }
  // Every fragment present (published files, inline records, this writer's unpublished
  // and journal-recovered ones), replaced or not; true when the listing was consistent
  // (no listed file vanished, every recorded file found or replaced).  unrecorded: set
  // when the problem is a file neither recorded nor logged (the listing may be newer than
  // the catalog: load_fragments checks it against the reloaded one).
  bool list_present(std::vector<std::shared_ptr<Fragment>>* all, std::string* problem,
                    std::optional<FragmentId>* unrecorded = nullptr);
  FragmentId next_id();
  void check_selection(const Selection& sel) const;
  // --- MPI share logs and runs (array_share.cc, docs/parallel.md "Visibility").  A run
  // is this rank's consecutive small box writes, each shared as a share-log record,
  // buffered together and spilled as one fragment; every record and that fragment carry
  // the run's first timestamp, so the fragment sorts where the run's first write did.
  // A run ends (is spilled) before any other kind of write, and when another rank's
  // newly seen fragment meets its cells (fence_: those seen during the run, which later
  // writes of the run must not meet either) — a write ordered after another rank's
  // must sort after it.
  // Only a writable array: a read-only one belongs to a job of readers (the connector
  // opens arrays writable exactly when the file is), so the share logs it could find are
  // another job's uncommitted writes — a crashed one's, until recovery removes them.
  bool share_logging() const { return opts_.share_ranks > 1 && opts_.collective && !compact_ && writable_; }
  // A buffered box write: queued for the share log (true), or not loggable (false: the
  // run ends and the next share_own shares through files).
  bool note_logged_write(const Selection& sel, const uint8_t* src, const uint64_t* sstride);
  void note_unlogged_write();
  void end_share_run();
  FragmentId spill_id();  // the id of a spill: the run's, ending it; else next_id()
  void open_share_log();
  void log_pending_shares();
  void announce_files();  // a kList record: other ranks list the directory
  void announce_shared(const std::vector<std::string>& names);  // a kShared record
  // Reads the other ranks' new share-log records; true when one asks for a listing.
  // retired: fragments the logs showed before that files hold now.
  bool poll_share_logs(std::vector<std::shared_ptr<Fragment>>* fresh, std::vector<std::shared_ptr<Fragment>>* retired);
  // Picks up what other ranks shared: their new records, and a listing when asked (or
  // `list`); ends the run if something new meets it.
  void pick_up_shared(bool list);
  void note_foreign(const std::vector<std::shared_ptr<Fragment>>& fresh);
  void close_share_logs() noexcept;
  struct PendingShare {
    Box box;
    std::vector<uint8_t> cells;  // row-major
  };
  std::vector<PendingShare> share_pending_;  // box writes since the last share_own
  bool share_broken_ = false;  // a write since the last share_own was not logged
  uint64_t run_ts_ = 0;        // the current run's timestamp (0: none)
  BoundingBox run_bounds_;
  std::vector<Box> fence_;
  std::unique_ptr<ShareLogWriter> share_log_;
  struct PeerLog {
    ShareLogReader log;
    std::vector<std::shared_ptr<Fragment>> frags;  // shown by the log, not yet in files
  };
  std::vector<PeerLog> peers_;  // by rank
  void write_dense(const Selection& sel, const uint8_t* src, const uint64_t* sstride);
  void buffer_cells(const Selection& sel, const uint8_t* src, const uint64_t* sstride);
  void maybe_spill();
  // The fragment of a spill: the buffer's cells tile by tile (dense where they fill a box).
  void fill_spill(WriteBuffer& buf, const BlobBuffer& blobs, FragmentWriter& w) const;
  void buffer_blob(const Selection& sel, const uint8_t* src, const uint64_t* sstride);
  // Spills first when buffered blobs overlap `b` (a write or erase that would otherwise
  // become a fragment older-looking than them: fragments sort before blobs in reads).
  void spill_blobs_over(const Box& b);
  // Whether `box` starts after the open dense fragment's last tile (it can be appended).
  bool appends_after_direct(const Box& box) const;
  // Tells the context's write budget what this array holds; true when over its limit.
  bool report_bytes();
  // Waits (releasing mu_) until no background flush of this array is writing.
  void finish_inflight();
  // A background flush that failed: every later flush (and write) reports it.
  void check_background() const;
  // Back-pressure after a buffered write, with mu_ released (write_budget.h).
  Status throttle(Status st, std::unique_lock<std::mutex>* held);
  void erase_impl(const std::vector<Box>& boxes, const uint64_t* points, size_t n);
  // Value indexes: builds the indexes of just-published file fragments when asked
  // (index_on_write, or `inputs_indexed`: a consolidation of indexed fragments), and
  // removes the index file of a fragment that goes.
  void index_published(const std::vector<std::shared_ptr<Fragment>>& published, bool inputs_indexed = false);
  void remove_index_of(const FragmentId& id);
  void defined_locked(const std::vector<Box>& region, std::vector<Box>* out);
  void spill();
  // part/parts: see consolidate_part; parts == 1 publishes at once (serial).
  // target: the schema to merge into (a converted order, consolidate_layout), published
  // with the result; null: schema_.
  void consolidate_range(size_t first, size_t last, uint32_t part = 0, uint32_t parts = 1,
                         const Schema* target = nullptr);
  std::vector<uint8_t> make_descriptors(HeapBuilder* heap, size_t n, const uint64_t* lengths, const void* data);
  void resolve_descriptors(const std::vector<uint8_t>& desc, std::vector<uint64_t>* lengths,
                           std::vector<uint8_t>* data);
  void check_points(const uint64_t* coords, size_t n) const;
  HeapBuilder* pending_heap();
  void require_var(bool var) const;
  void check_writable() const;
  // check_writable, and ends the share run: every write but a logged one calls it.
  void require_writable();
  // Completes a writer: durable publish (durable_writes) or finish into unpublished_.
  // batch: into unpublished_ even in durable mode (the caller publishes them together).
  void complete(std::unique_ptr<FragmentWriter> w, bool batch = false);
  // Deferred mode: lets a dense writer keep filtering in the background.
  void park(std::unique_ptr<FragmentWriter> w);
  void finish_parked();
  // finish_parked for a read of `region` only: the flush in flight is waited for only when
  // its writes may lie there (its bounds are not known yet, or they meet the region).
  void finish_parked_for(const Box& region);
  Box points_bounds(const uint64_t* coords, size_t n) const;
  // Direct chunk writes (array_chunks.cc): the open fragment they append to, closed
  // (parked) before anything else writes or reads, so fragment order stays write order.
  void close_direct();
  Box chunk_box(const uint64_t* tile) const;
  void check_tile(const uint64_t* tile) const;  // inside the maximum extent
  void require_tiles() const;                    // fixed-size cells in tiles (not compact)
  void read_tile_locked(const uint64_t* tile, uint8_t* dst);
  void write_tile_locked(const uint64_t* tile, const uint8_t* src);
  // Adds a whole chunk to the open direct fragment (a new one if the tile order or the
  // skip mask breaks the run).
  void append_direct(const uint64_t* tile, uint32_t skip, const std::function<void(FragmentWriter&)>& add,
                     bool whole = false);
  void encoded_locked(const uint64_t* tile, std::vector<uint8_t>* bytes, uint64_t* size, uint32_t* skip);
  std::unique_ptr<FragmentWriter> direct_;
  // Why unflushed writes were lost (a fragment file whose write failed), until the next
  // flush reports it (report_lost throws kIo): a flush never succeeds over lost writes.
  std::string lost_;
  void note_lost(const std::string& why);
  // Syncs every unpublished fragment; one whose sync fails is dropped and noted lost.
  void sync_unpublished();
  void report_lost();
  void complete_parked(std::unique_ptr<FragmentWriter> w);
  uint32_t direct_skip_ = 0;
  bool direct_whole_ = false;  // direct_ checksums tiles whole (FragmentWriter::set_whole_checksums)
  Coords direct_last_;  // the last tile direct_ holds
  void stage_publish(bool synced, uint64_t epoch = 0, bool fragments_synced = false);
  bool stage_writes_locked(uint64_t epoch) const;
  std::string journal_path() const;
  void recover_one_journal(const std::string& path);
  void discard_unpublished();
  void finish_publish(bool synced, CatalogBatch* into = nullptr);
  void recover_journal();
  // A read-only view whose catalog was just reloaded: the journals are rolled again by
  // the reloaded catalog's epoch, so an epoch committed since is read whole — through the
  // temporary names of the files its members have not renamed yet (an outside reader of
  // a parallel file; docs/format.md, "Epoch journals").  Then the stored schema, unless
  // a journal's is newer.  Nothing for writers, shadows and views as of a past commit.
  void reread_journals();
  void take_stored_schema();
  void flush_impl();
  bool apply_extent_commits();
  void add_fragment(std::shared_ptr<Fragment> f, const std::vector<FragmentId>& replaced);
  // --- where the schema and inline fragments live (array_store.h)
  // A converted schema (consolidate_layout) becomes the array's, once published.
  void adopt_schema(const Schema& s) {
    schema_ = s;
    buffer_->reset_layout(schema_);
  }
  // s: the schema whose order the fragment takes (null: schema_).
  std::unique_ptr<FragmentWriter> make_writer(FragmentId id, const Schema* s = nullptr);
  // Its room in the inline budgets is already taken (ArrayStore::reserve_inline).
  void add_inline(std::vector<uint8_t> bytes, bool batch = false);  // batch: as complete()
  // A finished in-memory fragment the inline budgets had no room for, written to a
  // temporary file beside the fragments (unsynced); returns its path.
  std::string inline_to_file(const std::vector<uint8_t>& bytes, const std::string& final_path);
  void materialize_inline();  // a batch mixing files and inline records goes all to files

  // A compact array (schema_.compact) is its sibling implementation: every operation is
  // delegated to it (compact_array.h), nothing else of this class is used.
  std::unique_ptr<CompactArray> compact_;

  std::unique_ptr<ArrayStore> store_;
  std::vector<std::shared_ptr<Fragment>> unpublished_inline_;  // deferred mode

  mutable std::mutex mu_;
  Env& env() const { return ctx_->env(); }  // every file-system call of the array
  std::string dir_, frag_dir_;
  bool writable_ = false;
  ArrayOptions opts_;
  Schema schema_;
  // Made with the schema (open_impl); null, as heaps_, for a compact array.
  std::unique_ptr<WriteBuffer> buffer_;
  std::unique_ptr<BlobBuffer> blobs_;
  std::vector<uint8_t> scratch_;  // write_dense: pieces gathered for unfiltered tiles
  std::vector<ByteSpan> spans_;   // write_dense: the source rows of a tile written from them
  // A background flush's state (flush_in_background): writing a swapped-out buffer of
  // inflight_bytes_ bytes; its cells are in no fragment yet, so reads and everything that
  // lists fragments wait for it (finish_inflight).
  bool inflight_ = false;
  uint64_t inflight_bytes_ = 0;
  // The bounding box of the flush in flight's cells and blobs, once the flusher computed
  // it (outside the lock: a scattered buffer has millions of cells); !any until then.
  BoundingBox inflight_bounds_;
  // Waited on with mu_ held (wait_inflight).  Not a condition_variable_any, and parked_
  // not a deque: both allocate when constructed, and an array is opened and closed per
  // small dataset (issue 20).
  std::condition_variable inflight_cv_;
  void wait_inflight();
  Status bg_error_;
  std::unique_ptr<HeapBuilder> pending_heap_;  // bytes of buffered variable-length cells
  std::unique_ptr<HeapReader> heaps_;
  std::string heap_dir_;
  FragmentSet frags_;  // oldest first (published or not)
  std::list<std::unique_ptr<FragmentWriter>> parked_;  // dense writers still filtering
  // Finished but unpublished fragments (deferred mode): (fragment, final path).
  std::vector<std::pair<std::shared_ptr<Fragment>, std::string>> unpublished_;
  FragmentId extent_id_;       // the extent change the schema file records
  bool schema_dirty_ = false;  // deferred mode: schema to write at flush
  bool journal_staged_ = false;
  bool single_ = false;  // the staged batch is one fragment: no journal file
  uint64_t staged_epoch_ = 0;  // the staged journal's epoch (0: serial journal)
  // The staged batch commits with the caller's catalog batch before its renames
  // (record_staged); first_committed_: that batch is durable, so a batch whose renames
  // failed is finished from here before a new journal replaces its journal.  The batch
  // is the first staged_n_ of unpublished_ (a retry's new fragments follow it), and the
  // schema it publishes is staged_schema_ (a later extent change is not its).
  bool first_ = false;
  bool first_committed_ = false;
  size_t staged_n_ = 0;
  std::optional<std::pair<Schema, FragmentId>> staged_schema_;
  bool commits_first_locked() const;
  void record_first(CatalogBatch& into) const;
  std::vector<std::shared_ptr<Fragment>> recovered_;  // read-only: fragments named by a journal
  // Published by publish_own since the last epoch, not yet recorded (files_to_record).
  std::vector<std::pair<FragmentId, uint64_t>> alone_files_;
  // This writer appended to its publish log since its last trim (log_publish).
  bool logged_ = false;
  // An append to or trim of the log failed: the next append rewrites it whole.
  bool log_suspect_ = false;
  // publish_own renamed files and the directory sync making the names durable has not
  // returned yet: the next epoch syncs it before its record names them.
  bool alone_unsynced_ = false;
  // Files about to be renamed into place before a durable catalog batch records them:
  // appended to this writer's publish log first (publish_log.h).
  void log_publish(const std::vector<std::pair<FragmentId, uint64_t>>& files);
  void log_unpublished();
  void trim_log();  // publish_log_recorded, the caller holding mu_
  std::vector<FragmentInfo> replaced_;  // present but replaced (replaced_fragments())
  uint64_t last_ts_ = 0;
  uint32_t seq_ = 0;
};

}  // namespace tessera
