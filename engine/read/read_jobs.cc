// read_jobs.cc — the partial tile reads a read queues (copy_runs, stage_runs) and how
// they run: serially, over the I/O pool with exact prefetch, over the cores when warm or
// resident, or out of the tile cache (read_planner.h).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>

#include "engine/context/context.h"
#include "engine/read/read_planner.h"
#include "engine/util/error.h"
#include "engine/util/thread_pool.h"

namespace tessera {
// A read without a context of its own tells nobody: asking Context::process() would
// start the process's pools here, which a forked child then lacks.
void ReadPlanner::took(ReadPath p) const {
  if (!view_.ctx) return;
  if (ReadObserver* o = view_.ctx->read_observer()) o->took(p);
}

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
  // machines (the warm 'Tile' read of bench_h5_dense; the measurement is in commit
  // c593ba1's message); a host where
  // one core fills the memory bus gains nothing and pays a wake-up (tens of µs).
  const bool memory = from_memory && jobs_.size() >= 2 && bytes >= kParallelWarmBytes;
  const bool cpu = warm || resident || memory;  // the filter pool, no prefetch
  if (!cpu && (jobs_.size() < 2 || cold < kParallelMinBytes || overread < kParallelMinBytes)) {
    // A short cold read of several jobs (kParallelMinBytes to kPrefetchWindow of blocks
    // not verified yet: a tile, a box in one or two tiles) hands its jobs' blocks to the
    // kernel first, job by job (about kSplitBytes each): the disk then has several ~1 MiB
    // requests at once.  Left to the 2-4 MiB preadvs, the kernel reads the same bytes as
    // one synchronous request after another: an 8 MiB tile, cold, took 1.4-1.7x as long
    // that way (measured with bench_h5_dense's cold partial reads).
    // Longer serial reads (contiguous tiles in file order, the 1 GiB full read) are left
    // to the kernel's readahead, which serves them at the disk's speed (hints ahead of
    // the 1 GiB full read doubled its CPU).  Smaller reads are one request anyway, where
    // a hint would only be one syscall more (the metadata workload's 10,000 small datasets).
    if (jobs_.size() >= 2 && cold >= kParallelMinBytes && cold <= kPrefetchWindow) {
      for (const Job& h : jobs_)
        if (h.cold_span) h.f->prefetch_runs(h.idx, h.runs);
      took(ReadPath::kHintedSerial);
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
  took(warm       ? ReadPath::kParallelWarm
       : resident ? ReadPath::kParallelResident
       : memory   ? ReadPath::kParallelCached
                  : ReadPath::kParallelCold);
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

}  // namespace tessera
