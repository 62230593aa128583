#include "engine/fragment/fragment.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include <sys/uio.h>

#include "engine/fragment/block_window.h"
#include "engine/util/checksum.h"
#include "engine/util/error.h"
#include "engine/fragment/fragment_format.h"
#include "engine/tile/tile_cache.h"

namespace tessera {

namespace {
[[noreturn]] void corrupt(const std::string& path, const std::string& why) {
  throw_error(Errc::kCorrupt, "fragment '" + path + "': " + why);
}
std::atomic<uint64_t> g_serial{1};
}  // namespace

std::shared_ptr<Fragment> Fragment::open(const std::string& path, std::shared_ptr<Context> ctx) {
  ctx = Context::or_process(std::move(ctx));
  return open_source(path, std::make_unique<FileSource>(CachedFile::open(ctx->env(), path)), ctx);
}

std::shared_ptr<Fragment> Fragment::open_inline(const std::string& label,
                                                std::shared_ptr<const std::vector<uint8_t>> bytes,
                                                std::shared_ptr<Context> ctx) {
  auto src = std::make_unique<MemorySource>(label, std::move(bytes));
  MemorySource* m = src.get();
  auto f = open_source(label, std::move(src), std::move(ctx));
  f->inline_ = m;
  return f;
}

CachedFile& Fragment::file() {
  if (inline_) throw_error(Errc::kInternal, "fragment '" + path() + "' is inline: it has no file");
  return static_cast<FileSource*>(src_.get())->file();
}

void Fragment::set_path(std::string p) {
  if (!inline_) static_cast<FileSource*>(src_.get())->file().set_path(p);
  std::lock_guard<std::mutex> g(path_mu_);
  path_ = std::move(p);
}

std::shared_ptr<Fragment> Fragment::open_source(const std::string& path, std::unique_ptr<ByteSource> src,
                                                std::shared_ptr<Context> ctx) {
  auto f = std::shared_ptr<Fragment>(new Fragment());
  f->path_ = path;
  f->serial_ = g_serial++;
  f->ctx_ = Context::or_process(std::move(ctx));
  f->cache_ = &f->ctx_->tiles();
  f->src_ = std::move(src);
  f->file_size_ = f->src_->size();
  // Read times outlive the open (reread_recently): keyed by the file's device and inode
  // and its name, which holds the fragment id (a nanosecond timestamp): an inode reused
  // by a later fragment, as files are deleted and written, is not taken for this one.
  if (const uint64_t id = f->src_->identity()) {
    const std::string_view name = std::string_view(path).substr(path.find_last_of('/') + 1);
    const ByteSpan key[2] = {{&id, sizeof id}, {name.data(), name.size()}};
    f->stamp_id_ = checksum64_spans(key, 2);
  } else {
    f->stamp_id_ = f->serial_;
  }
  if (f->file_size_ < kFragHeaderSize + kFragTrailerSize) corrupt(path, "file truncated");
  uint8_t header[kFragHeaderSize], trailer[kFragTrailerSize];
  f->src_->pread_exact(header, sizeof header, 0);
  if (std::memcmp(header, kFragMagic, 8) != 0) corrupt(path, "not a tessera fragment (bad magic)");
  uint32_t ver;
  std::memcpy(&ver, header + 8, 4);
  if (ver != kFragVersion)
    throw_error(Errc::kUnsupported, unsupported_version("fragment '" + path + "'", ver, kFragVersion));
  f->src_->pread_exact(trailer, sizeof trailer, f->file_size_ - kFragTrailerSize);
  if (std::memcmp(trailer + 32, kFragEndMagic, 8) != 0) corrupt(path, "file truncated or trailer damaged");
  uint32_t tver;
  std::memcpy(&tver, trailer + 24, 4);
  if (tver != ver) corrupt(path, "trailer version differs from the header's");
  uint64_t foff, fsz, fck;
  std::memcpy(&foff, trailer, 8);
  std::memcpy(&fsz, trailer + 8, 8);
  std::memcpy(&fck, trailer + 16, 8);
  if (foff < kFragHeaderSize || fsz > f->file_size_ || foff != f->file_size_ - kFragTrailerSize - fsz)
    corrupt(path, "footer location is invalid");
  std::vector<uint8_t> footer(fsz);
  f->src_->pread_exact(footer.data(), fsz, foff);
  if (checksum64(footer.data(), fsz) != fck) corrupt(path, "footer checksum mismatch");
  f->meta_ = FragmentMeta::deserialize(footer.data(), fsz, "fragment '" + path + "'");
  auto check = [&](const BlobRef& b) {
    if (b.offset < kFragHeaderSize || b.stored_size > foff || b.offset > foff - b.stored_size)
      corrupt(path, "tile lies outside the data area");
  };
  uint64_t blocks = 0;
  for (const auto& e : f->meta_.dense) {
    if (e.kind == DenseEntry::kData) check(e.blob);
    f->block_base_.push_back(blocks);
    blocks += e.block_checks.size();
  }
  if (blocks) {
    const size_t words = (blocks + 63) / 64;
    f->verified_.reset(new std::atomic<uint64_t>[words]);
    for (size_t w = 0; w < words; ++w) f->verified_[w].store(0, std::memory_order_relaxed);
  }
  for (const auto& e : f->meta_.sparse) {
    check(e.coords);
    check(e.values);
  }
  return f;
}

std::vector<uint8_t> Fragment::read_blob(const BlobRef& b, const FilterPipeline& p,
                                         const std::string& what) const {
  std::vector<uint8_t> stored(b.stored_size);
  src_->pread_exact(stored.data(), stored.size(), b.offset);
  if (checksum64(stored.data(), stored.size()) != b.checksum) corrupt(path(), what + ": checksum mismatch");
  if (p.empty()) {
    // Longer is allowed (a direct chunk write of more bytes than the chunk holds: the
    // first raw_size bytes are the cells, as HDF5 reads such a chunk).
    if (stored.size() < b.raw_size) corrupt(path(), what + ": size mismatch");
    stored.resize(b.raw_size);
    return stored;
  }
  std::vector<uint8_t> raw;
  p.decode(stored.data(), stored.size(), b.raw_size, raw, "fragment '" + path() + "': " + what);
  return raw;
}

bool Fragment::verified(size_t i, uint64_t b0, uint64_t b1) const {
  for (uint64_t b = block_base_[i] + b0, end = block_base_[i] + b1; b <= end; ++b)
    if (!(verified_[b / 64].load(std::memory_order_relaxed) & (uint64_t{1} << (b % 64)))) return false;
  return true;
}

void Fragment::check_block(size_t i, uint64_t b, uint64_t sum) const {
  if (sum != meta_.dense[i].block_checks[b])
    corrupt(path(), "dense tile " + std::to_string(i) + ", block " + std::to_string(b) + ": checksum mismatch");
  const uint64_t bit = block_base_[i] + b;
  verified_[bit / 64].fetch_or(uint64_t{1} << (bit % 64), std::memory_order_relaxed);
}

void Fragment::verify_blocks(size_t i, const uint8_t* data, uint64_t b0, uint64_t b1) const {
  const uint64_t B = meta_.check_block, size = meta_.dense[i].blob.stored_size;
  for (uint64_t b = b0; b < b1; ++b) check_block(i, b, checksum64(data + (b - b0) * B, std::min(B, size - b * B)));
}

std::vector<uint8_t> Fragment::read_checked_tile(size_t i) const {
  const DenseEntry& e = meta_.dense[i];
  std::vector<uint8_t> v(e.blob.stored_size);
  src_->pread_exact(v.data(), v.size(), e.blob.offset);
  verify_blocks(i, v.data(), 0, e.block_checks.size());
  return v;
}

std::vector<uint8_t> Fragment::stored_dense_bytes(size_t i) const {
  const DenseEntry& e = meta_.dense.at(i);
  if (e.kind != DenseEntry::kData) throw_error(Errc::kInternal, "a fill entry has no stored bytes");
  if (partial_reads(i)) return read_checked_tile(i);
  std::vector<uint8_t> v(e.blob.stored_size);
  src_->pread_exact(v.data(), v.size(), e.blob.offset);
  if (checksum64(v.data(), v.size()) != e.blob.checksum)
    corrupt(path(), "dense tile " + std::to_string(i) + ": checksum mismatch");
  return v;
}

uint64_t Fragment::unverified_span(size_t i, const std::vector<ByteRun>& runs) const {
  if (runs.empty() || !partial_reads(i)) return 0;
  const DenseEntry& e = meta_.dense.at(i);
  const uint64_t B = meta_.check_block, size = e.blob.stored_size;
  const uint64_t b0 = runs.front().off / B, b1 = (runs.back().off + runs.back().len - 1) / B;
  if (b1 >= e.block_checks.size() || verified(i, b0, b1)) return 0;
  if (cache_->get(TileCache::Key{serial_, e.blob.offset})) return 0;  // copied from memory
  return std::min(size, (b1 + 1) * B) - b0 * B;
}

bool Fragment::span_resident(size_t i, const std::vector<ByteRun>& runs, uint64_t span) const {
  if (runs.empty() || span == 0) return true;
  const uint64_t B = meta_.check_block;
  return src_->resident(meta_.dense.at(i).blob.offset + runs.front().off / B * B, span);
}

void Fragment::prefetch_runs(size_t i, const std::vector<ByteRun>& runs) const {
  if (const uint64_t n = unverified_span(i, runs)) {
    const DenseEntry& e = meta_.dense[i];
    src_->will_need(e.blob.offset + runs.front().off / meta_.check_block * meta_.check_block, n);
  }
}

void Fragment::read_dense_runs(size_t i, const std::vector<ByteRun>& runs) const {
  if (runs.empty()) return;
  const DenseEntry& e = meta_.dense.at(i);
  const uint64_t B = meta_.check_block, size = e.blob.stored_size, base = e.blob.offset;
  if (!partial_reads(i)) throw_error(Errc::kInternal, "partial read of a tile without block checksums");
  for (size_t k = 0; k < runs.size(); ++k)
    if (runs[k].len == 0 || runs[k].off > size || runs[k].len > size - runs[k].off ||
        (k > 0 && runs[k].off < runs[k - 1].off + runs[k - 1].len))
      throw_error(Errc::kInternal, "dense tile runs out of order or out of the tile");
  if (auto hit = cache_->get(TileCache::Key{serial_, base})) {
    auto v = std::static_pointer_cast<const std::vector<uint8_t>>(hit);
    for (const ByteRun& r : runs) std::memcpy(r.dst, v->data() + r.off, r.len);
    return;
  }
  // Every block the runs touch is read — one preadv per window of up to 4 MiB, the runs'
  // bytes straight into their destinations (block_window.h) — and verified, on every
  // read, not only the first: the bytes come from the disk (or a page cache the disk
  // refills) each time, and a block damaged after an earlier read must fail the read that
  // uses it.  A failed check throws: the destination may then hold unverified bytes of
  // that window, as any failed read leaves its buffer undefined.  A large cold read has
  // its span prefetched by the planner first (prefetch_runs), so these preads mostly wait
  // for requests already at the disk.
  // Blocks verified before are most likely in the page cache: windows small enough for the
  // core's L2 let the checksum pass read what the kernel's copy just wrote from the cache,
  // not from memory.  First reads (from the disk) take large windows: fewer, larger requests.
  const bool warm = verified(i, runs.front().off / B, (runs.back().off + runs.back().len - 1) / B);
  const WindowLimits lim{B, size, warm ? kWarmReadWindow : kReadWindow, kReadScratch, kDirectMinBytes, kMaxPieces};
  // Per-thread buffers, kept: a cold read is many calls (ReadPlanner jobs), and fresh
  // ones cost a zero-fill and an mmap/munmap each time.  Scratch holds only the bytes not
  // read in place: at most kReadScratch (or one block, if larger).
  static thread_local std::vector<uint8_t> scratch;
  static thread_local WindowPlan plan;
  static thread_local std::vector<struct iovec> iov;
  static thread_local std::vector<ByteSpan> spans;
  size_t k = 0;
  uint64_t skip = 0;  // bytes of runs[k] already read
  while (k < runs.size()) {
    plan_window(runs, k, skip, lim, &plan);
    if (scratch.size() < plan.scratch_bytes) scratch.resize(plan.scratch_bytes);
    iov.resize(plan.pieces.size());
    for (size_t n = 0; n < plan.pieces.size(); ++n) {
      const WindowPlan::Piece& p = plan.pieces[n];
      iov[n] = {p.dst ? p.dst : scratch.data() + p.soff, p.len};
    }
    src_->preadv_exact(iov.data(), static_cast<int>(iov.size()), base + plan.w0);  // (advances iov)
    // The blocks, each over the pieces it lies in.
    size_t pi = 0;
    uint64_t po = 0;  // bytes of pieces[pi] before the current block
    for (uint64_t b = plan.b0; b < plan.b1; ++b) {
      uint64_t left = std::min(B, size - b * B);
      spans.clear();
      while (left > 0) {
        const WindowPlan::Piece& p = plan.pieces[pi];
        const uint64_t take = std::min(left, p.len - po);
        spans.push_back({(p.dst ? p.dst : scratch.data() + p.soff) + po, take});
        left -= take;
        po += take;
        if (po == p.len) ++pi, po = 0;
      }
      check_block(i, b, checksum64_spans(spans.data(), spans.size()));
    }
    for (const WindowPlan::Copy& c : plan.copies) std::memcpy(c.dst, scratch.data() + c.soff, c.len);
    k = plan.next_run;
    skip = plan.next_skip;
  }
}

Fragment::~Fragment() {
  if (cached_.load(std::memory_order_relaxed) && cache_) cache_->drop(serial_);
}

bool Fragment::tile_cached(size_t i) const {
  return cache_->get(TileCache::Key{serial_, meta_.dense.at(i).blob.offset}) != nullptr;
}

bool Fragment::reread_recently(size_t i) const {
  const DenseEntry& e = meta_.dense.at(i);
  cached_.store(true, std::memory_order_relaxed);  // its stamp goes with the fragment too
  return cache_->reread_recently(TileCache::Key{stamp_id_, e.blob.offset}, e.blob.stored_size);
}

bool Fragment::cache_tile(size_t i) const {
  if (!partial_reads(i) || meta_.dense[i].blob.stored_size > cache_->max_entry()) return false;
  try {
    dense_tile(i);  // one pread of the tile and every block checked (read_checked_tile)
  } catch (const std::exception&) {
    return false;
  }
  return tile_cached(i);
}

bool Fragment::cache_resident_tile(size_t i) const {
  // cache_tile's own checks (size, partial reads) come first: the probe is a syscall.
  const BlobRef& b = meta_.dense.at(i).blob;
  return partial_reads(i) && b.stored_size <= cache_->max_entry() && src_->resident(b.offset, b.stored_size) &&
         cache_tile(i);  // one pread of the tile, every block verified
}

std::shared_ptr<const std::vector<uint8_t>> Fragment::dense_tile(size_t i) const {
  const DenseEntry& e = meta_.dense.at(i);
  auto key = TileCache::Key{serial_, e.blob.offset};
  if (auto hit = cache_->get(key)) return std::static_pointer_cast<const std::vector<uint8_t>>(hit);
  auto v = std::make_shared<std::vector<uint8_t>>(
      partial_reads(i) ? read_checked_tile(i)
                       : read_blob(e.blob, meta_.values_filters, "dense tile " + std::to_string(i)));
  cached_.store(true, std::memory_order_relaxed);
  cache_->put(key, v, v->size());
  return v;
}

const Layout& Fragment::layout(const Schema& s) const {
  std::call_once(layout_once_, [&] { layout_ = std::make_unique<Layout>(s, meta_.order); });
  return *layout_;
}

size_t find_cell(const Layout& layout, const SparseTileData& t, size_t n, const uint64_t* c) {
  const size_t rank = n ? t.coords.size() / n : 0;
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int cmp = layout.compare_cells(&t.coords[mid * rank], c);
    if (cmp == 0) return mid;
    if (cmp < 0) lo = mid + 1;
    else hi = mid;
  }
  return SIZE_MAX;
}

