#include "engine/read/read_planner.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>

#include "engine/util/error.h"
#include "engine/util/thread_pool.h"
#include "engine/geometry/transpose.h"

namespace tessera {

ReadPlanner::ReadPlanner(const Schema& s, const ReadView& view)
    : schema_(s), layout_(s), view_(view), frags_(*view.fragments), es_(s.elem_size), rank_(s.rank()) {
  for (size_t i = 0; i < frags_.size(); ++i)
    if (!frags_[i]->meta().dense.empty()) dense_frags_.push_back(i);
  const uint8_t* fill = s.fill_value();
  fill_byte_ = fill[0];
  fill_uniform_ = std::all_of(fill, fill + es_, [&](uint8_t b) { return b == fill[0]; });
}

// n fill values from dst on: a memset when the fill value's bytes are all alike (zero,
// usually), else the value copied once and the filled prefix doubled — the undefined part
// of a sparse read costs what a memset costs.
void ReadPlanner::fill_run(uint8_t* dst, uint64_t n) const {
  const uint64_t bytes = n * es_;
  if (fill_uniform_) {
    std::memset(dst, fill_byte_, bytes);
    return;
  }
  std::memcpy(dst, schema_.fill_value(), es_);
  for (uint64_t done = es_; done < bytes;) {
    const uint64_t k = std::min(done, bytes - done);
    std::memcpy(dst + done, dst, k);
    done += k;
  }
}

void ReadPlanner::read(const Selection& sel, uint8_t* dst, const uint64_t* dst_strides) {
  if (sel.rank() != rank_) throw_error(Errc::kInvalidArgument, "selection rank differs from the array's");
  if (sel.empty()) return;
  uint64_t ostride[kMaxRank];
  if (dst_strides) std::copy(dst_strides, dst_strides + rank_, ostride);
  else sel.dense_strides(ostride);
  dense_pass(sel, dst, ostride);
  sparse_pass(sel, dst, ostride);
}

namespace {
// n elements of E from src to dst, each side with its own element stride (a column-major
// tile into a row-major buffer: a transposition, element by element).
template <class E>
void strided_elems(uint8_t* dst, uint64_t ds, const uint8_t* src, uint64_t ss, uint64_t n) {
  for (uint64_t k = 0; k < n; ++k) {
    E v;
    std::memcpy(&v, src + k * ss * sizeof(E), sizeof(E));
    std::memcpy(dst + k * ds * sizeof(E), &v, sizeof(E));
  }
}
}  // namespace

// Element sizes 1, 2, 4 and 8 copy as typed loads and stores, not a memcpy call each.
void ReadPlanner::strided_copy(uint8_t* dst, uint64_t ds, const uint8_t* src, uint64_t ss, uint64_t n) const {
  switch (es_) {
    case 1: return strided_elems<uint8_t>(dst, ds, src, ss, n);
    case 2: return strided_elems<uint16_t>(dst, ds, src, ss, n);
    case 4: return strided_elems<uint32_t>(dst, ds, src, ss, n);
    case 8: return strided_elems<uint64_t>(dst, ds, src, ss, n);
    default:
      for (uint64_t k = 0; k < n; ++k) std::memcpy(dst + k * ds * es_, src + k * ss * es_, es_);
  }
}

// Copies the cells of `sel` inside `piece` from `src` (cells of src_box in cell order; null
// means the fill value) to their places in dst.
void ReadPlanner::copy_box(const Selection& sel, const Box& piece, const uint8_t* src,
                           const Box& src_box, const Layout& src_layout, uint8_t* dst, const uint64_t* ostride) const {
  std::vector<std::vector<Run>> runs(rank_);
  for (int d = 0; d < rank_; ++d) {
    const DimSelection& ds = sel.dim(d);
    for (size_t i = ds.lower(piece.lo[d]); i < ds.ivs.size() && ds.ivs[i].lo <= piece.hi[d]; ++i) {
      uint64_t lo = std::max(ds.ivs[i].lo, piece.lo[d]);
      uint64_t hi = std::min(ds.ivs[i].hi, piece.hi[d]);
      runs[d].push_back({lo, hi - lo + 1, ds.rank0[i] + (lo - ds.ivs[i].lo)});
    }
    if (runs[d].empty()) return;
  }
  uint64_t sstride[kMaxRank];
  src_layout.cell_strides(src_box, sstride);
  const uint8_t* fill = schema_.fill_value();
  const int last = rank_ - 1;
  const bool contiguous = src && sstride[last] == 1 && ostride[last] == 1;
  if (src && !contiguous && transpose_box(runs, src, src_box, sstride, dst, ostride)) return;
  // Walk all dimensions but the last with an odometer over their runs and indices.
  std::vector<size_t> run_i(rank_, 0);
  std::vector<uint64_t> off(rank_, 0);  // offset within the current run
  for (;;) {
    uint64_t soff = 0, doff = 0;
    for (int d = 0; d < last; ++d) {
      const Run& r = runs[d][run_i[d]];
      soff += (r.lo + off[d] - src_box.lo[d]) * sstride[d];
      doff += (r.rank + off[d]) * ostride[d];
    }
    for (const Run& r : runs[last]) {
      uint64_t s0 = soff + (r.lo - src_box.lo[last]) * sstride[last];
      uint64_t d0 = doff + r.rank * ostride[last];
      if (contiguous) {
        std::memcpy(dst + d0 * es_, src + s0 * es_, r.len * es_);
      } else if (src) {
        strided_copy(dst + d0 * es_, ostride[last], src + s0 * es_, sstride[last], r.len);
      } else if (ostride[last] == 1) {
        fill_run(dst + d0 * es_, r.len);
      } else {
        for (uint64_t k = 0; k < r.len; ++k) std::memcpy(dst + (d0 + k * ostride[last]) * es_, fill, es_);
      }
    }
    int d = last - 1;
    for (; d >= 0; --d) {
      if (++off[d] < runs[d][run_i[d]].len) break;
      off[d] = 0;
      if (++run_i[d] < runs[d].size()) break;
      run_i[d] = 0;
    }
    if (d < 0) return;
  }
}

// Cells contiguous along dimension a in src and along another one, b, in dst (a
// column-major tile into a row-major buffer): for every index of the other dimensions, a
// blocked 2-D transposition of each pair of runs along a and b (transpose.h).  False when
// no such pair of dimensions exists.
bool ReadPlanner::transpose_box(const std::vector<std::vector<Run>>& runs, const uint8_t* src, const Box& src_box,
                                const uint64_t* sstride, uint8_t* dst, const uint64_t* ostride) const {
  int a = -1, b = -1;
  for (int d = 0; d < rank_ && a < 0; ++d)
    if (sstride[d] == 1) a = d;
  for (int d = rank_ - 1; d >= 0 && b < 0; --d)  // a dimension of extent 1 also has stride 1
    if (ostride[d] == 1 && d != a) b = d;
  if (a < 0 || b < 0) return false;
  size_t run_i[kMaxRank] = {};
  uint64_t off[kMaxRank] = {};
  for (;;) {
    uint64_t soff = 0, doff = 0;
    for (int d = 0; d < rank_; ++d) {
      if (d == a || d == b) continue;
      const Run& r = runs[d][run_i[d]];
      soff += (r.lo + off[d] - src_box.lo[d]) * sstride[d];
      doff += (r.rank + off[d]) * ostride[d];
    }
    for (const Run& ra : runs[a])
      for (const Run& rb : runs[b]) {
        const uint64_t s0 = soff + (ra.lo - src_box.lo[a]) + (rb.lo - src_box.lo[b]) * sstride[b];
        const uint64_t d0 = doff + ra.rank * ostride[a] + rb.rank;
        transpose_copy(dst + d0 * es_, ostride[a], src + s0 * es_, sstride[b], ra.len, rb.len, es_);
      }
    int d = rank_ - 1;
    for (; d >= 0; --d) {
      if (d == a || d == b) continue;
      if (++off[d] < runs[d][run_i[d]].len) break;
      off[d] = 0;
      if (++run_i[d] < runs[d].size()) break;
      run_i[d] = 0;
    }
    if (d < 0) return true;
  }
}

// The runs of `piece` in unfiltered tile `idx` of f, read straight from the file (only the
// check blocks they touch).  When the cells of a row are not contiguous on both sides
// (column-major cells, a strided destination), stage_runs.  False when the tile cannot be
// read in parts.
bool ReadPlanner::copy_runs(const Selection& sel, const Box& piece, const Fragment& f, size_t idx,
                            uint8_t* dst, const uint64_t* ostride) {
  if (!f.partial_reads(idx)) return false;
  const Box& src_box = f.meta().dense[idx].box;
  uint64_t sstride[kMaxRank];
  f.layout(schema_).cell_strides(src_box, sstride);
  const int last = rank_ - 1;
  if (sstride[last] != 1 || ostride[last] != 1) return stage_runs(sel, piece, f, idx, dst, ostride, sstride);
  std::vector<std::vector<Run>> runs(rank_);
  for (int d = 0; d < rank_; ++d) {
    const DimSelection& ds = sel.dim(d);
    for (size_t i = ds.lower(piece.lo[d]); i < ds.ivs.size() && ds.ivs[i].lo <= piece.hi[d]; ++i) {
      uint64_t lo = std::max(ds.ivs[i].lo, piece.lo[d]);
      uint64_t hi = std::min(ds.ivs[i].hi, piece.hi[d]);
      runs[d].push_back({lo, hi - lo + 1, ds.rank0[i] + (lo - ds.ivs[i].lo)});
    }
    if (runs[d].empty()) return true;
  }
  // Row-major cells: the odometer below visits runs in ascending tile offset.  Runs
  // adjacent on both sides merge (a whole-tile read becomes one run).
  byte_runs_.clear();
  std::vector<size_t> run_i(rank_, 0);
  std::vector<uint64_t> off(rank_, 0);
  for (;;) {
    uint64_t soff = 0, doff = 0;
    for (int d = 0; d < last; ++d) {
      const Run& r = runs[d][run_i[d]];
      soff += (r.lo + off[d] - src_box.lo[d]) * sstride[d];
      doff += (r.rank + off[d]) * ostride[d];
    }
    for (const Run& r : runs[last]) {
      const uint64_t s0 = (soff + (r.lo - src_box.lo[last])) * es_, len = r.len * es_;
      uint8_t* d0 = dst + (doff + r.rank) * es_;
      if (!byte_runs_.empty()) {
        ByteRun& p = byte_runs_.back();
        if (p.off + p.len == s0 && p.dst + p.len == d0) {
          p.len += len;
          continue;
        }
      }
      byte_runs_.push_back({s0, len, d0});
    }
    int d = last - 1;
    for (; d >= 0; --d) {
      if (++off[d] < runs[d][run_i[d]].len) break;
      off[d] = 0;
      if (++run_i[d] < runs[d].size()) break;
      run_i[d] = 0;
    }
    if (d < 0) break;
  }
  add_job(f, idx);
  return true;
}

// The check blocks of tile idx that hold cells of `piece` are read into a buffer of the
// tile's size (at their offsets) by one job, queued as copy_runs' are, which then copies
// the piece's cells out of it (run_job).  A beam along dimension 0 of column-major tiles
// reads one 64 KiB block per tile this way, not the whole tile (docs/layouts.md).
bool ReadPlanner::stage_runs(const Selection& sel, const Box& piece, const Fragment& f, size_t idx, uint8_t* dst,
                             const uint64_t* ostride, const uint64_t* sstride) {
  const Box& src_box = f.meta().dense[idx].box;
  const uint64_t B = f.meta().check_block;
  const uint64_t tile_bytes = src_box.cells() * es_;
  if (B == 0 || tile_bytes == 0) return false;
  // The dimension whose cells are contiguous in the tile: runs along it are byte ranges.
  int fast = rank_ - 1;
  for (int d = 0; d < rank_; ++d)
    if (sstride[d] == 1) fast = d;
  std::vector<std::vector<Run>> runs(rank_);
  for (int d = 0; d < rank_; ++d) {
    const DimSelection& ds = sel.dim(d);
    for (size_t i = ds.lower(piece.lo[d]); i < ds.ivs.size() && ds.ivs[i].lo <= piece.hi[d]; ++i) {
      uint64_t lo = std::max(ds.ivs[i].lo, piece.lo[d]);
      uint64_t hi = std::min(ds.ivs[i].hi, piece.hi[d]);
      runs[d].push_back({lo, hi - lo + 1, 0});
    }
    if (runs[d].empty()) return true;
  }
  std::vector<char> touched((tile_bytes + B - 1) / B, 0);
  std::vector<size_t> run_i(rank_, 0);
  std::vector<uint64_t> off(rank_, 0);
  for (;;) {  // odometer over every dimension but `fast`
    uint64_t soff = 0;
    for (int d = 0; d < rank_; ++d)
      if (d != fast) soff += (runs[d][run_i[d]].lo + off[d] - src_box.lo[d]) * sstride[d];
    for (const Run& r : runs[fast]) {
      const uint64_t b0 = (soff + (r.lo - src_box.lo[fast]) * sstride[fast]) * es_;
      const uint64_t b1 = b0 + ((r.len - 1) * sstride[fast] + 1) * es_;  // one past the run's last byte
      for (uint64_t b = b0 / B; b <= (b1 - 1) / B; ++b) touched[b] = 1;
    }
    int d = rank_ - 1;
    for (; d >= 0; --d) {
      if (d == fast) continue;
      if (++off[d] < runs[d][run_i[d]].len) break;
      off[d] = 0;
      if (++run_i[d] < runs[d].size()) break;
      run_i[d] = 0;
    }
    if (d < 0) break;
  }
  Staged st{&sel, &f.layout(schema_), piece, src_box, dst, {}, tile_bytes};
  std::copy(ostride, ostride + rank_, st.ostride);
  byte_runs_.clear();
  for (size_t b = 0; b < touched.size();) {
    if (!touched[b]) {
      ++b;
      continue;
    }
    size_t e = b;
    while (e < touched.size() && touched[e]) ++e;
    const uint64_t o = b * B, end = std::min<uint64_t>(e * B, tile_bytes);
    byte_runs_.push_back({o, end - o, nullptr});  // run_job points it into its buffer
    b = e;
  }
  staged_.push_back(std::move(st));  // before add_job, which may run the queue
  add_job(f, idx, static_cast<long>(staged_.size() - 1));
  return true;
}

std::atomic<uint64_t> ReadPlanner::parallel_reads_{0};
std::atomic<uint64_t> ReadPlanner::warm_parallel_reads_{0};
std::atomic<uint64_t> ReadPlanner::resident_parallel_reads_{0};
std::atomic<uint64_t> ReadPlanner::cached_parallel_reads_{0};
std::atomic<uint64_t> ReadPlanner::hinted_serial_reads_{0};

// Cuts every run longer than a job at kSplitBytes-aligned block boundaries, so that a
// whole tile (one run) can be shared between threads like many rows can.
void ReadPlanner::split_long_runs(uint64_t block) {
  const uint64_t step = std::max(kSplitBytes / block, uint64_t{1}) * block;
  bool any = false;
  for (const ByteRun& r : byte_runs_) any |= r.len > step;
  if (!any) return;
  split_scratch_.clear();
  for (const ByteRun& r : byte_runs_) {
    uint64_t off = r.off, len = r.len;
    uint8_t* dst = r.dst;
    while (len > step) {
      const uint64_t cut = (off / step + 1) * step - off;  // to the next aligned boundary
      split_scratch_.push_back({off, cut, dst});
      off += cut, len -= cut, dst += cut;
    }
    split_scratch_.push_back({off, len, dst});
  }
  byte_runs_.swap(split_scratch_);
}

// Queues byte_runs_ of tile idx as jobs spanning about kSplitBytes of check blocks each;
// a job starts in a new block, so no block is read (and verified) by two jobs.
void ReadPlanner::add_job(const Fragment& f, size_t idx, long staged) {
  if (byte_runs_.empty()) return;
  const uint64_t B = f.meta().check_block;
  if (staged < 0) split_long_runs(B);
  size_t begin = 0;
  auto push = [&](size_t end) {
    Job j{&f, idx, std::vector<ByteRun>(byte_runs_.begin() + begin, byte_runs_.begin() + end), 0, 0, staged};
    j.cold_span = f.unverified_span(idx, j.runs);
    queued_runs_ += j.runs.size();
    jobs_.push_back(std::move(j));
    begin = end;
  };
  for (size_t k = 1; k < byte_runs_.size() && staged < 0; ++k) {  // a staged tile is one job
    const uint64_t first = byte_runs_[begin].off / B, prev_last = (byte_runs_[k - 1].off + byte_runs_[k - 1].len - 1) / B;
    if ((prev_last - first + 1) * B >= kSplitBytes && byte_runs_[k].off / B != prev_last) push(k);
  }
  if (begin < byte_runs_.size()) push(byte_runs_.size());
  // Bytes of the tile past this piece's last block: what the kernel's readahead would
  // read for nothing if the piece were read cold by plain sequential preads.
  const uint64_t end = (byte_runs_.back().off + byte_runs_.back().len - 1) / B + 1;
  const uint64_t tile_size = f.meta().dense[idx].blob.stored_size;
  if (jobs_.back().cold_span && end * B < tile_size) jobs_.back().overread = tile_size - end * B;
  // The queue holds up to a run per selected row and tile: bound it (a long column read).
  if (queued_runs_ >= kMaxQueuedRuns) run_jobs();
}

// Runs the queued partial tile reads.  Small re-reads of blocks verified before (a warm
// re-read; large ones are split over the cores, see read_jobs), small cold reads, and cold reads of pieces that run to the end of their tiles (whole
// tiles followed in the file by the next tile read, a column: the kernel's readahead
// fetches exactly those, and measured faster serially) run here, in order, as plain
// preads.  A larger cold read of pieces ending inside their tiles, or of whole tiles
// scattered through the file (scattered_tile_ends), is where readahead goes wrong (it reads up to 8 MiB past each piece,
// one piece at a time): its jobs run on the caller plus the I/O pool, and the kernel is
// asked (posix_fadvise WILLNEED) for exactly the blocks of the jobs, in a sliding window
// ahead of the readers, so the disk gets several requests at once and no bytes past the
// pieces.  The jobs write disjoint cells of dst: their order is free.
void ReadPlanner::run_jobs() {
  struct Clear {  // the staged pieces go afterwards, also when a read throws
    ReadPlanner* p;
    ~Clear() { p->staged_.clear(); }
  } clear{this};
  read_jobs();
}

namespace {
// Staged tiles of up to this size are read into a buffer kept by the reading thread for
// its next one: a fresh 1 MiB buffer per tile cost 256 page faults (zeroed pages) each,
// as much as the copy out of it.  Larger tiles get a buffer of their own.
constexpr uint64_t kKeptStageBytes = 4 << 20;

uint8_t* stage_buffer(uint64_t bytes, std::unique_ptr<uint8_t[]>* own) {
  thread_local std::unique_ptr<uint8_t[]> kept;
  thread_local uint64_t kept_bytes = 0;
  if (bytes > kKeptStageBytes) {
    own->reset(new uint8_t[bytes]);
    return own->get();
  }
  if (kept_bytes < bytes) {
    kept.reset(new uint8_t[kKeptStageBytes]);
    kept_bytes = kKeptStageBytes;
  }
  return kept.get();
}
}  // namespace

// One queued job, on whichever thread runs it.  A staged tile's blocks go into the
// thread's staging buffer and its piece is copied out at once, while the bytes are in
// the cache and while other threads wait for the disk (a transposition of column-major
// cells costs about as much as reading them from the page cache).
void ReadPlanner::run_job(Job& j) const {
  if (j.staged < 0) {
    j.f->read_dense_runs(j.idx, j.runs);
    return;
  }
  const Staged& s = staged_[j.staged];
  std::unique_ptr<uint8_t[]> own;
  uint8_t* buf = stage_buffer(s.tile_bytes, &own);
  for (ByteRun& r : j.runs) r.dst = buf + r.off;
  j.f->read_dense_runs(j.idx, j.runs);
  copy_box(*s.sel, s.piece, buf, s.src_box, *s.layout, s.dst, s.ostride);
}

// A re-read of tiles whose blocks an earlier read verified (cold_span 0) reads them from
// the page cache, which costs the kernel's copy, its page lookups and the checksums on
// every read.  Such a tile, when this read copies most of it (kAdmitShare) and read most
// of it not long before (within the cache's size of such reads: TileCache::
// reread_recently), is read once more whole into the tile cache (verified as it comes from
// the file), and this and later reads copy it from there.  Not cached: a tile read only
// once (a single pass does not flush the cache); a tile whose reads are further apart than
// the cache holds (a loop over more tiles than fit: each would be allocated, filled and
// evicted unread, a copy more per read); a small part of a tile (a column, a box: reading
// the whole tile would cost more than the part); the tiles of a read that would together
// take more than a quarter of the cache (a repeated scan).
bool ReadPlanner::admit_warm_tiles() {
  struct Tile {
    const Fragment* f;
    size_t idx;
    uint64_t copied;  // bytes this read copies out of it
    bool most = false, cached = false;  // this read copies most of it; in the tile cache
    bool cold = false;                  // blocks of it not verified in this open
  };
  std::vector<Tile> tiles;
  bool cold = false;  // blocks to read from the file: stamp the tiles, cache only resident ones
  for (const Job& j : jobs_) {
    cold |= j.cold_span != 0;
    uint64_t copied = 0;
    for (const ByteRun& r : j.runs) copied += r.len;
    auto t = std::find_if(tiles.rbegin(), tiles.rend(), [&](const Tile& x) { return x.f == j.f && x.idx == j.idx; });
    if (t != tiles.rend())
      t->copied += copied, t->cold |= j.cold_span != 0;
    else
      tiles.push_back({j.f, j.idx, copied, false, false, j.cold_span != 0});
  }
  // A read that would add more than a quarter of the cache caches nothing: not worth
  // its stamps.
  uint64_t most = 0;  // bytes of the uncached tiles it reads most of
  for (Tile& t : tiles) {
    const uint64_t size = t.f->meta().dense[t.idx].blob.stored_size;
    t.most = t.copied >= size / kAdmitShare * (kAdmitShare - 1);
    t.cached = t.most && t.f->tile_cached(t.idx);
    if (t.most && !t.cached) most += size;
  }
  if (tiles.empty() || most > tiles.front().f->cache_budget() / 4) {
    if (most) admitted_ = UINT64_MAX;
    return false;
  }
  bool all = true;  // every tile of the read is in the cache
  uint64_t bytes = 0, resident = 0;  // resident: bytes cached by cache_resident_tile
  size_t n = 0;
  for (const Tile& t : tiles) {
    const uint64_t size = t.f->meta().dense[t.idx].blob.stored_size;
    if (!t.most) {
      all = false;
      continue;
    }
    if (!cold && t.cached) continue;
    const bool recent = t.f->reread_recently(t.idx);
    // Read recently but not verified in this open: a re-read after a reopen.  Cached
    // now if its bytes are all in the page cache (a tile from the disk is left to the
    // cold path, whose requests overlap).  Its jobs then copy from memory.
    if (t.cold && recent && admitted_ != UINT64_MAX && size <= t.f->cache_max_entry() &&
        admitted_ + resident + size <= t.f->cache_budget() / 4 && t.f->cache_resident_tile(t.idx)) {
      resident += size;
      for (Job& j : jobs_)
        if (j.f == t.f && j.idx == t.idx) j.cold_span = 0, j.overread = 0;
      continue;
    }
    if (cold || admitted_ == UINT64_MAX || !recent) {
      all = false;
      continue;
    }
    if (size > t.f->cache_max_entry() || admitted_ + bytes + size > t.f->cache_budget() / 4) {
      admitted_ = UINT64_MAX;
      return false;
    }
    bytes += size;
    tiles[n++] = t;
  }
  admitted_ += resident;
  if (cold) {  // unless every cold tile was cached from the page cache just now
    cold = false;
    for (const Job& j : jobs_) cold |= j.cold_span != 0;
    return !cold && all;  // (no warm tile was admitted while the read looked cold)
  }
  admitted_ += bytes;
  for (size_t k = 0; k < n; ++k) all &= tiles[k].f->cache_tile(tiles[k].idx);
  return all;
}

void ReadPlanner::read_jobs() {
  const bool from_memory = admit_warm_tiles();
  uint64_t cold = 0, overread = 0, bytes = 0;  // bytes: the span of every job's runs
  for (const Job& j : jobs_) {
    cold += j.cold_span;
    overread += j.overread;
    bytes += j.runs.back().off + j.runs.back().len - j.runs.front().off;
  }
  overread += scattered_tile_ends(cold);
  struct Clear {  // the queue is empty afterwards, also when a read throws
    ReadPlanner* p;
    ~Clear() { p->jobs_.clear(); p->queued_runs_ = 0; }
  } clear{this};
  // A large re-read of verified blocks (most likely in the page cache) costs the kernel's
  // copy plus the checksums, both CPU: it is split over the cores (the filter pool, whose
  // workers are one per usable core) instead of the disk-waiting I/O pool.
  const bool warm = cold == 0 && jobs_.size() >= 2 && bytes >= kParallelWarmBytes && !from_memory;
  // The same holds for a large first read (in this open) of blocks that are all in the
  // page cache: a file written or read a moment ago, reopened (the h5py demo's read-back).
  // Left serial, a read of contiguous tiles cost one core the kernel's copy, the faults
  // of a fresh destination and the checksums (0.13 s for 256 MiB; split, 0.08-0.12 s).  One
  // cachestat per job asks; a read from the disk stops asking at its first job.
  const bool resident = !warm && cold && jobs_.size() >= 2 && bytes >= kParallelWarmBytes && !from_memory &&
                        std::all_of(jobs_.begin(), jobs_.end(), [](const Job& j) {
                          return !j.cold_span || j.f->span_resident(j.idx, j.runs, j.cold_span);
                        });
  // Tiles all in the tile cache are one memcpy per job.  Split over two cores, an 8 MiB
  // tile copies in 0.54-0.64 ms instead of 0.84-1.36 ms on this project's 2-core
  // machines (the warm 'Tile' read, docs/benchmarks.md "fourteenth pass"); a host where
  // one core fills the memory bus gains nothing and pays a wake-up (tens of µs).
  const bool memory = from_memory && jobs_.size() >= 2 && bytes >= kParallelWarmBytes;
  const bool cpu = warm || resident || memory;  // the filter pool, no prefetch
  if (!cpu && (jobs_.size() < 2 || cold < kParallelMinBytes || overread < kParallelMinBytes)) {
    // A short cold read of several jobs (kParallelMinBytes to kPrefetchWindow of blocks
    // not verified yet: a tile, a box in one or two tiles) hands its jobs' blocks to the
    // kernel first, job by job (about kSplitBytes each): the disk then has several ~1 MiB
    // requests at once.  Left to the 2-4 MiB preadvs, the kernel reads the same bytes as
    // one synchronous request after another: an 8 MiB tile, cold, took 1.4-1.7x as long
    // that way (docs/benchmarks.md, "Cold partial reads: the blocks hinted job by job").
    // Longer serial reads (contiguous tiles in file order, the 1 GiB full read) are left
    // to the kernel's readahead, which serves them at the disk's speed (hints ahead of
    // the 1 GiB full read doubled its CPU, benchmarks.md, helper dense3).  Smaller reads are one request anyway, where a hint would
    // only be one syscall more (the metadata workload's 10,000 small datasets).
    if (jobs_.size() >= 2 && cold >= kParallelMinBytes && cold <= kPrefetchWindow) {
      for (const Job& h : jobs_)
        if (h.cold_span) h.f->prefetch_runs(h.idx, h.runs);
      ++hinted_serial_reads_;
    }
    // Consecutive jobs of one tile, in ascending order, go as one call: its preadv
    // windows then span up to Fragment::kReadWindow instead of one job's ~1 MiB.
    std::vector<ByteRun> merged;
    for (size_t a = 0, b; a < jobs_.size(); a = b) {
      Job& j = jobs_[a];
      for (b = a + 1; b < jobs_.size() && j.staged < 0; ++b) {
        const Job& n = jobs_[b];
        const ByteRun& prev = jobs_[b - 1].runs.back();
        if (n.f != j.f || n.idx != j.idx || n.staged >= 0 || n.runs.front().off < prev.off + prev.len) break;
      }
      if (b == a + 1) {
        run_job(j);
        continue;
      }
      merged.clear();
      for (size_t k = a; k < b; ++k) merged.insert(merged.end(), jobs_[k].runs.begin(), jobs_[k].runs.end());
      j.f->read_dense_runs(j.idx, merged);
    }
    return;
  }
  std::vector<uint64_t> start(jobs_.size());  // cold bytes of the jobs before each
  for (size_t k = 0, acc = 0; k < jobs_.size(); acc += jobs_[k].cold_span, ++k) start[k] = acc;
  struct Shared {
    std::atomic<size_t> next{0};
    std::mutex mu;
    size_t prefetched = 0;  // jobs [0, prefetched) were handed to the kernel
    std::exception_ptr error;
  } sh;
  auto prefetch_for = [&](size_t k) {  // under sh.mu
    while (sh.prefetched < jobs_.size() && start[sh.prefetched] <= start[k] + kPrefetchWindow) {
      const Job& j = jobs_[sh.prefetched++];
      if (j.cold_span && !cpu) j.f->prefetch_runs(j.idx, j.runs);
    }
  };
  auto work = [&] {
    for (size_t k; (k = sh.next.fetch_add(1)) < jobs_.size();) {
      try {
        {
          std::lock_guard<std::mutex> g(sh.mu);
          prefetch_for(k);
        }
        run_job(jobs_[k]);
      } catch (...) {
        std::lock_guard<std::mutex> g(sh.mu);
        if (!sh.error) sh.error = std::current_exception();
        sh.next.store(jobs_.size());
      }
    }
  };
  {
    std::lock_guard<std::mutex> g(sh.mu);
    prefetch_for(0);  // the first window goes to the disk before any thread waits on it
  }
  // Helpers join through a gate that the caller closes once it has run out of jobs: a
  // helper that starts only later (its pool busy, perhaps with tasks that wait for this
  // read) returns at once without touching this frame, so the caller never waits for a
  // helper that has not started, and no arrangement of pools can deadlock a read.
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    size_t active = 0;
    bool closed = false;
  };
  auto gate = std::make_shared<Gate>();
  try {
    Context& ctx = view_.ctx ? *view_.ctx : *Context::process();
    ThreadPool& pool = cpu ? ctx.filters() : ctx.io();
    const size_t n = pool.on_worker() ? 0 : std::min<size_t>(cpu ? pool.size() - 1 : pool.size(), jobs_.size() - 1);
    for (size_t i = 0; i < n; ++i)
      pool.submit([gate, &work] {
        {
          std::lock_guard<std::mutex> g(gate->mu);
          if (gate->closed) return;
          ++gate->active;
        }
        work();  // catches everything
        std::lock_guard<std::mutex> g(gate->mu);
        if (--gate->active == 0) gate->cv.notify_all();
      });
  } catch (...) {  // no thread or memory for a helper: the caller (and those started) do it all
  }
  work();
  {
    std::unique_lock<std::mutex> l(gate->mu);
    gate->closed = true;
    gate->cv.wait(l, [&] { return gate->active == 0; });
  }
  ++(warm ? warm_parallel_reads_ : resident ? resident_parallel_reads_ : memory ? cached_parallel_reads_ : parallel_reads_);
  if (sh.error) std::rethrow_exception(sh.error);
}

