// write_spill.cc — WritePath's spills (write_path.h): when the write buffer goes to a
// fragment (the array's cap, the context's write budget, write_budget.h), waiting for the
// background flush (Array::flush_in_background) that writes a swapped-out buffer without
// the lock, and fill_spill: the fragment a spill writes from the buffered cells
// (write_buffer.h) and blobs (blob_buffer.h).
//
// Cells alone go tile by tile straight from the write buffer (a tile whose cells fill
// their bounding box is a dense piece, the rest sparse).  With blobs, every tile any blob
// or cell touches is painted like a consolidation paints its inputs (consolidator.h):
// the blob pieces in arrival order, then the cells, into one buffer with a coverage mask —
// n rewrites of a tile cost one tile write, and a tile the writes cover whole (an ROI, a
// frame) becomes one dense piece; one they cover in part, a few disjoint dense pieces
// (cover_boxes.h) — sparse cells only when the covered cells are scattered.  A tile only
// box writes touch, and which they leave partly uncovered, is not painted: the visible
// part of each write goes out as it is (visible_boxes.h).
#include <algorithm>
#include <cstring>
#include <map>

#include "engine/array/array.h"
#include "engine/fragment/fragment_writer.h"
#include "engine/geometry/cover_boxes.h"
#include "engine/schema/layout.h"
#include "engine/geometry/strided_copy.h"
#include "engine/geometry/visible_boxes.h"

