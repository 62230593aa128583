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
