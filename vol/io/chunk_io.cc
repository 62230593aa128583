// chunk_io.cc — see chunk_io.h.
#include "vol/io/chunk_io.h"

#include <H5VLnative.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "vol/io/allocation.h"
#include "vol/base/h5_runtime.h"
#include "vol/model/native_chunk.h"
#include "vol/model/objects.h"
#include "vol/types/stored_type.h"

namespace tessera_vol {

namespace {

// How the dataset's HDF5 pipeline relates to the engine's (chunk_io.h, "Bytes").
struct PipelineMap {
  bool shared = false;
  std::vector<int> engine_index;  // per HDF5 filter: the engine filter, or -1 (a no-op)
};

PipelineMap map_pipeline(DatasetObj& d) {
  PipelineMap m;
  const tessera::Schema& s = d.array->schema();
  const auto& ef = s.filters.filters();
  const int n = H5Pget_nfilters(d.dcpl);
  if (n < 0) fail_arg("cannot read the dataset's filters");
  size_t j = 0;
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, cd[8] = {};
    size_t ncd = 8;
    H5Z_filter_t id = H5Pget_filter2(d.dcpl, static_cast<unsigned>(i), &flags, &ncd, cd, 0, nullptr, nullptr);
    tessera::FilterType want;
    if (id == H5Z_FILTER_SHUFFLE && s.elem_size == 1) {
      m.engine_index.push_back(-1);  // HDF5's shuffle of 1-byte elements copies them
      continue;
    }
    if (id == H5Z_FILTER_SHUFFLE) want = tessera::FilterType::kShuffle;
    else if (id == H5Z_FILTER_DEFLATE && ncd > 0 && cd[0] > 0 && cd[0] <= 9) want = tessera::FilterType::kZlib;
    else return m;
    if (j >= ef.size() || ef[j].type != want) return m;
    m.engine_index.push_back(static_cast<int>(j++));
  }
  m.shared = j == ef.size();
  return m;
}

uint32_t to_engine_skip(const PipelineMap& m, uint32_t mask) {
  uint32_t skip = 0;
  for (size_t i = 0; i < m.engine_index.size() && i < 32; ++i)
    if ((mask & (uint32_t{1} << i)) && m.engine_index[i] >= 0) skip |= uint32_t{1} << m.engine_index[i];
  return skip;
}

uint32_t to_hdf5_mask(const PipelineMap& m, uint32_t skip) {
  uint32_t mask = 0;
  for (size_t i = 0; i < m.engine_index.size() && i < 32; ++i)
    if (m.engine_index[i] >= 0 && (skip & (uint32_t{1} << m.engine_index[i]))) mask |= uint32_t{1} << i;
  return mask;
}

void require_chunked(DatasetObj& d) {
  if (d.layout() != H5D_CHUNKED) fail_arg("not a chunked dataset");
  if (d.array->schema().var)
    fail_unsupported("chunk-level I/O of variable-length data is not supported by tessera containers");
}

size_t rank_of(DatasetObj& d) { return d.array->schema().extent.size(); }

// The tile of a chunk offset, validated as native validates it.
tessera::Coords tile_of(DatasetObj& d, const hsize_t* offset) {
  if (!offset) fail_arg("offset cannot be NULL");
  const tessera::Schema& s = d.array->schema();
  tessera::Coords t(s.extent.size());
  for (size_t i = 0; i < t.size(); ++i) {
    if (offset[i] > s.extent[i]) fail_arg("offset exceeds dimensions of dataset");
    if (offset[i] % s.tile_extent[i]) fail_arg("offset doesn't fall on chunks's boundary");
    t[i] = offset[i] / s.tile_extent[i];
  }
  return t;
}

std::string offset_text(const tessera::Coords& tile, const tessera::Schema& s) {
  std::string t = "(";
  for (size_t i = 0; i < tile.size(); ++i) t += (i ? ", " : "") + std::to_string(tile[i] * s.tile_extent[i]);
  return t + ")";
}

NativeChunk& native_chunk(DatasetObj& d) {
  if (!d.native_chunk) {
    TypeId t(d.ftype);
    d.native_chunk = std::make_shared<NativeChunk>(t, d.dcpl, d.array->schema().tile_extent);
  }
  return *d.native_chunk;
}

uint64_t chunk_cells(const tessera::Schema& s) {
  uint64_t n = 1;
  for (uint64_t e : s.tile_extent) n *= e;
  return n;
}

bool allocated(const std::vector<tessera::Coords>& list, const tessera::Coords& t) {
  return std::binary_search(list.begin(), list.end(), t);
}

// A chunk's bytes as H5Dread_chunk returns them; bytes null: only size and mask.
void chunk_bytes(DatasetObj& d, const tessera::Coords& t, std::vector<uint8_t>* bytes, uint64_t* size,
                 uint32_t* mask) {
  PipelineMap m = map_pipeline(d);
  if (m.shared) {
    uint32_t skip = 0;
    if (bytes) {
      check(d.array->read_tile_encoded(t.data(), bytes, &skip));
      *size = bytes->size();
    } else {
      check(d.array->tile_encoded_size(t.data(), size, &skip));
    }
    *mask = to_hdf5_mask(m, skip);
    return;
  }
  const tessera::Schema& s = d.array->schema();
  std::vector<uint8_t> cells(chunk_cells(s) * s.elem_size), enc;
  check(d.array->read_tile(t.data(), cells.data()));
  native_chunk(d).encode(cells.data(), bytes ? bytes : &enc, mask);
  *size = bytes ? bytes->size() : enc.size();
}

// Tessera's address of a chunk (chunk_io.h).
haddr_t chunk_addr(DatasetObj& d, const tessera::Coords& t) {
  const tessera::Schema& s = d.array->schema();
  uint64_t idx = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    uint64_t n = std::max<uint64_t>(1, (s.extent[i] + s.tile_extent[i] - 1) / s.tile_extent[i]);
    idx = idx * n + t[i];
  }
  return idx * chunk_cells(s) * s.elem_size;
}

