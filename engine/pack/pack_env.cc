#include "engine/pack/pack_env.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tessera {

using pack::Inode;
using pack::kBlock;
using pack::Range;
using pack::Record;
using pack::RecordType;

namespace {

// Collapses "//" and "/./", drops a trailing "/" (not a leading one).
std::string normalize(const std::string& p) {
  std::string out;
  out.reserve(p.size());
  size_t i = 0;
  while (i < p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    const std::string part = p.substr(i, j - i);
    if (part.empty() && i == 0 && j < p.size()) out = "/";
    else if (!part.empty() && part != ".") {
      if (!out.empty() && out.back() != '/') out += '/';
      out += part;
    }
    i = j + 1;
  }
  return out.empty() ? std::string(".") : out;
}

int fail(int err) {
  errno = err;
  return -1;
}

// The parts of [from, to) of a file that no extent covers (they read as zeros).
std::vector<Range> holes(const Inode& n, uint64_t from, uint64_t to) {
  std::vector<Range> out;
  for (uint64_t at = from; at < to;) {
    auto it = n.extents.upper_bound(at);
    if (it != n.extents.begin() && std::prev(it)->first + std::prev(it)->second.len > at) {
      at = std::prev(it)->first + std::prev(it)->second.len;
      continue;
    }
    const uint64_t e = it == n.extents.end() ? to : std::min(to, it->first);
    out.push_back({at, e - at});
    at = e;
  }
  return out;
}

}  // namespace

PackEnv::PackEnv(std::shared_ptr<Env> base, std::string root, std::unique_ptr<pack::PackStore> store)
    : base_owner_(std::move(base)), base_(*base_owner_), root_(normalize(root)), store_(std::move(store)) {}

PackEnv::~PackEnv() = default;

std::shared_ptr<PackEnv> PackEnv::create(std::shared_ptr<Env> base, const std::string& path,
                                         const std::vector<uint8_t>& wrapper, bool exclusive) {
  if (!base) base = Env::posix_shared();
  auto store = pack::PackStore::create(*base, path, wrapper, exclusive);
  return std::shared_ptr<PackEnv>(new PackEnv(std::move(base), path, std::move(store)));
}

std::shared_ptr<PackEnv> PackEnv::open(std::shared_ptr<Env> base, const std::string& path, bool writable) {
  if (!base) base = Env::posix_shared();
  auto store = pack::PackStore::open(*base, path, writable);
  return std::shared_ptr<PackEnv>(new PackEnv(std::move(base), path, std::move(store)));
}

bool PackEnv::is_pack(Env& base, const std::string& path) { return pack::PackStore::probe(base, path); }

bool PackEnv::writable() const { return store_->writable(); }

bool PackEnv::inside(const char* path, std::string* rel) const {
  const std::string p = normalize(path);
  if (p == root_) {
    rel->clear();
    return true;
  }
  if (p.size() > root_.size() && p.compare(0, root_.size(), root_) == 0 && (p[root_.size()] == '/' || root_ == "/")) {
    *rel = p.substr(root_ == "/" ? 1 : root_.size() + 1);
    return true;
  }
  return false;
}

PackEnv::Vfd* PackEnv::vfd(int fd) {
  auto it = fds_.find(fd);
  if (it == fds_.end()) {
    errno = EBADF;
    return nullptr;
  }
  return &it->second;
}

int PackEnv::log_locked(Record r) { return store_->log(std::move(r)); }

void PackEnv::fill_stat(uint64_t ino, const Inode& n, struct stat* st) const {
  std::memset(st, 0, sizeof *st);
  st->st_dev = store_->device();
  st->st_ino = static_cast<ino_t>(ino);
  st->st_mode = n.kind == pack::kDir ? (S_IFDIR | 0755) : (S_IFREG | 0644);
  st->st_nlink = std::max<uint32_t>(n.links, n.kind == pack::kDir ? 2 : 0);
  st->st_size = static_cast<off_t>(n.kind == pack::kDir ? kBlock : n.size);
  st->st_blksize = static_cast<blksize_t>(kBlock);
  st->st_blocks = static_cast<blkcnt_t>(n.capacity() / 512);
}