namespace tessera {

namespace {

// A partly covered tile goes out as dense boxes when it takes at most this many, of at
// least this many cells on average; else as sparse cells (16 bytes of coordinates each,
// before compression, against a footer entry per box).
constexpr size_t kMaxTileBoxes = 64;
constexpr uint64_t kMinBoxCells = 32;

using TilePieces = std::vector<std::pair<const Blob*, Box>>;

// A tile that only blob pieces touch, and which they do not cover whole: the visible part
// of each piece as a dense box copied from its blob — the cost of the written cells, not
// of their bounding box (which, for a few small writes far apart in a large tile, is most
// of the tile).  False when the tile is not that, or takes too many or too small boxes:
// the caller paints it.
bool spill_visible(const Layout& layout, size_t es, const uint64_t* tile, const TilePieces& pieces,
                   FragmentWriter& w) {
  std::vector<Box> in;
  in.reserve(pieces.size());
  BoundingBox bound;
  for (const auto& p : pieces) {
    in.push_back(p.second);
    bound.add(p.second);
  }
  std::vector<VisibleBox> vis;
  if (!visible_boxes(in, kMaxTileBoxes, &vis)) return false;
  uint64_t cells = 0;
  for (const VisibleBox& v : vis) cells += v.box.cells();
  // Covered whole: one dense box of the bounding box (painting costs what is written).
  if (cells == bound.box.cells() || cells / vis.size() < kMinBoxCells) return false;
  const int r = layout.rank();
  uint64_t shape[kMaxRank], sstride[kMaxRank], dstride[kMaxRank];
  for (const VisibleBox& v : vis) {
    const Blob& b = *pieces[v.src].first;
    layout.cell_strides(b.box, sstride);
    layout.cell_strides(v.box, dstride);
    uint64_t soff = 0;
    for (int d = 0; d < r; ++d) {
      shape[d] = v.box.hi[d] - v.box.lo[d] + 1;
      soff += (v.box.lo[d] - b.box.lo[d]) * sstride[d];
    }
    std::vector<uint8_t> data(v.box.cells() * es);
    strided_copy(r, shape, b.cells.data() + soff * es, sstride, data.data(), dstride, es);
    w.add_dense_tile(tile, v.box, std::move(data));
  }
  return true;
}

}  // namespace

void WritePath::fill_spill(WriteBuffer& buf, const BlobBuffer& blobs, FragmentWriter& w) const {
  const size_t es = a_.schema_.elem_size;
  if (blobs.empty()) {
    buf.for_each_tile([&](const uint64_t* tile, const uint64_t* cs, const uint8_t* vs, size_t m, const Box& bb) {
      if (m > 1 && bb.cells() == m) w.add_dense_tile(tile, bb, std::vector<uint8_t>(vs, vs + m * es));
      else w.add_sparse_cells(cs, vs, m);
    });
    return;
  }
  const Layout layout(a_.schema_);
  const int r = a_.schema_.rank();
  auto tile_less = [&](const Coords& a, const Coords& b) { return layout.compare_tiles(a.data(), b.data()) < 0; };
  // Per tile, the blob pieces in arrival order.
  std::map<Coords, TilePieces, decltype(tile_less)> tiles(tile_less);
  for (const Blob& b : blobs.blobs())
    layout.for_each_tile(b.box, [&](const Coords& t) {
      Box piece;
      if (intersect(layout.tile_box(t.data()), b.box, &piece)) tiles[t].push_back({&b, std::move(piece)});
    });
  // Cells in global order: tile-major, so each tile's cells are one run.
  buf.normalize();
  const uint64_t* cs = buf.coords().data();
  const uint8_t* vs = buf.values().data();
  const size_t ncells = buf.cells();
  Coords tc(static_cast<size_t>(r));
  for (size_t k = 0; k < ncells; ++k) {
    layout.tile_of(cs + k * r, tc.data());
    tiles[tc];  // present, perhaps without pieces
  }
  size_t cursor = 0;
  std::vector<uint8_t> data, covered;
  std::vector<uint64_t> sp_coords;
  std::vector<uint8_t> sp_values;
  std::vector<Box> boxes;
  for (const auto& [tile, pieces] : tiles) {
    // This tile's cells: the run at the cursor.
    const size_t c0 = cursor;
    while (cursor < ncells) {
      layout.tile_of(cs + cursor * r, tc.data());
      if (tc != tile) break;
      ++cursor;
    }
    if (pieces.empty()) {  // cells only: as a cells-only spill stores them, no painting
      const size_t m = cursor - c0;
      BoundingBox cbound;
      for (size_t k = c0; k < cursor; ++k) cbound.add(cs + k * r, r);
      const Box& cb = cbound.box;
      if (m > 1 && cb.cells() == m) w.add_dense_tile(tile.data(), cb, std::vector<uint8_t>(vs + c0 * es, vs + cursor * es));
      else w.add_sparse_cells(cs + c0 * r, vs + c0 * es, m);
      continue;
    }
    if (pieces.size() == 1 && cursor == c0 && pieces[0].second == pieces[0].first->box) {
      // One whole blob is this tile's only write (a frame, an ROI): its cells, as they are.
      const Blob& b = *pieces[0].first;
      if (a_.schema_.filters.empty()) w.add_dense_tile_from(tile.data(), b.box, b.cells.data());
      else w.add_dense_tile(tile.data(), b.box, b.cells);
      continue;
    }
    if (cursor == c0 && spill_visible(layout, es, tile.data(), pieces, w)) continue;
    BoundingBox bound;
    for (const auto& p : pieces) bound.add(p.second);
    for (size_t k = c0; k < cursor; ++k) bound.add(cs + k * r, r);
    const Box& bb = bound.box;
    const uint64_t n = bb.cells();
    uint64_t bstride[kMaxRank], pstride[kMaxRank], shape[kMaxRank];
    layout.cell_strides(bb, bstride);
    data.assign(n * es, 0);
    covered.assign(n, 0);
    for (const auto& [blob, piece] : pieces) {
      layout.cell_strides(blob->box, pstride);
      uint64_t soff = 0, doff = 0;
      for (int d = 0; d < r; ++d) {
        shape[d] = piece.hi[d] - piece.lo[d] + 1;
        soff += (piece.lo[d] - blob->box.lo[d]) * pstride[d];
        doff += (piece.lo[d] - bb.lo[d]) * bstride[d];
      }
      strided_copy(r, shape, blob->cells.data() + soff * es, pstride, data.data() + doff * es, bstride, es);
      std::vector<uint8_t> ones(piece.cells(), 1);
      uint64_t ostride[kMaxRank];
      layout.cell_strides(piece, ostride);
      strided_copy(r, shape, ones.data(), ostride, covered.data() + doff, bstride, 1);
    }
    for (size_t k = c0; k < cursor; ++k) {
      uint64_t off = 0;
      for (int d = 0; d < r; ++d) off += (cs[k * r + d] - bb.lo[d]) * bstride[d];
      std::memcpy(&data[off * es], vs + k * es, es);
      covered[off] = 1;
    }
    const uint64_t ncovered = static_cast<uint64_t>(std::count(covered.begin(), covered.end(), uint8_t{1}));
    if (ncovered == n) {
      w.add_dense_tile(tile.data(), bb, std::move(data));
      data = {};
      continue;
    }
    // Partly covered (row bands of small box writes): a few dense boxes of this tile
    // when the covered cells are that, else sparse cells.
    if (cover_boxes(bb, bstride, covered, kMaxTileBoxes, &boxes) && ncovered / boxes.size() >= kMinBoxCells) {
      for (const Box& b : boxes) {
        uint64_t doff = 0;
        for (int d = 0; d < r; ++d) {
          shape[d] = b.hi[d] - b.lo[d] + 1;
          doff += (b.lo[d] - bb.lo[d]) * bstride[d];
        }
        layout.cell_strides(b, pstride);
        std::vector<uint8_t> piece(b.cells() * es);
        strided_copy(r, shape, data.data() + doff * es, bstride, piece.data(), pstride, es);
        w.add_dense_tile(tile.data(), b, std::move(piece));
      }
      continue;
    }
    sp_coords.clear();
    sp_values.clear();
    Coords c(static_cast<size_t>(r));
    for (uint64_t k = 0; k < n; ++k) {
      if (!covered[k]) continue;
      layout.cell_at(bb, k, c.data());  // the k-th cell of bb in cell order
      sp_coords.insert(sp_coords.end(), c.begin(), c.end());
      sp_values.insert(sp_values.end(), &data[k * es], &data[k * es] + es);
    }
    w.add_sparse_cells(sp_coords.data(), sp_values.data(), sp_coords.size() / r);
  }
}

void WritePath::maybe_spill() {
  check_background();
  const uint64_t heap = pending_heap_ ? pending_heap_->bytes().size() : 0;
  if (a_.schema_.var) {  // heap bytes must be durable before the fragment: spilled here
    if (buffer_->bytes() + heap >= a_.opts_.buffer_budget) spill();
    report_bytes();
    return;
  }
  // Past the array's own cap, its buffer goes to the flusher; past the context's limit,
  // the largest buffer of the context does (write_budget.h).
  WriteBudget& b = a_.ctx_->budget();
  if (buffer_->bytes() + blobs_->bytes() >= a_.opts_.buffer_budget) b.request(&a_);
  if (report_bytes()) b.request(b.largest());
}

bool WritePath::report_bytes() {
  if (a_.compact_) return false;  // holds no buffers (open_impl)
  const uint64_t heap = pending_heap_ ? pending_heap_->bytes().size() : 0;
  return a_.ctx_->budget().report(&a_, buffer_->bytes() + blobs_->bytes() + heap + inflight_bytes_);
}

void WritePath::check_background() const {
  if (!bg_error_.ok())
    throw_error(bg_error_.code(), "a background flush of buffered writes failed (they are lost): " + bg_error_.message());
}

Status WritePath::throttle(Status st, std::unique_lock<std::mutex>* held) {
  held->unlock();
  if (st.ok()) a_.ctx_->budget().wait_for_room();
  return st;
}

void WritePath::wait_inflight() {
  std::unique_lock<std::mutex> held(a_.mu_, std::adopt_lock);  // the caller's lock, kept
  inflight_cv_.wait(held);
  held.release();
}

void WritePath::finish_inflight() {
  while (inflight_) wait_inflight();
}

void WritePath::spill() {
  // Heap bytes first: a fragment must never refer to bytes that are not durable.
  if (pending_heap_) {
    if (!pending_heap_->empty()) {
      a_.store_->ensure_dir(true, a_.schema_.var);
      pending_heap_->publish(a_.env(), a_.heap_dir_);
    }
    pending_heap_.reset();
  }
  if (a_.compact_) return;  // a compact array has no buffers
  if (buffer_->empty() && blobs_->empty()) {
    a_.share_.run_ts_ = 0;  // a run with nothing buffered has nothing to keep
    a_.share_.run_bounds_ = BoundingBox();
    a_.share_.fence_.clear();
    return;
  }
  close_direct();  // the open dense fragment is older than this spill: no appends after it
  auto w = a_.make_writer(a_.share_.spill_id());
  // Scattered points: an LSM-style delta, values under a fast codec until consolidation
  // (docs/engine.md "Sparse deltas").
  if (buffer_->scattered() && blobs_->empty()) w->set_values_pipeline(fast_variant(a_.schema_.filters));
  w->expect_sparse_cells(buffer_->cells());
  fill_spill(*buffer_, *blobs_, *w);
  a_.pub_.complete(std::move(w));
  buffer_->clear();
  blobs_->clear();
  report_bytes();
}

}  // namespace tessera