std::shared_ptr<const SparseTileData> Fragment::sparse_tile(size_t i, const Layout& layout) const {
  const SparseEntry& e = meta_.sparse.at(i);
  return load_cells(e, "sparse tile " + std::to_string(i), true, e.coords.offset, layout);
}

std::shared_ptr<const SparseTileData> Fragment::sparse_coords(size_t i, const Layout& layout) const {
  const SparseEntry& e = meta_.sparse.at(i);
  // A tile already decoded whole serves; else the coordinates alone, cached apart.
  if (auto hit = cache_->get(TileCache::Key{serial_, e.coords.offset}))
    return std::static_pointer_cast<const SparseTileData>(hit);
  return load_cells(e, "sparse tile " + std::to_string(i), false, e.coords.offset | (uint64_t{1} << 63), layout);
}

std::shared_ptr<const SparseTileData> Fragment::erased_tile(size_t i, const Layout& layout) const {
  const SparseEntry& e = meta_.erased.at(i);
  return load_cells(e, "erased tile " + std::to_string(i), false, e.coords.offset, layout);
}

std::shared_ptr<const SparseTileData> Fragment::load_cells(const SparseEntry& e, const std::string& what, bool values,
                                                           uint64_t key_off, const Layout& layout) const {
  auto key = TileCache::Key{serial_, key_off};
  if (auto hit = cache_->get(key)) return std::static_pointer_cast<const SparseTileData>(hit);
  auto t = decode_cells(e, what, values, layout);
  cached_.store(true, std::memory_order_relaxed);
  cache_->put(key, t, e.cells * meta_.rank * 8 + t->values.size() + t->keys.size() * 8);
  return t;
}