// Where a cold job reaches the end of its tile and no queued job reads on from the next
// byte of the file, sequential preads let the kernel's readahead run on past the tile
// into bytes nobody asked for: its window doubles from the tile's size (1 MiB tiles, 8 MiB
// readahead: about 2 MiB past each, measured 3x the bytes for a beam across row-major
// tiles), so each such end counts its job's cold bytes as overread.  The queue's last
// job is left out: what follows it (the next batch, or nothing) is unknown, and a
// sequential read of contiguous tiles must stay serial.  cold: the queue's cold bytes.
uint64_t ReadPlanner::scattered_tile_ends(uint64_t cold) const {
  if (jobs_.size() < 2) return 0;
  std::vector<std::pair<const Fragment*, uint64_t>> starts;  // file offset of each cold job
  starts.reserve(jobs_.size());
  for (const Job& j : jobs_) {
    if (!j.cold_span) continue;
    const uint64_t B = j.f->meta().check_block;
    starts.emplace_back(j.f, j.f->meta().dense[j.idx].blob.offset + j.runs.front().off / B * B);
  }
  std::sort(starts.begin(), starts.end());
  uint64_t past = 0, tile_cold = 0;  // tile_cold: cold bytes of the jobs of j's tile so far
  for (size_t k = 0; k + 1 < jobs_.size(); ++k) {
    const Job& j = jobs_[k];
    const bool same_tile = k > 0 && jobs_[k - 1].f == j.f && jobs_[k - 1].idx == j.idx;
    tile_cold = (same_tile ? tile_cold : 0) + j.cold_span;
    if (!j.cold_span || j.overread) continue;
    const DenseEntry& e = j.f->meta().dense[j.idx];
    const uint64_t B = j.f->meta().check_block;
    const uint64_t end = ((j.runs.back().off + j.runs.back().len - 1) / B + 1) * B;
    if (end < e.blob.stored_size) continue;  // ends inside its tile: the next job goes on
    // Blobs need not abut (headers, alignment): a next job starting less than a block
    // after the tile's end is read on to all the same.
    const uint64_t tile_end = e.blob.offset + e.blob.stored_size;
    const auto it = std::lower_bound(starts.begin(), starts.end(), std::make_pair(j.f, tile_end));
    // The whole tile counts (its earlier jobs too): a tile of many jobs, read serially,
    // waits for the disk job by job and only then lets readahead start on the next tile
    // (8 tiles of 8 MiB down a column: 64 preads one after the other), while the
    // parallel path has the kernel fetch the next tile's blocks meanwhile.
    if (it == starts.end() || it->first != j.f || it->second - tile_end >= B) past += tile_cold;
  }
  // A few ends among many contiguous tiles (a sequential read across fragments, say)
  // keep the read serial: readahead serves the rest well.
  return past * 8 >= cold ? past : 0;
}

