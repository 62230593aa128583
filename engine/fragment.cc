#include "engine/fragment.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "engine/checksum.h"
#include "engine/error.h"
#include "engine/fragment_format.h"
#include "engine/tile_cache.h"

namespace tessera {

namespace {
[[noreturn]] void corrupt(const std::string& path, const std::string& why) {
  throw_error(Errc::kCorrupt, "fragment '" + path + "': " + why);
}
std::atomic<uint64_t> g_serial{1};
}  // namespace

std::shared_ptr<Fragment> Fragment::open(const std::string& path) {
  return open_source(path, std::make_unique<FileSource>(File::open_read(path)));
}

std::shared_ptr<Fragment> Fragment::open_inline(const std::string& label,
                                                std::shared_ptr<const std::vector<uint8_t>> bytes) {
  auto src = std::make_unique<MemorySource>(label, std::move(bytes));
  MemorySource* m = src.get();
  auto f = open_source(label, std::move(src));
  f->inline_ = m;
  return f;
}

File& Fragment::file() {
  if (inline_) throw_error(Errc::kInternal, "fragment '" + path_ + "' is inline: it has no file");
  return static_cast<FileSource*>(src_.get())->file();
}

std::shared_ptr<Fragment> Fragment::open_source(const std::string& path, std::unique_ptr<ByteSource> src) {
  auto f = std::shared_ptr<Fragment>(new Fragment());
  f->path_ = path;
  f->serial_ = g_serial++;
  f->src_ = std::move(src);
  f->file_size_ = f->src_->size();
  if (f->file_size_ < kFragHeaderSize + kFragTrailerSize) corrupt(path, "file truncated");
  uint8_t header[kFragHeaderSize], trailer[kFragTrailerSize];
  f->src_->pread_exact(header, sizeof header, 0);
  if (std::memcmp(header, kFragMagic, 8) != 0) corrupt(path, "not a tessera fragment (bad magic)");
  uint32_t ver;
  std::memcpy(&ver, header + 8, 4);
  if (ver != kFragVersion)
    throw_error(Errc::kUnsupported, "fragment '" + path + "': format version " + std::to_string(ver) +
                                        " is not supported (this build reads version 1)");
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
  for (const auto& e : f->meta_.dense)
    if (e.kind == DenseEntry::kData) check(e.blob);
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
  if (checksum64(stored.data(), stored.size()) != b.checksum) corrupt(path_, what + ": checksum mismatch");
  if (p.empty()) {
    if (stored.size() != b.raw_size) corrupt(path_, what + ": size mismatch");
    return stored;
  }
  std::vector<uint8_t> raw;
  p.decode(stored.data(), stored.size(), b.raw_size, raw, "fragment '" + path_ + "': " + what);
  return raw;
}

std::shared_ptr<const std::vector<uint8_t>> Fragment::dense_tile(size_t i) const {
  const DenseEntry& e = meta_.dense.at(i);
  auto key = TileCache::Key{serial_, e.blob.offset};
  if (auto hit = TileCache::shared().get(key)) return std::static_pointer_cast<const std::vector<uint8_t>>(hit);
  auto v = std::make_shared<std::vector<uint8_t>>(
      read_blob(e.blob, meta_.values_filters, "dense tile " + std::to_string(i)));
  TileCache::shared().put(key, v, v->size());
  return v;
}

std::shared_ptr<const SparseTileData> Fragment::sparse_tile(size_t i, const Layout& layout) const {
  const SparseEntry& e = meta_.sparse.at(i);
  auto key = TileCache::Key{serial_, e.coords.offset};
  if (auto hit = TileCache::shared().get(key)) return std::static_pointer_cast<const SparseTileData>(hit);
  auto t = std::make_shared<SparseTileData>();
  std::vector<uint8_t> c = read_blob(e.coords, meta_.coords_filters, "sparse tile " + std::to_string(i) + " coordinates");
  t->coords.resize(e.cells * meta_.rank);
  std::memcpy(t->coords.data(), c.data(), c.size());
  t->values = read_blob(e.values, meta_.values_filters, "sparse tile " + std::to_string(i) + " values");
  // Coordinates must lie inside the recorded MBR; anything else is corruption.
  for (uint64_t k = 0; k < e.cells; ++k)
    if (!e.mbr.contains(&t->coords[k * meta_.rank])) corrupt(path_, "sparse tile " + std::to_string(i) + ": cell outside its MBR");
  // Keys must ascend strictly: a fragment's cells are unique and in global order.
  const int w = layout.key_size();
  t->keys.resize(e.cells * w);
  uint64_t* kp = t->keys.data();
  for (uint64_t k = 0; k < e.cells; ++k) {
    layout.key_words(&t->coords[k * meta_.rank], kp + k * w);
    if (k > 0 && !std::lexicographical_compare(kp + (k - 1) * w, kp + k * w, kp + k * w, kp + (k + 1) * w))
      corrupt(path_, "sparse tile " + std::to_string(i) + ": cells out of global order");
  }
  TileCache::shared().put(key, t, c.size() + t->values.size() + t->keys.size() * 8);
  return t;
}

}  // namespace tessera