std::shared_ptr<SparseTileData> Fragment::decode_cells(const SparseEntry& e, const std::string& what, bool values,
                                                       const Layout& layout) const {
  auto t = std::make_shared<SparseTileData>();
  std::vector<uint8_t> c = read_blob(e.coords, meta_.coords_filters, what + " coordinates");
  t->coords.resize(e.cells * meta_.rank);
  std::memcpy(t->coords.data(), c.data(), c.size());
  if (values) t->values = read_blob(e.values, meta_.values_filters, what + " values");
  // Coordinates must lie inside the recorded MBR; anything else is corruption.
  for (uint64_t k = 0; k < e.cells; ++k)
    if (!e.mbr.contains(&t->coords[k * meta_.rank])) corrupt(path(), what + ": cell outside its MBR");
  // Keys must ascend strictly: a fragment's cells are unique and in global order.
  const int w = layout.key_size();
  t->keys.resize(e.cells * w);
  uint64_t* kp = t->keys.data();
  for (uint64_t k = 0; k < e.cells; ++k) {
    layout.key_words(&t->coords[k * meta_.rank], kp + k * w);
    if (k > 0 && !std::lexicographical_compare(kp + (k - 1) * w, kp + k * w, kp + k * w, kp + (k + 1) * w))
      corrupt(path(), what + ": cells out of global order");
  }
  return t;
}