int PackEnv::open(const char* path, int flags, mode_t mode) {
  std::string rel;
  if (!inside(path, &rel)) return base_.open(path, flags, mode);
  std::lock_guard<std::mutex> g(mu_);
  if (int e = store_->refresh()) return fail(e);
  const int acc = flags & O_ACCMODE;
  uint64_t ino = 0;
  Inode* n = store_->tree().find(rel, &ino);
  if (n && (flags & O_CREAT) && (flags & O_EXCL)) return fail(EEXIST);
  if (!n) {
    if (!(flags & O_CREAT)) return fail(store_->tree().absent_errno(rel));
    if (!store_->writable()) return fail(EROFS);
    Record r;
    r.type = RecordType::kMake;
    r.a = store_->next_ino();
    r.kind = pack::kFile;
    r.path = rel;
    if (int e = log_locked(r)) return fail(e);
    n = store_->tree().find(rel, &ino);
  } else {
    if ((flags & O_DIRECTORY) && n->kind != pack::kDir) return fail(ENOTDIR);
    if (n->kind == pack::kDir && acc != O_RDONLY) return fail(EISDIR);
    if ((acc != O_RDONLY || (flags & O_TRUNC)) && !store_->writable()) return fail(EROFS);
    if ((flags & O_TRUNC) && n->kind == pack::kFile && n->size > 0) {
      Record r;
      r.type = RecordType::kSize;
      r.a = ino;
      r.b = 0;
      if (int e = log_locked(r)) return fail(e);
      n = store_->tree().inode(ino);
    }
  }
  n->opens++;
  const int fd = next_fd_++;
  fds_[fd] = Vfd{ino, flags, 0};
  return fd;
}

int PackEnv::close(int fd) {
  if (!is_virtual(fd)) return base_.close(fd);
  std::lock_guard<std::mutex> g(mu_);
  Vfd* f = vfd(fd);
  if (!f) return -1;
  const uint64_t ino = f->ino;
  if (f->lock) {
    auto& holders = locks_[ino];
    holders.erase(fd);
    if (holders.empty()) locks_.erase(ino);
  }
  fds_.erase(fd);
  Inode* n = store_->tree().inode(ino);
  if (!n || --n->opens > 0) return 0;
  if (n->links == 0) {
    std::vector<Range> freed;
    store_->tree().release(ino, &freed);
    store_->release(freed, false);
  } else if (store_->writable() && n->kind == pack::kFile && n->capacity() > pack::round_up(n->size)) {
    // Preallocation past the size goes back at the last close (its bytes hold nothing).
    Record r;
    r.type = RecordType::kTrim;
    r.a = ino;
    r.b = pack::round_up(n->size);
    (void)log_locked(r);  // best effort: a later open of the pack trims it too
  }
  return 0;
}

ssize_t PackEnv::pread(int fd, void* buf, size_t n, off_t off) {
  if (!is_virtual(fd)) return base_.pread(fd, buf, n, off);
  if (off < 0) return fail(EINVAL);
  struct Piece {
    uint64_t pack_off, len;  // pack_off ~0: a hole, zeros
  };
  std::vector<Piece> pieces;
  {
    std::lock_guard<std::mutex> g(mu_);
    Vfd* f = vfd(static_cast<int>(fd));
    if (!f) return -1;
    Inode* node = store_->tree().inode(f->ino);
    if (!node) return fail(EIO);
    if (node->kind == pack::kDir) return fail(EISDIR);
    if (static_cast<uint64_t>(off) + n > node->size && !store_->writable()) {
      if (int e = store_->refresh()) return fail(e);
      node = store_->tree().inode(f->ino);
    }
    const uint64_t end = std::min<uint64_t>(static_cast<uint64_t>(off) + n, node->size);
    for (uint64_t at = static_cast<uint64_t>(off); at < end;) {
      auto it = node->extents.upper_bound(at);
      uint64_t len;
      if (it != node->extents.begin() && std::prev(it)->first + std::prev(it)->second.len > at) {
        auto e = std::prev(it);
        len = std::min(end, e->first + e->second.len) - at;
        pieces.push_back({e->second.off + (at - e->first), len});
      } else {
        len = std::min(end, it == node->extents.end() ? end : it->first) - at;
        pieces.push_back({~uint64_t(0), len});
      }
      at += len;
    }
  }
  // The bytes themselves outside the lock: reads of other files (and threads) go on.
  auto* out = static_cast<uint8_t*>(buf);
  size_t done = 0;
  for (const Piece& p : pieces) {
    if (p.pack_off == ~uint64_t(0)) {
      std::memset(out + done, 0, p.len);
      done += p.len;
      continue;
    }
    ssize_t r = base_.pread(store_->descriptor(), out + done, p.len, static_cast<off_t>(p.pack_off));
    if (r < 0) return done ? static_cast<ssize_t>(done) : -1;
    done += static_cast<size_t>(r);
    if (static_cast<uint64_t>(r) < p.len) break;  // short: the caller reads on
  }
  return static_cast<ssize_t>(done);
}

