// index_builder.cc — see index_builder.h.
#include "engine/index/index_builder.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <deque>
#include <future>
#include <limits>
#include <type_traits>

#include "engine/index/bitmap.h"
#include "engine/util/bytes.h"
#include "engine/util/checksum.h"
#include "engine/index/entry_values.h"
#include "engine/util/file_io.h"
#include "engine/index/index_format.h"
#include "engine/schema/layout.h"
#include "engine/index/value_bins.h"
#include "engine/index/value_type.h"

namespace tessera {

namespace {

// Small entries are grouped into chunks of at least IndexOptions::chunk_cells positions: a
// bitmap per bin per chunk costs a pair row and roaring's headers.
constexpr size_t kSampleValues = 1 << 16, kSampleEntries = 16, kSampleRuns = 16;
constexpr uint64_t kCellsPerBin = 512, kMinBins = 16;

std::atomic<uint64_t> g_tmp{0};

std::vector<IndexChunk> make_chunks(const FragmentMeta& m, uint64_t chunk_cells) {
  std::vector<IndexChunk> out;
  auto add = [&](uint8_t kind, uint64_t e, uint64_t cells) {
    if (cells > UINT32_MAX)
      throw_error(Errc::kUnsupported, "a tile piece of " + std::to_string(cells) +
                                          " cells cannot be indexed (at most 2^32 - 1 cells per tile)");
    const bool fresh = out.empty() || out.back().kind != kind || out.back().cells >= chunk_cells ||
                       cells >= chunk_cells || out.back().cells + cells > UINT32_MAX;
    if (fresh) out.push_back(IndexChunk{kind, e, 0, 0});
    ++out.back().count;
    out.back().cells += cells;
  };
  for (size_t e = 0; e < m.dense.size(); ++e)
    add(IndexChunk::kDense, e, m.dense[e].kind == DenseEntry::kData ? m.dense[e].box.cells() : 0);
  for (size_t t = 0; t < m.sparse.size(); ++t) add(IndexChunk::kSparse, t, m.sparse[t].cells);
  return out;
}

template <class T>
void store_value(T v, uint8_t out[8]) {
  std::memset(out, 0, 8);
  std::memcpy(out, &v, sizeof v);
}

template <class T>
T stored_value(const uint8_t in[8]) {
  T v;
  std::memcpy(&v, in, sizeof v);
  return v;
}

// Runs fn(i) for i in [0, n) on the pool, at most `window` at a time, and then done(i)
// on the caller in order.  Every started task is waited for, even when one fails.
template <class R, class Fn, class Done>
void run_ordered(ThreadPool* pool, size_t n, Fn fn, Done done) {
  if (!pool) {
    for (size_t i = 0; i < n; ++i) done(i, fn(i));
    return;
  }
  const size_t window = 2 * static_cast<size_t>(pool->size()) + 1;
  std::deque<std::future<R>> q;
  size_t next = 0, finished = 0;
  try {
    while (finished < n) {
      while (next < n && q.size() < window) {
        const size_t i = next++;
        q.push_back(pool->submit([&fn, i] { return fn(i); }));
      }
      R r = q.front().get();
      q.pop_front();
      done(finished++, std::move(r));
    }
  } catch (...) {
    for (auto& f : q)
      if (f.valid()) f.wait();
    throw;
  }
}

// Pass 1: the precision keys of about kSampleValues values from up to kSampleEntries
// evenly spaced entries (computed on the pool), and of every entry's footer min/max (so
// the extremes have bins of their own).
template <class T>
std::vector<double> sample_keys(const Fragment& f, const Layout& layout, bool be, ThreadPool* pool, int precision) {
  const FragmentMeta& m = f.meta();
  struct Pick {
    uint8_t kind;
    uint64_t e, cells;
  };
  std::vector<Pick> all;
  std::vector<double> out;
  auto stats = [&](const TileStats& st) {
    if (!st.has_minmax) return;
    out.push_back(precision_key(static_cast<double>(stored_value<T>(st.min)), precision));
    out.push_back(precision_key(static_cast<double>(stored_value<T>(st.max)), precision));
  };
  for (size_t e = 0; e < m.dense.size(); ++e)
    if (m.dense[e].kind == DenseEntry::kData) {
      all.push_back({IndexChunk::kDense, e, m.dense[e].box.cells()});
      stats(m.dense[e].stats);
    }
  for (size_t t = 0; t < m.sparse.size(); ++t) {
    all.push_back({IndexChunk::kSparse, t, m.sparse[t].cells});
    stats(m.sparse[t].stats);
  }
  std::vector<Pick> picked;
  uint64_t total = 0;
  for (const Pick& p : all) total += p.cells;
  if (total <= kSampleValues) {
    picked = all;
  } else {
    for (size_t i = 0; i < kSampleEntries && i < all.size(); ++i) {
      const size_t k = i * all.size() / std::min(kSampleEntries, all.size());
      if (picked.empty() || picked.back().e != all[k].e || picked.back().kind != all[k].kind) picked.push_back(all[k]);
    }
  }
  uint64_t in_picked = 0;
  for (const Pick& p : picked) in_picked += p.cells;
  const uint64_t step = std::max<uint64_t>(1, in_picked / kSampleValues);
  const size_t es = sizeof(T);
  // Unfiltered tiles are sampled in kSampleRuns stretches read alone (their check
  // blocks), not read whole: pass 2 reads every tile anyway, and a whole-tile sample read
  // of a fragment of few tiles doubled its I/O.
  const uint64_t per_entry = std::max<uint64_t>(1, kSampleValues / std::max<size_t>(1, picked.size()));
  run_ordered<std::vector<double>>(
      pool, picked.size(),
      [&](size_t i) {
        static thread_local std::vector<uint8_t> tile;
        std::vector<double> s;
        auto take = [&](const uint8_t* p, uint64_t n, uint64_t every) {
          for (uint64_t k = 0; k < n; k += every) {
            const double d = static_cast<double>(load_value<T>(p + k * es, be));
            if (!std::isnan(d)) s.push_back(precision_key(d, precision));
          }
        };
        const bool dense = picked[i].kind == IndexChunk::kDense;
        const uint64_t n = picked[i].cells;
        if (dense && f.partial_reads(picked[i].e) && n > per_entry) {
          const uint64_t len = std::max<uint64_t>(1, per_entry / kSampleRuns);
          std::vector<ByteRun> runs;
          tile.resize(kSampleRuns * len * es);
          uint64_t filled = 0;
          for (uint64_t r = 0; r < kSampleRuns; ++r) {
            const uint64_t off = r * (n / kSampleRuns), l = std::min(len, n - off);
            if (!runs.empty() && off * es < runs.back().off + runs.back().len) break;
            runs.push_back(ByteRun{off * es, l * es, tile.data() + filled * es});
            filled += l;
          }
          f.read_dense_runs(picked[i].e, runs);
          take(tile.data(), filled, 1);
          return s;
        }
        EntryValues v = entry_values(f, layout, dense, picked[i].e, &tile);
        take(v.p, v.n, std::max<uint64_t>(1, step));
        return s;
      },
      [&](size_t, std::vector<double> s) { out.insert(out.end(), s.begin(), s.end()); });
  return out;
}

// One (chunk, bin) bitmap, serialized, with its count and value range.
struct PairOut {
  uint32_t bin;
  uint64_t count;
  uint8_t min[8], max[8];
  std::vector<uint8_t> bytes;
};

// Pass 2 for one chunk: the bin of every position (a NaN: nan_bin), then the positions
// of each bin (a counting sort keeps them ascending) into its bitmap.
template <class T>
std::vector<PairOut> bin_chunk(const Fragment& f, const Layout& layout, const IndexChunk& c, const BinEdges& edges,
                               uint32_t nan_bin, bool be) {
  const uint32_t nbins = nan_bin + 1;
  // Per-thread scratch, kept between chunks: fresh pages for every 1 M-cell chunk cost
  // more kernel time (page faults) than the binning itself.
  static thread_local std::vector<uint32_t> bin_of, sorted;
  static thread_local std::vector<uint8_t> tile;
  bin_of.resize(c.cells);
  sorted.resize(c.cells);
  std::vector<uint64_t> count(nbins, 0);
  // Start every bin's range empty (+inf, -inf) so the loop has no first-value branch;
  // NaNs never change a range (comparisons with them are false).
  using Lim = std::numeric_limits<T>;
  std::vector<T> lo(nbins, Lim::has_infinity ? Lim::infinity() : Lim::max());
  std::vector<T> hi(nbins, Lim::has_infinity ? -Lim::infinity() : Lim::lowest());
  uint64_t pos = 0;
  for (uint64_t e = c.first; e < c.first + c.count; ++e) {
    EntryValues v = entry_values(f, layout, c.kind == IndexChunk::kDense, e, &tile);
    for (uint64_t k = 0; k < v.n; ++k, ++pos) {
      const T x = load_value<T>(v.p + k * sizeof(T), be);
      uint32_t b;
      if constexpr (std::is_floating_point_v<T>) {
        b = std::isnan(x) ? nan_bin : edges.bin_of(static_cast<double>(x));
      } else {
        b = edges.bin_of(static_cast<double>(x));
      }
      bin_of[pos] = b;
      ++count[b];
      lo[b] = x < lo[b] ? x : lo[b];
      hi[b] = hi[b] < x ? x : hi[b];
    }
  }
  if (pos != c.cells) throw_error(Errc::kInternal, "index chunk: position count differs from its entries'");
  std::vector<uint64_t> start(nbins + 1, 0);
  for (uint32_t b = 0; b < nbins; ++b) start[b + 1] = start[b] + count[b];
  {
    std::vector<uint64_t> at(start.begin(), start.end() - 1);
    for (uint64_t p = 0; p < c.cells; ++p) sorted[at[bin_of[p]]++] = static_cast<uint32_t>(p);
  }
  std::vector<PairOut> out;
  for (uint32_t b = 0; b < nbins; ++b) {
    if (count[b] == 0) continue;
    Bitmap bm;
    bm.add_sorted(sorted.data() + start[b], count[b]);
    bm.run_optimize();
    PairOut p{b, count[b], {}, {}, bm.serialize()};
    if (b != nan_bin) {
      store_value(lo[b], p.min);
      store_value(hi[b], p.max);
    } else {
      std::memset(p.min, 0, 8);
      std::memset(p.max, 0, 8);
    }
    out.push_back(std::move(p));
  }
  return out;
}

// A pair as spooled: where its bytes are in the spool file.
struct Spooled {
  uint64_t chunk;
  uint32_t bin;
  uint64_t count;
  uint8_t min[8], max[8];
  uint64_t off, size, checksum;
};

template <class T>
WrittenIndex build_typed(const Schema& s, const Fragment& f, const std::string& array_dir, const IndexOptions& o,
                     ThreadPool* pool, const IndexProgress& progress, NumType type) {
  Env& env = f.env();
  const Layout& layout = f.layout(s);  // positions follow the fragment's own cell order
  const bool be = s.big_endian;
  const std::vector<IndexChunk> chunks = make_chunks(f.meta(), o.chunk_cells);
  // A bin costs a pair row and a bitmap header per chunk it appears in: a small fragment
  // gets fewer bins (on average at least kCellsPerBin values each).
  const uint64_t positions = index_positions(f.meta());
  const uint32_t max_bins = static_cast<uint32_t>(
      std::min<uint64_t>(o.max_bins, std::max<uint64_t>(kMinBins, positions / kCellsPerBin)));
  const BinEdges edges =
      BinEdges::from_keys(sample_keys<T>(f, layout, be, pool, static_cast<int>(o.precision)), max_bins);
  const uint32_t nan_bin = edges.bins();  // after every value bin; dropped below when empty

  const std::string dir = index_dir(array_dir);
  make_dir(env, dir);
  const std::string stem = join_path(dir, "." + f.meta().id.name() + "." + std::to_string(::getpid()) + "." +
                                              std::to_string(g_tmp.fetch_add(1)));
  // The spool: unlinked at once, so a crash leaves nothing behind.
  File spool_file = File::open_rw(env, stem + ".spool.tmp", /*create=*/true, /*exclusive=*/true);
  remove_file(env, stem + ".spool.tmp");
  AppendFile spool(std::move(spool_file));
  std::vector<Spooled> spooled;
  uint64_t done_cells = 0;
  run_ordered<std::vector<PairOut>>(
      pool, chunks.size(), [&](size_t i) { return bin_chunk<T>(f, layout, chunks[i], edges, nan_bin, be); },
      [&](size_t i, std::vector<PairOut> pairs) {
        for (PairOut& p : pairs) {
          Spooled sp{i, p.bin, p.count, {}, {}, spool.offset(), p.bytes.size(), checksum64(p.bytes.data(), p.bytes.size())};
          std::memcpy(sp.min, p.min, 8);
          std::memcpy(sp.max, p.max, 8);
          spool.append(p.bytes.data(), p.bytes.size());
          spooled.push_back(sp);
        }
        done_cells += chunks[i].cells;
        if (progress) progress(done_cells);
      });

  // Bin-major: every chunk's bitmap of bin 0, then bin 1, ...
  std::stable_sort(spooled.begin(), spooled.end(), [](const Spooled& a, const Spooled& b) { return a.bin < b.bin; });
  const std::string tmp = stem + ".tix.tmp";
  IndexHead head;
  head.fragment = f.meta().id;
  head.fragment_bytes = f.file_size();
  head.type = type;
  head.big_endian = be ? 1 : 0;
  head.precision = o.precision;
  head.max_bins = o.max_bins;
  head.chunks = chunks;
  std::vector<IndexPair> rows;
  try {
    AppendFile out(File::open_rw(env, tmp, /*create=*/true, /*exclusive=*/true));
    uint8_t header[kIndexHeaderBytes] = {};
    std::memcpy(header, kIndexMagic, 8);
    const uint32_t version = kIndexVersion;
    std::memcpy(header + 8, &version, 4);
    out.append(header, sizeof header);
    std::vector<uint8_t> buf;
    for (size_t i = 0; i < spooled.size(); ++i) {
      const Spooled& sp = spooled[i];
      buf.resize(sp.size);
      spool.file().pread_exact(buf.data(), sp.size, sp.off);
      IndexPair p;
      p.chunk = sp.chunk;
      p.count = sp.count;
      std::memcpy(p.min, sp.min, 8);
      std::memcpy(p.max, sp.max, 8);
      p.offset = out.offset();
      p.size = sp.size;
      p.checksum = sp.checksum;
      out.append(buf.data(), buf.size());
      rows.push_back(p);
      // The bin's rows and totals (only bins holding values are listed).
      const bool nan = sp.bin == nan_bin;
      if (i == 0 || spooled[i - 1].bin != sp.bin) {
        IndexBin b;
        b.nan = nan;
        b.first_pair = i;
        std::memcpy(b.min, sp.min, 8);
        std::memcpy(b.max, sp.max, 8);
        head.bins.push_back(b);
      }
      IndexBin& b = head.bins.back();
      b.count += sp.count;
      ++b.pairs;
      if (!nan) {
        if (stored_value<T>(sp.min) < stored_value<T>(b.min)) std::memcpy(b.min, sp.min, 8);
        if (stored_value<T>(b.max) < stored_value<T>(sp.max)) std::memcpy(b.max, sp.max, 8);
      }
    }
    head.pairs_offset = out.offset();
    head.pair_count = rows.size();
    const std::vector<uint8_t> table = serialize_pairs(rows);
    for (IndexBin& b : head.bins)
      b.pairs_checksum = checksum64(table.data() + b.first_pair * IndexPair::kBytes, b.pairs * IndexPair::kBytes);
    out.append(table.data(), table.size());
    const std::vector<uint8_t> hb = head.serialize();
    const uint64_t head_off = out.offset();
    out.append(hb.data(), hb.size());
    ByteWriter tr;
    tr.u64(head_off);
    tr.u64(hb.size());
    tr.u64(checksum64(hb.data(), hb.size()));
    tr.u32(kIndexVersion);
    tr.u32(0);
    tr.bytes(kIndexEndMagic, 8);
    out.append(tr.buf().data(), tr.size());
    const uint64_t bytes = out.offset();
    out.file().close();
    return WrittenIndex{tmp, index_path(array_dir, f.meta().id), bytes, &env};
  } catch (...) {
    remove_file(env, tmp);
    throw;
  }
}

}  // namespace

void IndexOptions::validate() const {
  if (precision < 1 || precision > 9)
    throw_error(Errc::kInvalidArgument, "index precision " + std::to_string(precision) + ": expected 1 to 9 digits");
  if (max_bins < 2 || max_bins > 65536)
    throw_error(Errc::kInvalidArgument, "index max_bins " + std::to_string(max_bins) + ": expected 2 to 65536");
  if (chunk_cells < 1 || chunk_cells > UINT32_MAX)
    throw_error(Errc::kInvalidArgument, "index chunk_cells " + std::to_string(chunk_cells) + ": expected 1 to 2^32 - 1");
}

uint64_t index_positions(const FragmentMeta& m) {
  uint64_t n = 0;
  for (const DenseEntry& e : m.dense)
    if (e.kind == DenseEntry::kData) n += e.box.cells();
  for (const SparseEntry& e : m.sparse) n += e.cells;
  return n;
}

WrittenIndex write_fragment_index(const Schema& s, const Fragment& f, const std::string& array_dir,
                                  const IndexOptions& o, ThreadPool* pool, const IndexProgress& progress) {
  o.validate();
  if (f.is_inline()) throw_error(Errc::kInvalidArgument, "inline fragments are not indexed (they are scanned)");
  const NumType type = num_type(s, "array '" + array_dir + "'");
  return visit_num(type, [&](auto t) {
    using T = decltype(t);
    return build_typed<T>(s, f, array_dir, o, pool, progress, type);
  });
}

void publish_index(const WrittenIndex& w) {
  Env& env = *w.env;
  try {
    File f = File::open_rw(env, w.tmp, /*create=*/false);
    f.sync();
    f.close();
    rename_durable(env, w.tmp, w.path);
  } catch (...) {
    remove_file(env, w.tmp);
    throw;
  }
}

uint64_t build_fragment_index(const Schema& s, const Fragment& f, const std::string& array_dir, const IndexOptions& o,
                              ThreadPool* pool, const IndexProgress& progress) {
  const WrittenIndex w = write_fragment_index(s, f, array_dir, o, pool, progress);
  publish_index(w);
  return w.bytes;
}

}  // namespace tessera
