// array_options.h — how an array is opened (array.h): ArrayOptions, the container's
// inline budget, and the binding of an array kept in a container's catalog.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "engine/catalog/catalog.h"
#include "engine/context/context.h"
#include "engine/index/index_builder.h"

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
  // Automatic consolidation (auto_merge.h; docs/engine.md, "Automatic consolidation"):
  // after each commit of a writable array, a background thread of the context merges
  // runs of `fanin` committed fragments of similar size (within `ratio`: merge_policy.h),
  // so reads consult O(log n) fragments.  The files a merge replaces stay `retain_ns`
  // after it (reads as of earlier commits need them: history.h), then are removed.  Off
  // by default here (engine callers count on their fragments); on by default for the
  // connector's files (EngineOptions::auto_consolidate).  Never for read-only arrays,
  // arrays read as of a past commit, MPI (collective) arrays and their shadows.
  struct AutoMerge {
    bool on = false;
    uint32_t fanin = 4;
    uint32_t ratio = 2;
    uint64_t retain_ns = 3600ull * 1000000000ull;
  } auto_merge;
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

}  // namespace tessera
