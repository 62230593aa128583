// write_path.cc — WritePath (write_path.h): where a write goes (a dense fragment written as
// it comes, appended to the open one in tile order; a blob kept whole; cells in the write
// buffer; a small box also shared through the MPI share log) and the checks before it.
#include "engine/array/array.h"

#include <algorithm>

#include "engine/array/array_files.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_writer.h"
#include "engine/publish/publish_log.h"
#include "engine/read/read_planner.h"
#include "engine/tile/row_spans.h"
#include "engine/geometry/strided_copy.h"

namespace tessera {

using namespace array_files;

void WritePath::write(const Selection& sel, const void* src, const uint64_t* src_strides) {
  a_.check_writable();  // the run goes on only if this write is logged (below)
  a_.require_var(false);
  a_.check_selection(sel);
  if (sel.empty()) return;
  const int r = a_.schema_.rank();
  uint64_t sstride[kMaxRank];
  if (src_strides) std::copy(src_strides, src_strides + r, sstride);
  else sel.dense_strides(sstride);
  const auto* p = static_cast<const uint8_t*>(src);
  if (a_.compact_) return a_.compact_->write(sel, p, sstride);
  const uint64_t bytes = sel.cells() * a_.schema_.elem_size;
  const bool blob_size = sel.is_box() && !a_.opts_.durable_writes && sel.cells() >= a_.opts_.blob_min_cells &&
                         bytes <= a_.opts_.blob_bytes;
  const bool large = sel.is_box() && sel.cells() >= std::min(a_.opts_.direct_cells, a_.schema_.tile_cells());
  // A large box of a filtered array, out of tile order, is a blob too: its filtering
  // then runs in a background flush instead of inside this call, and rewrites of its
  // tiles before the flush are merged before they are compressed.  Unfiltered, writing
  // it at once costs no more than copying it into memory (docs/benchmarks.md).
  const bool filtered_blob = large && blob_size && !a_.schema_.filters.empty() && !appends_after_direct(sel.bbox());
  // MPI: a small box is shared through the share log; anything else through files.
  if (large && !filtered_blob) a_.share_.note_unlogged_write();
  else if (!a_.share_.note_logged_write(sel, p, sstride)) a_.share_.note_unlogged_write();
  if (large && !filtered_blob) {
    // Large boxes go to a dense fragment, appended to the open one while they come in
    // tile order (frames, rows written in order: one fragment, written as it goes).
    spill_blobs_over(sel.bbox());
    write_dense(sel, p, sstride);
    return;
  }
  close_direct();  // everything else is newer than the open dense fragment
  if (blob_size) {
    buffer_blob(sel, p, sstride);
  } else {
    buffer_cells(sel, p, sstride);
  }
}

void WritePath::write_boxes(const std::vector<Box>& boxes, const void* src) {
  a_.require_writable();
  a_.require_var(false);
  for (const Box& b : boxes) a_.check_selection(Selection::from_box(b));
  const size_t es = a_.schema_.elem_size;
  const auto* p = static_cast<const uint8_t*>(src);
  if (a_.compact_) {
    for (const Box& b : boxes) {
      uint64_t st[kMaxRank];
      Selection sel = Selection::from_box(b);
      sel.dense_strides(st);
      a_.compact_->write(sel, p, st);
      p += b.cells() * es;
    }
    return;
  }
  const Layout layout(a_.schema_);
  const int r = a_.schema_.rank();
  const uint64_t direct = std::min(a_.opts_.direct_cells, a_.schema_.tile_cells());
  // The large boxes' pieces, all in one fragment in tile order (the boxes are disjoint).
  struct Piece {
    Coords tile;
    Box piece;
    const Box* box;
    const uint8_t* src;
  };
  std::vector<Piece> pieces;
  std::vector<std::pair<const Box*, const uint8_t*>> small;
  for (const Box& b : boxes) {
    if (b.cells() >= direct) {
      spill_blobs_over(b);
      buffer_->erase_inside(b);  // older buffered cells there are overwritten
      layout.for_each_tile(b, [&](const Coords& t) {
        Box piece;
        if (intersect(layout.tile_box(t.data()), b, &piece)) pieces.push_back({t, std::move(piece), &b, p});
      });
    } else {
      small.push_back({&b, p});
    }
    p += b.cells() * es;
  }
  close_direct();
  if (!pieces.empty()) {
    std::stable_sort(pieces.begin(), pieces.end(),
                     [&](const Piece& x, const Piece& y) { return layout.compare_tiles(x.tile.data(), y.tile.data()) < 0; });
    // A fragment holds one data piece per tile: the k-th piece of a tile goes to the
    // k-th fragment (as many fragments as the most boxes sharing one tile; the boxes
    // are disjoint, so the fragments' order does not matter).
    std::vector<std::unique_ptr<FragmentWriter>> layers;
    const Coords* last_tile = nullptr;
    size_t k = 0;
    for (const Piece& pc : pieces) {
      k = last_tile && *last_tile == pc.tile ? k + 1 : 0;
      last_tile = &pc.tile;
      if (k == layers.size()) layers.push_back(a_.make_writer(a_.next_id()));
      FragmentWriter* w = layers[k].get();
      uint64_t shape[kMaxRank], sstride[kMaxRank], dstride[kMaxRank], soff = 0;
      Selection::from_box(*pc.box).dense_strides(sstride);
      for (int d = 0; d < r; ++d) {
        shape[d] = pc.piece.hi[d] - pc.piece.lo[d] + 1;
        soff += (pc.piece.lo[d] - pc.box->lo[d]) * sstride[d];
      }
      layout.cell_strides(pc.piece, dstride);
      std::vector<uint8_t> data(pc.piece.cells() * es);
      strided_copy(r, shape, pc.src + soff * es, sstride, data.data(), dstride, es);
      w->add_dense_tile(pc.tile.data(), pc.piece, std::move(data));
    }
    if (a_.opts_.durable_writes && layers.size() > 1) {
      // One call, one commit: published one by one, a crash between two renames would
      // keep some of this write's boxes and lose the others.  The publish journal makes
      // the layers visible together (stage_publish).
      for (auto& w : layers) a_.pub_.complete(std::move(w), /*batch=*/true);
      a_.materialize_inline();  // a batch of files and records commits through the journal
      a_.pub_.stage_publish(false);
      a_.pub_.finish_publish(false);
    } else {
      for (auto& w : layers) a_.pub_.park(std::move(w));
    }
  }
  for (const auto& [b, sp] : small) {
    Selection sel = Selection::from_box(*b);
    uint64_t st[kMaxRank];
    sel.dense_strides(st);
    const bool blob =
        !a_.opts_.durable_writes && b->cells() >= a_.opts_.blob_min_cells && b->cells() * es <= a_.opts_.blob_bytes;
    if (blob) buffer_blob(sel, sp, st);
    else buffer_cells(sel, sp, st);
  }
}

void WritePath::write_dense(const Selection& sel, const uint8_t* src, const uint64_t* sstride) {
  const Box& box = sel.bbox();
  // Buffered cells inside the box are older than this write and now overwritten.
  buffer_->erase_inside(box);
  Layout layout(a_.schema_);
  const int r = a_.schema_.rank();
  const size_t es = a_.schema_.elem_size;
  // A box whose tiles all come after the open dense fragment's last one (frames, rows or
  // chunks written in order) is appended to it: a series of writes becomes one fragment
  // file, written as it goes, instead of a file each.  Anything else written, read or
  // spilled in between closes it (close_direct), so fragment order stays write order.
  const bool append = !a_.opts_.durable_writes && appends_after_direct(box);
  if (!append) {
    close_direct();
    direct_ = a_.make_writer(a_.next_id());
    direct_skip_ = 0;
    direct_whole_ = false;
  }
  FragmentWriter* w = direct_.get();
  // The box's last tile in tile order, where the next append must start after: the last
  // one for_each_tile visits (not the hi corner's, under a Hilbert order).
  Coords last;
  layout.for_each_tile(box, [&](const Coords& t) {
    last = t;
    Box piece;
    intersect(layout.tile_box(t.data()), box, &piece);
    uint64_t shape[kMaxRank], dstride[kMaxRank];
    uint64_t soff = 0;
    for (int d = 0; d < r; ++d) {
      shape[d] = piece.hi[d] - piece.lo[d] + 1;
      soff += (piece.lo[d] - box.lo[d]) * sstride[d];
    }
    layout.cell_strides(piece, dstride);
    // The piece's cells already lie in the source in the tile's cell order (a chunk-
    // sized write from a chunk-shaped buffer): written from there, unfiltered.
    bool in_place = a_.schema_.filters.empty();
    for (int d = 0; d < r && in_place; ++d) in_place = shape[d] == 1 || sstride[d] == dstride[d];
    if (in_place) {
      w->add_dense_tile_from(t.data(), piece, src + soff * es);
      return;
    }
    if (a_.schema_.filters.empty() && row_spans(r, shape, src + soff * es, sstride, dstride, es, &spans_)) {
      // Unfiltered, in rows of the source long enough to write from: written straight
      // from them (pwritev), the tile never gathered (issue 20, the h5py demo's chunk-
      // row blocks).
      w->add_dense_tile_spans(t.data(), piece, spans_.data(), spans_.size());
      return;
    }
    if (a_.schema_.filters.empty()) {
      // Unfiltered, short rows: gathered into a scratch buffer kept across writes and
      // written from there (add_dense_tile_from copies it into the page cache before
      // returning).  A fresh buffer per piece cost a page fault per 4 KiB (1.5-5 us each
      // here): random 16 MiB blob writes ran at a third of native's speed.
      scratch_.resize(std::max<size_t>(scratch_.size(), piece.cells() * es));
      strided_copy(r, shape, src + soff * es, sstride, scratch_.data(), dstride, es);
      w->add_dense_tile_from(t.data(), piece, scratch_.data());
      return;
    }
    std::vector<uint8_t> data(piece.cells() * es);
    strided_copy(r, shape, src + soff * es, sstride, data.data(), dstride, es);
    w->add_dense_tile(t.data(), piece, std::move(data));
  });
  if (scratch_.size() > (uint64_t{64} << 20)) std::vector<uint8_t>().swap(scratch_);  // bounded
  direct_last_ = last;
  if (a_.opts_.durable_writes) close_direct();  // durable when the call returns
}

void WritePath::buffer_blob(const Selection& sel, const uint8_t* src, const uint64_t* sstride) {
  const Box& box = sel.bbox();
  buffer_->erase_inside(box);  // buffered cells there are older than this write
  const Layout layout(a_.schema_);
  const int r = a_.schema_.rank();
  uint64_t shape[kMaxRank], dstride[kMaxRank];
  for (int d = 0; d < r; ++d) shape[d] = box.hi[d] - box.lo[d] + 1;
  layout.cell_strides(box, dstride);
  std::vector<uint8_t> cells = a_.ctx_->blob_memory().take(box.cells() * a_.schema_.elem_size);
  strided_copy(r, shape, src, sstride, cells.data(), dstride, a_.schema_.elem_size);
  blobs_->add(box, std::move(cells));
  maybe_spill();
}

void WritePath::close_direct() {
  if (!direct_) return;
  auto w = std::move(direct_);
  direct_last_.clear();
  if (w->failed()) {  // a write into it failed: its cells are gone (w's destructor removes the file)
    a_.pub_.note_lost("a write to fragment '" + w->final_path() + "' failed");
    return;
  }
  a_.pub_.park(std::move(w));
}

bool WritePath::appends_after_direct(const Box& box) const {
  if (!direct_ || direct_skip_ != 0 || direct_whole_ || direct_->failed()) return false;
  const Layout layout(a_.schema_);
  Coords first(box.lo.size());
  layout.first_tile(box, first.data());
  return layout.compare_tiles(direct_last_.data(), first.data()) < 0;
}

void WritePath::spill_blobs_over(const Box& b) {
  if (blobs_->intersects(b)) spill();
}

void WritePath::buffer_cells(const Selection& sel, const uint8_t* src, const uint64_t* sstride) {
  const int r = a_.schema_.rank();
  const size_t es = a_.schema_.elem_size;
  constexpr size_t kChunk = 65536;
  std::vector<uint64_t> coords;
  std::vector<uint8_t> values;
  coords.reserve(std::min<uint64_t>(sel.cells(), kChunk) * r);
  values.reserve(std::min<uint64_t>(sel.cells(), kChunk) * es);
  // Odometer over (interval index, offset) per dimension, in row-major selection order.
  std::vector<size_t> iv(r, 0);
  std::vector<uint64_t> off(r, 0);
  for (;;) {
    uint64_t so = 0;
    for (int d = 0; d < r; ++d) {
      const DimSelection& ds = sel.dim(d);
      coords.push_back(ds.ivs[iv[d]].lo + off[d]);
      so += (ds.rank0[iv[d]] + off[d]) * sstride[d];
    }
    values.insert(values.end(), src + so * es, src + (so + 1) * es);
    if (values.size() >= kChunk * es) {
      buffer_->add(coords.data(), values.data(), values.size() / es);
      coords.clear();
      values.clear();
      maybe_spill();
    }
    int d = r - 1;
    for (; d >= 0; --d) {
      if (++off[d] < sel.dim(d).ivs[iv[d]].len()) break;
      off[d] = 0;
      if (++iv[d] < sel.dim(d).ivs.size()) break;
      iv[d] = 0;
    }
    if (d < 0) break;
  }
  buffer_->add(coords.data(), values.data(), values.size() / es);
  maybe_spill();
}

void WritePath::write_points(const uint64_t* coords, size_t n, const void* values) {
  a_.require_writable();
  a_.require_var(false);
  a_.check_points(coords, n);
  if (a_.compact_) return a_.compact_->write_points(coords, n, static_cast<const uint8_t*>(values));
  close_direct();
  buffer_->add(coords, static_cast<const uint8_t*>(values), n, /*scattered=*/true);
  maybe_spill();
}

void WritePath::write_points(std::vector<uint64_t>&& coords, const void* values) {
  a_.require_writable();
  a_.require_var(false);
  const size_t n = coords.size() / static_cast<size_t>(std::max(1, a_.schema_.rank()));
  a_.check_points(coords.data(), n);
  if (a_.compact_) return a_.compact_->write_points(coords.data(), n, static_cast<const uint8_t*>(values));
  close_direct();
  buffer_->add(std::move(coords), static_cast<const uint8_t*>(values), n);
  maybe_spill();
}

}  // namespace tessera
