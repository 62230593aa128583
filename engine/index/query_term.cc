// query_term.cc — see query_term.h.
//
// Vocabulary: a fragment's *positions* are its data cells in index order (dense data
// entries, each box in cell order, then sparse tiles: index_format.h); a *chunk* is a run
// of whole entries whose positions one set of bitmaps covers.  A fragment without an
// index gets one virtual chunk per entry, every position of which is a candidate.  Per
// chunk the work is: the mask M of positions whose value answers for a selected cell
// (its claims' selected cells minus those newer cells override, plus its winning sparse
// cells), the positions R of M satisfying the comparison (from bitmaps, then candidates
// checked against their values), and R mapped to query positions.
#include "engine/index/query_term.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "engine/index/entry_values.h"
#include "engine/index/index_format.h"
#include "engine/schema/layout.h"
#include "engine/geometry/odometer.h"
#include "engine/read/ownership.h"

namespace tessera {

namespace {

constexpr uint64_t kSlabCells = uint64_t{1} << 24;
constexpr uint64_t kCoalesceGap = 256 << 10;  // index bytes read across rather than seeking

// The comparison, negated when the complement is computed (the fill value satisfies it).
struct Pred {
  CmpOp op;
  const Literal* lit;
  bool negate;
  template <class T>
  bool test(T v) const {
    return holds(compare3(v, *lit), op) != negate;
  }
  Decision flip(Decision d) const {
    if (!negate || d == Decision::kSome) return d;
    return d == Decision::kAll ? Decision::kNone : Decision::kAll;
  }
  template <class T>
  Decision range(const uint8_t* min, const uint8_t* max) const {
    T lo, hi;
    std::memcpy(&lo, min, sizeof lo);
    std::memcpy(&hi, max, sizeof hi);
    return flip(decide(compare3(lo, *lit), compare3(hi, *lit), op));
  }
  Decision nan_values() const { return holds(2, op) != negate ? Decision::kAll : Decision::kNone; }
};

// Cells of the region <-> query positions.
struct QMap {
  int rank = 0;
  Coords start, stride, count, qstride;  // qstride: row-major strides over count
  explicit QMap(const TermRegion& r) : rank(static_cast<int>(r.start.size())), start(r.start), stride(r.stride), count(r.count) {
    qstride.assign(rank, 1);
    for (int d = rank - 2; d >= 0; --d) qstride[d] = qstride[d + 1] * count[d + 1];
  }
  // j such that x = start + j * stride in dimension d, if x is selected.
  bool index(int d, uint64_t x, uint64_t* j) const {
    if (x < start[d] || (x - start[d]) % stride[d] != 0) return false;
    *j = (x - start[d]) / stride[d];
    return *j < count[d];
  }
  bool position(const uint64_t* c, uint64_t* q) const {
    uint64_t p = 0, j;
    for (int d = 0; d < rank; ++d) {
      if (!index(d, c[d], &j)) return false;
      p += j * qstride[d];
    }
    *q = p;
    return true;
  }
  // The selected indices of dimension d inside [lo, hi].
  std::vector<uint64_t> selected(int d, uint64_t lo, uint64_t hi) const {
    std::vector<uint64_t> out;
    const uint64_t last = start[d] + stride[d] * (count[d] - 1);
    uint64_t x = lo <= start[d] ? start[d] : start[d] + (lo - start[d] + stride[d] - 1) / stride[d] * stride[d];
    for (; x <= hi && x <= last; x += stride[d]) out.push_back(x);
    return out;
  }
  uint64_t selected_count(int d, uint64_t lo, uint64_t hi) const {
    const uint64_t last = start[d] + stride[d] * (count[d] - 1);
    if (hi < start[d] || lo > last) return 0;
    const uint64_t a = lo <= start[d] ? 0 : (lo - start[d] + stride[d] - 1) / stride[d];
    const uint64_t b = (std::min(hi, last) - start[d]) / stride[d];
    return b >= a ? b - a + 1 : 0;
  }
};

// One entry of a chunk: where its positions start.
struct ChunkEntry {
  bool dense;
  uint64_t e, base, cells;
};

// The work of one chunk in one slab.
struct ChunkWork {
  std::vector<size_t> claims;  // indexes into Ownership::dense (data claims)
  std::vector<CellClaim> cells;  // winning sparse cells of its tiles
};

template <class T>
class Evaluator {
 public:
  Evaluator(const Schema& s, const ReadView& view, const std::string& dir, const std::string& what,
            const TermQuery& q, TermAnswer* out)
      : s_(s), layout_(s), view_(view), frags_(*view.fragments), dir_(dir), what_(what), q_(q), out_(out),
        qmap_(q.region), rank_(s.rank()), es_(s.elem_size), be_(s.big_endian) {}

