// The read algorithm (TileDB §4.1, in box form): for every space tile the selection
// touches, the dense pieces of fragments are visited newest first; each claims the part of
// the still-unowned region it covers, so the ranges copied are disjoint and each is owned
// by the newest dense fragment covering it, and a tile wholly covered by a newer fragment
// never even reads the older ones.  Unowned cells get the fill value.  Sparse cells
// (sparse fragments, then the buffered blobs, then the write buffer) are then applied
// oldest to newest, each only where no newer dense piece owns the cell.  Only touched tiles are read: filtered ones
// whole and decoded (through the tile cache), unfiltered ones only in the check blocks
// the selection touches, straight into the destination (Fragment::read_dense_runs).
// Those partial reads are queued as jobs and run after the dense pass: a cold read of
// them runs in parallel with exact prefetch (run_jobs; docs/engine.md "Reads").
#pragma once
#include <memory>
#include <vector>

#include "engine/write/blob_buffer.h"
#include "engine/geometry/box.h"
#include "engine/context/read_observer.h"
#include "engine/fragment/fragment.h"
#include "engine/fragment/fragment_set.h"
#include "engine/schema/layout.h"
#include "engine/schema/schema.h"
#include "engine/write/write_buffer.h"

namespace tessera {

struct ReadView {
  std::shared_ptr<const FragmentList> fragments;  // oldest first
  const WriteBuffer* buffer = nullptr;               // normalized; newest of all
  Context* ctx = nullptr;                            // its I/O pool reads cold tiles (null: the process's)
  const BlobBuffer* blobs = nullptr;                 // newer than the fragments, older than the buffer
};

class ReadPlanner {
 public:
  ReadPlanner(const Schema& s, const ReadView& view);

  // Writes the selected cells, in the selection's row-major order, to dst.  dst_strides
  // (in elements, one per dimension, over the selection's per-dimension ranks) may be
  // null for a dense row-major buffer of the selection's shape.
  void read(const Selection& sel, uint8_t* dst, const uint64_t* dst_strides = nullptr);
  // Reads n cells given by coordinates, in the given order.
  void read_points(const uint64_t* coords, size_t n, uint8_t* dst);

 private:
  struct Run {
    uint64_t lo, len, rank;
  };
  // Tiles the selection touches, per dimension (the touched tiles are their product).
  std::vector<std::vector<uint64_t>> touched_tiles(const Selection& sel) const;
  void dense_pass(const Selection& sel, uint8_t* dst, const uint64_t* ostride);
  void sparse_pass(const Selection& sel, uint8_t* dst, const uint64_t* ostride);
  // src's cells are in src_layout's cell order (the fragment's, or the schema's for
  // buffered blobs).
  void copy_box(const Selection& sel, const Box& piece, const uint8_t* src, const Box& src_box,
                const Layout& src_layout, uint8_t* dst, const uint64_t* ostride) const;
  bool transpose_box(const std::vector<std::vector<Run>>& runs, const uint8_t* src, const Box& src_box,
                     const uint64_t* sstride, uint8_t* dst, const uint64_t* ostride) const;
  bool copy_runs(const Selection& sel, const Box& piece, const Fragment& f, size_t idx, uint8_t* dst,
                 const uint64_t* ostride);
  bool stage_runs(const Selection& sel, const Box& piece, const Fragment& f, size_t idx, uint8_t* dst,
                  const uint64_t* ostride, const uint64_t* sstride);
  void add_job(const Fragment& f, size_t idx, long staged = -1);
  void split_long_runs(uint64_t block);
  void run_jobs();
  void read_jobs();
  // Puts the tiles a warm re-read copies most of into the tile cache; true when every
  // tile of the queued jobs is now read from there.
  bool admit_warm_tiles();
  bool newer_dense_covers(size_t frag_index, const uint64_t* c) const;
  void fill_run(uint8_t* dst, uint64_t n) const;  // n fill values, contiguous
  // n cells from src to dst, element strides ss and ds.
  void strided_copy(uint8_t* dst, uint64_t ds, const uint8_t* src, uint64_t ss, uint64_t n) const;
  bool point_value(const uint64_t* c, const uint8_t** value,
                   std::vector<std::shared_ptr<const void>>* keep);

  const Schema& schema_;
  Layout layout_;  // the schema's: buffered cells; each fragment has its own (Fragment::layout)
  const ReadView& view_;
  const FragmentList& frags_;  // *view_.fragments
  size_t es_;
  int rank_;
  bool fill_uniform_ = true;  // every byte of the fill value is fill_byte_
  uint8_t fill_byte_ = 0;
  std::vector<size_t> dense_frags_;  // indexes into view_.fragments having dense entries
  std::vector<ByteRun> byte_runs_, split_scratch_;  // scratch of copy_runs, split_long_runs
  // Partial tile reads queued by copy_runs, run together (cold ones in parallel) by run_jobs.
  struct Job {
    const Fragment* f;
    size_t idx;
    std::vector<ByteRun> runs;
    uint64_t cold_span;  // bytes of not yet verified blocks in the span the runs touch
    uint64_t overread;   // last job of a cold piece: bytes of the tile after the piece
    long staged;         // index into staged_, or -1: runs land in the destination
  };
  void run_job(Job& j) const;
  void took(ReadPath p) const;  // tells view_.ctx's ReadObserver, if any
  uint64_t scattered_tile_ends(uint64_t cold) const;  // readahead past whole tiles not read on from
  std::vector<Job> jobs_;
  size_t queued_runs_ = 0;
  // Bytes of tiles this read put into the tile cache (admit_warm_tiles); UINT64_MAX once
  // the read proved too large to cache (a scan: it must not flush the cache).
  uint64_t admitted_ = 0;
  // Partial reads whose cells are not contiguous on both sides (column-major cells, a
  // strided destination): the blocks the piece touches are read by one job into a
  // tile-sized buffer of the thread running it, and the piece is copied out (copy_box)
  // by that job.
  struct Staged {
    const Selection* sel;
    const Layout* layout;  // the fragment's
    Box piece, src_box;
    uint8_t* dst;
    uint64_t ostride[kMaxRank];
    uint64_t tile_bytes;
  };
  std::vector<Staged> staged_;
  // Job size (bytes of check blocks), the cold bytes (and bytes readahead would read past
  // the pieces) below which a read stays serial, and
  // how far ahead of the readers blocks are prefetched (bounds the page cache a read claims).
  static constexpr uint64_t kSplitBytes = 1 << 20, kParallelMinBytes = 1 << 20, kPrefetchWindow = 8 << 20;
  // Bytes of a re-read of verified blocks from which it is split over the cores.
  static constexpr uint64_t kParallelWarmBytes = 2 << 20;
  static constexpr size_t kMaxQueuedRuns = 1 << 16;
  // A warm re-read caches a tile it copies at least (kAdmitShare - 1) / kAdmitShare of.
  static constexpr uint64_t kAdmitShare = 4;
};

}  // namespace tessera
