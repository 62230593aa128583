// An open, published fragment: its footer (validated on open) and access to its tiles.
// Every tile read verifies the tile's checksum before decoding, so corrupt bytes surface
// as a kCorrupt error naming the file — never as wrong data.  Unfiltered dense tiles of
// format-2 fragments carry one checksum per kCheckBlock bytes: read_dense_runs reads and
// verifies only the blocks a read touches — on every read: the bytes come from the disk
// each time, and a block damaged after an earlier read must fail the next read that uses
// it (only decoded tiles in memory, the tile cache, are trusted once verified).  Which
// blocks were read before is remembered, as a hint for prefetching.  The file is read
// through the process's file cache (file_cache.h), which may close its descriptor between
// reads and opens it again; it remains readable for the Fragment's lifetime even after a
// consolidation in this process unlinks it (the cache keeps its descriptor or defers the
// unlink).
// An inline fragment (a catalog record holding the same bytes as a .tfr file) is read
// through the same code from an in-memory copy (byte_source.h).
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/fragment/byte_source.h"
#include "engine/context/context.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_meta.h"

namespace tessera {

// Raw bytes [off, off + len) of a dense tile, to be copied to dst.
struct ByteRun {
  uint64_t off, len;
  uint8_t* dst;
};

struct SparseTileData {
  std::vector<uint64_t> coords;  // cells * rank
  std::vector<uint8_t> values;   // cells * elem_size
  std::vector<uint64_t> keys;    // cells * layout.key_size(): global-order keys for searches
};

// The index of cell c among the first n cells of t (global order, as every sparse and
// erased tile keeps them), or SIZE_MAX.
size_t find_cell(const Layout& layout, const SparseTileData& t, size_t n, const uint64_t* c);

class Fragment {
 public:
  // ctx: whose decoded-tile cache the fragment's tiles go to (null: the process's).
  static std::shared_ptr<Fragment> open(const std::string& path, std::shared_ptr<Context> ctx = nullptr);
  // An inline fragment: `label` names it in messages (the catalog key).
  static std::shared_ptr<Fragment> open_inline(const std::string& label,
                                               std::shared_ptr<const std::vector<uint8_t>> bytes,
                                               std::shared_ptr<Context> ctx = nullptr);
  const FragmentMeta& meta() const { return meta_; }
  // The order of this fragment's tiles and cells (meta().order), with the tiling of its
  // array's schema `s`.  Every reader of the fragment's tiles, cells and keys takes this,
  // never Layout(schema): an array may hold fragments in several orders (a conversion,
  // docs/layouts.md).  Made on the first call and kept (a fragment belongs to one array,
  // whose tiling never changes).
  const Layout& layout(const Schema& s) const;
  // The fragment's order (as layout(s), without making a Layout).
  const StorageOrder& order() const { return meta_.order; }
  // A copy: a deferred publish renames the file (set_path) while other threads read
  // tiles of it and name it in their messages (a data race ThreadSanitizer found on a
  // std::string read during its reassignment; docs/reliability.md).
  std::string path() const {
    std::lock_guard<std::mutex> g(path_mu_);
    return path_;
  }
  Env& env() const { return ctx_->env(); }  // its Context's
  // The fragment file was renamed (a deferred publish): keeps messages accurate, and a
  // descriptor the file cache closed is opened again under the new name.
  void set_path(std::string p);
  // The file of a file fragment (kInternal for an inline one), through the file cache:
  // its descriptor may be closed between reads (file_cache.h).
  CachedFile& file();
  bool is_inline() const { return inline_ != nullptr; }
  // The bytes of an inline fragment (null for a file fragment).
  std::shared_ptr<const std::vector<uint8_t>> inline_bytes() const {
    return inline_ ? inline_->bytes() : nullptr;
  }
  // Bytes stored: the file's size, or the inline record's.
  uint64_t file_size() const { return file_size_; }