void Fragment::verify(const Layout& layout, const std::function<void(const uint8_t*, uint64_t)>& on_values,
                      const std::function<void(uint64_t)>& progress) const {
  uint64_t done = 0;
  auto step = [&](uint64_t bytes) {
    done += bytes;
    if (progress) progress(done);
  };
  for (size_t i = 0; i < meta_.dense.size(); ++i) {
    const DenseEntry& e = meta_.dense[i];
    if (e.kind != DenseEntry::kData) continue;
    const std::string what = "dense tile " + std::to_string(i);
    std::vector<uint8_t> cells;
    if (partial_reads(i)) {
      // Every block against its checksum, whatever this open fragment verified before.
      cells.resize(e.blob.stored_size);
      src_->pread_exact(cells.data(), cells.size(), e.blob.offset);
      const uint64_t B = meta_.check_block;
      for (uint64_t b = 0; b < e.block_checks.size(); ++b)
        if (checksum64(cells.data() + b * B, std::min(B, cells.size() - b * B)) != e.block_checks[b])
          corrupt(path(), what + ", block " + std::to_string(b) + ": checksum mismatch");
      if (cells.size() < e.blob.raw_size) corrupt(path(), what + ": size mismatch");
      cells.resize(e.blob.raw_size);
    } else {
      cells = read_blob(e.blob, meta_.values_filters, what);
    }
    if (cells.size() < e.box.cells() * meta_.elem_size)
      corrupt(path(), what + ": holds fewer cells than its box");
    if (on_values) on_values(cells.data(), e.box.cells());
    step(e.blob.stored_size);
  }
  for (size_t i = 0; i < meta_.sparse.size(); ++i) {
    const SparseEntry& e = meta_.sparse[i];
    auto t = decode_cells(e, "sparse tile " + std::to_string(i), true, layout);
    if (t->values.size() != e.cells * meta_.elem_size)
      corrupt(path(), "sparse tile " + std::to_string(i) + ": values size mismatch");
    if (on_values) on_values(t->values.data(), e.cells);
    step(e.coords.stored_size + e.values.stored_size);
  }
  for (size_t i = 0; i < meta_.erased.size(); ++i) {
    const SparseEntry& e = meta_.erased[i];
    decode_cells(e, "erased tile " + std::to_string(i), false, layout);
    step(e.coords.stored_size);
  }
}

}  // namespace tessera
