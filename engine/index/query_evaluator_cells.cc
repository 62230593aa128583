// query_evaluator_cells.cc — the evaluator's (query_evaluator.h) work on positions: a
// chunk's mask, the candidates checked against their values, answers mapped to query
// positions.
#include "engine/index/query_evaluator.h"

#include <algorithm>

#include "engine/geometry/odometer.h"
#include "engine/index/entry_values.h"

namespace tessera {
namespace query_detail {

template <class T>
void Evaluator<T>::build_mask(size_t fi, const std::vector<ChunkEntry>& entries, const ChunkWork& w, Bitmap* mask,
                               bool* whole) {
  const FragmentMeta& m = frags_[fi]->meta();
  auto entry_base = [&](bool dense, uint64_t e) {
    for (const ChunkEntry& ce : entries)
      if (ce.dense == dense && ce.e == e) return ce.base;
    throw_error(Errc::kInternal, "query: entry outside its chunk");
  };
  std::vector<uint64_t> scattered, gone;
  for (size_t i : w.claims) {
    const DenseClaim& c = own_->dense[i];
    const Box& E = m.dense[c.entry].box;
    const uint64_t base = entry_base(true, c.entry);
    uint64_t cs[kMaxRank];
    frags_[fi]->layout(s_).cell_strides(E, cs);  // positions follow the fragment's cell order
    // Selected indices per dimension inside the claim's box.
    std::vector<std::vector<uint64_t>> sel(rank_);
    uint64_t counts[kMaxRank];
    for (int d = 0; d < rank_; ++d) {
      sel[d] = qmap_.selected(d, c.box.lo[d], c.box.hi[d]);
      counts[d] = sel[d].size();
    }
    bool any = true;
    for (int d = 0; d < rank_; ++d) any = any && counts[d] > 0;
    if (!any) continue;
    const int last = rank_ - 1;
    const bool runs = cs[last] == 1 && q_.region.stride[last] == 1;  // rows are position ranges
    // Rows that follow each other in position order (a claim as wide as its entry)
    // join into one range: a whole tile is one add.
    uint64_t open_lo = 0, open_hi = 0;
    for_each_index(runs ? last : rank_, counts, [&](const uint64_t* idx) {
      uint64_t o = base;
      for (int d = 0; d < (runs ? last : rank_); ++d) o += (sel[d][idx[d]] - E.lo[d]) * cs[d];
      if (!runs) {
        scattered.push_back(o);
        return;
      }
      o += (sel[last].front() - E.lo[last]);
      if (o != open_hi) {
        mask->add_range(open_lo, open_hi);
        open_lo = o;
      }
      open_hi = o + sel[last].size();
    });
    mask->add_range(open_lo, open_hi);
    for (const CellClaim& cc : overrides_[i]) {
      const uint64_t* p = own_->coords(cc);
      uint64_t o = base;
      for (int d = 0; d < rank_; ++d) o += (p[d] - E.lo[d]) * cs[d];
      gone.push_back(o);
    }
    *whole = entries.size() == 1 && w.claims.size() == 1 && w.cells.empty() && overrides_[i].empty() &&
             c.box == E && runs;
    for (int d = 0; d < rank_ && *whole; ++d) *whole = counts[d] == E.hi[d] - E.lo[d] + 1;
  }
  for (const CellClaim& cc : w.cells) scattered.push_back(entry_base(false, own_->sources[cc.source].tile) + cc.index);
  std::sort(scattered.begin(), scattered.end());
  mask->add_sorted(scattered.data(), scattered.size());
  if (!gone.empty()) {
    std::sort(gone.begin(), gone.end());
    Bitmap g;
    g.add_sorted(gone.data(), gone.size());
    mask->andnot_with(g);
  }
}

template <class T>
Bitmap Evaluator<T>::check(size_t fi, const std::vector<ChunkEntry>& entries, const Bitmap& cand) {
  Bitmap passed;
  if (cand.empty()) return passed;
  const Fragment& f = *frags_[fi];
  std::vector<uint64_t> ok;
  // Candidate runs per entry (entry-local), in order.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> runs(entries.size());
  size_t at = 0;
  cand.for_each_run([&](uint64_t first, uint64_t n) {
    while (n > 0) {
      while (first >= entries[at].base + entries[at].cells) ++at;
      const uint64_t take = std::min(n, entries[at].base + entries[at].cells - first);
      runs[at].push_back({first - entries[at].base, take});
      first += take;
      n -= take;
    }
  });
  static thread_local std::vector<uint8_t> scratch;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (runs[i].empty()) continue;
    const ChunkEntry& ce = entries[i];
    uint64_t n = 0;
    for (auto& r : runs[i]) n += r.second;
    out_->compared += n;
    if (ce.dense && f.partial_reads(ce.e) && n * 8 < ce.cells) {
      std::vector<ByteRun> br;
      scratch.resize(n * es_);
      uint64_t o = 0;
      for (auto& r : runs[i]) {
        br.push_back(ByteRun{r.first * es_, r.second * es_, scratch.data() + o * es_});
        o += r.second;
      }
      f.read_dense_runs(ce.e, br);
      o = 0;
      for (auto& r : runs[i])
        for (uint64_t k = 0; k < r.second; ++k, ++o)
          if (pred_.test(load_value<T>(scratch.data() + o * es_, be_))) ok.push_back(ce.base + r.first + k);
      continue;
    }
    EntryValues vals = entry_values(f, f.layout(s_), ce.dense, ce.e);
    for (auto& r : runs[i])
      for (uint64_t k = r.first; k < r.first + r.second; ++k)
        if (pred_.test(load_value<T>(vals.p + k * es_, be_))) ok.push_back(ce.base + k);
  }
  passed.add_sorted(ok.data(), ok.size());
  return passed;
}

template <class T>
void Evaluator<T>::finish(size_t fi, const std::vector<ChunkEntry>& entries, const Bitmap& r,
                           const ChunkWork* w) {
  *count_ += r.cardinality();
  if (!q_.want_hits || r.empty()) return;
  const FragmentMeta& m = frags_[fi]->meta();
  const int last = rank_ - 1;
  // Sparse tiles' coordinates, from the winning cells' sources.
  std::unordered_map<uint64_t, const CellSource*> sparse;
  for (const CellClaim& cc : w->cells) sparse[own_->sources[cc.source].tile] = &own_->sources[cc.source];
  size_t at = 0;
  uint64_t cell[kMaxRank];
  r.for_each_run([&](uint64_t first, uint64_t n) {
    while (n > 0) {
      while (first >= entries[at].base + entries[at].cells) ++at;
      const ChunkEntry& ce = entries[at];
      const uint64_t take = std::min(n, ce.base + ce.cells - first);
      const uint64_t k0 = first - ce.base;
      if (!ce.dense) {
        const CellSource* src = sparse.at(ce.e);
        for (uint64_t k = k0; k < k0 + take; ++k) {
          uint64_t q;
          if (qmap_.position(&src->data->coords[k * rank_], &q)) scattered_.push_back(q);
        }
      } else {
        const Box& E = m.dense[ce.e].box;
        const Layout& fl = frags_[fi]->layout(s_);  // positions follow the fragment's cell order
        uint64_t cs[kMaxRank];
        fl.cell_strides(E, cs);
        if (cs[last] != 1) {  // not row-major cells: one position at a time
          for (uint64_t k = k0; k < k0 + take; ++k) {
            fl.cell_at(E, k, cell);
            uint64_t q;
            if (qmap_.position(cell, &q)) scattered_.push_back(q);
          }
        } else {
          // Row by row: a row's run is a run of query positions (stride 1) or every
          // stride-th of them.
          const uint64_t w = E.hi[last] - E.lo[last] + 1;
          for (uint64_t k = k0; k < k0 + take;) {
            const uint64_t row = k / w, col = k % w, len = std::min(k0 + take - k, w - col);
            uint64_t rem = row;
            for (int d = last - 1; d >= 0; --d) {
              const uint64_t span = E.hi[d] - E.lo[d] + 1;
              cell[d] = E.lo[d] + rem % span;
              rem /= span;
            }
            cell[last] = E.lo[last] + col;
            uint64_t q;
            if (q_.region.stride[last] == 1) {
              if (qmap_.position(cell, &q)) hits_->add_range(q, q + len);
            } else {
              for (uint64_t i = 0; i < len; ++i) {
                cell[last] = E.lo[last] + col + i;
                if (qmap_.position(cell, &q)) scattered_.push_back(q);
              }
            }
            k += len;
          }
        }
      }
      first += take;
      n -= take;
    }
  });
  if (scattered_.size() > (1u << 20)) flush_scattered();
}

template <class T>
void Evaluator<T>::flush_scattered() {
  if (scattered_.empty()) return;
  std::sort(scattered_.begin(), scattered_.end());
  hits_->add_sorted(scattered_.data(), scattered_.size());
  scattered_.clear();
}

// The members defined here, for every value type (the class itself is instantiated once,
// in query_term.cc: an explicit class instantiation may appear only once per program).
#define TESSERA_EVALUATOR_CELLS(T) \
  template void Evaluator<T>::build_mask(size_t, const std::vector<ChunkEntry>&, const ChunkWork&, Bitmap*, bool*); \
  template Bitmap Evaluator<T>::check(size_t, const std::vector<ChunkEntry>&, const Bitmap&); \
  template void Evaluator<T>::finish(size_t, const std::vector<ChunkEntry>&, const Bitmap&, const ChunkWork*); \
  template void Evaluator<T>::flush_scattered();
TESSERA_EVALUATOR_CELLS(int8_t)
TESSERA_EVALUATOR_CELLS(int16_t)
TESSERA_EVALUATOR_CELLS(int32_t)
TESSERA_EVALUATOR_CELLS(int64_t)
TESSERA_EVALUATOR_CELLS(uint8_t)
TESSERA_EVALUATOR_CELLS(uint16_t)
TESSERA_EVALUATOR_CELLS(uint32_t)
TESSERA_EVALUATOR_CELLS(uint64_t)
TESSERA_EVALUATOR_CELLS(float)
TESSERA_EVALUATOR_CELLS(double)
#undef TESSERA_EVALUATOR_CELLS

}  // namespace query_detail
}  // namespace tessera
