#include "engine/fragment/fragment_writer.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "engine/tile/block_checksummer.h"
#include "engine/util/checksum.h"
#include "engine/util/error.h"
#include "engine/fragment/fragment_format.h"

namespace tessera {

namespace {
// Coordinates compress well once shuffled (high bytes are mostly zero); lz4 keeps the
// cost of a spill near memcpy speed.
FilterPipeline coords_pipeline() { return FilterPipeline({{FilterType::kShuffle, 0}, {FilterType::kLz4, 0}}, 8); }
std::atomic<uint64_t> g_tmp_counter{0};
}  // namespace

FragmentWriter::FragmentWriter(Context& ctx, const std::string& dir, FragmentId id, const Schema& schema,
                               uint64_t inline_limit, std::function<void()> before_file)
    : dir_(dir), schema_(schema), layout_(schema), ctx_(ctx), pool_(ctx.filters()),
      out_(File(), 0), in_memory_(inline_limit > 0), inline_limit_(inline_limit),
      before_file_(std::move(before_file)) {
  meta_.id = id;
  // Names only for a file (a small inline fragment never needs them: thousands of tiny
  // datasets write one each).
  if (!in_memory_) open_file();
  uint8_t header[kFragHeaderSize] = {};
  std::memcpy(header, kFragMagic, 8);
  std::memcpy(header + 8, &kFragVersion, 4);
  append(header, sizeof header);
  meta_.rank = static_cast<uint32_t>(schema.rank());
  meta_.elem_size = schema.elem_size;
  meta_.values_filters = schema.filters;
  meta_.coords_filters = coords_pipeline();
  // Unfiltered dense tiles are checksummed per block, so reads can take parts of them.
  meta_.check_block = schema.filters.empty() ? kCheckBlock : 0;
  // Tiles and cells go in the schema's order, and the footer says so (a later conversion
  // changes the schema's order, not this fragment's).
  meta_.order = schema.order();
}

FragmentWriter::~FragmentWriter() {
  if (!committed_) abort();
}

void FragmentWriter::abort() {
  for (auto& p : pending_) {
    if (p.encoded.valid()) p.encoded.wait();
  }
  pending_.clear();
  if (out_.file().is_open()) {
    try {
      out_.file().close();
    } catch (...) {
    }
  }
  try {
    if (!in_memory_) remove_file(ctx_.env(), tmp_path_);
  } catch (...) {
  }
  committed_ = true;  // nothing left to clean up
}

namespace {
// Filters `raw` (moved into `bytes` when there are no filters) and checksums the result,
// whole or per kCheckBlock bytes.
// The blob's checksum: whole (*checksum), or per kCheckBlock bytes (*blocks, checksum 0).
void checksum_blob(const uint8_t* p, size_t n, bool by_block, uint64_t* checksum, std::vector<uint64_t>* blocks) {
  if (by_block) {
    blocks->resize(FragmentMeta::block_count(n, kCheckBlock));
    for (size_t b = 0; b < blocks->size(); ++b)
      (*blocks)[b] = checksum64(p + b * kCheckBlock, std::min<uint64_t>(kCheckBlock, n - b * kCheckBlock));
    *checksum = 0;
  } else {
    *checksum = checksum64(p, n);
  }
}

void encode_into(std::vector<uint8_t>& raw, const FilterPipeline* pipeline, bool by_block,
                 std::vector<uint8_t>* bytes, uint64_t* checksum, std::vector<uint64_t>* blocks) {
  if (pipeline->empty()) *bytes = std::move(raw);
  else pipeline->encode(raw.data(), raw.size(), *bytes);
  checksum_blob(bytes->data(), bytes->size(), by_block, checksum, blocks);
}
}  // namespace
void FragmentWriter::name_files() {
  if (!final_path_.empty()) return;
  final_path_ = join_path(dir_, file_name(meta_.id));
  tmp_path_ = join_path(dir_, "." + meta_.id.name() + "." + std::to_string(::getpid()) + "." +
                                  std::to_string(g_tmp_counter++) + ".tmp");
}

void FragmentWriter::open_file() {
  name_files();
  if (before_file_) before_file_();
  out_ = AppendFile(File::open_rw(ctx_.env(), tmp_path_, true, true), 0);
  head_ = std::move(mem_);  // written with the next append
  mem_ = {};
  in_memory_ = false;
}

// The file's first bytes (the header, small blobs) wait in head_ and go out in one write
// with the first large append: a tile written at offset 32 right after a separately
// written 32-byte header lands in the page cache as small folios ramping up from page 0;
// written as one call from offset 0 it gets large folios, and whole-tile reads copy from
// fewer of them (measurably faster warm reads of 8 MiB tiles).
void FragmentWriter::append(const void* p, size_t n) {
  try {
    append_impl(p, n);
    maybe_start_writeback();
  } catch (...) {
    // The tile entry that refers to these bytes is already recorded: the fragment can
    // never be finished consistently (finish() refuses it; the array drops it).
    failed_ = true;
    throw;
  }
}

// A growing file fragment's pages go to the disk every kWritebackStep bytes (async), so
// the disk works while the caller writes on and the flush's fdatasync waits for the last
// step only (the demo's 256 MiB close was one fdatasync of all of it: 117 ms).
void FragmentWriter::maybe_start_writeback() {
  if (in_memory_) return;
  const uint64_t off = out_.offset();
  if (off < wb_started_ + kWritebackStep) return;
  start_writeback_async(out_.file().fd(), wb_started_, off - wb_started_);
  wb_started_ = off;
}

void FragmentWriter::append_impl(const void* p, size_t n) {
  if (in_memory_ && mem_.size() + n > inline_limit_) open_file();
  const auto* b = static_cast<const uint8_t*>(p);
  if (in_memory_) {
    mem_.insert(mem_.end(), b, b + n);
  } else if ((out_.offset() == 0 || n <= kStageMax) && head_.size() + n <= kHeadBytes) {
    // Small blobs further on wait there too: a spill of many small dense boxes (a
    // partly covered tile's, cover_boxes.h) goes out in 64 KiB writes, not one per box.
    head_.insert(head_.end(), b, b + n);
  } else if (!head_.empty()) {
    out_.append2(head_.data(), head_.size(), p, n);
    head_ = {};
  } else {
    out_.append(p, n);
  }
}

// Like append, for pieces iov[1..cnt] of `total` bytes; iov[0] is where the file's first
// bytes go when they are still waiting in head_ (one call from offset 0, as in append).
void FragmentWriter::append_pieces(struct iovec* iov, int cnt, uint64_t total) {
  try {
    if (in_memory_ && mem_.size() + total > inline_limit_) open_file();
    if (in_memory_ || (out_.offset() == 0 && head_.size() + total <= kHeadBytes)) {
      for (int k = 1; k <= cnt; ++k) append_impl(iov[k].iov_base, iov[k].iov_len);
    } else if (!head_.empty()) {
      iov[0] = {head_.data(), head_.size()};
      out_.appendv(iov, cnt + 1);
      head_ = {};
    } else {
      out_.appendv(iov + 1, cnt);
    }
    maybe_start_writeback();
  } catch (...) {
    failed_ = true;  // as in append: the tile's entry is recorded, its bytes are not
    throw;
  }
}

// sync_file_range(WRITE) waits while the device's queue is full, which in a load of
// many chunks would stall the writer on the disk: it runs on the I/O pool, on a duplicate
// of the descriptor (the writer closes its own at once).  Only a hint: nothing waits for
// it, and the flush's sync is what makes the data durable.
void FragmentWriter::start_writeback_async(int fd, uint64_t off, uint64_t n) {
  int dup = ::dup(fd);
  if (dup < 0) return;
  ctx_.io().submit([dup, off, n] {
    (void)::sync_file_range(dup, static_cast<off64_t>(off), static_cast<off64_t>(n), SYNC_FILE_RANGE_WRITE);
    ::close(dup);
  });
}

void FragmentWriter::flush_head() {
  if (in_memory_ || head_.empty()) return;
  out_.append(head_.data(), head_.size());
  head_ = {};
}

void FragmentWriter::submit(std::vector<uint8_t> raw, const FilterPipeline* pipeline, BlobRef* ref,
                            TileStats* stats, std::vector<uint64_t>* blocks) {
  ref->raw_size = raw.size();
  const Schema* schema = &schema_;
  const uint64_t cells = raw.size() / schema_.elem_size;
  const bool by_block = blocks != nullptr && meta_.check_block != 0;
  if (pipeline->empty() && raw.size() < (1u << 16)) {
    // Small unfiltered blobs: no point paying a thread hop.
    if (stats) *stats = compute_stats(schema_, raw.data(), cells);
    std::promise<Encoded> p;
    Encoded e;
    encode_into(raw, pipeline, by_block, &e.bytes, &e.checksum, &e.blocks);
    p.set_value(std::move(e));
    pending_.push_back({p.get_future(), ref, by_block ? blocks : nullptr});
  } else {
    auto fut = pool_.submit([raw = std::move(raw), pipeline, stats, schema, cells, by_block]() mutable {
      if (stats) *stats = compute_stats(*schema, raw.data(), cells);  // the entry outlives the job
      Encoded e;
      encode_into(raw, pipeline, by_block, &e.bytes, &e.checksum, &e.blocks);
      return e;
    });
    pending_.push_back({std::move(fut), ref, by_block ? blocks : nullptr});
  }
  drain(2 * pool_.size() + 2);
}

void FragmentWriter::drain(size_t keep) {
  while (pending_.size() > keep) {
    Pending p = std::move(pending_.front());
    pending_.pop_front();
    Encoded e = p.encoded.get();  // rethrows filter errors
    p.ref->offset = offset();
    p.ref->stored_size = e.bytes.size();
    p.ref->checksum = e.checksum;
    if (p.blocks) *p.blocks = std::move(e.blocks);
    append(e.bytes.data(), e.bytes.size());
  }
}

void FragmentWriter::add_dense_tile(const uint64_t* tile, const Box& box, std::vector<uint8_t> data) {
  if (data.size() != box.cells() * schema_.elem_size)
    throw_error(Errc::kInternal, "dense tile data size does not match its box");
  DenseEntry& e = new_data_entry(tile, box);
  submit(std::move(data), &meta_.values_filters, &e.blob, &e.stats, &e.block_checks);
}

DenseEntry& FragmentWriter::new_data_entry(const uint64_t* tile, const Box& box) {
  if (!dense_.empty()) {
    const int c = layout_.compare_tiles(dense_.back().tile.data(), tile);
    if (c > 0) throw_error(Errc::kInternal, "dense tiles must be added in ascending tile order");
    // Several disjoint boxes may share a tile (a spill's partly covered tile,
    // cover_boxes.h): readers take every entry of the tile.
    if (c == 0)
      for (size_t i = dense_.size(); i-- > 0 && layout_.compare_tiles(dense_[i].tile.data(), tile) == 0;)
        if (dense_[i].box.intersects(box))
          throw_error(Errc::kInternal, "dense boxes sharing a tile must be disjoint");
  }
  DenseEntry e;
  e.kind = DenseEntry::kData;
  e.tile.assign(tile, tile + schema_.rank());
  e.box = box;
  meta_.extend_domain(box);
  meta_.cells += box.cells();
  dense_.push_back(std::move(e));
  return dense_.back();
}

void FragmentWriter::add_dense_tile_from(const uint64_t* tile, const Box& box, const uint8_t* data) {
  const ByteSpan whole{data, box.cells() * schema_.elem_size};
  add_dense_tile_spans(tile, box, &whole, 1);
}

// The tile goes out in groups of about kWriteGroup bytes: each group's pieces are
// checksummed and their statistics taken while they sit in the CPU's cache, then written
// with one pwritev from the same memory.  The caller's bytes are thus read from memory
// once (a whole-tile checksum, statistics and write each read 8 MiB again: the tile does
// not fit in L2), and a tile cut out of wider rows is never gathered (issue 20: the
// gather and the checksums were the dense write's gap to native HDF5).  Group ends lie
// on multiples of kWriteGroup in the file, so the page cache gets aligned large folios.
void FragmentWriter::add_dense_tile_spans(const uint64_t* tile, const Box& box, const ByteSpan* spans, size_t n) {
  if (!meta_.values_filters.empty()) throw_error(Errc::kInternal, "borrowed dense tiles must be unfiltered");
  const uint64_t es = schema_.elem_size, bytes = box.cells() * es;
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    if (spans[i].len % es != 0) throw_error(Errc::kInternal, "a dense tile's piece holds a partial cell");
    sum += spans[i].len;
  }
  if (sum != bytes) throw_error(Errc::kInternal, "dense tile pieces do not match its box");
  drain(0);  // earlier blobs go first in the file
  DenseEntry& e = new_data_entry(tile, box);
  e.blob.raw_size = e.blob.stored_size = bytes;
  e.blob.offset = offset();
  const uint64_t base = e.blob.offset;
  BlockChecksummer sums(meta_.check_block);
  TileStats stats;
  const bool numeric = schema_.kind != ElementKind::kOpaque;
  constexpr int kMaxPieces = 1023;  // IOV_MAX, less one for the file's first bytes (head_)
  struct iovec iov[kMaxPieces + 1];
  size_t i = 0;
  uint64_t skip = 0, pos = 0;  // the next byte: spans[i] + skip, tile offset pos
  while (pos < bytes) {
    // The group ends at the next multiple of kWriteGroup in the file, moved onto a cell
    // boundary (pieces hold whole cells: their statistics are taken alone).
    uint64_t end = ((base + pos) / kWriteGroup + 1) * kWriteGroup - base;
    end = std::min(bytes, (end + es - 1) / es * es);
    int cnt = 0;
    const uint64_t start = pos;
    while (pos < end && cnt < kMaxPieces) {
      if (spans[i].len == skip) {
        ++i;
        skip = 0;
        continue;
      }
      const uint8_t* p = static_cast<const uint8_t*>(spans[i].data) + skip;
      const uint64_t len = std::min(spans[i].len - skip, end - pos);
      sums.update(p, len);
      if (numeric) merge_stats(schema_, &stats, compute_stats(schema_, p, len / es));
      iov[++cnt] = {const_cast<uint8_t*>(p), len};
      skip += len;
      pos += len;
    }
    append_pieces(iov, cnt, pos - start);
  }
  stats.count = box.cells();
  e.stats = stats;
  std::vector<uint64_t> checks = sums.finish();
  if (meta_.check_block != 0) {
    e.block_checks = std::move(checks);
    e.blob.checksum = 0;
  } else {
    e.blob.checksum = checks.at(0);
  }
}