  void run() {
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

 private:
  // What is known of fragment fi's index across slabs.
  struct FragState {
    bool head = false, loaded = false;
    std::shared_ptr<IndexFile> idx;
    std::vector<Decision> dec;      // per bin
    bool positive = true;           // read the bins that hold (else those that do not)
    std::vector<std::pair<size_t, size_t>> runs;  // runs of bins read: [first, last]
    std::vector<IndexPair> rows;    // rows of the bins needed
    std::vector<Decision> row_dec;  // each row's own decision
    std::vector<std::vector<size_t>> rows_of_chunk;
  };

  // The index of fragment fi (null: none), opened once for both predicate states.
  const std::shared_ptr<IndexFile>& index_of(size_t fi) {
    if (!idx_loaded_[fi]) {
      idx_loaded_[fi] = true;
      if (!frags_[fi]->is_inline()) idx_[fi] = IndexFile::open(dir_, *frags_[fi], num_type(s_, what_), be_);
    }
    return idx_[fi];
  }

  // Decisions per bin, and which runs of bins to read (those not skipped).
  FragState& state_head(size_t fi) {
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

  FragState& state(size_t fi) {
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

  // A cold query waits for the disk once per request: every fragment's index tail, then
  // every fragment's pair rows, are asked for together (the kernel reads them in
  // parallel) before any is read.
  void prefetch_indexes() {
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

  void do_slab(const Box& slab) {
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

  // The entries of chunk `c` of fragment fi (one entry for a virtual chunk).
  std::vector<ChunkEntry> chunk_entries(size_t fi, uint64_t c) {
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

  // A chunk's work in a slab: its mask, and whether it is wholly claimed and selected
  // (one entry: counted from its rows).
  struct Item {
    uint64_t chunk;
    ChunkWork* w;
    std::vector<ChunkEntry> entries;
    Bitmap mask;
    bool whole = false;
  };
  struct Prepared {
    size_t fi;
    std::vector<Item> items;
    std::vector<size_t> need;  // rows whose bitmaps are read
  };

  // Masks first: they decide which chunks need bitmaps.
  Prepared prepare(size_t fi, std::map<uint64_t, ChunkWork>& chunks) {
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

  void do_fragment(Prepared& pr) {
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

  // The byte ranges holding rows `need`'s bitmaps, neighbours joined across small gaps.
  std::vector<std::pair<uint64_t, uint64_t>> ranges(const FragState& st, std::vector<size_t> need,
                                                    std::vector<std::vector<size_t>>* rows_of = nullptr) {
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

  std::unordered_map<size_t, Bitmap> read_rows(const FragState& st, const std::vector<size_t>& need) {
    std::unordered_map<size_t, Bitmap> out;
    std::vector<std::vector<size_t>> rows_of;
    const auto rs = ranges(st, need, &rows_of);
    for (size_t i = 0; i < rs.size(); ++i) {
      const std::vector<uint8_t> bytes = st.idx->read(rs[i].first, rs[i].second - rs[i].first);
      for (size_t row : rows_of[i]) out.emplace(row, st.idx->bitmap(st.rows[row], bytes, rs[i].first));
    }
    return out;
  }

  // The mask of a chunk: its claims' selected cells (in position order) minus the cells
  // newer winners override, and its winning sparse cells.
  void build_mask(size_t fi, const std::vector<ChunkEntry>& entries, const ChunkWork& w, Bitmap* mask, bool* whole) {
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

  // The positions of `cand` whose values satisfy the comparison.  A few candidates of an
  // unfiltered tile are read alone (the 64 KiB check blocks they touch); many, or those of
  // a filtered tile, through the whole decoded tile.
  Bitmap check(size_t fi, const std::vector<ChunkEntry>& entries, const Bitmap& cand) {
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

  // Counts R and maps it to query positions.
  void finish(size_t fi, const std::vector<ChunkEntry>& entries, const Bitmap& r, const ChunkWork* w) {
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

  void flush_scattered() {
    if (scattered_.empty()) return;
    std::sort(scattered_.begin(), scattered_.end());
    hits_->add_sorted(scattered_.data(), scattered_.size());
    scattered_.clear();
  }

  const Schema& s_;
  Layout layout_;
  const ReadView& view_;
  const FragmentList& frags_;
  const std::string& dir_;
  const std::string& what_;
  const TermQuery& q_;
  TermAnswer* out_;
  QMap qmap_;
  int rank_;
  size_t es_;
  bool be_;
  Pred pred_{CmpOp::kLt, nullptr, false};
  bool fill_holds_ = false;
  std::vector<FragState> frag_[2];  // per predicate: as asked, negated
  std::vector<std::shared_ptr<IndexFile>> idx_;
  std::vector<bool> idx_loaded_;
  Bitmap* hits_ = nullptr;          // where the slab's positions go
  uint64_t* count_ = nullptr;       // and its count
  const Ownership* own_ = nullptr;
  std::vector<std::vector<CellClaim>> overrides_;  // per dense claim of the slab
  std::vector<uint64_t> scattered_;                // query positions not yet added
};

}  // namespace

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
    Evaluator<T>(s, view, dir, what, q, out).run();
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
    const Pred pred{q.op, &q.lit, false};
    std::vector<uint64_t> hits;
    for (uint64_t i = 0; i < n; ++i)
      if (pred.test(load_value<T>(values + i * s.elem_size, s.big_endian))) hits.push_back(i);
    out->count = hits.size();
    out->compared = n;
    if (q.want_hits) out->hits.add_sorted(hits.data(), hits.size());
  });
}

}  // namespace tessera
