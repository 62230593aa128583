// array_chunks.cc — tiles read and written as HDF5 chunks (H5Dread_chunk/H5Dwrite_chunk).
//
// HDF5 hands a direct chunk write bytes its own filter pipeline already encoded; on a
// tessera array whose pipeline is the same (shuffle, deflate: the connector checks) a
// chunk is a tile, so the bytes become the tile's stored bytes as they are — no decode,
// no re-encode, the same cost as native's write of them.  A fragment's values pipeline is
// the schema's minus the filters the caller skipped (HDF5's filter mask), so each stored
// tile decodes with its own fragment's pipeline on every later read.  Consecutive direct
// writes in ascending tile order share one open fragment: a loop writing a dataset chunk
// by chunk makes one fragment, not one per chunk.
//
// A chunk read returns a stored tile's bytes unchanged when the newest data of the chunk
// is exactly one stored box covering the whole chunk (a direct write, or an ordinary
// write of a whole chunk); any other chunk is assembled from its cells and encoded.
#include <algorithm>
#include <cstring>

#include "engine/array/array.h"
#include "engine/schema/layout.h"
#include "engine/read/read_planner.h"

namespace tessera {

namespace {

// `p` without the filters whose bit is set in `skip`.
FilterPipeline without(const FilterPipeline& p, uint32_t skip) {
  std::vector<Filter> kept;
  for (size_t i = 0; i < p.filters().size(); ++i)
    if (i >= 32 || !(skip & (uint32_t{1} << i))) kept.push_back(p.filters()[i]);
  return FilterPipeline(std::move(kept), p.elem_size());
}

// The skip mask that turns `full` into `part` (part a subsequence of full), or false.
bool skip_of(const FilterPipeline& full, const FilterPipeline& part, uint32_t* skip) {
  if (full.elem_size() != part.elem_size() && !part.empty()) return false;
  const auto& f = full.filters();
  const auto& q = part.filters();
  size_t j = 0;
  uint32_t m = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (j < q.size() && q[j] == f[i]) ++j;
    else if (i < 32) m |= uint32_t{1} << i;
    else return false;
  }
  if (j != q.size()) return false;
  *skip = m;
  return true;
}

// Row-major element strides of a buffer holding box `b`.
void row_major_strides(const Box& b, uint64_t* st) {
  const int r = b.rank();
  st[r - 1] = 1;
  for (int d = r - 2; d >= 0; --d) st[d] = st[d + 1] * (b.hi[d + 1] - b.lo[d + 1] + 1);
}

}  // namespace

void Array::require_tiles() const {
  require_var(false);
  if (compact_) throw_error(Errc::kInvalidArgument, "a compact array has no tiles");
}

void Array::check_tile(const uint64_t* tile) const {
  for (int d = 0; d < schema_.rank(); ++d)
    if (schema_.max_extent[d] != kUnlimited &&
        tile[d] * schema_.tile_extent[d] >= std::max<uint64_t>(schema_.max_extent[d], 1))
      throw_error(Errc::kInvalidArgument, "chunk " + std::to_string(tile[d]) + " in dimension " + std::to_string(d) +
                                              " lies beyond the maximum extent");
}

Box Array::chunk_box(const uint64_t* tile) const {
  const int r = schema_.rank();
  Box b;
  b.lo.resize(r);
  b.hi.resize(r);
  for (int d = 0; d < r; ++d) {
    b.lo[d] = tile[d] * schema_.tile_extent[d];
    b.hi[d] = b.lo[d] + schema_.tile_extent[d] - 1;
  }
  return b;
}