std::vector<std::vector<uint64_t>> ReadPlanner::touched_tiles(const Selection& sel) const {
  std::vector<std::vector<uint64_t>> tiles(rank_);
  const Coords& te = layout_.tile_extent();
  for (int d = 0; d < rank_; ++d) {
    for (const Interval& iv : sel.dim(d).ivs) {
      uint64_t t0 = iv.lo / te[d], t1 = iv.hi / te[d];
      if (!tiles[d].empty() && tiles[d].back() >= t0) t0 = tiles[d].back() + 1;
      for (uint64_t t = t0; t <= t1; ++t) tiles[d].push_back(t);
    }
  }
  return tiles;
}

void ReadPlanner::dense_pass(const Selection& sel, uint8_t* dst, const uint64_t* ostride) {
  std::vector<std::vector<uint64_t>> tiles = touched_tiles(sel);
  std::vector<size_t> ti(rank_, 0);
  Coords tile(rank_);
  std::vector<Box> remaining, next;
  for (;;) {
    for (int d = 0; d < rank_; ++d) tile[d] = tiles[d][ti[d]];
    Box region;
    intersect(layout_.tile_box(tile.data()), sel.bbox(), &region);
    remaining.assign(1, region);
    for (auto it = dense_frags_.rbegin(); it != dense_frags_.rend() && !remaining.empty(); ++it) {
      const Fragment& f = *frags_[*it];
      const FragmentMeta& m = f.meta();
      if (!m.domain.intersects(region)) continue;
      auto [first, last] = m.dense_range(f.layout(schema_), tile.data());
      for (size_t idx = first; idx < last && !remaining.empty(); ++idx) {
        const DenseEntry& e = m.dense[idx];
        std::shared_ptr<const std::vector<uint8_t>> data;
        next.clear();
        for (const Box& b : remaining) {
          Box piece;
          if (!intersect(b, e.box, &piece)) {
            next.push_back(b);
            continue;
          }
          if (e.kind == DenseEntry::kData && !data && !copy_runs(sel, piece, f, idx, dst, ostride))
            data = f.dense_tile(idx);
          if (e.kind == DenseEntry::kFill || data)
            copy_box(sel, piece, data ? data->data() : nullptr, e.box, f.layout(schema_), dst, ostride);
          subtract(b, e.box, &next);
        }
        remaining.swap(next);
      }
    }
    for (const Box& b : remaining) copy_box(sel, b, nullptr, b, layout_, dst, ostride);
    int d = rank_ - 1;
    for (; d >= 0; --d) {
      if (++ti[d] < tiles[d].size()) break;
      ti[d] = 0;
    }
    if (d < 0) break;
  }
  run_jobs();  // before the sparse pass, whose newer cells overwrite these
}

