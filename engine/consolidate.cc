// Consolidation (TileDB §4.3): merge adjacent fragments into one, tile by tile.
//
// The merged fragments must be adjacent in fragment order: the result takes the id of the
// newest one with gen + 1, so it sorts exactly where they were.  For every space tile any
// input touches, the inputs' pieces are painted oldest to newest into one tile buffer with
// a coverage mask (memory: one tile plus the inputs' decoded tiles for that tile).  Cells
// no input covered stay uncovered — they must keep falling through to older fragments — so
// a tile whose covered cells fill a box becomes a dense piece and any other tile keeps its
// covered cells as sparse cells.  The result is published atomically and lists the ids it
// replaces; only then are the inputs unlinked (readers holding them open keep reading).
#include <algorithm>
#include <cstring>
#include <set>

#include "engine/array.h"
#include "engine/file_io.h"
#include "engine/fragment_writer.h"
#include "engine/strided_copy.h"

namespace tessera {

namespace {

struct TileKey {
  const Layout* layout;
  Coords t;
  bool operator<(const TileKey& o) const { return layout->compare_tiles(t.data(), o.t.data()) < 0; }
};

}  // namespace

Status Array::consolidate(size_t first, size_t last) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_writable();
    flush_impl();
    if (first > last || last >= frags_.size())
      throw_error(Errc::kInvalidArgument, "consolidate: fragment range out of bounds");
    if (first == last) return;
    consolidate_range(first, last);
  });
}

Status Array::consolidate_all() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_writable();
    flush_impl();
    if (frags_.size() > 1) consolidate_range(0, frags_.size() - 1);
  });
}

Status Array::consolidate_auto(size_t min_run, double ratio) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_writable();
    flush_impl();
    if (min_run < 2) min_run = 2;
    for (;;) {
      // Find the longest run of adjacent fragments of similar size.
      size_t best_first = 0, best_len = 0;
      for (size_t i = 0; i < frags_.size();) {
        uint64_t lo = frags_[i]->file_size(), hi = lo;
        size_t j = i + 1;
        for (; j < frags_.size(); ++j) {
          uint64_t s = frags_[j]->file_size();
          uint64_t nlo = std::min(lo, s), nhi = std::max(hi, s);
          if (static_cast<double>(nhi) > ratio * static_cast<double>(nlo)) break;
          lo = nlo;
          hi = nhi;
        }
        if (j - i > best_len) {
          best_len = j - i;
          best_first = i;
        }
        i = j;
      }
      if (best_len < min_run) return;
      consolidate_range(best_first, best_first + best_len - 1);
    }
  });
}

Status Array::consolidate_part(uint32_t part, uint32_t parts) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_writable();
    if (parts == 0 || part >= parts) throw_error(Errc::kInvalidArgument, "consolidate_part: part out of range");
    if (opts_.durable_writes) throw_error(Errc::kInvalidArgument, "consolidate_part: needs deferred publishing");
    finish_parked();
    spill();
    if (!unpublished_.empty())
      throw_error(Errc::kInvalidArgument, "consolidate_part: publish pending writes first (an epoch commit)");
    if (frags_.size() > 1) consolidate_range(0, frags_.size() - 1, part, parts);
  });
}