// `a` is 1.14's H5VL_native_dataset_chunk_write_t or 2.x's NativeChunkWrite2 (h5_runtime.h).
void write_chunk(DatasetObj& d, const void* a) {
  NativeChunkWrite2 w;
  if (h5_is_2x()) {
    w = *static_cast<const NativeChunkWrite2*>(a);
  } else {
    const auto& a1 = *static_cast<const H5VL_native_dataset_chunk_write_t*>(a);
    w = NativeChunkWrite2{a1.offset, a1.filters, a1.size, a1.buf};
  }
  require_write_intent(*d.file);
  if (!w.buf) fail_arg("buf cannot be NULL");
  tessera::Coords t = tile_of(d, w.offset);
  allocation_before_write(d);
  PipelineMap m = map_pipeline(d);
  if (m.shared) {
    check(d.array->write_tile_encoded(t.data(), to_engine_skip(m, w.filters), w.buf, w.size));
    return;
  }
  const tessera::Schema& s = d.array->schema();
  std::vector<uint8_t> cells(chunk_cells(s) * s.elem_size);
  native_chunk(d).decode(w.buf, w.size, w.filters, cells.data());
  check(d.array->write_tile(t.data(), cells.data()));
}

void read_chunk(DatasetObj& d, H5VL_native_dataset_chunk_read_t& a) {
  if (!a.buf) fail_arg("buf cannot be NULL");
  tessera::Coords t = tile_of(d, a.offset);
  if (!allocated(allocated_chunk_list(d), t))
    fail_arg("chunk at offset " + offset_text(t, d.array->schema()) + " is not allocated (never written)");
  std::vector<uint8_t> bytes;
  uint64_t size = 0;
  uint32_t mask = 0;
  chunk_bytes(d, t, &bytes, &size, &mask);
  if (h5_is_2x()) {
    // HDF5 2.x passes the caller's buffer size (H5Dread_chunk2's nalloc): a chunk that
    // does not fit is not read, and the size it needs is reported back.
    auto& a2 = reinterpret_cast<NativeChunkRead2&>(a);
    if (a2.buf_size) {
      size_t room = *a2.buf_size;
      *a2.buf_size = bytes.size();
      if (room < bytes.size()) return;
    }
  }
  std::memcpy(a.buf, bytes.data(), bytes.size());
  a.filters = mask;
}

// Info of an allocated chunk (or "not found": undefined address, size 0).
void chunk_info(DatasetObj& d, const tessera::Coords* t, hsize_t* offset, unsigned* filter_mask, haddr_t* addr,
                hsize_t* size) {
  if (addr) *addr = HADDR_UNDEF;
  if (size) *size = 0;
  if (!t) return;
  const tessera::Schema& s = d.array->schema();
  uint64_t n = 0;
  uint32_t mask = 0;
  chunk_bytes(d, *t, nullptr, &n, &mask);
  if (filter_mask) *filter_mask = mask;
  if (addr) *addr = chunk_addr(d, *t);
  if (size) *size = n;
  if (offset)
    for (size_t i = 0; i < t->size(); ++i) offset[i] = (*t)[i] * s.tile_extent[i];
}

