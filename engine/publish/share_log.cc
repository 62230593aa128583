// share_log.cc — see share_log.h.
#include "engine/publish/share_log.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "engine/util/checksum.h"
#include "engine/util/error.h"

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
  append_to(f_, &off_, kind, payload, n);
}

void ShareLogWriter::append_to(File& f, uint64_t* off, ShareRecord kind, const uint8_t* payload, size_t n) {
  uint8_t h[kHeader];
  put_u64(h, n);
  put_u64(h + 8, checksum64(payload, n));
  put_u32(h + 16, static_cast<uint32_t>(kind));
  put_u32(h + 20, kMagic);
  // Payload first, then the header (magic last): a reader never takes a record whose
  // payload is still being written.
  if (n) f.pwrite_all(payload, n, *off + kHeader);
  f.pwrite_all(h, kHeader, *off);
  *off += kHeader + n;
}

void ShareLogWriter::restart() {
  Env& env = f_.env();
  // ".r<rank>.share.tmp" -> ".r<rank>.share.next.tmp": a temporary too (crash recovery).
  const std::string next = path_.substr(0, path_.size() - 4) + ".next.tmp";
  File nf = File::open_rw(env, next, /*create=*/true);
  nf.truncate(0);
  uint64_t noff = 0;
  append_to(nf, &noff, ShareRecord::kList, nullptr, 0);
  // Atomic: the name is always one whole log.  Not synced: the log is never durable.
  if (env.rename(next.c_str(), path_.c_str()) != 0) throw_errno("cannot rename '" + next + "' to", path_, errno);
  // Only now: a reader that reads this kClosed and reopens the name finds the new log.
  append(ShareRecord::kClosed, nullptr, 0);
  f_ = std::move(nf);
  off_ = noff;
}

void ShareLogWriter::close_and_remove() {
  if (!f_.is_open()) return;
  append(ShareRecord::kClosed, nullptr, 0);
  Env& env = f_.env();
  f_.close();
  remove_file(env, path_);
}

void ShareLogReader::poll(Env& env, const std::string& path, std::vector<Record>* out) {
  // After kClosed, the name is opened again at once: a restarted log's records were
  // appended to the new file before the old one was closed, so a read ordered after them
  // must see them now, not at the next poll.
  while (poll_file(env, path, out)) {
  }
}

bool ShareLogReader::poll_file(Env& env, const std::string& path, std::vector<Record>* out) {
  if (!f_.is_open()) {
    try {
      f_ = File::open_read(env, path);
    } catch (const Error& e) {
      if (e.code() == Errc::kNotFound) return false;  // this rank has shared nothing (yet)
      throw;
    }
    if (closed_.is_open()) {
      struct stat a, b;
      if (env.fstat(f_.fd(), &a) != 0 || env.fstat(closed_.fd(), &b) != 0) throw_errno("cannot stat", path, errno);
      if (a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        // The log read to its kClosed, not yet removed by its closing writer: nothing new.
        f_ = File();
        return false;
      }
      closed_ = File();
    }
    off_ = 0;
  }
  const uint64_t size = f_.size();
  if (size < off_ + kHeader) return false;
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
      closed_ = std::move(f_);  // held open: its inode cannot be reused meanwhile
      off_ = 0;
      return true;
    }
  }
  off_ += at;
  return false;
}

}  // namespace tessera