void Array::consolidate_range(size_t first, size_t last, uint32_t part, uint32_t parts) {
  Layout layout(schema_);
  const int r = schema_.rank();
  const size_t es = schema_.elem_size;
  std::vector<std::shared_ptr<Fragment>> in(frags_.begin() + first, frags_.begin() + last + 1);

  // The tiles any input touches, in tile order.
  std::set<TileKey> tiles;
  for (auto& f : in) {
    for (auto& e : f->meta().dense) tiles.insert({&layout, e.tile});
    for (size_t ti = 0; ti < f->meta().sparse.size(); ++ti) {
      auto t = f->sparse_tile(ti, layout);
      Coords tc(r), prev;
      for (uint64_t k = 0; k < f->meta().sparse[ti].cells; ++k) {
        layout.tile_of(&t->coords[k * r], tc.data());
        if (tc == prev) continue;  // cells are tile-major: insert each tile once
        tiles.insert({&layout, tc});
        prev = tc;
      }
    }
  }

  // This part's share: a contiguous range of the tiles in tile order.
  if (parts > 1) {
    const size_t n = tiles.size(), lo = n * part / parts, hi = n * (part + 1) / parts;
    auto b = tiles.begin();
    std::advance(b, lo);
    auto e = b;
    std::advance(e, hi - lo);
    tiles = std::set<TileKey>(b, e);
    if (tiles.empty()) return;  // the other parts replace the inputs
  }

  // Parts get distinct generations: the names differ, and all still sort right after
  // the newest input (only its own consolidations share its ts, rank and seq).
  FragmentId id = in.back()->meta().id;
  id.gen += 1 + part;
  // Parts are published together by an epoch commit, through files (parallel tools).
  if (parts > 1 && cat_) ensure_dir(false);
  std::unique_ptr<FragmentWriter> wp =
      parts > 1 ? std::make_unique<FragmentWriter>(*ctx_, frag_dir_, id, schema_) : make_writer(id);
  FragmentWriter& w = *wp;
  std::vector<FragmentId> replaced;
  for (auto& f : in) replaced.push_back(f->meta().id);
  w.set_replaces(replaced);

  std::vector<uint8_t> buf, covered;
  std::vector<uint64_t> sp_coords;
  std::vector<uint8_t> sp_values;
  for (const TileKey& tk : tiles) {
    const Box tbox = layout.tile_box(tk.t.data());
    std::vector<uint64_t> klo(layout.key_size()), khi(layout.key_size());
    layout.key_words(tbox.lo.data(), klo.data());
    layout.key_words(tbox.hi.data(), khi.data());
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
    std::vector<std::vector<SparseRef>> sparse_in(in.size());
    for (size_t fi = 0; fi < in.size(); ++fi) {
      const FragmentMeta& m = in[fi]->meta();
      auto [d0, d1] = m.dense_range(layout, tk.t.data());
      for (size_t idx = d0; idx < d1; ++idx) grow(m.dense[idx].box);
      for (size_t ti = 0; ti < m.sparse.size(); ++ti) {
        if (!m.sparse[ti].mbr.intersects(tbox)) continue;
        auto t = in[fi]->sparse_tile(ti, layout);
        auto [a, b] = layout.key_range(t->keys.data(), m.sparse[ti].cells, klo.data(), khi.data());
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
    layout.cell_strides(bb, bstride);
    buf.assign(n * es, 0);
    covered.assign(n, 0);
    uint64_t ncovered = 0;
    // Paint oldest to newest.
    for (size_t fi = 0; fi < in.size(); ++fi) {
      const FragmentMeta& m = in[fi]->meta();
      auto [d0, d1] = m.dense_range(layout, tk.t.data());
      for (size_t idx = d0; idx < d1; ++idx) {
        const DenseEntry& e = m.dense[idx];
        uint64_t shape[kMaxRank], estride[kMaxRank], off = 0;
        for (int d = 0; d < r; ++d) {
          shape[d] = e.box.hi[d] - e.box.lo[d] + 1;
          off += (e.box.lo[d] - bb.lo[d]) * bstride[d];
        }
        if (e.kind == DenseEntry::kData) {
          auto data = in[fi]->dense_tile(idx);
          layout.cell_strides(e.box, estride);
          strided_copy(r, shape, data->data(), estride, buf.data() + off * es, bstride, es);
        } else {
          // Fill entries become explicit fill values: they must keep hiding older data.
          std::vector<uint8_t> fill(e.box.cells() * es);
          for (uint64_t k = 0; k < e.box.cells(); ++k) std::memcpy(&fill[k * es], schema_.fill_value(), es);
          layout.cell_strides(e.box, estride);
          strided_copy(r, shape, fill.data(), estride, buf.data() + off * es, bstride, es);
        }
        // Mark coverage (a 1-byte-element copy of ones).
        std::vector<uint8_t> ones(e.box.cells(), 1);
        layout.cell_strides(e.box, estride);
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
      layout.cell_at(bb, k, c.data());  // the k-th cell of bb in cell order
      sp_coords.insert(sp_coords.end(), c.begin(), c.end());
      sp_values.insert(sp_values.end(), &buf[k * es], &buf[k * es] + es);
    }
    w.add_sparse_cells(sp_coords.data(), sp_values.data(), sp_coords.size() / r);
  }
  if (parts > 1) {
    // Published with the other parts by an epoch commit; until then not even this
    // rank's reads use it (it would hide the inputs of the other parts' tiles).
    std::string tmp = w.finish();
    unpublished_.push_back({Fragment::open(tmp, ctx_), w.final_path()});
    return;
  }
  if (cat_) {
    // The result is durable before any input goes: an inline result and the removal of
    // inline inputs are one catalog batch; a file result is synced and renamed first
    // (its footer's `replaces` hides the inputs until their records are deleted).
    std::string tmp = w.finish();
    std::shared_ptr<Fragment> nf;
    CatalogBatch b;
    if (tmp.empty()) {
      auto bytes = std::make_shared<const std::vector<uint8_t>>(w.take_inline());
      const std::string key = frag_key(id);
      nf = Fragment::open_inline(inline_label(key), bytes, ctx_);
      b.put(key, std::string(bytes->begin(), bytes->end()));
      inline_bytes_ += bytes->size();
      if (cat_->budget) cat_->budget->used += bytes->size();
    } else {
      nf = Fragment::open(tmp, ctx_);
      FragmentWriter::publish_finished(nf->file(), tmp, w.final_path());
      sync_dir(frag_dir_);
      nf->set_path(w.final_path());
    }
    for (auto& f : in)
      if (f->is_inline()) {
        b.del(frag_key(f->meta().id));
        release_inline(*f);
      }
    cat_->catalog->commit(b);
    cat_->catalog->sync();
    add_fragment(nf, replaced);
    bool files = false;
    for (auto& f : in)
      if (!f->is_inline()) {
        remove_file(f->path());
        files = true;
      }
    if (files) sync_dir(frag_dir_);
    return;
  }
  std::string path = w.commit();
  publish(path, replaced);
  for (auto& f : in) remove_file(f->path());
  sync_dir(frag_dir_);
}

}  // namespace tessera