ssize_t PackEnv::preadv(int fd, const struct iovec* iov, int cnt, off_t off) {
  if (!is_virtual(fd)) return base_.preadv(fd, iov, cnt, off);
  ssize_t total = 0;
  for (int i = 0; i < cnt; ++i) {
    ssize_t r = pread(fd, iov[i].iov_base, iov[i].iov_len, off + total);
    if (r < 0) return total ? total : -1;
    total += r;
    if (static_cast<size_t>(r) < iov[i].iov_len) break;
  }
  return total;
}

int64_t PackEnv::cached_pages(int fd, uint64_t off, uint64_t n) {
  if (!is_virtual(fd)) return base_.cached_pages(fd, off, n);
  // Extents are page-aligned in the file and in the pack, so the file's pages are the
  // pack's pages one for one; a hole needs no read (counted as cached).
  std::vector<Range> pieces;
  uint64_t hole_pages = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    Vfd* f = vfd(fd);
    if (!f) return -1;
    Inode* node = store_->tree().inode(f->ino);
    if (!node) return -1;
    for (uint64_t at = off; at < off + n;) {
      auto it = node->extents.upper_bound(at);
      if (it != node->extents.begin() && std::prev(it)->first + std::prev(it)->second.len > at) {
        auto e = std::prev(it);
        const uint64_t len = std::min(off + n, e->first + e->second.len) - at;
        pieces.push_back({e->second.off + (at - e->first), len});
        at += len;
      } else {
        const uint64_t to = std::min(off + n, it == node->extents.end() ? off + n : it->first);
        hole_pages += (to - 1) / kBlock - at / kBlock + 1;
        at = to;
      }
    }
  }
  int64_t total = static_cast<int64_t>(hole_pages);
  for (const Range& p : pieces) {
    const int64_t k = base_.cached_pages(store_->descriptor(), p.off, p.len);
    if (k < 0) return -1;
    total += k;
  }
  return total;
}

ssize_t PackEnv::pwrite(int fd, const void* buf, size_t n, off_t off) {
  struct iovec v {const_cast<void*>(buf), n};
  return pwritev(fd, &v, 1, off);
}

ssize_t PackEnv::pwritev(int fd, const struct iovec* iov, int cnt, off_t off) {
  if (!is_virtual(fd)) return base_.pwritev(fd, iov, cnt, off);
  if (off < 0) return fail(EINVAL);
  std::lock_guard<std::mutex> g(mu_);
  Vfd* f = vfd(fd);
  if (!f) return -1;
  if ((f->flags & O_ACCMODE) == O_RDONLY) return fail(EBADF);
  return write_locked(*f, iov, cnt, static_cast<uint64_t>(off));
}

int PackEnv::allocate_locked(uint64_t ino, uint64_t from, uint64_t to) {
  // Every block of [from, to) gets an extent; growth at the end preallocates (the
  // capacity doubles up to 16 MiB at a time) and extends the last extent in place when
  // the pack's bytes after it are free.
  from = from / kBlock * kBlock;
  to = pack::round_up(to);
  for (uint64_t at = from; at < to;) {
    Inode* n = store_->tree().inode(ino);
    auto it = n->extents.upper_bound(at);
    if (it != n->extents.begin() && std::prev(it)->first + std::prev(it)->second.len > at) {
      at = std::prev(it)->first + std::prev(it)->second.len;
      continue;
    }
    const uint64_t cap = n->capacity();
    uint64_t hole_end = it == n->extents.end() ? to : std::min(to, it->first);
    uint64_t want = 0;
    if (at >= cap) {
      hole_end += std::min<uint64_t>(cap, 16 << 20) / kBlock * kBlock;
      if (!n->extents.empty() && at == cap) want = std::prev(n->extents.end())->second.end();
    }
    Range r;
    if (int e = store_->allocate(hole_end - at, want, &r)) return e;
    Record rec;
    rec.type = RecordType::kExtent;
    rec.a = ino;
    rec.b = at;
    rec.c = r.off;
    rec.d = r.len;
    if (int e = log_locked(rec)) {
      store_->release({r}, true);
      return e;
    }
    at += r.len;
  }
  return 0;
}

int PackEnv::zero_locked(uint64_t ino, uint64_t from, uint64_t to) {
  static const std::vector<uint8_t> zeros(kBlock * 16, 0);
  Inode* n = store_->tree().inode(ino);
  for (uint64_t at = from; at < to;) {
    auto it = n->extents.upper_bound(at);
    if (it == n->extents.begin() || std::prev(it)->first + std::prev(it)->second.len <= at) {
      at = it == n->extents.end() ? to : std::min(to, it->first);  // a hole reads zeros already
      continue;
    }
    auto e = std::prev(it);
    const uint64_t len = std::min({to, e->first + e->second.len, at + zeros.size()}) - at;
    if (int rc = store_->write_at(zeros.data(), len, e->second.off + (at - e->first))) return rc;
    at += len;
  }
  return 0;
}

