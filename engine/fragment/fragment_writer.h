// Writes one fragment file: tiles stream out as they are added (filters run on the thread
// pool, at most a few tiles in flight, so memory stays bounded), then finish() appends
// the footer and trailer; publish_finished() syncs and renames the file into place — the
// atomic publish.  Until then the fragment lives under a hidden temporary name no reader
// looks at.
// With an inline limit the bytes first collect in memory and go to a file only once the
// fragment outgrows the limit: a small fragment never creates a file (the caller stores
// it as an inline catalog record: take_inline()).
#pragma once
#include <deque>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "engine/util/checksum.h"
#include "engine/util/file_cache.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_meta.h"
#include "engine/schema/schema.h"
#include "engine/context/context.h"

namespace tessera {

class FragmentWriter {
 public:
  // inline_limit > 0: keep the fragment in memory while it is at most that many bytes;
  // `before_file` runs once before the first file is created (e.g. to create `dir`).
  // ctx: the filter pool that encodes tiles and the I/O pool for writeback hints.
  FragmentWriter(Context& ctx, const std::string& dir, FragmentId id, const Schema& schema,
                 uint64_t inline_limit = 0, std::function<void()> before_file = {});
  ~FragmentWriter();  // removes the temporary file unless committed

  // Cells of `box` (inside the tile's box) in cell order; tiles in ascending tile order.
  void add_dense_tile(const uint64_t* tile, const Box& box, std::vector<uint8_t> data);
  // The same for an unfiltered fragment, straight from the caller's memory: statistics
  // and block checksums are computed and the bytes written (to the file's page cache, or
  // the in-memory fragment) before it returns, so `data` may be reused at once.  A
  // chunk-sized H5Dwrite thus costs one copy, into the page cache, as in native HDF5 —
  // not a fresh 8 MiB buffer (zero-filled page by page) filled and then written.
  void add_dense_tile_from(const uint64_t* tile, const Box& box, const uint8_t* data);
  // The same for a tile whose bytes lie in pieces of the caller's memory (the rows of a
  // chunk cut out of a wider write): `spans`, concatenated, are the box's cells in cell
  // order.  Written with pwritev straight from the pieces, checksums and statistics
  // computed over them on the way — the file's bytes are those of add_dense_tile_from
  // over the gathered tile, without the gather.
  void add_dense_tile_spans(const uint64_t* tile, const Box& box, const ByteSpan* spans, size_t n);
  // Bytes the fragment's values pipeline already encoded (HDF5's direct chunk writes,
  // Array::write_tile_encoded): stored as given, checksummed, not decoded — so their
  // statistics hold the cell count only.  An unfiltered fragment takes at least the box's
  // bytes (kInvalidArgument otherwise), more only with whole-tile checksums: HDF5 stores
  // whatever a direct chunk write gives it and reads the chunk's first bytes as cells.
  void add_dense_tile_encoded(const uint64_t* tile, const Box& box, const uint8_t* bytes, size_t n);
  // A box that reads as the fill value (used for extent shrinks).  Several disjoint fill
  // boxes may share a tile (added consecutively).
  void add_fill_tile(const uint64_t* tile, const Box& box);
  // Marks the fragment as committing an extent change (fragment_meta.h).
  void set_extent(const Coords& extent) {
    meta_.sets_extent = true;
    meta_.extent = extent;
  }
  // Cells strictly ascending in global order, across calls.  Cut into data tiles of the
  // schema's sparse capacity.
  void add_sparse_cells(const uint64_t* coords, const uint8_t* values, size_t n);
  // Cells the fragment makes undefined (erased tiles: coordinates only), strictly
  // ascending in global order across calls, none of them in a dense box or among the
  // sparse cells of this fragment.
  void add_erased_cells(const uint64_t* coords, size_t n);
  // A hint for a spill: about how many sparse cells will follow (tile buffers are then
  // sized once instead of growing through fresh pages).
  void expect_sparse_cells(uint64_t n) { expect_sparse_ = n; }
  // Replaces the pipeline of the value tiles (before the first tile is added): a spill
  // of scattered points stores its values with a fast codec (Array::delta_pipeline).
  void set_values_pipeline(const FilterPipeline& p);
  // Unfiltered tiles checksummed whole, not per block (before the first tile): the only
  // form that may hold an unfiltered tile longer than its box (add_dense_tile_encoded).
  void set_whole_checksums();
  void set_replaces(std::vector<FragmentId> ids) { meta_.replaces = std::move(ids); }
  bool empty() const {
    return dense_.empty() && sparse_.empty() && pending_sparse_ == 0 && erased_.empty() && er_coords_.empty();
  }
  // Writes footer and trailer but neither syncs nor publishes: the complete fragment
  // stays under its temporary name, which the caller now owns (see publish_finished).
  // Returns the temporary path, or "" when the fragment stayed in memory (take_inline()).
  // Throws (and keeps throwing) once a write to the file failed.
  std::string finish();
  // A write to the file failed (ENOSPC, EIO...): the fragment is lost; only abort() is left.
  bool failed() const { return failed_; }
  // After finish() returned "": the fragment's bytes (the same bytes a .tfr file holds).
  std::vector<uint8_t> take_inline() { return std::move(mem_); }
  const std::string& final_path() {
    name_files();
    return final_path_;
  }
  // Makes a finished fragment durable under its final name: fdatasync(fd), rename.  The
  // caller fsyncs the directory once for a batch of these, and renames the Fragment
  // (Fragment::set_path), whose descriptor the file cache may close and reopen.
  static void publish_finished(CachedFile& f, const std::string& tmp_path, const std::string& final_path,
                               bool already_synced = false);
  void abort();

