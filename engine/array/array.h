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

#include "engine/array/array_fragments.h"
#include "engine/array/array_info.h"
#include "engine/array/array_options.h"
#include "engine/array/array_store.h"
#include "engine/array/auto_merge.h"
#include "engine/write/blob_buffer.h"
#include "engine/catalog/catalog.h"
#include "engine/array/compact_array.h"
#include "engine/array/consolidation.h"
#include "engine/array/publisher.h"
#include "engine/array/share_session.h"
#include "engine/array/write_path.h"
#include "engine/util/error.h"
#include "engine/fragment/fragment.h"
#include "engine/fragment/fragment_writer.h"
#include "engine/index/index_builder.h"
#include "engine/index/query_term.h"
#include "engine/schema/schema.h"
#include "engine/fragment/var_heap.h"
#include "engine/write/write_budget.h"
#include "engine/write/write_buffer.h"
#include "engine/context/merge_queue.h"

namespace tessera {

class Array final : public BufferOwner, public MergeOwner {
 public:
  // An open or refresh lists the array's files again while a writer's commits overtake
  // each listing (ArrayFragments::load); after this many in a row it gives up (kBusy).
  static constexpr int kMaxOvertaken = 64;
  // durable = false: nothing is synced (the caller syncs the file system before it
  // records the array anywhere, e.g. at its flush).
  // env: where the files go (the Context's of the arrays that will open it).
  static Status create(const std::string& dir, const Schema& schema, bool durable = true, Env& env = Env::posix());
  // records: an array of a container that keeps its schema in its directory (a parallel
  // file's array) still has its fragment files recorded in the
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
  // The context's merge thread (merge_queue.h) running this array's automatic
  // consolidation (auto_merge.h): due retirements, then one due merge.
  void merge_in_background() noexcept override;

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

  // Automatic consolidation (ArrayOptions::auto_merge, auto_merge.h).  A caller that
  // commits this array's publish_prepared(into) records itself (commit_arrays) says so
  // once the batch is committed: only then may those fragments be merged.
  // (flush() and durable writes commit themselves.)
  void note_committed();
  // The policy's state: what it would merge now, what it did, what waits to retire.
  ConsolidationInfo consolidation_info();
  // Waits until no automatic merge of this array is queued or running (tests, tools).
  void settle_merges();

  // Consolidation (TileDB §4.3): merges fragments [first, last] (indexes into fragments(),
  // oldest first) into one, publishes it atomically, then removes the merged files.
  // Automatic merges move those indexes: settle_merges() first to name fragments by them.
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
  // The components (array_fragments.h, publisher.h, share_session.h, write_path.h,
  // consolidation.h) are parts of this class: they run under mu_, held by the public
  // method that calls them, and use the array's other members.
  friend class ArrayFragments;
  friend class Publisher;
  friend class ShareSession;
  friend class WritePath;
  friend class Consolidation;
  friend class AutoMerge;
  // opts_.context, or the process's.  The first member, so the last destroyed: the files
  // the other members hold (the store's catalog, share logs, writers) close through its
  // Env, and an array may hold the last reference to its Context (its container closed
  // first).
  std::shared_ptr<Context> ctx_;

  Array() = default;

  // --- Opening (array.cc); the fragment set and its listing are frags_ (array_fragments.h).
  void open_impl(bool writable, const Schema* known = nullptr);
  // refresh() under the mutex the caller holds.
  void refresh_locked();
  // Runs a read; a read-only array whose fragment file another process removed after the
  // file cache closed its descriptor (FileGone, file_cache.h) lists itself again, as
  // refresh() does, and reads once more (at most kMaxRelistings times).
  template <class F>
  void read_listing_again(F&& read);
  static constexpr int kMaxRelistings = 3;
  bool apply_extent_commits();
  FragmentId next_id();
  void check_selection(const Selection& sel) const;
  void check_points(const uint64_t* coords, size_t n) const;
  void require_var(bool var) const;
  void check_writable() const;
  // check_writable, and ends the share run: every write but a logged one calls it.
  void require_writable();

