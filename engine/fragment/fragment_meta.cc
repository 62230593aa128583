#include "engine/fragment/fragment_meta.h"

#include <algorithm>

#include "engine/util/bytes.h"

namespace tessera {

namespace {

void put_coords(ByteWriter& w, const Coords& c) {
  for (uint64_t v : c) w.u64(v);
}
Coords get_coords(ByteReader& r, uint32_t rank) {
  Coords c(rank);
  for (auto& v : c) v = r.u64();
  return c;
}
void put_blob(ByteWriter& w, const BlobRef& b) {
  w.u64(b.offset);
  w.u64(b.stored_size);
  w.u64(b.raw_size);
  w.u64(b.checksum);
}
BlobRef get_blob(ByteReader& r) {
  BlobRef b;
  b.offset = r.u64();
  b.stored_size = r.u64();
  b.raw_size = r.u64();
  b.checksum = r.u64();
  return b;
}
// a * b, or a failure when it does not fit in 64 bits: a wrapped product could match a
// small stored size and send reads far outside the tile.
uint64_t checked_mul(ByteReader& r, uint64_t a, uint64_t b) {
  uint64_t p;
  if (__builtin_mul_overflow(a, b, &p)) r.fail("a tile size overflows");
  return p;
}

void check_box(ByteReader& r, const Box& b) {
  for (int d = 0; d < b.rank(); ++d)
    if (b.lo[d] > b.hi[d]) r.fail("empty box");
}
// A sparse or erased tile's head: cells, MBR, first and last cell, coordinates blob (the
// same bytes in both lists; serialize writes them in this order).
void put_tile_head(ByteWriter& w, const SparseEntry& e) {
  w.u64(e.cells);
  put_coords(w, e.mbr.lo);
  put_coords(w, e.mbr.hi);
  put_coords(w, e.first);
  put_coords(w, e.last);
  put_blob(w, e.coords);
}
void get_tile_head(ByteReader& r, uint32_t rank, SparseEntry* e) {
  e->cells = r.u64();
  e->mbr.lo = get_coords(r, rank);
  e->mbr.hi = get_coords(r, rank);
  check_box(r, e->mbr);
  e->first = get_coords(r, rank);
  e->last = get_coords(r, rank);
  e->coords = get_blob(r);
}

// The tile cache keys a decoded tile by its blob's offset, and readers size their copies
// by the entry: two entries naming the same (or overlapping) bytes, which no writer
// produces, would hand one entry the other's decoded tile, of another size or kind.
void check_disjoint(const ByteReader& r, const FragmentMeta& m) {
  std::vector<std::pair<uint64_t, uint64_t>> spans;  // offset, stored size
  spans.reserve(m.dense.size() + 2 * m.sparse.size() + m.erased.size());
  for (const auto& e : m.dense)
    if (e.kind == DenseEntry::kData) spans.emplace_back(e.blob.offset, e.blob.stored_size);
  for (const auto& e : m.sparse) {
    spans.emplace_back(e.coords.offset, e.coords.stored_size);
    spans.emplace_back(e.values.offset, e.values.stored_size);
  }
  for (const auto& e : m.erased) spans.emplace_back(e.coords.offset, e.coords.stored_size);
  std::sort(spans.begin(), spans.end());
  for (size_t k = 1; k < spans.size(); ++k)
    if (spans[k].first - spans[k - 1].first < std::max<uint64_t>(spans[k - 1].second, 1))
      r.fail("two tiles share stored bytes");
}

}  // namespace

void FragmentMeta::extend_domain(const Box& b) { extend(domain, has_domain, b); }

std::vector<uint8_t> FragmentMeta::serialize() const {
  ByteWriter w;
  w.u64(id.ts);
  w.u32(id.rank);
  w.u32(id.seq);
  w.u32(id.gen);
  w.u32(rank);
  w.u32(elem_size);
  values_filters.serialize(w);
  coords_filters.serialize(w);
  w.u64(check_block);
  w.u8(has_domain ? 1 : 0);
  if (has_domain) {
    put_coords(w, domain.lo);
    put_coords(w, domain.hi);
  }
  w.u64(cells);
  w.u64(dense.size());
  for (const auto& e : dense) {
    w.u8(e.kind);
    put_coords(w, e.tile);
    put_coords(w, e.box.lo);
    put_coords(w, e.box.hi);
    put_blob(w, e.blob);
    if (check_block && e.kind == DenseEntry::kData)
      for (uint64_t c : e.block_checks) w.u64(c);
    e.stats.serialize(w);
  }
  w.u64(sparse.size());
  for (const auto& e : sparse) {
    put_tile_head(w, e);
    put_blob(w, e.values);
    e.stats.serialize(w);
  }
  w.u64(replaces.size());
  for (const auto& f : replaces) {
    w.u64(f.ts);
    w.u32(f.rank);
    w.u32(f.seq);
    w.u32(f.gen);
  }
  w.u8(sets_extent ? 1 : 0);
  if (sets_extent) put_coords(w, extent);
  w.u64(erased.size());
  for (const auto& e : erased) put_tile_head(w, e);
  w.u8(static_cast<uint8_t>(order.tile));
  w.u8(static_cast<uint8_t>(order.cell));
  for (uint64_t k : order.cube) w.u64(k);
  return std::move(w.buf());
}

FragmentMeta FragmentMeta::deserialize(const uint8_t* p, size_t n, const std::string& what) {
  ByteReader r(p, n, what);
  FragmentMeta m;
  m.id.ts = r.u64();
  m.id.rank = r.u32();
  m.id.seq = r.u32();
  m.id.gen = r.u32();
  m.rank = r.u32();
  if (m.rank < 1 || m.rank > static_cast<uint32_t>(kMaxRank)) r.fail("bad rank");
  m.elem_size = r.u32();
  if (m.elem_size == 0) r.fail("zero element size");
  m.values_filters = FilterPipeline::deserialize(r);
  m.coords_filters = FilterPipeline::deserialize(r);
  m.check_block = r.u64();
  if (m.check_block != 0 && (m.check_block < 512 || m.check_block > (uint64_t{1} << 30)))
    r.fail("bad checksum block size " + std::to_string(m.check_block));
  if (m.check_block != 0 && !m.values_filters.empty()) r.fail("checksum blocks on filtered tiles");
  m.has_domain = r.u8() != 0;
  if (m.has_domain) {
    m.domain.lo = get_coords(r, m.rank);
    m.domain.hi = get_coords(r, m.rank);
    check_box(r, m.domain);
  }
  m.cells = r.u64();
  const size_t coord_bytes = 8 * m.rank;
  uint64_t nd = r.count(1 + 3 * coord_bytes + 32 + 25);
  m.dense.resize(nd);
  for (auto& e : m.dense) {
    e.kind = r.u8();
    if (e.kind > DenseEntry::kFill) r.fail("bad dense entry kind");
    e.tile = get_coords(r, m.rank);
    e.box.lo = get_coords(r, m.rank);
    e.box.hi = get_coords(r, m.rank);
    check_box(r, e.box);
    e.blob = get_blob(r);
    if (m.check_block && e.kind == DenseEntry::kData) {
      if (e.blob.stored_size != e.blob.raw_size || e.blob.checksum != 0)
        r.fail("block-checked tile with a stored size or checksum of its own");
      uint64_t nb = block_count(e.blob.stored_size, m.check_block);
      if (nb > r.remaining() / 8) r.fail("block checksums run past the footer");
      e.block_checks.resize(nb);
      for (auto& c : e.block_checks) c = r.u64();
    }
    e.stats = TileStats::deserialize(r);
    if (e.kind == DenseEntry::kData && e.blob.raw_size != checked_mul(r, e.box.cells(), m.elem_size))
      r.fail("dense tile size does not match its box");
  }
  uint64_t ns = r.count(8 + 4 * coord_bytes + 64 + 25);
  m.sparse.resize(ns);
  for (auto& e : m.sparse) {
    get_tile_head(r, m.rank, &e);
    e.values = get_blob(r);
    e.stats = TileStats::deserialize(r);
    if (e.cells == 0 || e.coords.raw_size != checked_mul(r, e.cells, coord_bytes) ||
        e.values.raw_size != checked_mul(r, e.cells, m.elem_size))
      r.fail("sparse tile sizes do not match its cell count");
  }
  uint64_t nr = r.count(20);
  m.replaces.resize(nr);
  for (auto& f : m.replaces) {
    f.ts = r.u64();
    f.rank = r.u32();
    f.seq = r.u32();
    f.gen = r.u32();
  }
  uint8_t se = r.u8();
  if (se > 1) r.fail("bad extent flag");
  m.sets_extent = se == 1;
  if (m.sets_extent) m.extent = get_coords(r, m.rank);
  uint64_t ne = r.count(8 + 4 * coord_bytes + 32);
  m.erased.resize(ne);
  for (auto& e : m.erased) {
    get_tile_head(r, m.rank, &e);
    if (e.cells == 0 || e.coords.raw_size != checked_mul(r, e.cells, coord_bytes))
      r.fail("erased tile size does not match its cell count");
  }
  const uint8_t t = r.u8(), c = r.u8();
  if (t > kLastOrder || c > 1) r.fail("unknown tile or cell order");
  m.order.tile = static_cast<Order>(t);
  m.order.cell = static_cast<Order>(c);
  if (m.order.tile == Order::kMultiMap) m.order.cube = get_coords(r, m.rank);
  try {
    m.order.validate(static_cast<int>(m.rank));
  } catch (const Error& e) {
    r.fail(e.what());
  }
  if (!r.done()) r.fail("trailing bytes in footer");
  check_disjoint(r, m);
  return m;
}

std::pair<size_t, size_t> FragmentMeta::dense_range(const Layout& layout, const uint64_t* tile) const {
  size_t lo = 0, hi = dense.size();
  while (lo < hi) {  // first entry with tile >= `tile`
    size_t mid = (lo + hi) / 2;
    if (layout.compare_tiles(dense[mid].tile.data(), tile) < 0) lo = mid + 1;
    else hi = mid;
  }
  size_t last = lo;
  while (last < dense.size() && layout.compare_tiles(dense[last].tile.data(), tile) == 0) ++last;
  return {lo, last};
}

long FragmentMeta::dense_at(const Layout& layout, const uint64_t* tile, const uint64_t* c) const {
  auto [a, b] = dense_range(layout, tile);
  for (size_t i = a; i < b; ++i)
    if (dense[i].box.contains(c)) return static_cast<long>(i);
  return -1;
}

}  // namespace tessera