bool ReadPlanner::newer_dense_covers(size_t frag_index, const uint64_t* c) const {
  uint64_t tile[kMaxRank];
  bool have_tile = false;
  for (auto it = dense_frags_.rbegin(); it != dense_frags_.rend() && *it > frag_index; ++it) {
    const FragmentMeta& m = frags_[*it]->meta();
    if (!m.domain.contains(c)) continue;
    if (!have_tile) {
      layout_.tile_of(c, tile);  // the tiling: the same in every order
      have_tile = true;
    }
    if (m.dense_at(frags_[*it]->layout(schema_), tile, c) >= 0) return true;
  }
  return false;
}

void ReadPlanner::sparse_pass(const Selection& sel, uint8_t* dst, const uint64_t* ostride) {
  const Box& bb = sel.bbox();
  auto place = [&](const uint64_t* c, const uint8_t* v) {
    uint64_t off = 0;
    for (int d = 0; d < rank_; ++d) {
      uint64_t r;
      if (!sel.dim(d).rank_of(c[d], &r)) return;
      off += r * ostride[d];
    }
    std::memcpy(dst + off * es_, v, es_);
  };
  // Sparse cells are in global order, so within one space tile the cells of the region
  // the selection covers lie in one key range: when the selection touches few tiles,
  // binary-search each region's range instead of scanning every cell.  The keys are in
  // the order of the cells searched: the schema's (the buffer, most fragments), else a
  // fragment's own (keys_in).
  std::vector<Box> regions;
  {
    auto per_dim = touched_tiles(sel);
    uint64_t count = 1;
    for (auto& v : per_dim) count = v.size() > 4096 / count ? 4097 : count * v.size();
    if (count <= 4096) {
      std::vector<size_t> ti(rank_, 0);
      Coords t(rank_);
      for (;;) {
        for (int d = 0; d < rank_; ++d) t[d] = per_dim[d][ti[d]];
        Box region;
        if (intersect(layout_.tile_box(t.data()), bb, &region)) regions.push_back(std::move(region));
        int d = rank_ - 1;
        for (; d >= 0; --d) {
          if (++ti[d] < per_dim[d].size()) break;
          ti[d] = 0;
        }
        if (d < 0) break;
      }
    }
  }
  auto region_keys_in = [&](const Layout& l, std::vector<uint64_t>* out) {
    const int w = l.key_size();
    out->resize(regions.size() * 2 * w);
    for (size_t g = 0; g < regions.size(); ++g) {
      l.key_words(regions[g].lo.data(), &(*out)[g * 2 * w]);
      l.key_words(regions[g].hi.data(), &(*out)[g * 2 * w + w]);
    }
  };
  std::vector<uint64_t> region_keys;  // per region: key of lo, key of hi (schema order)
  region_keys_in(layout_, &region_keys);
  const StorageOrder schema_order = layout_.order();
  std::vector<std::pair<StorageOrder, std::vector<uint64_t>>> other_keys;  // other orders met
  auto keys_in = [&](const Layout& l) -> const std::vector<uint64_t>& {
    if (regions.empty()) return region_keys;
    StorageOrder o = l.order();
    if (o == schema_order) return region_keys;
    for (auto& [k, v] : other_keys)
      if (k == o) return v;
    other_keys.emplace_back(std::move(o), std::vector<uint64_t>());
    region_keys_in(l, &other_keys.back().second);
    return other_keys.back().second;
  };
  const size_t nregions = regions.size();
  const uint8_t* fill = schema_.fill_value();
  auto scan = [&](const Layout& l, size_t fi, const uint64_t* cs, const uint64_t* keys, const uint8_t* vs, size_t n) {
    auto visit = [&](size_t a, size_t b) {
      for (size_t k = a; k < b; ++k) {
        const uint64_t* c = &cs[k * rank_];
        if (!bb.contains(c)) continue;
        if (fi != SIZE_MAX && newer_dense_covers(fi, c)) continue;
        place(c, vs ? &vs[k * es_] : fill);  // no values: erased cells
      }
    };
    if (nregions == 0 || nregions * 24 > n) {
      visit(0, n);
      return;
    }
    const std::vector<uint64_t>& rk = keys_in(l);
    const int w = l.key_size();
    for (size_t g = 0; g < nregions; ++g) {
      auto [a, b] = l.key_range(keys, n, &rk[g * 2 * w], &rk[g * 2 * w + w]);
      visit(a, b);
    }
  };
  for (size_t fi = 0; fi < frags_.size(); ++fi) {
    const Fragment& f = *frags_[fi];
    const FragmentMeta& m = f.meta();
    if ((m.sparse.empty() && m.erased.empty()) || !m.domain.intersects(bb)) continue;
    const Layout& fl = f.layout(schema_);
    for (size_t ti = 0; ti < m.sparse.size(); ++ti) {
      if (!m.sparse[ti].mbr.intersects(bb)) continue;
      auto t = f.sparse_tile(ti, fl);
      scan(fl, fi, t->coords.data(), t->keys.data(), t->values.data(), m.sparse[ti].cells);
    }
    for (size_t ti = 0; ti < m.erased.size(); ++ti) {  // disjoint from its sparse cells
      if (!m.erased[ti].mbr.intersects(bb)) continue;
      auto t = f.erased_tile(ti, fl);
      scan(fl, fi, t->coords.data(), t->keys.data(), nullptr, m.erased[ti].cells);
    }
  }
  // Buffered blobs: newer than every fragment, oldest first (blob_buffer.h).
  if (view_.blobs)
    for (size_t i : view_.blobs->over(bb)) {
      const Blob& b = view_.blobs->blobs()[i];
      Box piece;
      if (intersect(b.box, bb, &piece)) copy_box(sel, piece, b.cells.data(), b.box, layout_, dst, ostride);
    }
  if (view_.buffer && !view_.buffer->empty())
    scan(layout_, SIZE_MAX, view_.buffer->coords().data(), view_.buffer->keys().data(), view_.buffer->values().data(),
         view_.buffer->cells());
}