void Array::read_tile_locked(const uint64_t* tile, uint8_t* dst) {
  require_tiles();
  const Box full = chunk_box(tile);
  const size_t es = schema_.elem_size;
  const uint64_t cells = full.cells();
  const uint8_t* fill = schema_.fill_value();
  for (uint64_t c = 0; c < cells; ++c) std::memcpy(dst + c * es, fill, es);
  // The whole chunk, cells past the extent included: a direct write stored them, and
  // they reappear when the extent grows (as native's chunk bytes do).  Only the maximum
  // extent cuts a tile.
  Box in;
  if (!intersect(full, Layout(schema_).tile_box(tile), &in)) return;
  const int r = schema_.rank();
  uint64_t st[kMaxRank];
  row_major_strides(full, st);
  uint64_t off = 0;
  for (int d = 0; d < r; ++d) off += (in.lo[d] - full.lo[d]) * st[d];
  finish_parked();
  write_.buffer_->normalize();
  ReadView view{frags_.live().snapshot(), write_.buffer_.get(), ctx_.get(), write_.blobs_.get()};
  ReadPlanner(schema_, view).read(Selection::from_box(in), dst + off * es, st);
}

Status Array::read_tile(const uint64_t* tile, void* dst) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { read_tile_locked(tile, static_cast<uint8_t*>(dst)); });
}

void Array::write_tile_locked(const uint64_t* tile, const uint8_t* src) {
  const int r = schema_.rank();
  const size_t es = schema_.elem_size;
  const Box full = chunk_box(tile);
  if (Layout(schema_).tile_box(tile) == full && schema_.cell_order == Order::kRowMajor) {
    // The whole chunk, cells past the extent included, as native stores it.
    append_direct(tile, 0, [&](FragmentWriter& w) {
      w.add_dense_tile(tile, full, std::vector<uint8_t>(src, src + full.cells() * es));
    });
    return;
  }
  Box ext(Coords(r, 0), schema_.extent), in;
  for (int d = 0; d < r; ++d) {
    if (schema_.extent[d] == 0) return;
    ext.hi[d] -= 1;
  }
  if (!intersect(full, ext, &in)) return;
  write_.close_direct();
  uint64_t st[kMaxRank];
  row_major_strides(full, st);
  uint64_t off = 0;
  for (int d = 0; d < r; ++d) off += (in.lo[d] - full.lo[d]) * st[d];
  const Selection sel = Selection::from_box(in);
  if (sel.cells() >= std::min(opts_.direct_cells, schema_.tile_cells())) write_.write_dense(sel, src + off * es, st);
  else write_.buffer_cells(sel, src + off * es, st);
}

void Array::append_direct(const uint64_t* tile, uint32_t skip, const std::function<void(FragmentWriter&)>& add,
                          bool whole) {
  const Layout layout(schema_);
  const Box cb = chunk_box(tile);
  if (write_.blobs_->intersects(cb)) {  // older blobs of the chunk: into a fragment older than this one
    write_.close_direct();
    write_.spill();
  }
  write_.buffer_->erase_inside(cb);  // older buffered cells of the chunk are overwritten
  if (write_.direct_ && (write_.direct_->failed() || skip != write_.direct_skip_ || whole != write_.direct_whole_ ||
                         layout.compare_tiles(write_.direct_last_.data(), tile) >= 0))
    write_.close_direct();
  if (!write_.direct_) {
    write_.direct_ = make_writer(next_id());
    write_.direct_->set_values_pipeline(without(schema_.filters, skip));
    if (whole) write_.direct_->set_whole_checksums();
    write_.direct_skip_ = skip;
    write_.direct_whole_ = whole;
  }
  add(*write_.direct_);
  write_.direct_last_.assign(tile, tile + schema_.rank());
  if (opts_.durable_writes) write_.close_direct();
}

Status Array::write_tile(const uint64_t* tile, const void* src) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_writable();
    require_tiles();
    check_tile(tile);
    write_tile_locked(tile, static_cast<const uint8_t*>(src));
  });
}