  ~Fragment();  // drops its tile-cache entries
  // Decoded cells of dense entry i (cells of its box in cell order).
  std::shared_ptr<const std::vector<uint8_t>> dense_tile(size_t i) const;
  // The bytes of dense data entry i as stored (still encoded by the fragment's values
  // pipeline), their checksums verified: HDF5's direct chunk reads.
  std::vector<uint8_t> stored_dense_bytes(size_t i) const;
  // True when dense entry i is stored unfiltered with block checksums (partial reads).
  bool partial_reads(size_t i) const {
    return meta_.check_block != 0 && meta_.dense[i].kind == DenseEntry::kData;
  }
  // Copies the runs (ascending, non-overlapping offsets inside the tile) of dense entry i
  // to their destinations, reading only the check blocks they touch (requires
  // partial_reads(i); a tile in the decoded-tile cache is copied from there).
  void read_dense_runs(size_t i, const std::vector<ByteRun>& runs) const;
  // Warm re-reads (docs/engine.md "The tile cache"): reads unfiltered tile i whole into
  // the tile cache, every block verified as the bytes arrive from the file, so later
  // reads copy it from memory.  False when it is not cached: too large for the cache, or
  // the read or a check failed (the caller's own read of the blocks it needs then reports
  // that, and reads of other blocks still work).
  bool cache_tile(size_t i) const;
  // The same for a tile whose blocks this open has not verified yet but whose bytes are
  // all in the page cache (File::resident); false, reading nothing, when some are not.
  // A re-read after a reopen: its first read is then one copy from the page cache and
  // the checksums, and the reads after it copy from memory.
  bool cache_resident_tile(size_t i) const;
  bool tile_cached(size_t i) const;
  // Records a read of most of dense tile i and says whether the tile was read recently
  // enough for the cache to hold it until its next read (TileCache::reread_recently).
  // Reads are stamped by the file (ByteSource::identity and its name), not the open: a
  // tile read, closed, reopened and read again was read recently.
  bool reread_recently(size_t i) const;
  uint64_t cache_budget() const { return cache_->budget(); }
  uint64_t cache_max_entry() const { return cache_->max_entry(); }
  // Bytes of the check blocks from the first to the last run's block when some of them
  // are not verified yet (a first read: from disk, most likely); 0 when a read of them
  // would be a plain pread or a tile-cache copy.
  uint64_t unverified_span(size_t i, const std::vector<ByteRun>& runs) const;
  // Whether that span (`span` bytes, unverified_span's answer) is all in the page cache
  // now (File::resident: a syscall).
  bool span_resident(size_t i, const std::vector<ByteRun>& runs, uint64_t span) const;
  // Asks the kernel to start reading that span now (posix_fadvise WILLNEED): a hint.
  void prefetch_runs(size_t i, const std::vector<ByteRun>& runs) const;
  // Decoded cells of sparse tile i; `layout` (the array's) computes the cells' keys.
  std::shared_ptr<const SparseTileData> sparse_tile(size_t i, const Layout& layout) const;
  // The same without the values (they are not read): which cells tile i holds.
  std::shared_ptr<const SparseTileData> sparse_coords(size_t i, const Layout& layout) const;
  // The cells of erased tile i (coordinates and keys; no values).
  std::shared_ptr<const SparseTileData> erased_tile(size_t i, const Layout& layout) const;

  // Reads every tile from storage (never from the tile cache) and checks everything a
  // read would: every checksum, every filter stream, every sparse tile's cells (inside
  // its MBR, in global order).  `on_values(cells, n)`: each data tile's n decoded cells,
  // for checks that reach beyond the fragment (variable-length cells' heaps); may be
  // empty.  `progress(bytes)`: stored bytes checked so far, after each tile; may be
  // empty.  Throws kCorrupt naming the fragment and the tile.  Memory: one tile.
  void verify(const Layout& layout, const std::function<void(const uint8_t*, uint64_t)>& on_values,
              const std::function<void(uint64_t)>& progress) const;

 private:
  static std::shared_ptr<Fragment> open_source(const std::string& path, std::unique_ptr<ByteSource> src,
                                               std::shared_ptr<Context> ctx);
  std::vector<uint8_t> read_blob(const BlobRef& b, const FilterPipeline& p, const std::string& what) const;
  std::vector<uint8_t> read_checked_tile(size_t i) const;
  // Reads a sparse or erased tile's coordinates (and values when `values`), checks them
  // (inside the MBR, strictly ascending) and caches the result under `key`.
  std::shared_ptr<const SparseTileData> load_cells(const SparseEntry& e, const std::string& what, bool values,
                                                   uint64_t key, const Layout& layout) const;
  // load_cells' reading and checking, uncached.
  std::shared_ptr<SparseTileData> decode_cells(const SparseEntry& e, const std::string& what, bool values,
                                               const Layout& layout) const;
  // Verifies blocks [b0, b1) of dense entry i, whose bytes start at `data`.
  void verify_blocks(size_t i, const uint8_t* data, uint64_t b0, uint64_t b1) const;
  // Block b of dense entry i, whose bytes have checksum `sum`: kCorrupt unless it is the
  // recorded one; else the block is marked verified (the prefetch hint).
  void check_block(size_t i, uint64_t b, uint64_t sum) const;
  // Partial tile reads (read_dense_runs, block_window.h): bytes per preadv window, scratch
  // cap per reading thread, the shortest run read in place, iovecs per preadv (IOV_MAX).
  static constexpr uint64_t kReadWindow = 4 << 20, kReadScratch = 1 << 20, kDirectMinBytes = 512;
  static constexpr uint64_t kWarmReadWindow = 256 << 10;  // re-reads of verified blocks
  static constexpr size_t kMaxPieces = 1024;
  bool verified(size_t i, uint64_t b0, uint64_t b1) const;  // blocks [b0, b1]
  mutable std::mutex path_mu_;
  std::string path_;  // guarded by path_mu_ (set_path runs while tiles are read)
  // Before src_, so destroyed after it: src_'s file closes through ctx_'s Env, and a
  // fragment may hold the last reference to its Context.
  std::shared_ptr<Context> ctx_;
  std::unique_ptr<ByteSource> src_;
  MemorySource* inline_ = nullptr;  // src_ when inline
  uint64_t file_size_ = 0;
  uint64_t serial_ = 0;  // process-unique, keys the tile cache
  uint64_t stamp_id_ = 0;  // keys its read times (reread_recently): the file, or serial_
  TileCache* cache_ = nullptr;  // ctx_'s
  mutable std::atomic<bool> cached_{false};  // put anything into cache_ (the destructor drops it)
  FragmentMeta meta_;
  mutable std::once_flag layout_once_;
  mutable std::unique_ptr<Layout> layout_;  // layout(), once made
  // Bitmap of the check blocks verified so far; block_base_[i] = first bit of entry i.
  std::vector<uint64_t> block_base_;
  std::unique_ptr<std::atomic<uint64_t>[]> verified_;
};

}  // namespace tessera