bool ReadPlanner::point_value(const uint64_t* c, const uint8_t** value,
                              std::vector<std::shared_ptr<const void>>* keep) {
  if (view_.buffer && !view_.buffer->empty()) {
    const auto& cs = view_.buffer->coords();
    size_t lo = 0, hi = view_.buffer->cells();
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      int cmp = layout_.compare_cells(&cs[mid * rank_], c);
      if (cmp == 0) {
        *value = &view_.buffer->values()[mid * es_];
        return true;
      }
      if (cmp < 0) lo = mid + 1;
      else hi = mid;
    }
  }
  if (const Blob* b = view_.blobs ? view_.blobs->newest_at(c) : nullptr) {
    uint64_t st[kMaxRank], off = 0;
    layout_.cell_strides(b->box, st);
    for (int d = 0; d < rank_; ++d) off += (c[d] - b->box.lo[d]) * st[d];
    *value = b->cells.data() + off * es_;
    return true;
  }
  uint64_t tile[kMaxRank];
  layout_.tile_of(c, tile);
  for (size_t fi = frags_.size(); fi-- > 0;) {
    const Fragment& f = *frags_[fi];
    const FragmentMeta& m = f.meta();
    if (!m.domain.contains(c)) continue;
    const Layout& fl = f.layout(schema_);
    long idx = m.dense_at(fl, tile, c);
    if (idx >= 0) {
      const DenseEntry& e = m.dense[idx];
      if (e.kind == DenseEntry::kFill) return false;
      auto data = f.dense_tile(idx);
      uint64_t st[kMaxRank], off = 0;
      fl.cell_strides(e.box, st);
      for (int d = 0; d < rank_; ++d) off += (c[d] - e.box.lo[d]) * st[d];
      *value = data->data() + off * es_;
      keep->push_back(data);
      return true;
    }
    for (size_t ti = 0; ti < m.sparse.size(); ++ti) {
      const SparseEntry& e = m.sparse[ti];
      if (!e.mbr.contains(c)) continue;
      if (fl.compare_cells(c, e.first.data()) < 0 || fl.compare_cells(c, e.last.data()) > 0) continue;
      auto t = f.sparse_tile(ti, fl);
      size_t at = find_cell(fl, *t, e.cells, c);
      if (at != SIZE_MAX) {
        *value = &t->values[at * es_];
        keep->push_back(t);
        return true;
      }
    }
    for (size_t ti = 0; ti < m.erased.size(); ++ti) {
      const SparseEntry& e = m.erased[ti];
      if (!e.mbr.contains(c)) continue;
      if (fl.compare_cells(c, e.first.data()) < 0 || fl.compare_cells(c, e.last.data()) > 0) continue;
      if (find_cell(fl, *f.erased_tile(ti, fl), e.cells, c) != SIZE_MAX) return false;
    }
  }
  return false;
}


void ReadPlanner::read_points(const uint64_t* coords, size_t n, uint8_t* dst) {
  std::vector<std::shared_ptr<const void>> keep;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* v = nullptr;
    if (!point_value(coords + i * rank_, &v, &keep)) v = schema_.fill_value();
    std::memcpy(dst + i * es_, v, es_);
    if (keep.size() > 64) keep.clear();
  }
}

}  // namespace tessera
