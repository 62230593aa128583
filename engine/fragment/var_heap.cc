#include "engine/fragment/var_heap.h"

#include <cstring>

#include "engine/util/checksum.h"
#include "engine/util/error.h"

namespace tessera {

namespace {
constexpr char kHeapMagic[8] = {'T', 'S', 'R', 'A', 'H', 'E', 'A', 'P'};
constexpr uint32_t kHeapVersion = 1;
constexpr uint64_t kHeapHeader = 16;  // magic, u32 version, u32 reserved
}  // namespace

VarDescriptor HeapBuilder::append(const uint8_t* p, uint64_t n) {
  VarDescriptor d;
  if (n == 0) return d;  // the empty value
  if (n > UINT32_MAX) throw_error(Errc::kInvalidArgument, "a variable-length value may hold at most 4 GiB");
  d.ts = id_.ts;
  d.rank = id_.rank;
  d.seq = id_.seq;
  d.offset = kHeapHeader + bytes_.size();
  d.length = static_cast<uint32_t>(n);
  d.check = static_cast<uint32_t>(checksum64(p, n));
  bytes_.insert(bytes_.end(), p, p + n);
  return d;
}

void HeapBuilder::publish(Env& env, const std::string& dir) const {
  std::vector<uint8_t> file(kHeapHeader);
  std::memcpy(file.data(), kHeapMagic, 8);
  std::memcpy(file.data() + 8, &kHeapVersion, 4);
  file.insert(file.end(), bytes_.begin(), bytes_.end());
  write_file_atomic(env, join_path(dir, HeapReader::file_name(id_)), file.data(), file.size());
}

void HeapReader::read(const VarDescriptor& d, const HeapBuilder* pending, std::vector<uint8_t>* out) {
  if (d.length == 0) return;
  FragmentId id{d.ts, d.rank, d.seq, 0};
  const size_t at = out->size();
  // Ranges are checked before `out` grows: a damaged descriptor's length (up to 4 GiB)
  // must be an error, not an allocation of that size (found by fuzz/fuzz_var_heap).
  if (pending && pending->id() == id) {
    if (d.offset < kHeapHeader || d.offset - kHeapHeader > pending->bytes().size() ||
        d.length > pending->bytes().size() - (d.offset - kHeapHeader))
      throw_error(Errc::kCorrupt, "variable-length descriptor points outside the pending heap");
    out->resize(at + d.length);
    std::memcpy(out->data() + at, pending->bytes().data() + (d.offset - kHeapHeader), d.length);
  } else {
    std::string name = file_name(id);
    auto it = open_.find(name);
    if (it == open_.end()) {
      std::shared_ptr<CachedFile> f = CachedFile::open(env_, join_path(dir_, name));
      uint8_t h[kHeapHeader];
      f->pread_exact(h, sizeof h, 0);
      uint32_t ver;
      std::memcpy(&ver, h + 8, 4);
      if (std::memcmp(h, kHeapMagic, 8) != 0 || ver != kHeapVersion)
        throw_error(Errc::kCorrupt, "heap '" + f->path() + "': bad magic or version");
      const uint64_t size = f->size();  // a published heap is immutable
      it = open_.emplace(name, OpenHeap{f, size}).first;
    }
    const OpenHeap& h = it->second;
    if (d.offset < kHeapHeader || d.offset > h.size || d.length > h.size - d.offset)
      throw_error(Errc::kCorrupt, "heap '" + h.file->path() + "': variable-length descriptor points outside the heap");
    out->resize(at + d.length);
    h.file->pread_exact(out->data() + at, d.length, d.offset);
  }
  if (static_cast<uint32_t>(checksum64(out->data() + at, d.length)) != d.check)
    throw_error(Errc::kCorrupt, "heap '" + join_path(dir_, file_name(id)) + "': checksum mismatch");
}

}  // namespace tessera