Status Array::write_tile_encoded(const uint64_t* tile, uint32_t skip, const void* bytes, size_t n) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_writable();
    require_tiles();
    check_tile(tile);
    const size_t es = schema_.elem_size;
    const auto* b = static_cast<const uint8_t*>(bytes);
    const uint32_t nf = static_cast<uint32_t>(std::min<size_t>(schema_.filters.filters().size(), 32));
    skip &= nf == 32 ? ~uint32_t{0} : (uint32_t{1} << nf) - 1;  // bits of filters the schema has
    const FilterPipeline p = without(schema_.filters, skip);
    const Box full = chunk_box(tile);
    const Layout layout(schema_);
    if (!(layout.tile_box(tile) == full) || schema_.cell_order != Order::kRowMajor) {
      // The tile cannot hold the chunk's bytes as they are: decode, write the cells.
      std::vector<uint8_t> raw;
      const uint64_t want = full.cells() * es;
      if (p.empty()) {
        if (n != want)
          throw_error(Errc::kInvalidArgument, "an unfiltered chunk holds " + std::to_string(want) + " bytes, not " +
                                                  std::to_string(n));
        raw.assign(b, b + n);
      } else {
        p.decode(b, n, want, raw, "chunk");
      }
      write_tile_locked(tile, raw.data());
      return;
    }
    // Unfiltered bytes longer than the chunk (HDF5 takes them): a whole-checksum fragment.
    const bool whole = p.empty() && n > full.cells() * es;
    if (p.empty() && n < full.cells() * es)
      throw_error(Errc::kInvalidArgument, "an unfiltered chunk holds " + std::to_string(full.cells() * es) +
                                              " bytes, not " + std::to_string(n));
    append_direct(tile, skip, [&](FragmentWriter& w) { w.add_dense_tile_encoded(tile, full, b, n); }, whole);
  });
}

void Array::encoded_locked(const uint64_t* tile, std::vector<uint8_t>* bytes, uint64_t* size, uint32_t* skip) {
  require_tiles();
  finish_parked();
  write_.buffer_->normalize();
  const Box full = chunk_box(tile);
  // Stored bytes are HDF5's chunk bytes only for row-major cells; column-major tiles are
  // read into row-major order below (and re-encoded).  The fragment's cell order decides
  // (an array may hold fragments in several orders: docs/layouts.md).
  if (write_.buffer_->empty() && !write_.blobs_->intersects(full)) {
    // The newest fragment holding anything of the chunk decides.
    for (auto it = frags_.live().rbegin(); it != frags_.live().rend(); ++it) {
      const FragmentMeta& m = (*it)->meta();
      if (!m.has_domain || !m.domain.intersects(full)) continue;
      bool sparse = false;
      for (const SparseEntry& e : m.sparse) sparse |= e.mbr.intersects(full);
      for (const SparseEntry& e : m.erased) sparse |= e.mbr.intersects(full);
      const Layout& layout = (*it)->layout(schema_);
      auto [a, z] = m.dense_range(layout, tile);
      if (!sparse && a == z) continue;
      uint32_t s = 0;
      if (!sparse && z - a == 1 && layout.cell_order() == Order::kRowMajor && m.dense[a].kind == DenseEntry::kData &&
          m.dense[a].box == full && skip_of(schema_.filters, m.values_filters, &s)) {
        *skip = s;
        *size = m.dense[a].blob.stored_size;
        if (bytes) *bytes = (*it)->stored_dense_bytes(a);
        return;
      }
      break;
    }
  }
  *skip = 0;
  const uint64_t raw_size = full.cells() * schema_.elem_size;
  if (!bytes && schema_.filters.empty()) {
    *size = raw_size;
    return;
  }
  std::vector<uint8_t> raw(raw_size), enc;
  read_tile_locked(tile, raw.data());
  if (schema_.filters.empty()) enc = std::move(raw);
  else schema_.filters.encode(raw.data(), raw.size(), enc);
  *size = enc.size();
  if (bytes) *bytes = std::move(enc);
}

Status Array::read_tile_encoded(const uint64_t* tile, std::vector<uint8_t>* bytes, uint32_t* skip) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    uint64_t size = 0;
    encoded_locked(tile, bytes, &size, skip);
  });
}

Status Array::tile_encoded_size(const uint64_t* tile, uint64_t* size, uint32_t* skip) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { encoded_locked(tile, nullptr, size, skip); });
}

}  // namespace tessera