  static std::string file_name(const FragmentId& id) { return id.name() + ".tfr"; }

 private:
  struct Encoded {
    std::vector<uint8_t> bytes;
    uint64_t checksum = 0;
    std::vector<uint64_t> blocks;  // per-block checksums (block-checked tiles)
  };
  struct Pending {
    std::future<Encoded> encoded;
    BlobRef* ref;  // points into meta_ entries (stable: entries are deques below)
    std::vector<uint64_t>* blocks;  // the entry's block_checks, or null
  };
  std::string finish_impl();
  void append_impl(const void* p, size_t n);
  void write_footer();
  void flush_sparse_tile();
  void flush_erased_tile();
  // Filters `raw` on the pool (and computes `stats` there too, when given).
  // `blocks` (dense tiles of a block-checked fragment): receives per-block checksums.
  void submit(std::vector<uint8_t> raw, const FilterPipeline* pipeline, BlobRef* ref,
              TileStats* stats = nullptr, std::vector<uint64_t>* blocks = nullptr);
  void drain(size_t keep);
  void append(const void* p, size_t n);
  void append_pieces(struct iovec* iov, int cnt, uint64_t total);  // iov[0] left free
  uint64_t offset() const { return in_memory_ ? mem_.size() : out_.offset() + head_.size(); }
  void flush_head();
  // Checks tile order, records a data entry for `box` (domain, cell count); blob to fill.
  DenseEntry& new_data_entry(const uint64_t* tile, const Box& box);
  // sync_file_range(WRITE) of [off, off + n) (n = 0: to the end) on the I/O pool.
  void start_writeback_async(int fd, uint64_t off = 0, uint64_t n = 0);
  void maybe_start_writeback();
  static constexpr uint64_t kWritebackStep = 16 << 20;
  uint64_t wb_started_ = 0;  // bytes before this were handed to writeback
  static constexpr size_t kHeadBytes = 64 << 10;
  static constexpr size_t kStageMax = 16 << 10;  // appends up to this size are gathered in head_
  // add_dense_tile_spans's write size: checksummed, scanned and written while in L2.
  static constexpr uint64_t kWriteGroup = 512 << 10;
  std::vector<uint8_t> head_;  // file mode: bytes not written yet (the first ones, small appends)
  void name_files();
  void open_file();  // moves the bytes collected in memory to the temporary file

  std::string dir_, tmp_path_, final_path_;
  const Schema schema_;
  Layout layout_;
  Context& ctx_;
  ThreadPool& pool_;
  AppendFile out_;
  bool in_memory_ = false;
  uint64_t inline_limit_ = 0;
  std::function<void()> before_file_;
  std::vector<uint8_t> mem_;
  FragmentMeta meta_;
  std::deque<DenseEntry> dense_;
  std::deque<SparseEntry> sparse_;
  std::deque<SparseEntry> erased_;
  std::deque<Pending> pending_;
  // Sparse cells of the data tile being filled: coordinates as the bytes the coords blob
  // is filtered from (moved to the pool, not copied), their MBR kept as cells arrive.
  std::vector<uint8_t> sp_coords_;
  std::vector<uint8_t> sp_values_;
  Box sp_mbr_;
  size_t pending_sparse_ = 0;
  std::vector<uint8_t> er_coords_;  // the erased tile being filled
  Box er_mbr_;
  uint64_t expect_sparse_ = 0;
  bool committed_ = false;
  bool failed_ = false;
};

}  // namespace tessera
