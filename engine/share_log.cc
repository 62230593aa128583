// share_log.cc — see share_log.h.
#include "engine/share_log.h"

#include <fcntl.h>

#include <cstring>

#include "engine/checksum.h"
#include "engine/error.h"

namespace tessera {

namespace {

constexpr uint32_t kMagic = 0x52534c54;  // "TLSR" little-endian
constexpr size_t kHeader = 24;

void put_u64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
void put_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
uint64_t get_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

std::string share_log_name(uint32_t rank) { return ".r" + std::to_string(rank) + ".share.tmp"; }

ShareLogWriter::ShareLogWriter(Env& env, const std::string& path) : path_(path) {
  f_ = File::open_rw(env, path, /*create=*/true);
  f_.truncate(0);
}

void ShareLogWriter::append(ShareRecord kind, const uint8_t* payload, size_t n) {
  uint8_t h[kHeader];
  put_u64(h, n);
  put_u64(h + 8, checksum64(payload, n));
  put_u32(h + 16, static_cast<uint32_t>(kind));
  put_u32(h + 20, kMagic);
  // Payload first, then the header (magic last): a reader never takes a record whose
  // payload is still being written.
  if (n) f_.pwrite_all(payload, n, off_ + kHeader);
  f_.pwrite_all(h, kHeader, off_);
  off_ += kHeader + n;
}

void ShareLogWriter::close_and_remove() {
  if (!f_.is_open()) return;
  append(ShareRecord::kClosed, nullptr, 0);
  Env& env = f_.env();
  f_.close();
  remove_file(env, path_);
}

void ShareLogReader::poll(Env& env, const std::string& path, std::vector<Record>* out) {
  if (!f_.is_open()) {
    try {
      f_ = File::open_read(env, path);
    } catch (const Error& e) {
      if (e.code() == Errc::kNotFound) return;  // this rank has shared nothing (yet)
      throw;
    }
    off_ = 0;
  }
  const uint64_t size = f_.size();
  if (size < off_ + kHeader) return;
  std::vector<uint8_t> tail(size - off_);
  size_t got = f_.pread_some(tail.data(), tail.size(), off_);
  size_t at = 0;
  bool reread = false;
  while (at + kHeader <= got) {
    const uint8_t* h = tail.data() + at;
    if (get_u32(h + 20) != kMagic) break;  // an append in progress: looked at again later
    const uint64_t n = get_u64(h);
    if (n > got - at - kHeader) break;
    const uint8_t* p = h + kHeader;
    if (checksum64(p, n) != get_u64(h + 8)) {
      // A buffered read is not atomic against a concurrent pwrite: a header crossing a
      // page boundary can be read half old (length, checksum) and half new (magic).  The
      // magic being there means the header's write had begun, so the payload's (written
      // before it) was done: one more read sees the record whole.  Damage fails again.
      if (!reread) {
        reread = true;
        got = at + f_.pread_some(tail.data() + at, tail.size() - at, off_ + at);
        continue;
      }
      throw_error(Errc::kCorrupt, "share log '" + path + "': the record at byte " + std::to_string(off_ + at) +
                                      " fails its checksum");
    }
    reread = false;
    Record r{static_cast<ShareRecord>(get_u32(h + 16)), off_ + at, std::vector<uint8_t>(p, p + n)};
    at += kHeader + n;
    const bool closed = r.kind == ShareRecord::kClosed;
    if (r.kind != ShareRecord::kFragment && r.kind != ShareRecord::kList && r.kind != ShareRecord::kShared && !closed)
      throw_error(Errc::kCorrupt, "share log '" + path + "': unknown record kind at byte " + std::to_string(r.offset));
    out->push_back(std::move(r));
    if (closed) {
      f_ = File();
      off_ = 0;
      return;
    }
  }
  off_ += at;
}

}  // namespace tessera
