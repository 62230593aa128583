// defined_cells.cc — see defined_cells.h.
#include "engine/defined_cells.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "engine/checksum.h"
#include "engine/error.h"
#include "engine/fragment.h"

namespace tessera {

namespace {

struct CoordsHash {
  size_t operator()(const Coords& c) const { return static_cast<size_t>(checksum64(c.data(), c.size() * 8)); }
};
using CellSet = std::unordered_set<Coords, CoordsHash>;

struct TileLess {
  const Layout* layout;
  bool operator()(const Coords& a, const Coords& b) const { return layout->compare_tiles(a.data(), b.data()) < 0; }
};


}  // namespace

DefinedPlanner::DefinedPlanner(const Schema& s, const ReadView& view)
    : schema_(s), layout_(s), view_(view), frags_(*view.fragments), rank_(s.rank()) {}

bool DefinedPlanner::newer_dense_covers(size_t frag_index, const uint64_t* c) const {
  uint64_t tile[kMaxRank];
  bool have_tile = false;
  for (size_t fi = frags_.size(); fi-- > frag_index + 1;) {
    const FragmentMeta& m = frags_[fi]->meta();
    if (m.dense.empty() || !m.domain.contains(c)) continue;
    if (!have_tile) {
      layout_.tile_of(c, tile);
      have_tile = true;
    }
    if (m.dense_at(layout_, tile, c) >= 0) return true;
  }
  return false;
}

void DefinedPlanner::defined(const std::vector<Box>& region, std::vector<Box>* out) {
  out->clear();
  if (region.empty()) return;
  Box bb = region[0];
  for (const Box& b : region)
    for (int d = 0; d < rank_; ++d) {
      bb.lo[d] = std::min(bb.lo[d], b.lo[d]);
      bb.hi[d] = std::max(bb.hi[d], b.hi[d]);
    }
  auto in_region = [&](const uint64_t* c) {
    if (!bb.contains(c)) return false;
    if (region.size() == 1) return true;
    for (const Box& b : region)
      if (b.contains(c)) return true;
    return false;
  };

  // 1. Dense boxes, per space tile, newest first: data boxes define what they claim of
  //    the still-unowned region, fill boxes undefine it.
  std::map<Coords, std::vector<std::pair<size_t, size_t>>, TileLess> by_tile(TileLess{&layout_});
  for (size_t fi = frags_.size(); fi-- > 0;) {
    const FragmentMeta& m = frags_[fi]->meta();
    if (m.dense.empty() || !m.has_domain || !m.domain.intersects(bb)) continue;
    for (size_t idx = 0; idx < m.dense.size(); ++idx)
      if (m.dense[idx].box.intersects(bb)) by_tile[m.dense[idx].tile].push_back({fi, idx});
  }
  std::vector<Box> dense;  // defined pieces, each inside one tile
  std::map<Coords, std::vector<size_t>, TileLess> dense_of_tile(TileLess{&layout_});
  std::vector<Box> remaining, next;
  for (const auto& [tile, entries] : by_tile) {
    const Box tbox = layout_.tile_box(tile.data());
    remaining.clear();
    for (const Box& r : region) {
      Box p;
      if (intersect(r, tbox, &p)) remaining.push_back(std::move(p));
    }
    for (const auto& [fi, idx] : entries) {
      if (remaining.empty()) break;
      const DenseEntry& e = frags_[fi]->meta().dense[idx];
      next.clear();
      for (const Box& b : remaining) {
        Box piece;
        if (!intersect(b, e.box, &piece)) {
          next.push_back(b);
          continue;
        }
        if (e.kind == DenseEntry::kData) {
          dense_of_tile[tile].push_back(dense.size());
          dense.push_back(std::move(piece));
        }
        subtract(b, e.box, &next);
      }
      remaining.swap(next);
    }
  }

  // 2. Sparse and erased cells, newest first: the first to name a cell decides it, unless
  //    a dense box newer than its fragment owns the cell (step 1 decided it then).  Cells
  //    are unique within one source, so the "first to name it" set is kept only when
  //    several sources touch the region.
  struct Source {
    size_t fi;  // SIZE_MAX: the write buffer
    std::shared_ptr<const SparseTileData> t;
    size_t n;
    bool erased;
  };
  std::vector<Source> sources;
  if (view_.buffer && !view_.buffer->empty()) sources.push_back({SIZE_MAX, nullptr, view_.buffer->cells(), false});
  for (size_t fi = frags_.size(); fi-- > 0;) {
    const Fragment& f = *frags_[fi];
    const FragmentMeta& m = f.meta();
    if ((m.sparse.empty() && m.erased.empty()) || !m.has_domain || !m.domain.intersects(bb)) continue;
    for (size_t ti = 0; ti < m.sparse.size(); ++ti)
      if (m.sparse[ti].mbr.intersects(bb)) sources.push_back({fi, f.sparse_coords(ti, layout_), m.sparse[ti].cells, false});
    for (size_t ti = 0; ti < m.erased.size(); ++ti)
      if (m.erased[ti].mbr.intersects(bb)) sources.push_back({fi, f.erased_tile(ti, layout_), m.erased[ti].cells, true});
  }
  // Row-major index over the extent, the key of the "seen" set (a set of coordinates when
  // the extent's cell count does not fit a word).
  bool linear = true;
  {
    uint64_t total = 1;
    for (int d = 0; d < rank_ && linear; ++d) {
      const uint64_t e = std::max<uint64_t>(1, schema_.extent[d]);
      linear = total <= UINT64_MAX / e;
      total *= e;
    }
  }
  auto lin = [&](const uint64_t* c) {
    uint64_t k = 0;
    for (int d = 0; d < rank_; ++d) k = k * std::max<uint64_t>(1, schema_.extent[d]) + c[d];
    return k;
  };
  const bool dedupe = sources.size() > 1;
  std::unordered_set<uint64_t> seen_lin;
  CellSet seen_coords;
  Coords c(static_cast<size_t>(rank_));
  auto first_time = [&](const uint64_t* p) {
    if (!dedupe) return true;
    if (linear) return seen_lin.insert(lin(p)).second;
    c.assign(p, p + rank_);
    return seen_coords.insert(c).second;
  };
  std::vector<uint64_t> added, removed;  // rank words per cell
  for (const Source& src : sources) {
    const uint64_t* cs = src.fi == SIZE_MAX ? view_.buffer->coords().data() : src.t->coords.data();
    std::vector<uint64_t>& into = src.erased ? removed : added;
    for (size_t k = 0; k < src.n; ++k) {
      const uint64_t* p = cs + k * rank_;
      if (!in_region(p) || !first_time(p)) continue;
      if (src.fi != SIZE_MAX && newer_dense_covers(src.fi, p)) continue;
      into.insert(into.end(), p, p + rank_);
    }
  }

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
      long idx = m.dense_at(layout_, tile, c);
      if (idx >= 0) {
        out[i] = m.dense[idx].kind == DenseEntry::kData;
        break;
      }
      bool decided = false;
      for (size_t ti = 0; ti < m.sparse.size() && !decided; ++ti) {
        const SparseEntry& e = m.sparse[ti];
        if (e.mbr.contains(c) && find_cell(layout_, *f.sparse_coords(ti, layout_), e.cells, c) != SIZE_MAX) {
          out[i] = 1;
          decided = true;
        }
      }
      for (size_t ti = 0; ti < m.erased.size() && !decided; ++ti) {
        const SparseEntry& e = m.erased[ti];
        if (e.mbr.contains(c) && find_cell(layout_, *f.erased_tile(ti, layout_), e.cells, c) != SIZE_MAX) decided = true;
      }
      if (decided) break;
    }
  }
}

}  // namespace tessera