void FragmentWriter::add_dense_tile_encoded(const uint64_t* tile, const Box& box, const uint8_t* bytes, size_t n) {
  const uint64_t raw = box.cells() * schema_.elem_size;
  if (meta_.values_filters.empty()) {
    if (n < raw || (n > raw && meta_.check_block != 0))
      throw_error(Errc::kInvalidArgument, "an unfiltered tile of " + std::to_string(box.cells()) + " cells holds " +
                                              std::to_string(raw) + " bytes, not " + std::to_string(n));
    if (n == raw && meta_.check_block != 0) {
      add_dense_tile_from(tile, box, bytes);
      return;
    }
  }
  drain(0);  // earlier blobs go first in the file
  DenseEntry& e = new_data_entry(tile, box);
  e.stats.count = box.cells();
  e.blob.raw_size = raw;
  e.blob.stored_size = n;
  e.blob.checksum = checksum64(bytes, n);
  e.blob.offset = offset();
  append(bytes, n);
}

void FragmentWriter::add_fill_tile(const uint64_t* tile, const Box& box) {
  if (!dense_.empty() && layout_.compare_tiles(dense_.back().tile.data(), tile) > 0)
    throw_error(Errc::kInternal, "dense tiles must be added in ascending tile order");
  DenseEntry e;
  e.kind = DenseEntry::kFill;
  e.tile.assign(tile, tile + schema_.rank());
  e.box = box;
  e.stats.count = box.cells();
  meta_.extend_domain(box);
  meta_.cells += box.cells();
  dense_.push_back(std::move(e));
}

