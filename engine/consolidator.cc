// consolidator.cc — see consolidator.h.
#include "engine/consolidator.h"

#include <algorithm>
#include <cstring>

#include "engine/strided_copy.h"

namespace tessera {

Consolidator::Consolidator(const Schema& schema, std::vector<std::shared_ptr<Fragment>> in)
    : schema_(schema), layout_(schema), in_(std::move(in)) {
  const int r = schema_.rank();
  for (auto& f : in_) {
    for (auto& e : f->meta().dense) tiles_.insert({&layout_, e.tile});
    for (size_t ti = 0; ti < f->meta().sparse.size(); ++ti) {
      auto t = f->sparse_tile(ti, layout_);
      Coords tc(r), prev;
      for (uint64_t k = 0; k < f->meta().sparse[ti].cells; ++k) {
        layout_.tile_of(&t->coords[k * r], tc.data());
        if (tc == prev) continue;  // cells are tile-major: insert each tile once
        tiles_.insert({&layout_, tc});
        prev = tc;
      }
    }
  }
}

bool Consolidator::select_part(uint32_t part, uint32_t parts) {
  if (parts <= 1) return !tiles_.empty();
  const size_t n = tiles_.size(), lo = n * part / parts, hi = n * (part + 1) / parts;
  auto b = tiles_.begin();
  std::advance(b, lo);
  auto e = b;
  std::advance(e, hi - lo);
  tiles_ = std::set<TileKey>(b, e);
  return !tiles_.empty();
}

FragmentId Consolidator::result_id(uint32_t part) const {
  // Parts get distinct generations: the names differ, and all still sort right after
  // the newest input (only its own consolidations share its ts, rank and seq).
  FragmentId id = in_.back()->meta().id;
  id.gen += 1 + part;
  return id;
}

std::vector<FragmentId> Consolidator::replaced() const {
  std::vector<FragmentId> out;
  for (auto& f : in_) out.push_back(f->meta().id);
  return out;
}

void Consolidator::write(FragmentWriter& w) {
  const int r = schema_.rank();
  const size_t es = schema_.elem_size;
  std::vector<uint8_t> buf, covered;
  std::vector<uint64_t> sp_coords;
  std::vector<uint8_t> sp_values;
  for (const TileKey& tk : tiles_) {
    const Box tbox = layout_.tile_box(tk.t.data());
    std::vector<uint64_t> klo(layout_.key_size()), khi(layout_.key_size());
    layout_.key_words(tbox.lo.data(), klo.data());
    layout_.key_words(tbox.hi.data(), khi.data());
    // Bounding box of what the inputs hold in this tile.
    Box bb;
    bool any = false;
    auto grow = [&](const Box& b) {
      if (!any) {
        bb = b;
        any = true;
        return;
      }
      for (int d = 0; d < r; ++d) {
        bb.lo[d] = std::min(bb.lo[d], b.lo[d]);
        bb.hi[d] = std::max(bb.hi[d], b.hi[d]);
      }
    };
    struct SparseRef {
      std::shared_ptr<const SparseTileData> data;
      size_t first, last;  // the cells of this space tile
    };
    std::vector<std::vector<SparseRef>> sparse_in(in_.size());
    for (size_t fi = 0; fi < in_.size(); ++fi) {
      const FragmentMeta& m = in_[fi]->meta();
      auto [d0, d1] = m.dense_range(layout_, tk.t.data());
      for (size_t idx = d0; idx < d1; ++idx) grow(m.dense[idx].box);
      for (size_t ti = 0; ti < m.sparse.size(); ++ti) {
        if (!m.sparse[ti].mbr.intersects(tbox)) continue;
        auto t = in_[fi]->sparse_tile(ti, layout_);
        auto [a, b] = layout_.key_range(t->keys.data(), m.sparse[ti].cells, klo.data(), khi.data());
        if (a == b) continue;
        Box cells_bb(Coords(&t->coords[a * r], &t->coords[a * r] + r),
                     Coords(&t->coords[a * r], &t->coords[a * r] + r));
        for (size_t k = a + 1; k < b; ++k) {
          for (int d = 0; d < r; ++d) {
            cells_bb.lo[d] = std::min(cells_bb.lo[d], t->coords[k * r + d]);
            cells_bb.hi[d] = std::max(cells_bb.hi[d], t->coords[k * r + d]);
          }
        }
        grow(cells_bb);
        sparse_in[fi].push_back({t, a, b});
      }
    }
    if (!any) continue;
    const uint64_t n = bb.cells();
    uint64_t bstride[kMaxRank];
    layout_.cell_strides(bb, bstride);
    buf.assign(n * es, 0);
    covered.assign(n, 0);
    uint64_t ncovered = 0;
    // Paint oldest to newest.
    for (size_t fi = 0; fi < in_.size(); ++fi) {
      const FragmentMeta& m = in_[fi]->meta();
      auto [d0, d1] = m.dense_range(layout_, tk.t.data());
      for (size_t idx = d0; idx < d1; ++idx) {
        const DenseEntry& e = m.dense[idx];
        uint64_t shape[kMaxRank], estride[kMaxRank], off = 0;
        for (int d = 0; d < r; ++d) {
          shape[d] = e.box.hi[d] - e.box.lo[d] + 1;
          off += (e.box.lo[d] - bb.lo[d]) * bstride[d];
        }
        if (e.kind == DenseEntry::kData) {
          auto data = in_[fi]->dense_tile(idx);
          layout_.cell_strides(e.box, estride);
          strided_copy(r, shape, data->data(), estride, buf.data() + off * es, bstride, es);
        } else {
          // Fill entries become explicit fill values: they must keep hiding older data.
          std::vector<uint8_t> fill(e.box.cells() * es);
          for (uint64_t k = 0; k < e.box.cells(); ++k) std::memcpy(&fill[k * es], schema_.fill_value(), es);
          layout_.cell_strides(e.box, estride);
          strided_copy(r, shape, fill.data(), estride, buf.data() + off * es, bstride, es);
        }
        // Mark coverage (a 1-byte-element copy of ones).
        std::vector<uint8_t> ones(e.box.cells(), 1);
        layout_.cell_strides(e.box, estride);
        strided_copy(r, shape, ones.data(), estride, covered.data() + off, bstride, 1);
      }
      for (const SparseRef& sr : sparse_in[fi]) {
        for (size_t k = sr.first; k < sr.last; ++k) {
          const uint64_t* c = &sr.data->coords[k * r];
          uint64_t off = 0;
          for (int d = 0; d < r; ++d) off += (c[d] - bb.lo[d]) * bstride[d];
          std::memcpy(&buf[off * es], &sr.data->values[k * es], es);
          covered[off] = 1;
        }
      }
    }
    ncovered = static_cast<uint64_t>(std::count(covered.begin(), covered.end(), uint8_t{1}));
    if (ncovered == n) {
      w.add_dense_tile(tk.t.data(), bb, std::move(buf));
      buf = {};
      continue;
    }
    // Emit covered cells as sparse, in cell order (= global order inside the tile).
    sp_coords.clear();
    sp_values.clear();
    Coords c(r);
    for (uint64_t k = 0; k < n; ++k) {
      if (!covered[k]) continue;
      layout_.cell_at(bb, k, c.data());  // the k-th cell of bb in cell order
      sp_coords.insert(sp_coords.end(), c.begin(), c.end());
      sp_values.insert(sp_values.end(), &buf[k * es], &buf[k * es] + es);
    }
    w.add_sparse_cells(sp_coords.data(), sp_values.data(), sp_coords.size() / r);
  }
}

}  // namespace tessera
