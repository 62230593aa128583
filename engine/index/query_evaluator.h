// query_evaluator.h — the evaluator behind evaluate_term (query_term.h), private to
// engine/index/ (not part of the engine's surface).  One class, its members split by
// concern: the slab walk in query_term.cc, index state and the per-fragment answer from
// bitmaps in query_evaluator_index.cc, masks, candidate checks and query positions in
// query_evaluator_cells.cc.  Each of those files instantiates it for every numeric type
// (visit_num) with the members it defines.
//
// Vocabulary: a fragment's *positions* are its data cells in index order (dense data
// entries, each box in cell order, then sparse tiles: index_format.h); a *chunk* is a run
// of whole entries whose positions one set of bitmaps covers.  A fragment without an
// index gets one virtual chunk per entry, every position of which is a candidate.  Per
// chunk the work is: the mask M of positions whose value answers for a selected cell
// (its claims' selected cells minus those newer cells override, plus its winning sparse
// cells), the positions R of M satisfying the comparison (from bitmaps, then candidates
// checked against their values), and R mapped to query positions.
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/index/bitmap.h"
#include "engine/index/index_format.h"
#include "engine/index/query_term.h"
#include "engine/index/value_type.h"
#include "engine/read/ownership.h"
#include "engine/schema/layout.h"

namespace tessera {
namespace query_detail {

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

// Instantiated (explicitly) for the numeric types of visit_num.
template <class T>
class Evaluator {
 public:
  Evaluator(const Schema& s, const ReadView& view, const std::string& dir, const std::string& what,
            const TermQuery& q, TermAnswer* out)
      : s_(s), layout_(s), view_(view), frags_(*view.fragments), dir_(dir), what_(what), q_(q), out_(out),
        qmap_(q.region), rank_(s.rank()), es_(s.elem_size), be_(s.big_endian) {}

  void run();

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

  // query_evaluator_index.cc: what is known of each fragment's index, and reading it.
  // The index of fragment fi (null: none), opened once for both predicate states.
  const std::shared_ptr<IndexFile>& index_of(size_t fi);
  // Decisions per bin, and which runs of bins to read (those not skipped).
  FragState& state_head(size_t fi);
  // The same, and the rows (chunk, bin) of the bins read, with their own decisions.
  FragState& state(size_t fi);
  // A cold query waits for the disk once per request: every fragment's index tail, then
  // every fragment's pair rows, are asked for together (the kernel reads them in
  // parallel) before any is read.
  void prefetch_indexes();
  // The byte ranges holding rows `need`'s bitmaps, neighbours joined across small gaps.
  std::vector<std::pair<uint64_t, uint64_t>> ranges(const FragState& st, std::vector<size_t> need,
                                                    std::vector<std::vector<size_t>>* rows_of = nullptr);
  // Rows `need`'s bitmaps, read in few requests.
  std::unordered_map<size_t, Bitmap> read_rows(const FragState& st, const std::vector<size_t>& need);
  // The entries of chunk `c` of fragment fi (one entry for a virtual chunk).
  std::vector<ChunkEntry> chunk_entries(size_t fi, uint64_t c);
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
  Prepared prepare(size_t fi, std::map<uint64_t, ChunkWork>& chunks);
  // A fragment's share of a slab: from its bitmaps and candidates, or scanned when it
  // has no index.
  void do_fragment(Prepared& pr);

  // query_term.cc: one slab of whole tile rows — ownership, overrides, work per chunk.
  void do_slab(const Box& slab);

  // query_evaluator_cells.cc: masks, values compared, positions mapped to the query.
  // The mask of a chunk: its claims' selected cells (in position order) minus the cells
  // newer winners override, and its winning sparse cells.
  void build_mask(size_t fi, const std::vector<ChunkEntry>& entries, const ChunkWork& w, Bitmap* mask, bool* whole);
  // The positions of `cand` whose values satisfy the comparison.  A few candidates of an
  // unfiltered tile are read alone (the 64 KiB check blocks they touch); many, or those of
  // a filtered tile, through the whole decoded tile.
  Bitmap check(size_t fi, const std::vector<ChunkEntry>& entries, const Bitmap& cand);
  // Counts R and maps it to query positions.
  void finish(size_t fi, const std::vector<ChunkEntry>& entries, const Bitmap& r, const ChunkWork* w);
  void flush_scattered();

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

}  // namespace query_detail
}  // namespace tessera
