// query_term.cc — see query_term.h.  The evaluator's slab walk; its other members are in
// query_evaluator_index.cc and query_evaluator_cells.cc (query_evaluator.h).
#include "engine/index/query_term.h"

#include <algorithm>
#include <map>

#include "engine/index/query_evaluator.h"

namespace tessera {
namespace query_detail {

template <class T>
void Evaluator<T>::run() {
  const TermRegion& r = q_.region;
  const uint64_t total = r.cells();
  *out_ = TermAnswer();
  if (total == 0) return;
  // When the fill value satisfies the comparison, a slab holding cells that read as the
  // fill value is answered by complement: everything but the stored values that do not
  // satisfy it (unwritten cells are never enumerated).  Slabs without such cells are
  // answered directly.
  fill_holds_ = Pred{q_.op, &q_.lit, false}.test(load_value<T>(s_.fill_value(), be_));
  for (auto& f : frag_) f.resize(frags_.size());
  idx_.resize(frags_.size());
  idx_loaded_.assign(frags_.size(), false);
  pred_ = Pred{q_.op, &q_.lit, false};
  prefetch_indexes();
  Box bb{Coords(rank_), Coords(rank_)};
  for (int d = 0; d < rank_; ++d) {
    bb.lo[d] = r.start[d];
    bb.hi[d] = r.start[d] + r.stride[d] * (r.count[d] - 1);
  }
  // Slabs of whole tile rows along dimension 0.
  uint64_t row_cells = 1;
  for (int d = 1; d < rank_; ++d) row_cells *= bb.hi[d] - bb.lo[d] + 1;
  const uint64_t t0 = s_.tile_extent[0];
  const uint64_t tiles_per_slab = std::max<uint64_t>(1, kSlabCells / std::max<uint64_t>(1, row_cells * t0));
  for (uint64_t x = bb.lo[0]; x <= bb.hi[0];) {
    const uint64_t end_tile = x / t0 + tiles_per_slab;
    const uint64_t hi = std::min(bb.hi[0], end_tile * t0 - 1);
    Box slab = bb;
    slab.lo[0] = x;
    slab.hi[0] = hi;
    if (qmap_.selected_count(0, x, hi) > 0) do_slab(slab);
    if (hi == bb.hi[0]) break;
    x = hi + 1;
  }
}

template <class T>
void Evaluator<T>::do_slab(const Box& slab) {
  Ownership own;
  plan_ownership(s_, view_, {slab}, &own);
  // Data claims per tile, to find the winning cells that override them.
  std::map<Coords, std::vector<size_t>> claims_of_tile;
  uint64_t real = 0;  // selected cells holding a stored value (not the fill value)
  for (size_t i = 0; i < own.dense.size(); ++i) {
    const DenseClaim& c = own.dense[i];
    const DenseEntry& e = frags_[c.frag]->meta().dense[c.entry];
    if (e.kind != DenseEntry::kData) continue;
    claims_of_tile[e.tile].push_back(i);
    uint64_t n = 1;
    for (int d = 0; d < rank_; ++d) n *= qmap_.selected_count(d, c.box.lo[d], c.box.hi[d]);
    real += n;
  }
  overrides_.assign(own.dense.size(), {});
  uint64_t tile[kMaxRank];
  Coords key(rank_);
  for (const CellClaim& cc : own.cells) {
    const uint64_t* p = own.coords(cc);
    uint64_t qpos;
    const bool selected = qmap_.position(p, &qpos);
    if (!claims_of_tile.empty()) {
      layout_.tile_of(p, tile);
      key.assign(tile, tile + rank_);
      auto it = claims_of_tile.find(key);
      if (it != claims_of_tile.end())
        for (size_t i : it->second)
          if (own.dense[i].box.contains(p)) {
            overrides_[i].push_back(cc);
            real -= selected;
            break;
          }
    }
    real += selected && !own.sources[cc.source].erased;
  }
  // The slab's share of the answer, complemented when it holds fill-value cells that
  // satisfy the comparison.
  const uint64_t j0 = (slab.lo[0] - q_.region.start[0] + q_.region.stride[0] - 1) / q_.region.stride[0];
  const uint64_t j1 = (std::min(slab.hi[0], q_.region.start[0] + q_.region.stride[0] * (q_.region.count[0] - 1)) -
                       q_.region.start[0]) / q_.region.stride[0];
  const uint64_t q0 = j0 * qmap_.qstride[0], q1 = (j1 + 1) * qmap_.qstride[0];
  const bool negate = fill_holds_ && real < q1 - q0;
  pred_ = Pred{q_.op, &q_.lit, negate};
  Bitmap slab_hits;
  uint64_t slab_count = 0;
  hits_ = negate ? &slab_hits : &out_->hits;
  count_ = &slab_count;

  std::vector<CellClaim> buffered;
  // Per fragment, per chunk, the work.
  std::map<size_t, std::map<uint64_t, ChunkWork>> work;
  for (const CellClaim& cc : own.cells) {
    const CellSource& src = own.sources[cc.source];
    if (src.erased) continue;  // reads as the fill value
    uint64_t qpos;
    if (!qmap_.position(own.coords(cc), &qpos)) continue;
    if (src.frag == CellSource::kBuffer) {
      buffered.push_back(cc);
      continue;
    }
    FragState& st = state(src.frag);
    const uint64_t chunk = st.idx ? st.idx->chunk_map().sparse_chunk[src.tile]
                                  : frags_[src.frag]->meta().dense.size() + src.tile;
    work[src.frag][chunk].cells.push_back(cc);
  }
  for (size_t i = 0; i < own.dense.size(); ++i) {
    const DenseClaim& c = own.dense[i];
    if (frags_[c.frag]->meta().dense[c.entry].kind != DenseEntry::kData) continue;
    FragState& st = state(c.frag);
    const uint64_t chunk = st.idx ? st.idx->chunk_map().dense_chunk[c.entry] : c.entry;
    work[c.frag][chunk].claims.push_back(i);
  }
  own_ = &own;
  std::vector<Prepared> prepared;
  for (auto& [fi, chunks] : work) prepared.push_back(prepare(fi, chunks));
  for (Prepared& pr : prepared)  // every fragment's bitmaps asked for before any is read
    if (const FragState& st = state(pr.fi); st.idx)
      for (const auto& [begin, end] : ranges(st, pr.need)) st.idx->will_need(begin, end - begin);
  for (Prepared& pr : prepared) do_fragment(pr);
  // The write buffer's winning cells: values in memory.
  for (const CellClaim& cc : buffered) {
    const uint8_t* v = view_.buffer->values().data() + cc.index * es_;
    ++out_->compared;
    if (!pred_.test(load_value<T>(v, be_))) continue;
    uint64_t qpos;
    qmap_.position(own.coords(cc), &qpos);
    ++*count_;
    if (q_.want_hits) scattered_.push_back(qpos);
  }
  flush_scattered();
  own_ = nullptr;
  if (negate) {
    out_->count += (q1 - q0) - slab_count;
    if (q_.want_hits) {
      slab_hits.flip(q0, q1);
      out_->hits.or_with(slab_hits);
    }
  } else {
    out_->count += slab_count;
  }
  hits_ = &out_->hits;
}

// Every numeric type visit_num hands evaluate_term: the class, instantiated once in the
// program (the members the evaluator files define are instantiated there, by name).
template class Evaluator<int8_t>;
template class Evaluator<int16_t>;
template class Evaluator<int32_t>;
template class Evaluator<int64_t>;
template class Evaluator<uint8_t>;
template class Evaluator<uint16_t>;
template class Evaluator<uint32_t>;
template class Evaluator<uint64_t>;
template class Evaluator<float>;
template class Evaluator<double>;

}  // namespace query_detail

uint64_t TermRegion::cells() const {
  uint64_t n = 1;
  for (uint64_t c : count) {
    if (c == 0) return 0;
    if (n > UINT64_MAX / c) throw_error(Errc::kInvalidArgument, "query region of more than 2^64 cells");
    n *= c;
  }
  return n;
}

void check_region(const Schema& s, const std::string& what, const TermRegion& r) {
  if (r.start.size() != static_cast<size_t>(s.rank()) || r.stride.size() != r.start.size() ||
      r.count.size() != r.start.size())
    throw_error(Errc::kInvalidArgument, what + ": the subarray has " + std::to_string(r.start.size()) +
                                            " dimensions, the dataset " + std::to_string(s.rank()));
  for (int d = 0; d < s.rank(); ++d) {
    if (r.stride[d] == 0) throw_error(Errc::kInvalidArgument, what + ": a subarray stride of 0");
    if (r.count[d] > 0 &&
        (r.start[d] >= s.extent[d] || (r.count[d] - 1) > (s.extent[d] - 1 - r.start[d]) / r.stride[d]))
      throw_error(Errc::kInvalidArgument, what + ": the subarray reaches past dimension " + std::to_string(d) +
                                              "'s extent " + std::to_string(s.extent[d]));
  }
}

void evaluate_term(const Schema& s, const ReadView& view, const std::string& dir, const std::string& what,
                   const TermQuery& q, TermAnswer* out) {
  const NumType type = num_type(s, what);
  check_region(s, what, q.region);
  visit_num(type, [&](auto t) {
    using T = decltype(t);
    query_detail::Evaluator<T>(s, view, dir, what, q, out).run();
  });
}

void evaluate_values(const Schema& s, const std::string& what, const TermQuery& q, const uint8_t* values,
                     TermAnswer* out) {
  const NumType type = num_type(s, what);
  check_region(s, what, q.region);
  *out = TermAnswer();
  const uint64_t n = q.region.cells();
  visit_num(type, [&](auto t) {
    using T = decltype(t);
    const query_detail::Pred pred{q.op, &q.lit, false};
    std::vector<uint64_t> hits;
    for (uint64_t i = 0; i < n; ++i)
      if (pred.test(load_value<T>(values + i * s.elem_size, s.big_endian))) hits.push_back(i);
    out->count = hits.size();
    out->compared = n;
    if (q.want_hits) out->hits.add_sorted(hits.data(), hits.size());
  });
}

}  // namespace tessera
