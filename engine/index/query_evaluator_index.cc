// query_evaluator_index.cc — the evaluator's (query_evaluator.h) index state: which bins
// decide, which rows are read and how, and a fragment's share of a slab from its bitmaps.
#include "engine/index/query_evaluator.h"

#include <algorithm>

#include "engine/util/file_io.h"

namespace tessera {
namespace query_detail {

template <class T>
const std::shared_ptr<IndexFile>& Evaluator<T>::index_of(size_t fi) {
  if (!idx_loaded_[fi]) {
    idx_loaded_[fi] = true;
    if (!frags_[fi]->is_inline()) idx_[fi] = IndexFile::open(dir_, *frags_[fi], num_type(s_, what_), be_);
  }
  return idx_[fi];
}

template <class T>
auto Evaluator<T>::state_head(size_t fi) -> FragState& {
  FragState& st = frag_[pred_.negate ? 1 : 0][fi];
  if (st.head) return st;
  st.head = true;
  st.idx = index_of(fi);
  if (!st.idx) return st;
  const IndexHead& h = st.idx->head();
  st.dec.resize(h.bins.size());
  uint64_t all = 0, none = 0;
  for (size_t b = 0; b < h.bins.size(); ++b) {
    const IndexBin& bin = h.bins[b];
    st.dec[b] = bin.nan ? pred_.nan_values() : pred_.template range<T>(bin.min, bin.max);
    if (st.dec[b] == Decision::kAll) all += bin.count;
    if (st.dec[b] == Decision::kNone) none += bin.count;
  }
  // Read whichever side has fewer values (FastQuery's trick past 50 % selectivity).
  st.positive = all <= none;
  const Decision skip = st.positive ? Decision::kNone : Decision::kAll;
  for (size_t b = 0; b < st.dec.size();) {
    if (st.dec[b] == skip) {
      ++b;
      continue;
    }
    size_t e = b;
    while (e + 1 < st.dec.size() && st.dec[e + 1] != skip) ++e;  // a run of needed bins: one read
    st.runs.push_back({b, e});
    b = e + 1;
  }
  return st;
}

template <class T>
auto Evaluator<T>::state(size_t fi) -> FragState& {
  FragState& st = state_head(fi);
  if (st.loaded || !st.idx) return st;
  st.loaded = true;
  const IndexHead& h = st.idx->head();
  st.rows_of_chunk.resize(h.chunks.size());
  for (const auto& [b, e] : st.runs) {
    const std::vector<IndexPair> rows = st.idx->pairs(static_cast<uint32_t>(b), static_cast<uint32_t>(e));
    size_t at = 0;
    for (size_t bb = b; bb <= e; ++bb)
      for (uint64_t k = 0; k < h.bins[bb].pairs; ++k, ++at) {
        const IndexPair& p = rows[at];
        // Each row's own decision, from its (chunk, bin) min/max.
        st.row_dec.push_back(h.bins[bb].nan ? st.dec[bb] : pred_.template range<T>(p.min, p.max));
        st.rows_of_chunk[p.chunk].push_back(st.rows.size());
        st.rows.push_back(p);
      }
  }
  return st;
}

template <class T>
void Evaluator<T>::prefetch_indexes() {
  for (size_t fi = 0; fi < frags_.size(); ++fi) {
    if (frags_[fi]->is_inline()) continue;
    try {
      File f = File::open_read(frags_[fi]->env(), index_path(dir_, frags_[fi]->meta().id));
      const uint64_t size = f.size(), tail = std::min<uint64_t>(size, 64 << 10);
      f.will_need(size - tail, tail);
    } catch (const Error& e) {
      if (e.code() != Errc::kNotFound) throw;
    }
  }
  for (size_t fi = 0; fi < frags_.size(); ++fi) {
    FragState& st = state_head(fi);
    if (!st.idx) continue;
    const IndexHead& h = st.idx->head();
    for (const auto& [b, e] : st.runs) {
      const uint64_t first = h.bins[b].first_pair, end = h.bins[e].first_pair + h.bins[e].pairs;
      st.idx->will_need(h.pairs_offset + first * IndexPair::kBytes, (end - first) * IndexPair::kBytes);
    }
  }
}

template <class T>
std::vector<ChunkEntry> Evaluator<T>::chunk_entries(size_t fi, uint64_t c) {
  const FragmentMeta& m = frags_[fi]->meta();
  std::vector<ChunkEntry> out;
  FragState& st = state(fi);
  if (!st.idx) {
    if (c < m.dense.size()) out.push_back({true, c, 0, m.dense[c].box.cells()});
    else out.push_back({false, c - m.dense.size(), 0, m.sparse[c - m.dense.size()].cells});
    return out;
  }
  const IndexChunk& ch = st.idx->head().chunks[c];
  const ChunkMap& map = st.idx->chunk_map();
  for (uint64_t e = ch.first; e < ch.first + ch.count; ++e) {
    if (ch.kind == IndexChunk::kDense) {
      if (m.dense[e].kind == DenseEntry::kData) out.push_back({true, e, map.dense_base[e], m.dense[e].box.cells()});
    } else {
      out.push_back({false, e, map.sparse_base[e], m.sparse[e].cells});
    }
  }
  return out;
}

template <class T>
auto Evaluator<T>::prepare(size_t fi, std::map<uint64_t, ChunkWork>& chunks) -> Prepared {
  FragState& st = state(fi);
  Prepared pr{fi, {}, {}};
  for (auto& [c, w] : chunks) {
    Item it{c, &w, chunk_entries(fi, c), Bitmap(), false};
    build_mask(fi, it.entries, w, &it.mask, &it.whole);
    pr.items.push_back(std::move(it));
  }
  if (!st.idx) return pr;
  for (Item& it : pr.items)
    for (size_t row : st.rows_of_chunk[it.chunk]) {
      const Decision d = st.row_dec[row];
      if (d == Decision::kSome || (!(it.whole && !q_.want_hits) && d == (st.positive ? Decision::kAll : Decision::kNone)))
        pr.need.push_back(row);
    }
  return pr;
}

template <class T>
void Evaluator<T>::do_fragment(Prepared& pr) {
  const size_t fi = pr.fi;
  FragState& st = state(fi);
  std::vector<Item>& items = pr.items;
  if (!st.idx) {
    for (Item& it : items) {
      Bitmap r = check(fi, it.entries, it.mask);
      finish(fi, it.entries, r, it.w);
    }
    return;
  }
  // The bitmaps this slab needs from the index, read in few requests.
  std::unordered_map<size_t, Bitmap> bitmaps = read_rows(st, pr.need);
  for (Item& it : items) {
    const std::vector<size_t>& rows = st.rows_of_chunk[it.chunk];
    std::vector<const Bitmap*> some_parts, side;  // side: the rows read (hold, or not)
    uint64_t some_count = 0, side_count = 0;
    const Decision read_side = st.positive ? Decision::kAll : Decision::kNone;
    for (size_t row : rows) {
      if (st.row_dec[row] == Decision::kSome) some_count += st.rows[row].count;
      if (st.row_dec[row] == read_side) side_count += st.rows[row].count;
      if (it.whole && !q_.want_hits && st.row_dec[row] != Decision::kSome) continue;
      if (st.row_dec[row] == Decision::kSome) some_parts.push_back(&bitmaps.at(row));
      if (st.row_dec[row] == read_side) side.push_back(&bitmaps.at(row));
    }
    Bitmap some = Bitmap::union_of(some_parts);
    some.and_with(it.mask);
    const Bitmap passed = check(fi, it.entries, some);
    if (!q_.want_hits) {
      // Bins are disjoint: a count is a sum over bins, no union needed.  A chunk wholly
      // claimed and selected is counted from its rows alone.
      uint64_t n;
      const uint64_t cells = it.whole ? it.entries[0].cells : it.mask.cardinality();
      if (it.whole) {
        n = st.positive ? side_count : cells - side_count - some_count;
      } else {
        uint64_t in_side = 0;
        for (const Bitmap* b : side) in_side += b->and_cardinality(it.mask);
        n = st.positive ? in_side : cells - in_side - some.cardinality();
      }
      *count_ += n + passed.cardinality();
      out_->decided += cells - some.cardinality();
      continue;
    }
    Bitmap r;
    if (st.positive) {
      r = Bitmap::union_of(side);
      r.and_with(it.mask);
    } else {
      side.insert(side.end(), some_parts.begin(), some_parts.end());
      r = it.mask.copy();
      r.andnot_with(Bitmap::union_of(side));
    }
    out_->decided += it.mask.cardinality() - some.cardinality();
    r.or_with(passed);
    finish(fi, it.entries, r, it.w);
  }
}

template <class T>
std::vector<std::pair<uint64_t, uint64_t>> Evaluator<T>::ranges(const FragState& st, std::vector<size_t> need,
                                                               std::vector<std::vector<size_t>>* rows_of) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  std::sort(need.begin(), need.end(), [&](size_t a, size_t b) { return st.rows[a].offset < st.rows[b].offset; });
  need.erase(std::unique(need.begin(), need.end()), need.end());
  for (size_t i = 0; i < need.size();) {
    const uint64_t begin = st.rows[need[i]].offset;
    uint64_t end = begin + st.rows[need[i]].size;
    size_t j = i + 1;
    while (j < need.size() && st.rows[need[j]].offset <= end + kCoalesceGap) {
      end = std::max(end, st.rows[need[j]].offset + st.rows[need[j]].size);
      ++j;
    }
    out.push_back({begin, end});
    if (rows_of) rows_of->emplace_back(need.begin() + i, need.begin() + j);
    i = j;
  }
  return out;
}

template <class T>
std::unordered_map<size_t, Bitmap> Evaluator<T>::read_rows(const FragState& st,
                                                           const std::vector<size_t>& need) {
  std::unordered_map<size_t, Bitmap> out;
  std::vector<std::vector<size_t>> rows_of;
  const auto rs = ranges(st, need, &rows_of);
  for (size_t i = 0; i < rs.size(); ++i) {
    const std::vector<uint8_t> bytes = st.idx->read(rs[i].first, rs[i].second - rs[i].first);
    for (size_t row : rows_of[i]) out.emplace(row, st.idx->bitmap(st.rows[row], bytes, rs[i].first));
  }
  return out;
}

// The members defined here, for every value type (the class itself is instantiated once,
// in query_term.cc: an explicit class instantiation may appear only once per program).
#define TESSERA_EVALUATOR_INDEX(T) \
  template const std::shared_ptr<IndexFile>& Evaluator<T>::index_of(size_t); \
  template typename Evaluator<T>::FragState& Evaluator<T>::state_head(size_t); \
  template typename Evaluator<T>::FragState& Evaluator<T>::state(size_t); \
  template void Evaluator<T>::prefetch_indexes(); \
  template std::vector<ChunkEntry> Evaluator<T>::chunk_entries(size_t, uint64_t); \
  template typename Evaluator<T>::Prepared Evaluator<T>::prepare(size_t, std::map<uint64_t, ChunkWork>&); \
  template void Evaluator<T>::do_fragment(typename Evaluator<T>::Prepared&); \
  template std::vector<std::pair<uint64_t, uint64_t>> Evaluator<T>::ranges(const typename Evaluator<T>::FragState&, std::vector<size_t>, std::vector<std::vector<size_t>>*); \
  template std::unordered_map<size_t, Bitmap> Evaluator<T>::read_rows(const typename Evaluator<T>::FragState&, const std::vector<size_t>&);
TESSERA_EVALUATOR_INDEX(int8_t)
TESSERA_EVALUATOR_INDEX(int16_t)
TESSERA_EVALUATOR_INDEX(int32_t)
TESSERA_EVALUATOR_INDEX(int64_t)
TESSERA_EVALUATOR_INDEX(uint8_t)
TESSERA_EVALUATOR_INDEX(uint16_t)
TESSERA_EVALUATOR_INDEX(uint32_t)
TESSERA_EVALUATOR_INDEX(uint64_t)
TESSERA_EVALUATOR_INDEX(float)
TESSERA_EVALUATOR_INDEX(double)
#undef TESSERA_EVALUATOR_INDEX

}  // namespace query_detail
}  // namespace tessera
