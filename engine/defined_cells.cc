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

bool row_major_less(const Coords& a, const Coords& b) { return a < b; }

// The position of cell c among n cells of t in global order, or false.
bool holds(const Layout& layout, const SparseTileData& t, size_t n, int rank, const uint64_t* c) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int cmp = layout.compare_cells(&t.coords[mid * rank], c);
    if (cmp == 0) return true;
    if (cmp < 0) lo = mid + 1;
    else hi = mid;
  }
  return false;
}

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
  //    a dense box newer than its fragment owns the cell (step 1 decided it then).
  CellSet seen;
  std::vector<Coords> added, removed;
  Coords c(static_cast<size_t>(rank_));
  if (view_.buffer && !view_.buffer->empty()) {
    const auto& cs = view_.buffer->coords();
    for (size_t k = 0; k < view_.buffer->cells(); ++k) {
      const uint64_t* p = &cs[k * rank_];
      if (!in_region(p)) continue;
      c.assign(p, p + rank_);
      if (seen.insert(c).second) added.push_back(c);
    }
  }
  auto visit = [&](size_t fi, const SparseTileData& t, size_t n, std::vector<Coords>* into) {
    for (size_t k = 0; k < n; ++k) {
      const uint64_t* p = &t.coords[k * rank_];
      if (!in_region(p)) continue;
      c.assign(p, p + rank_);
      if (!seen.insert(c).second) continue;
      if (newer_dense_covers(fi, p)) continue;
      into->push_back(c);
    }
  };
  for (size_t fi = frags_.size(); fi-- > 0;) {
    const Fragment& f = *frags_[fi];
    const FragmentMeta& m = f.meta();
    if ((m.sparse.empty() && m.erased.empty()) || !m.has_domain || !m.domain.intersects(bb)) continue;
    for (size_t ti = 0; ti < m.sparse.size(); ++ti)
      if (m.sparse[ti].mbr.intersects(bb)) visit(fi, *f.sparse_coords(ti, layout_), m.sparse[ti].cells, &added);
    for (size_t ti = 0; ti < m.erased.size(); ++ti)
      if (m.erased[ti].mbr.intersects(bb)) visit(fi, *f.erased_tile(ti, layout_), m.erased[ti].cells, &removed);
  }

  // 3. Dense pieces minus the erased cells newer than them, plus the sparse cells no
  //    dense piece already holds.
  uint64_t tile[kMaxRank];
  auto piece_of = [&](const Coords& cell) -> long {
    layout_.tile_of(cell.data(), tile);
    auto it = dense_of_tile.find(Coords(tile, tile + rank_));
    if (it == dense_of_tile.end()) return -1;
    for (size_t i : it->second)
      if (dense[i].contains(cell.data())) return static_cast<long>(i);
    return -1;
  };
  std::map<size_t, std::vector<Coords>> cut;  // dense piece -> its erased cells
  for (const Coords& cell : removed) {
    long i = piece_of(cell);
    if (i >= 0) cut[static_cast<size_t>(i)].push_back(cell);
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
  added.erase(std::remove_if(added.begin(), added.end(), [&](const Coords& cell) { return piece_of(cell) >= 0; }),
              added.end());
  std::sort(added.begin(), added.end(), row_major_less);
  const int last = rank_ - 1;
  for (size_t i = 0; i < added.size();) {
    size_t j = i + 1;
    while (j < added.size() && std::equal(added[j].begin(), added[j].begin() + last, added[i].begin()) &&
           added[j][last] == added[j - 1][last] + 1)
      ++j;
    Coords hi = added[i];
    hi[last] = added[j - 1][last];
    out->push_back(Box(added[i], std::move(hi)));
    i = j;
  }
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
        if (e.mbr.contains(c) && holds(layout_, *f.sparse_coords(ti, layout_), e.cells, rank_, c)) {
          out[i] = 1;
          decided = true;
        }
      }
      for (size_t ti = 0; ti < m.erased.size() && !decided; ++ti) {
        const SparseEntry& e = m.erased[ti];
        if (e.mbr.contains(c) && holds(layout_, *f.erased_tile(ti, layout_), e.cells, rank_, c)) decided = true;
      }
      if (decided) break;
    }
  }
}

}  // namespace tessera
