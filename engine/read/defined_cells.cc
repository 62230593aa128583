// defined_cells.cc — see defined_cells.h.
#include "engine/read/defined_cells.h"

#include <algorithm>
#include <map>

#include "engine/util/error.h"
#include "engine/fragment/fragment.h"
#include "engine/read/ownership.h"

namespace tessera {

namespace {

struct TileLess {
  const Layout* layout;
  bool operator()(const Coords& a, const Coords& b) const { return layout->compare_tiles(a.data(), b.data()) < 0; }
};

}  // namespace

DefinedPlanner::DefinedPlanner(const Schema& s, const ReadView& view)
    : schema_(s), layout_(s), view_(view), frags_(*view.fragments), rank_(s.rank()) {}

void DefinedPlanner::defined(const std::vector<Box>& region, std::vector<Box>* out) {
  out->clear();
  if (region.empty()) return;
  // 1-2. Who owns each cell (ownership.h): dense claims, then winning sparse and erased cells.
  Ownership own;
  plan_ownership(schema_, view_, region, &own);
  std::vector<Box> dense;  // defined pieces (data claims), each inside one tile
  std::map<Coords, std::vector<size_t>, TileLess> dense_of_tile(TileLess{&layout_});
  for (DenseClaim& c : own.dense) {
    const DenseEntry& e = frags_[c.frag]->meta().dense[c.entry];
    if (e.kind != DenseEntry::kData) continue;
    dense_of_tile[e.tile].push_back(dense.size());
    dense.push_back(std::move(c.box));
  }
  std::vector<uint64_t> added, removed;  // rank words per cell
  for (const CellClaim& c : own.cells) {
    const uint64_t* p = own.coords(c);
    std::vector<uint64_t>& into = own.sources[c.source].erased ? removed : added;
    into.insert(into.end(), p, p + rank_);
  }
  std::vector<Box> next;

  // 3. Dense pieces minus the erased cells newer than them, plus the sparse cells no
  //    dense piece already holds.
  uint64_t tile[kMaxRank];
  Coords tkey(static_cast<size_t>(rank_));
  auto piece_of = [&](const uint64_t* cell) -> long {
    if (dense_of_tile.empty()) return -1;
    layout_.tile_of(cell, tile);
    tkey.assign(tile, tile + rank_);
    auto it = dense_of_tile.find(tkey);
    if (it == dense_of_tile.end()) return -1;
    for (size_t i : it->second)
      if (dense[i].contains(cell)) return static_cast<long>(i);
    return -1;
  };
  std::map<size_t, std::vector<Coords>> cut;  // dense piece -> its erased cells
  for (size_t k = 0; k < removed.size(); k += rank_) {
    long i = piece_of(&removed[k]);
    if (i >= 0) cut[static_cast<size_t>(i)].push_back(Coords(&removed[k], &removed[k] + rank_));
  }
  for (size_t i = 0; i < dense.size(); ++i) {
    auto it = cut.find(i);
    if (it == cut.end()) {
      out->push_back(dense[i]);  // dense stays whole: piece_of still looks at it
      continue;
    }
    std::vector<Box> parts{dense[i]};
    for (const Coords& cell : it->second) {
      const Box one(cell, cell);
      next.clear();
      for (const Box& b : parts) {
        if (b.contains(cell.data())) subtract(b, one, &next);
        else next.push_back(b);
      }
      parts.swap(next);
    }
    for (Box& b : parts) out->push_back(std::move(b));
  }
  // The added cells no dense piece holds, sorted row-major, as runs along the last
  // dimension; runs of equal span in consecutive rows join into rectangles (a cluster
  // of 2 x 3 pixels is one box, not two).
  std::vector<size_t> order;
  order.reserve(added.size() / rank_);
  for (size_t k = 0; k < added.size(); k += rank_)
    if (piece_of(&added[k]) < 0) order.push_back(k);
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return std::lexicographical_compare(&added[x], &added[x] + rank_, &added[y], &added[y] + rank_);
  });
  const int last = rank_ - 1;
  std::vector<Box> runs;
  for (size_t i = 0; i < order.size();) {
    const uint64_t* first = &added[order[i]];
    size_t j = i + 1;
    while (j < order.size() && std::equal(first, first + last, &added[order[j]]) &&
           added[order[j] + last] == added[order[j - 1] + last] + 1)
      ++j;
    Box run(Coords(first, first + rank_), Coords(first, first + rank_));
    run.hi[last] = added[order[j - 1] + last];
    runs.push_back(std::move(run));
    i = j;
  }
  if (rank_ >= 2) {
    // A run extends the rectangle that ended on the previous row with the same span (the
    // same coordinates in the other dimensions); runs come in row-major order.
    const int row = rank_ - 2;
    std::map<std::vector<uint64_t>, size_t> open;  // (other dims, lo, hi) -> rectangle
    std::vector<Box> rects;
    for (Box& r : runs) {
      std::vector<uint64_t> key(r.lo.begin(), r.lo.end());
      key[row] = 0;
      key.push_back(r.hi[last]);
      auto it = open.find(key);
      if (it != open.end() && rects[it->second].hi[row] + 1 == r.lo[row]) {
        rects[it->second].hi[row] = r.hi[row];
        continue;
      }
      open[key] = rects.size();
      rects.push_back(std::move(r));
    }
    runs.swap(rects);
  }
  for (Box& r : runs) out->push_back(std::move(r));
  std::sort(out->begin(), out->end(), [](const Box& a, const Box& b) { return a.lo < b.lo; });
}

void DefinedPlanner::defined_points(const uint64_t* coords, size_t n, uint8_t* out) {
  const WriteBuffer* buf = view_.buffer && !view_.buffer->empty() ? view_.buffer : nullptr;
  uint64_t tile[kMaxRank];
  for (size_t i = 0; i < n; ++i) {
    const uint64_t* c = coords + i * rank_;
    out[i] = 0;
    if (buf) {
      size_t lo = 0, hi = buf->cells();
      const auto& cs = buf->coords();
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int cmp = layout_.compare_cells(&cs[mid * rank_], c);
        if (cmp == 0) {
          lo = hi = SIZE_MAX;
          break;
        }
        if (cmp < 0) lo = mid + 1;
        else hi = mid;
      }
      if (lo == SIZE_MAX) {
        out[i] = 1;
        continue;
      }
    }
    layout_.tile_of(c, tile);
    for (size_t fi = frags_.size(); fi-- > 0;) {
      const Fragment& f = *frags_[fi];
      const FragmentMeta& m = f.meta();
      if (!m.has_domain || !m.domain.contains(c)) continue;
      const Layout& fl = f.layout(schema_);  // the fragment's own order
      long idx = m.dense_at(fl, tile, c);
      if (idx >= 0) {
        out[i] = m.dense[idx].kind == DenseEntry::kData;
        break;
      }
      bool decided = false;
      for (size_t ti = 0; ti < m.sparse.size() && !decided; ++ti) {
        const SparseEntry& e = m.sparse[ti];
        if (e.mbr.contains(c) && find_cell(fl, *f.sparse_coords(ti, fl), e.cells, c) != SIZE_MAX) {
          out[i] = 1;
          decided = true;
        }
      }
      for (size_t ti = 0; ti < m.erased.size() && !decided; ++ti) {
        const SparseEntry& e = m.erased[ti];
        if (e.mbr.contains(c) && find_cell(fl, *f.erased_tile(ti, fl), e.cells, c) != SIZE_MAX) decided = true;
      }
      if (decided) break;
    }
  }
}

}  // namespace tessera