void FragmentWriter::set_values_pipeline(const FilterPipeline& p) {
  if (!dense_.empty() || !sparse_.empty() || pending_sparse_ != 0)
    throw_error(Errc::kInternal, "the values pipeline must be set before the first tile");
  meta_.values_filters = p;
  meta_.check_block = p.empty() ? kCheckBlock : 0;
}

void FragmentWriter::set_whole_checksums() {
  if (!dense_.empty() || !sparse_.empty() || pending_sparse_ != 0)
    throw_error(Errc::kInternal, "the checksum form must be set before the first tile");
  meta_.check_block = 0;
}

void FragmentWriter::add_sparse_cells(const uint64_t* coords, const uint8_t* values, size_t n) {
  const size_t r = static_cast<size_t>(schema_.rank()), es = schema_.elem_size;
  size_t i = 0;
  while (i < n) {
    if (pending_sparse_ == 0) {
      // Room for the whole tile at once (growing would copy and touch fresh pages).
      const uint64_t cap = std::max<uint64_t>(1, std::min<uint64_t>(schema_.sparse_capacity, expect_sparse_));
      sp_coords_.reserve(cap * r * 8);
      sp_values_.reserve(cap * es);
      sp_mbr_ = Box(Coords(coords + i * r, coords + (i + 1) * r), Coords(coords + i * r, coords + (i + 1) * r));
    }
    size_t room = schema_.sparse_capacity - pending_sparse_;
    size_t take = std::min(room, n - i);
    const auto* cb = reinterpret_cast<const uint8_t*>(coords + i * r);
    sp_coords_.insert(sp_coords_.end(), cb, cb + take * r * 8);
    sp_values_.insert(sp_values_.end(), values + i * es, values + (i + take) * es);
    for (size_t c = i; c < i + take; ++c)
      for (size_t d = 0; d < r; ++d) {
        const uint64_t v = coords[c * r + d];
        if (v < sp_mbr_.lo[d]) sp_mbr_.lo[d] = v;
        if (v > sp_mbr_.hi[d]) sp_mbr_.hi[d] = v;
      }
    pending_sparse_ += take;
    expect_sparse_ -= std::min<uint64_t>(expect_sparse_, take);
    i += take;
    if (pending_sparse_ == schema_.sparse_capacity) flush_sparse_tile();
  }
}

