// consolidator.cc — see consolidator.h.
#include "engine/consolidate/consolidator.h"

#include <algorithm>
#include <cstring>

#include "engine/geometry/strided_copy.h"

namespace tessera {

Consolidator::Consolidator(const Schema& schema, std::vector<std::shared_ptr<Fragment>> in, bool keep_erased)
    : schema_(schema), layout_(schema), in_(std::move(in)), keep_erased_(keep_erased) {
  const int r = schema_.rank();
  for (auto& f : in_) {
    const Layout& fl = f->layout(schema_);  // the input's own order (its cells' keys)
    for (auto& e : f->meta().dense) tiles_.insert({&layout_, e.tile});
    auto add_tiles = [&](const SparseTileData& t, uint64_t cells) {
      Coords tc(r), prev;
      for (uint64_t k = 0; k < cells; ++k) {
        layout_.tile_of(&t.coords[k * r], tc.data());
        if (tc == prev) continue;  // cells are tile-major: insert each tile once
        tiles_.insert({&layout_, tc});
        prev = tc;
      }
    };
    for (size_t ti = 0; ti < f->meta().sparse.size(); ++ti)
      add_tiles(*f->sparse_coords(ti, fl), f->meta().sparse[ti].cells);
    for (size_t ti = 0; ti < f->meta().erased.size(); ++ti)
      add_tiles(*f->erased_tile(ti, fl), f->meta().erased[ti].cells);
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

void Consolidator::write(FragmentWriter& w, const std::atomic<bool>* cancel) {
  const int r = schema_.rank();
  const size_t es = schema_.elem_size;
  std::vector<uint8_t> buf, covered;
  std::vector<uint64_t> sp_coords, er_coords;
  std::vector<uint8_t> sp_values;
  for (const TileKey& tk : tiles_) {
    if (cancel && cancel->load()) throw_error(Errc::kBusy, "consolidation given up: the array is closing");
    const Box tbox = layout_.tile_box(tk.t.data());
    // The tile's key range in one input's order (its cells' keys are in that order).
    std::vector<uint64_t> klo, khi;
    // Bounding box of what the inputs hold in this tile.
    BoundingBox bound;
    auto grow = [&](const Box& b) { bound.add(b); };
    struct SparseRef {
      std::shared_ptr<const SparseTileData> data;
      size_t first, last;  // the cells of this space tile
    };
    std::vector<std::vector<SparseRef>> sparse_in(in_.size()), erased_in(in_.size());
    auto take = [&](const Layout& fl, const SparseEntry& e, std::shared_ptr<const SparseTileData> t,
                    std::vector<SparseRef>* into) {
      klo.resize(fl.key_size());
      khi.resize(fl.key_size());
      fl.key_words(tbox.lo.data(), klo.data());
      fl.key_words(tbox.hi.data(), khi.data());
      auto [a, b] = fl.key_range(t->keys.data(), e.cells, klo.data(), khi.data());
      if (a == b) return;
      for (size_t k = a; k < b; ++k) bound.add(&t->coords[k * r], r);
      into->push_back({std::move(t), a, b});
    };
    for (size_t fi = 0; fi < in_.size(); ++fi) {
      const FragmentMeta& m = in_[fi]->meta();
      const Layout& fl = in_[fi]->layout(schema_);
      auto [d0, d1] = m.dense_range(fl, tk.t.data());
      for (size_t idx = d0; idx < d1; ++idx) grow(m.dense[idx].box);
      for (size_t ti = 0; ti < m.sparse.size(); ++ti)
        if (m.sparse[ti].mbr.intersects(tbox)) take(fl, m.sparse[ti], in_[fi]->sparse_tile(ti, fl), &sparse_in[fi]);
      for (size_t ti = 0; ti < m.erased.size(); ++ti)
        if (m.erased[ti].mbr.intersects(tbox)) take(fl, m.erased[ti], in_[fi]->erased_tile(ti, fl), &erased_in[fi]);
    }
    if (!bound.any) continue;
    const Box& bb = bound.box;
    const uint64_t n = bb.cells();
    uint64_t bstride[kMaxRank];
    layout_.cell_strides(bb, bstride);
    buf.assign(n * es, 0);
    covered.assign(n, 0);
    // Paint oldest to newest.
    for (size_t fi = 0; fi < in_.size(); ++fi) {
      const FragmentMeta& m = in_[fi]->meta();
      const Layout& fl = in_[fi]->layout(schema_);
      auto [d0, d1] = m.dense_range(fl, tk.t.data());
      for (size_t idx = d0; idx < d1; ++idx) {
        const DenseEntry& e = m.dense[idx];
        uint64_t shape[kMaxRank], estride[kMaxRank], off = 0;
        for (int d = 0; d < r; ++d) {
          shape[d] = e.box.hi[d] - e.box.lo[d] + 1;
          off += (e.box.lo[d] - bb.lo[d]) * bstride[d];
        }
        fl.cell_strides(e.box, estride);  // the input's cell order
        if (e.kind == DenseEntry::kData) {
          auto data = in_[fi]->dense_tile(idx);
          strided_copy(r, shape, data->data(), estride, buf.data() + off * es, bstride, es);
        }
        // Mark coverage (a 1-byte-element copy): data, or erased by a fill box.
        std::vector<uint8_t> mark(e.box.cells(), e.kind == DenseEntry::kData ? kCellData : kCellErased);
        strided_copy(r, shape, mark.data(), estride, covered.data() + off, bstride, 1);
      }
      auto paint = [&](const std::vector<SparseRef>& refs, uint8_t what) {
        for (const SparseRef& sr : refs) {
          for (size_t k = sr.first; k < sr.last; ++k) {
            const uint64_t* c = &sr.data->coords[k * r];
            uint64_t off = 0;
            for (int d = 0; d < r; ++d) off += (c[d] - bb.lo[d]) * bstride[d];
            if (what == kCellData) std::memcpy(&buf[off * es], &sr.data->values[k * es], es);
            covered[off] = what;
          }
        }
      };
      paint(sparse_in[fi], kCellData);  // disjoint from the fragment's erased cells
      paint(erased_in[fi], kCellErased);
    }
    const uint64_t ndata = static_cast<uint64_t>(std::count(covered.begin(), covered.end(), kCellData));
    const uint64_t nerased = static_cast<uint64_t>(std::count(covered.begin(), covered.end(), kCellErased));
    if (ndata == n) {
      w.add_dense_tile(tk.t.data(), bb, std::move(buf));
      buf = {};
      continue;
    }
    if (keep_erased_ && nerased == n) {  // all of bb undefined: one fill box
      w.add_fill_tile(tk.t.data(), bb);
      continue;
    }
    // Emit the data cells as sparse cells and the erased ones (when kept) as erased
    // cells, in cell order (= global order inside the tile).
    sp_coords.clear();
    sp_values.clear();
    er_coords.clear();
    Coords c(r);
    for (uint64_t k = 0; k < n; ++k) {
      if (covered[k] == kCellNone || (covered[k] == kCellErased && !keep_erased_)) continue;
      layout_.cell_at(bb, k, c.data());  // the k-th cell of bb in cell order
      if (covered[k] == kCellErased) {
        er_coords.insert(er_coords.end(), c.begin(), c.end());
        continue;
      }
      sp_coords.insert(sp_coords.end(), c.begin(), c.end());
      sp_values.insert(sp_values.end(), &buf[k * es], &buf[k * es] + es);
    }
    w.add_sparse_cells(sp_coords.data(), sp_values.data(), sp_coords.size() / r);
    w.add_erased_cells(er_coords.data(), er_coords.size() / r);
  }
}

}  // namespace tessera