herr_t chunk_iter(DatasetObj& d, H5D_chunk_iter_op_t op, void* op_data) {
  if (!op) fail_arg("no chunk iteration callback");
  const tessera::Schema& s = d.array->schema();
  std::vector<hsize_t> off(rank_of(d));
  for (const tessera::Coords& t : allocated_chunk_list(d)) {
    uint64_t n = 0;
    uint32_t mask = 0;
    chunk_bytes(d, t, nullptr, &n, &mask);
    for (size_t i = 0; i < t.size(); ++i) off[i] = t[i] * s.tile_extent[i];
    int rc = op(off.data(), mask, chunk_addr(d, t), n, op_data);
    if (rc < 0) fail_arg("the chunk iteration callback failed (returned " + std::to_string(rc) + ")");
    if (rc > 0) return rc;
  }
  return 0;
}

}  // namespace

herr_t dataset_native_optional(DatasetObj& d, H5VL_optional_args_t* args) {
  if (!args) fail_arg("NULL arguments");
  auto* a = static_cast<H5VL_native_dataset_optional_args_t*>(args->args);
  switch (args->op_type) {
    case H5VL_NATIVE_DATASET_FORMAT_CONVERT:  // no older on-disk format to convert to
      return 0;
    case H5VL_NATIVE_DATASET_GET_OFFSET:  // no contiguous raw data at a file offset
      *a->get_offset.offset = HADDR_UNDEF;
      return 0;
    case H5VL_NATIVE_DATASET_GET_VLEN_BUF_SIZE:
      break;  // HDF5 computes it through reads when the query says unsupported
    default:
      if (!a) fail_arg("NULL arguments");
      break;
  }
  std::lock_guard<std::recursive_mutex> g(d.file->mu());
  switch (args->op_type) {
    case H5VL_NATIVE_DATASET_GET_CHUNK_INDEX_TYPE:
      if (d.layout() != H5D_CHUNKED) fail_arg("dataset is not chunked");
      *a->get_chunk_idx_type.idx_type = H5D_CHUNK_IDX_BTREE;  // tessera's tiles: by coordinates
      return 0;
    case H5VL_NATIVE_DATASET_CHUNK_WRITE:
      require_chunked(d);
      write_chunk(d, &a->chunk_write);
      return 0;
    case H5VL_NATIVE_DATASET_CHUNK_READ:
      require_chunked(d);
      read_chunk(d, a->chunk_read);
      return 0;
    case H5VL_NATIVE_DATASET_GET_CHUNK_STORAGE_SIZE: {
      require_chunked(d);
      tessera::Coords t = tile_of(d, a->get_chunk_storage_size.offset);
      *a->get_chunk_storage_size.size = 0;
      std::vector<tessera::Coords> list = allocated_chunk_list(d);
      if (list.empty()) return 0;  // as native: no storage at all, size 0
      if (!allocated(list, t))
        fail_arg("chunk storage is not allocated (chunk at offset " + offset_text(t, d.array->schema()) + ")");
      uint64_t n = 0;
      uint32_t mask = 0;
      chunk_bytes(d, t, nullptr, &n, &mask);
      *a->get_chunk_storage_size.size = n;
      return 0;
    }
    case H5VL_NATIVE_DATASET_GET_NUM_CHUNKS:
      require_chunked(d);
      *a->get_num_chunks.nchunks = allocated_chunk_count(d);
      return 0;
    case H5VL_NATIVE_DATASET_GET_CHUNK_INFO_BY_IDX: {
      require_chunked(d);
      auto& q = a->get_chunk_info_by_idx;
      std::vector<tessera::Coords> list = allocated_chunk_list(d);
      const tessera::Coords* t = q.chk_index < list.size() ? &list[q.chk_index] : nullptr;
      chunk_info(d, t, q.offset, q.filter_mask, q.addr, q.size);
      return 0;
    }
    case H5VL_NATIVE_DATASET_GET_CHUNK_INFO_BY_COORD: {
      require_chunked(d);
      auto& q = a->get_chunk_info_by_coord;
      if (!q.offset) fail_arg("offset cannot be NULL");
      const tessera::Schema& s = d.array->schema();
      tessera::Coords t(rank_of(d));
      for (size_t i = 0; i < t.size(); ++i) t[i] = q.offset[i] / s.tile_extent[i];
      std::vector<tessera::Coords> list = allocated_chunk_list(d);
      chunk_info(d, allocated(list, t) ? &t : nullptr, nullptr, q.filter_mask, q.addr, q.size);
      return 0;
    }
    case H5VL_NATIVE_DATASET_CHUNK_ITER:
      require_chunked(d);
      return chunk_iter(d, a->chunk_iter.op, a->chunk_iter.op_data);
  }
  fail_unsupported("dataset optional operation " + std::to_string(args->op_type) +
                   " (native-only) is not supported by tessera containers");
}

}  // namespace tessera_vol