void FragmentWriter::flush_sparse_tile() {
  if (pending_sparse_ == 0) return;
  const size_t r = static_cast<size_t>(schema_.rank());
  SparseEntry e;
  e.cells = pending_sparse_;
  e.first.resize(r);
  e.last.resize(r);
  std::memcpy(e.first.data(), sp_coords_.data(), r * 8);
  std::memcpy(e.last.data(), sp_coords_.data() + sp_coords_.size() - r * 8, r * 8);
  e.mbr = std::move(sp_mbr_);
  e.stats = compute_stats(schema_, sp_values_.data(), pending_sparse_);
  meta_.extend_domain(e.mbr);
  meta_.cells += pending_sparse_;
  sparse_.push_back(std::move(e));
  submit(std::move(sp_coords_), &meta_.coords_filters, &sparse_.back().coords);
  submit(std::move(sp_values_), &meta_.values_filters, &sparse_.back().values);
  sp_coords_ = {};
  sp_values_ = {};
  pending_sparse_ = 0;
}

void FragmentWriter::add_erased_cells(const uint64_t* coords, size_t n) {
  const size_t r = static_cast<size_t>(schema_.rank());
  for (size_t i = 0; i < n; ++i) {
    const uint64_t* c = coords + i * r;
    if (er_coords_.empty()) er_mbr_ = Box(Coords(c, c + r), Coords(c, c + r));
    const auto* cb = reinterpret_cast<const uint8_t*>(c);
    er_coords_.insert(er_coords_.end(), cb, cb + r * 8);
    for (size_t d = 0; d < r; ++d) {
      er_mbr_.lo[d] = std::min(er_mbr_.lo[d], c[d]);
      er_mbr_.hi[d] = std::max(er_mbr_.hi[d], c[d]);
    }
    if (er_coords_.size() == schema_.sparse_capacity * r * 8) flush_erased_tile();
  }
}