  // --- MPI share logs and runs (share_session.h, docs/parallel.md "Visibility").
  // Declared before the store, as its fields were: destroyed after it.
  ShareSession share_{*this};
  // Only a writable array shares: a read-only one belongs to a job of readers (the
  // connector opens arrays writable exactly when the file is), so the share logs it could
  // find are another job's uncommitted writes — a crashed one's, until recovery removes them.
  bool share_logging() const { return opts_.share_ranks > 1 && opts_.collective && !compact_ && writable_; }

  // --- Variable-length cells (array.cc); their heap bytes wait in write_.pending_heap_.
  std::vector<uint8_t> make_descriptors(HeapBuilder* heap, size_t n, const uint64_t* lengths, const void* data);
  void resolve_descriptors(const std::vector<uint8_t>& desc, std::vector<uint64_t>* lengths,
                           std::vector<uint8_t>* data);
  HeapBuilder* pending_heap();

  // --- Before a read or a publish (array_publish.cc): the flush in flight and the
  // parked writers finished.
  void finish_parked();
  // finish_parked for a read of `region` only: the flush in flight is waited for only when
  // its writes may lie there (its bounds are not known yet, or they meet the region).
  void finish_parked_for(const Box& region);
  Box points_bounds(const uint64_t* coords, size_t n) const;
  void flush_impl();
  // A read-only view whose catalog was just reloaded: the journals are rolled again by
  // the reloaded catalog's epoch, so an epoch committed since is read whole — through the
  // temporary names of the files its members have not renamed yet (an outside reader of
  // a parallel file; docs/format.md, "Epoch journals").  Then the stored schema, unless
  // a journal's is newer.  Nothing for writers, shadows and views as of a past commit.
  void reread_journals();
  void take_stored_schema();

  // --- Sparse data and value indexes (array_sparse.cc, array_index.cc).
  void erase_impl(const std::vector<Box>& boxes, const uint64_t* points, size_t n);
  void defined_locked(const std::vector<Box>& region, std::vector<Box>* out);
  // Value indexes: builds the indexes of just-published file fragments when asked
  // (index_on_write, or `inputs_indexed`: a consolidation of indexed fragments), and
  // removes the index file of a fragment that goes.
  void index_published(const std::vector<std::shared_ptr<Fragment>>& published, bool inputs_indexed = false);
  void remove_index_of(const FragmentId& id);

  // --- Direct chunk writes (array_chunks.cc): appended to the write path's open fragment
  // (WritePath::direct_), closed (parked) before anything else writes or reads, so
  // fragment order stays write order.
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

  // --- Where the schema and inline fragments live (array_store.h, array_bound.cc).
  // A converted schema (consolidate_layout) becomes the array's, once published.
  void adopt_schema(const Schema& s) {
    schema_ = s;
    write_.buffer_->reset_layout(schema_);
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

  mutable std::mutex mu_;
  Env& env() const { return ctx_->env(); }  // every file-system call of the array
  std::string dir_, frag_dir_;
  bool writable_ = false;
  ArrayOptions opts_;
  Schema schema_;
  // The write buffer, blobs, direct writer and background flush (write_path.h).  Where
  // their fields were, so destroyed in the same order (the direct writer, once declared
  // before compact_, now goes before the schema, store and mutex: its destructor uses
  // only the Context).
  WritePath write_{*this};
  std::unique_ptr<HeapReader> heaps_;
  std::string heap_dir_;
  // The fragments read, oldest first, and the replaced ones kept; their listing
  // (array_fragments.h).
  ArrayFragments frags_{*this};
  // Deferred fragments, parked writers, publish journals and logs (publisher.h).
  Publisher pub_{*this};
  // Which fragments merge, the merge and its publish (consolidation.h); no state of its own.
  Consolidation consolidation_{*this};
  // Automatic consolidation: the committed fragments, the merge in progress, the files
  // kept for reads of the past (auto_merge.h).
  AutoMerge auto_{*this};
  FragmentId extent_id_;       // the extent change the schema file records
  uint64_t last_ts_ = 0;
  uint32_t seq_ = 0;
};

}  // namespace tessera
