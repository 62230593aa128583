// ownership.cc — see ownership.h.
#include "engine/read/ownership.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "engine/util/checksum.h"
#include "engine/schema/layout.h"

namespace tessera {

namespace {

struct CoordsHash {
  size_t operator()(const Coords& c) const { return static_cast<size_t>(checksum64(c.data(), c.size() * 8)); }
};

struct TileLess {
  const Layout* layout;
  bool operator()(const Coords& a, const Coords& b) const { return layout->compare_tiles(a.data(), b.data()) < 0; }
};

// Whether a dense box of a fragment newer than frags[frag_index] holds cell c.
// `layout`: the schema's, for the tiling; each fragment's entries are searched in its own
// order.
bool newer_dense_covers(const Schema& schema, const Layout& layout, const FragmentList& frags, size_t frag_index,
                        const uint64_t* c) {
  uint64_t tile[kMaxRank];
  bool have_tile = false;
  for (size_t fi = frags.size(); fi-- > frag_index + 1;) {
    const FragmentMeta& m = frags[fi]->meta();
    if (m.dense.empty() || !m.domain.contains(c)) continue;
    if (!have_tile) {
      layout.tile_of(c, tile);
      have_tile = true;
    }
    if (m.dense_at(frags[fi]->layout(schema), tile, c) >= 0) return true;
  }
  return false;
}

}  // namespace

const uint64_t* Ownership::coords(const CellClaim& c) const {
  const CellSource& s = sources[c.source];
  const std::vector<uint64_t>& all = s.frag == CellSource::kBuffer ? view->buffer->coords() : s.data->coords;
  return &all[c.index * static_cast<size_t>(rank)];
}

void plan_ownership(const Schema& schema, const ReadView& view, const std::vector<Box>& region, Ownership* out) {
  const Layout layout(schema);
  const FragmentList& frags = *view.fragments;
  const int rank = schema.rank();
  *out = Ownership();
  out->rank = rank;
  out->view = &view;
  if (region.empty()) return;
  Box bb = region[0];
  for (const Box& b : region)
    for (int d = 0; d < rank; ++d) {
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

  // 1. Dense boxes, per space tile, newest first: each claims what it covers of the
  //    still-unclaimed region.
  std::map<Coords, std::vector<std::pair<size_t, size_t>>, TileLess> by_tile(TileLess{&layout});
  for (size_t fi = frags.size(); fi-- > 0;) {
    const FragmentMeta& m = frags[fi]->meta();
    if (m.dense.empty() || !m.has_domain || !m.domain.intersects(bb)) continue;
    for (size_t idx = 0; idx < m.dense.size(); ++idx)
      if (m.dense[idx].box.intersects(bb)) by_tile[m.dense[idx].tile].push_back({fi, idx});
  }
  std::vector<Box> remaining, next;
  for (const auto& [tile, entries] : by_tile) {
    const Box tbox = layout.tile_box(tile.data());
    remaining.clear();
    for (const Box& r : region) {
      Box p;
      if (intersect(r, tbox, &p)) remaining.push_back(std::move(p));
    }
    for (const auto& [fi, idx] : entries) {
      if (remaining.empty()) break;
      const DenseEntry& e = frags[fi]->meta().dense[idx];
      next.clear();
      for (const Box& b : remaining) {
        Box piece;
        if (!intersect(b, e.box, &piece)) {
          next.push_back(b);
          continue;
        }
        out->dense.push_back({fi, idx, std::move(piece)});
        subtract(b, e.box, &next);
      }
      remaining.swap(next);
    }
  }

  // 2. Sparse and erased cells, newest first: the first to name a cell decides it, unless
  //    a dense box newer than its fragment claims the cell (step 1 decided it then).
  //    Cells are unique within one source, so the "first to name it" set is kept only
  //    when several sources touch the region.
  std::vector<CellSource>& sources = out->sources;
  if (view.buffer && !view.buffer->empty())
    sources.push_back({CellSource::kBuffer, 0, false, nullptr, view.buffer->cells()});
  for (size_t fi = frags.size(); fi-- > 0;) {
    const Fragment& f = *frags[fi];
    const FragmentMeta& m = f.meta();
    if ((m.sparse.empty() && m.erased.empty()) || !m.has_domain || !m.domain.intersects(bb)) continue;
    for (size_t ti = 0; ti < m.sparse.size(); ++ti)
      if (m.sparse[ti].mbr.intersects(bb))
        sources.push_back({fi, ti, false, f.sparse_coords(ti, f.layout(schema)), m.sparse[ti].cells});
    for (size_t ti = 0; ti < m.erased.size(); ++ti)
      if (m.erased[ti].mbr.intersects(bb))
        sources.push_back({fi, ti, true, f.erased_tile(ti, f.layout(schema)), m.erased[ti].cells});
  }
  // Row-major index over the extent, the key of the "seen" set (a set of coordinates when
  // the extent's cell count does not fit a word).
  bool linear = true;
  {
    uint64_t total = 1;
    for (int d = 0; d < rank && linear; ++d) {
      const uint64_t e = std::max<uint64_t>(1, schema.extent[d]);
      linear = total <= UINT64_MAX / e;
      total *= e;
    }
  }
  auto lin = [&](const uint64_t* c) {
    uint64_t k = 0;
    for (int d = 0; d < rank; ++d) k = k * std::max<uint64_t>(1, schema.extent[d]) + c[d];
    return k;
  };
  const bool dedupe = sources.size() > 1;
  std::unordered_set<uint64_t> seen_lin;
  std::unordered_set<Coords, CoordsHash> seen_coords;
  Coords c(static_cast<size_t>(rank));
  auto first_time = [&](const uint64_t* p) {
    if (!dedupe) return true;
    if (linear) return seen_lin.insert(lin(p)).second;
    c.assign(p, p + rank);
    return seen_coords.insert(c).second;
  };
  for (size_t si = 0; si < sources.size(); ++si) {
    const CellSource& src = sources[si];
    const uint64_t* cs = src.frag == CellSource::kBuffer ? view.buffer->coords().data() : src.data->coords.data();
    for (size_t k = 0; k < src.cells; ++k) {
      const uint64_t* p = cs + k * rank;
      if (!in_region(p) || !first_time(p)) continue;
      if (src.frag != CellSource::kBuffer && newer_dense_covers(schema, layout, frags, src.frag, p)) continue;
      out->cells.push_back({static_cast<uint32_t>(si), k});
    }
  }
}

}  // namespace tessera