void FragmentWriter::flush_erased_tile() {
  if (er_coords_.empty()) return;
  const size_t r = static_cast<size_t>(schema_.rank());
  SparseEntry e;
  e.cells = er_coords_.size() / (r * 8);
  e.first.resize(r);
  e.last.resize(r);
  std::memcpy(e.first.data(), er_coords_.data(), r * 8);
  std::memcpy(e.last.data(), er_coords_.data() + er_coords_.size() - r * 8, r * 8);
  e.mbr = std::move(er_mbr_);
  e.stats.count = e.cells;
  meta_.extend_domain(e.mbr);
  meta_.cells += e.cells;
  erased_.push_back(std::move(e));
  submit(std::move(er_coords_), &meta_.coords_filters, &erased_.back().coords);
  er_coords_ = {};
}

std::string FragmentWriter::finish() {
  if (failed_)
    throw_error(Errc::kIo, "fragment '" + tmp_path_ + "': an earlier write to it failed, so it cannot be finished");
  try {
    return finish_impl();
  } catch (...) {
    failed_ = true;
    throw;
  }
}

std::string FragmentWriter::finish_impl() {
  write_footer();
  if (in_memory_) {
    committed_ = true;  // nothing on disk; the caller takes the bytes
    return std::string();
  }
  // A large fragment's pages start going to disk now, while the caller goes on: the
  // flush's sync then waits for little more than the last fragments (a 1 GiB load is
  // durable soon after its last write instead of one full disk pass after it).
  flush_head();
  if (offset() >= (4u << 20)) start_writeback_async(out_.file().fd(), wb_started_, 0);  // to the end
  out_.file().close();
  committed_ = true;  // the temporary file now belongs to the caller
  return tmp_path_;
}