ssize_t PackEnv::write_locked(Vfd& f, const struct iovec* iov, int cnt, uint64_t off) {
  if (!store_->writable()) return fail(EBADF);
  if (store_->poisoned()) return fail(EIO);
  uint64_t total = 0;
  for (int i = 0; i < cnt; ++i) total += iov[i].iov_len;
  if (total == 0) return 0;
  const uint64_t ino = f.ino;
  const uint64_t end = off + total;
  Inode* n = store_->tree().inode(ino);
  const uint64_t size = n->size;
  // Blocks of a sparse part below the size read as zeros now; once allocated (from bytes
  // that may be stale; preallocation may reach past the write) the parts this write
  // skips must be zeroed.
  const std::vector<Range> sparse = holes(*n, off / kBlock * kBlock, size);
  if (int e = allocate_locked(ino, off, end)) return fail(e);
  for (const Range& h : sparse) {
    const uint64_t h_end = std::min(h.end(), size);
    if (int e = zero_locked(ino, h.off, std::min(h_end, off))) return fail(e);
    if (int e = zero_locked(ino, std::max(h.off, end), h_end)) return fail(e);
  }
  // A gap between the old size and the write reads as zeros too.
  if (off > size)
    if (int e = zero_locked(ino, size, off)) return fail(e);
  n = store_->tree().inode(ino);
  uint64_t at = off;
  for (int i = 0; i < cnt; ++i) {
    const auto* src = static_cast<const uint8_t*>(iov[i].iov_base);
    for (size_t done = 0; done < iov[i].iov_len;) {
      auto e = std::prev(n->extents.upper_bound(at));
      const uint64_t len = std::min<uint64_t>(iov[i].iov_len - done, e->first + e->second.len - at);
      if (int rc = store_->write_at(src + done, len, e->second.off + (at - e->first))) return fail(rc);
      store_->wrote_data(e->second.off + (at - e->first), len);
      done += len;
      at += len;
    }
  }
  if (end > n->size) {
    Record r;
    r.type = RecordType::kSize;
    r.a = ino;
    r.b = end;
    if (int e = log_locked(r)) return fail(e);
  }
  return static_cast<ssize_t>(total);
}

int PackEnv::fdatasync(int fd) {
  if (!is_virtual(fd)) return base_.fdatasync(fd);
  std::lock_guard<std::mutex> g(mu_);
  if (!vfd(fd)) return -1;
  if (int e = store_->sync()) return fail(e);
  return 0;
}

int PackEnv::fsync(int fd) {
  if (!is_virtual(fd)) return base_.fsync(fd);
  return fdatasync(fd);  // one sync of the pack covers data and names alike
}

int PackEnv::syncfs(int fd) {
  if (!is_virtual(fd)) return base_.syncfs(fd);
  // The pack, then the file system it is on: a caller's syncfs also stands for the
  // names outside the container it did not fsync, the pack file's own name among them
  // (a new container's first commit takes this route).
  if (fdatasync(fd) != 0) return -1;
  return base_.syncfs(store_->descriptor());
}

int PackEnv::ftruncate(int fd, off_t size) {
  if (!is_virtual(fd)) return base_.ftruncate(fd, size);
  if (size < 0) return fail(EINVAL);
  std::lock_guard<std::mutex> g(mu_);
  Vfd* f = vfd(fd);
  if (!f) return -1;
  if ((f->flags & O_ACCMODE) == O_RDONLY || !store_->writable()) return fail(EBADF);
  Inode* n = store_->tree().inode(f->ino);
  const uint64_t want = static_cast<uint64_t>(size);
  if (want == n->size) return 0;
  if (want > n->size)
    if (int e = zero_locked(f->ino, n->size, std::min(want, n->capacity()))) return fail(e);
  Record r;
  r.type = RecordType::kSize;
  r.a = f->ino;
  r.b = want;
  if (int e = log_locked(r)) return fail(e);
  return 0;
}

int PackEnv::fstat(int fd, struct stat* st) {
  if (!is_virtual(fd)) return base_.fstat(fd, st);
  std::lock_guard<std::mutex> g(mu_);
  if (int e = store_->refresh()) return fail(e);
  Vfd* f = vfd(fd);
  if (!f) return -1;
  Inode* n = store_->tree().inode(f->ino);
  if (!n) return fail(EIO);
  fill_stat(f->ino, *n, st);
  return 0;
}

