// allocation.cc — see allocation.h.
#include "vol/io/allocation.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "engine/util/checked.h"
#include "vol/model/records.h"
#include "vol/model/objects.h"

namespace tessera_vol {

namespace {

// Counts of elements, chunks and bytes saturate: a chunked dataset may have more than
// 2^64 of each (h5tests/vol/test_huge_extents.c), and native reports such sizes wrapped.
uint64_t sat_mul(uint64_t a, uint64_t b) { return tessera::checked_mul(a, b).value_or(UINT64_MAX); }
uint64_t sat_add(uint64_t a, uint64_t b) { return tessera::checked_add(a, b).value_or(UINT64_MAX); }

struct Facts {
  H5D_layout_t layout = H5D_CONTIGUOUS;
  H5D_alloc_time_t alloc = H5D_ALLOC_TIME_LATE;
  bool filtered = false;
  uint64_t elements = 0;
  uint64_t elem_bytes = 0;   // in the file (vlen: 16)
  uint64_t chunk_bytes = 0;  // chunked: one whole chunk
  uint64_t chunks = 0;       // chunked: chunks covering the current extent
};

Facts facts(DatasetObj& d) {
  Facts f;
  f.layout = d.layout();
  if (H5Pget_alloc_time(d.dcpl, &f.alloc) < 0) fail_arg("cannot read the allocation time");
  f.filtered = H5Pget_nfilters(d.dcpl) > 0;
  f.elem_bytes = d.ftype.file_size();
  const tessera::Schema& s = d.array->schema();
  f.elements = tessera::checked_product(s.extent.data(), s.extent.size()).value_or(UINT64_MAX);
  if (H5Sget_simple_extent_type(d.space) == H5S_NULL) f.elements = 0;
  if (f.layout == H5D_CHUNKED) {
    f.chunk_bytes = f.elem_bytes;
    f.chunks = 1;
    for (size_t i = 0; i < s.extent.size(); ++i) {
      f.chunk_bytes = sat_mul(f.chunk_bytes, s.tile_extent[i]);
      f.chunks = sat_mul(f.chunks, s.extent[i] / s.tile_extent[i] + (s.extent[i] % s.tile_extent[i] != 0));
    }
  }
  return f;
}

std::string late_key(const DatasetObj& d) { return id_key("ae/", d.oid); }

bool late_chunked(DatasetObj& d) {
  H5D_alloc_time_t at = H5D_ALLOC_TIME_DEFAULT;
  return d.layout() == H5D_CHUNKED && H5Pget_alloc_time(d.dcpl, &at) >= 0 && at == H5D_ALLOC_TIME_LATE;
}

std::optional<tessera::Coords> late_region(DatasetObj& d) {
  auto v = d.file->container().catalog().get(late_key(d));
  if (!v) return std::nullopt;
  tessera::Coords c(v->size() / 8);
  std::memcpy(c.data(), v->data(), c.size() * 8);
  return c;
}

std::string encode_coords(const tessera::Coords& c) {
  return std::string(reinterpret_cast<const char*>(c.data()), c.size() * 8);
}

// Chunks allocated: written tiles, plus (LATE) every tile of the region allocated at
// the first write.
uint64_t allocated_chunks(DatasetObj& d, const Facts& f) {
  if (f.alloc == H5D_ALLOC_TIME_EARLY) return f.chunks;
  std::vector<tessera::Coords> tiles;
  check(d.array->written_tiles(&tiles));
  std::optional<tessera::Coords> region = f.alloc == H5D_ALLOC_TIME_LATE ? late_region(d) : std::nullopt;
  if (!region) return tiles.size();
  const tessera::Schema& s = d.array->schema();
  uint64_t n = 1;
  for (size_t i = 0; i < s.extent.size(); ++i) {
    uint64_t e = std::min(s.extent[i], (*region)[i]);
    n = sat_mul(n, e / s.tile_extent[i] + (e % s.tile_extent[i] != 0));
  }
  for (const auto& t : tiles) {
    bool inside = true;
    for (size_t i = 0; i < t.size(); ++i) inside &= t[i] * s.tile_extent[i] < std::min(s.extent[i], (*region)[i]);
    n = sat_add(n, !inside);
  }
  return n;
}

// The most chunks allocated_chunk_list lists (one coordinate vector each): an early- or
// late-allocated dataset counts every chunk of its extent as allocated, which for a
// huge extent is more than memory holds.
constexpr uint64_t kMaxListedChunks = uint64_t{1} << 24;

// Every chunk of the region [0, lim) (row-major), appended.
void all_chunks(const tessera::Schema& s, const tessera::Coords& lim, std::vector<tessera::Coords>* out) {
  const size_t r = s.extent.size();
  tessera::Coords n(r), t(r, 0);
  uint64_t total = 1;
  for (size_t i = 0; i < r; ++i) {
    n[i] = lim[i] / s.tile_extent[i] + (lim[i] % s.tile_extent[i] != 0);
    if (n[i] == 0) return;
    total = sat_mul(total, n[i]);
  }
  if (total > kMaxListedChunks)
    fail_unsupported("the dataset's allocation covers " + (total == UINT64_MAX ? std::string("2^64 or more")
                                                                              : std::to_string(total)) +
                     " chunks, more than tessera lists (" + std::to_string(kMaxListedChunks) +
                     "); H5Dget_num_chunks counts them");
  for (;;) {
    out->push_back(t);
    size_t i = r;
    while (i-- > 0) {
      if (++t[i] < n[i]) break;
      t[i] = 0;
    }
    if (i == static_cast<size_t>(-1)) return;
  }
}

bool written(DatasetObj& d) { return d.array->storage_bytes() > 0 || d.array->buffered_cells() > 0; }

}  // namespace

H5D_space_status_t space_status(DatasetObj& d) {
  Facts f = facts(d);
  if (f.layout == H5D_VIRTUAL) return H5D_SPACE_STATUS_ALLOCATED;  // as native: the sources hold the data
  if (f.layout == H5D_CHUNKED) {
    uint64_t n = allocated_chunks(d, f);
    if (n == 0) return H5D_SPACE_STATUS_NOT_ALLOCATED;
    return n >= f.chunks ? H5D_SPACE_STATUS_ALLOCATED : H5D_SPACE_STATUS_PART_ALLOCATED;
  }
  if (f.layout == H5D_COMPACT || f.alloc == H5D_ALLOC_TIME_EARLY) return H5D_SPACE_STATUS_ALLOCATED;
  return written(d) ? H5D_SPACE_STATUS_ALLOCATED : H5D_SPACE_STATUS_NOT_ALLOCATED;
}

hsize_t storage_size(DatasetObj& d) {
  Facts f = facts(d);
  if (f.layout == H5D_VIRTUAL) return 0;
  if (f.layout == H5D_CHUNKED) {
    // The bytes tessera holds for it (allocation.h): its compressed tiles, or — sparse
    // chunks of an incrementally allocated dataset cost less than whole ones — at most
    // native's allocated chunks.
    const uint64_t held = d.array->storage_bytes() + d.array->buffered_cells() * uint64_t{d.array->schema().elem_size};
    if (f.filtered) return held;
    const uint64_t chunks = sat_mul(allocated_chunks(d, f), f.chunk_bytes);
    if (f.alloc != H5D_ALLOC_TIME_INCR || d.array->schema().var) return chunks;
    return std::min<uint64_t>(held, chunks);
  }
  if (f.layout == H5D_COMPACT || f.alloc == H5D_ALLOC_TIME_EARLY || written(d)) return sat_mul(f.elements, f.elem_bytes);
  return 0;
}

uint64_t allocated_chunk_count(DatasetObj& d) {
  Facts f = facts(d);
  return f.layout == H5D_CHUNKED ? allocated_chunks(d, f) : 0;
}

std::vector<tessera::Coords> allocated_chunk_list(DatasetObj& d) {
  Facts f = facts(d);
  const tessera::Schema& s = d.array->schema();
  std::vector<tessera::Coords> out;
  if (f.layout != H5D_CHUNKED) return out;
  if (f.alloc == H5D_ALLOC_TIME_EARLY) {
    all_chunks(s, s.extent, &out);
    return out;
  }
  check(d.array->written_tiles(&out));
  if (f.alloc == H5D_ALLOC_TIME_LATE) {
    if (auto region = late_region(d)) {
      tessera::Coords lim(s.extent.size());
      for (size_t i = 0; i < lim.size(); ++i) lim[i] = std::min(s.extent[i], (*region)[i]);
      all_chunks(s, lim, &out);
    }
  }
  std::sort(out.begin(), out.end());  // lexicographic: row-major chunk order
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void allocation_before_write(DatasetObj& d) {
  if (d.late_checked) return;
  d.late_checked = true;
  // Parallel files allocate early (dataset.cc), and a write is no collective point.
  if (d.file->parallel() || !late_chunked(d) || late_region(d) || written(d)) return;
  tessera::CatalogBatch b;
  b.put(late_key(d), encode_coords(d.array->schema().extent));
  d.file->commit(b);
}

void allocation_extent_changed(DatasetObj& d, tessera::CatalogBatch& b) {
  auto region = late_region(d);
  if (!region) return;
  const tessera::Coords& e = d.array->schema().extent;
  for (size_t i = 0; i < region->size() && i < e.size(); ++i) (*region)[i] = std::min((*region)[i], e[i]);
  b.put(late_key(d), encode_coords(*region));
}

}  // namespace tessera_vol