void FragmentWriter::publish_finished(CachedFile& f, const std::string& tmp_path, const std::string& final_path,
                                      bool already_synced) {
  if (!already_synced) f.sync();
  if (f.env().rename(tmp_path.c_str(), final_path.c_str()) != 0) throw_errno("publish fragment", final_path, errno);
}

void FragmentWriter::write_footer() {
  flush_sparse_tile();
  flush_erased_tile();
  drain(0);
  meta_.dense.assign(dense_.begin(), dense_.end());
  meta_.sparse.assign(sparse_.begin(), sparse_.end());
  meta_.erased.assign(erased_.begin(), erased_.end());
  std::vector<uint8_t> footer = meta_.serialize();
  uint64_t footer_off = offset();
  append(footer.data(), footer.size());
  uint8_t trailer[kFragTrailerSize] = {};
  uint64_t fsz = footer.size(), fck = checksum64(footer.data(), footer.size());
  std::memcpy(trailer, &footer_off, 8);
  std::memcpy(trailer + 8, &fsz, 8);
  std::memcpy(trailer + 16, &fck, 8);
  std::memcpy(trailer + 24, &kFragVersion, 4);
  std::memcpy(trailer + 32, kFragEndMagic, 8);
  append(trailer, sizeof trailer);
}

}  // namespace tessera