int PackEnv::flock(int fd, int op) {
  if (!is_virtual(fd)) return base_.flock(fd, op);
  // Only this opener can lock: a pack has one writer process (pack_store.h), so the
  // holders of a virtual lock are descriptors of this Env.
  std::lock_guard<std::mutex> g(mu_);
  Vfd* f = vfd(fd);
  if (!f) return -1;
  auto& holders = locks_[f->ino];
  const int want = op & ~LOCK_NB;
  if (want == LOCK_UN) {
    holders.erase(fd);
    f->lock = 0;
  } else {
    for (auto& h : holders)
      if (h.first != fd && (want == LOCK_EX || h.second == LOCK_EX)) return fail(EWOULDBLOCK);
    holders[fd] = want;
    f->lock = want;
  }
  if (holders.empty()) locks_.erase(f->ino);
  return 0;
}

int PackEnv::stat(const char* path, struct stat* st, bool follow) {
  std::string rel;
  if (!inside(path, &rel)) return base_.stat(path, st, follow);
  std::lock_guard<std::mutex> g(mu_);
  if (int e = store_->refresh()) return fail(e);
  uint64_t ino = 0;
  Inode* n = store_->tree().find(rel, &ino);
  if (!n) return fail(store_->tree().absent_errno(rel));
  fill_stat(ino, *n, st);
  return 0;
}

int PackEnv::mkdir(const char* path, mode_t mode) {
  std::string rel;
  if (!inside(path, &rel)) return base_.mkdir(path, mode);
  std::lock_guard<std::mutex> g(mu_);
  if (store_->tree().find(rel)) return fail(EEXIST);
  if (!store_->writable()) return fail(EROFS);
  Record r;
  r.type = RecordType::kMake;
  r.a = store_->next_ino();
  r.kind = pack::kDir;
  r.path = rel;
  if (int e = log_locked(r)) return fail(e);
  return 0;
}

int PackEnv::remove_locked(const std::string& rel, bool dir) {
  Inode* n = store_->tree().find(rel);
  if (!n) return store_->tree().absent_errno(rel);
  if (dir && n->kind != pack::kDir) return ENOTDIR;
  if (!dir && n->kind == pack::kDir) return EISDIR;
  if (!store_->writable()) return EROFS;
  Record r;
  r.type = RecordType::kRemove;
  r.path = rel;
  return log_locked(r);
}

int PackEnv::rmdir(const char* path) {
  std::string rel;
  if (!inside(path, &rel)) return base_.rmdir(path);
  std::lock_guard<std::mutex> g(mu_);
  if (int e = remove_locked(rel, true)) return fail(e);
  return 0;
}

int PackEnv::unlink(const char* path) {
  std::string rel;
  if (!inside(path, &rel)) return base_.unlink(path);
  std::lock_guard<std::mutex> g(mu_);
  if (int e = remove_locked(rel, false)) return fail(e);
  return 0;
}

int PackEnv::rename(const char* from, const char* to) {
  std::string a, b;
  const bool ia = inside(from, &a), ib = inside(to, &b);
  if (!ia && !ib) return base_.rename(from, to);
  if (ia != ib) return fail(EXDEV);
  std::lock_guard<std::mutex> g(mu_);
  if (!store_->writable()) return fail(EROFS);
  Record r;
  r.type = RecordType::kRename;
  r.path = a;
  r.path2 = b;
  if (int e = log_locked(r)) return fail(e);
  return 0;
}

int PackEnv::link(const char* from, const char* to) {
  std::string a, b;
  const bool ia = inside(from, &a), ib = inside(to, &b);
  if (!ia && !ib) return base_.link(from, to);
  if (ia != ib) return fail(EXDEV);
  std::lock_guard<std::mutex> g(mu_);
  if (!store_->writable()) return fail(EROFS);
  Record r;
  r.type = RecordType::kLink;
  r.path = a;
  r.path2 = b;
  if (int e = log_locked(r)) return fail(e);
  return 0;
}

int PackEnv::list_dir(const char* path, std::vector<std::string>* names) {
  std::string rel;
  if (!inside(path, &rel)) return base_.list_dir(path, names);
  std::lock_guard<std::mutex> g(mu_);
  if (int e = store_->refresh()) return e;
  Inode* n = store_->tree().find(rel);
  if (!n) return store_->tree().absent_errno(rel);
  if (n->kind != pack::kDir) return ENOTDIR;
  for (std::string& c : store_->tree().children(rel)) names->push_back(std::move(c));
  return 0;
}

}  // namespace tessera
