// fault_env.cc — see fault_env.h.
#include "engine/testing/fault_env.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace tessera {

const char* FaultEnv::fault_name(Fault f) {
  switch (f) {
    case Fault::kNoSpace: return "ENOSPC";
    case Fault::kIo: return "EIO";
    default: return "short write";
  }
}

const char* FaultEnv::fault_name(ReadFault f) {
  switch (f) {
    case ReadFault::kReadIo: return "read EIO";
    case ReadFault::kShortRead: return "short read";
    default: return "read EOF";
  }
}

void FaultEnv::arm_read(uint64_t k, ReadFault f) {
  std::lock_guard<std::mutex> g(mu_);
  reads_ = 0;
  read_at_ = k;
  read_fault_ = f;
  fired_ = false;
  fired_at_.clear();
}

uint64_t FaultEnv::read_points() const {
  std::lock_guard<std::mutex> g(mu_);
  return reads_;
}

bool FaultEnv::read_point(const char* call, int fd, ReadFault* f) {
  const std::string what = fd_path(fd);
  std::lock_guard<std::mutex> g(mu_);
  if (++reads_ != read_at_ || read_at_ == 0) return false;
  fired_ = true;
  fired_at_ = std::string(call) + " '" + what + "'";
  *f = read_fault_;
  return true;
}

ssize_t FaultEnv::pread(int fd, void* buf, size_t n, off_t off) {
  ReadFault f;
  if (!read_point("pread", fd, &f)) return base_.pread(fd, buf, n, off);
  switch (f) {
    case ReadFault::kReadIo: errno = EIO; return -1;
    case ReadFault::kEof: return 0;
    default: return base_.pread(fd, buf, n > 1 ? n / 2 : n, off);
  }
}

ssize_t FaultEnv::preadv(int fd, const struct iovec* iov, int cnt, off_t off) {
  ReadFault f;
  if (!read_point("preadv", fd, &f)) return base_.preadv(fd, iov, cnt, off);
  switch (f) {
    case ReadFault::kReadIo: errno = EIO; return -1;
    case ReadFault::kEof: return 0;
    default: {
      size_t total = 0;
      for (int i = 0; i < cnt; ++i) total += iov[i].iov_len;
      if (total <= 1) return base_.preadv(fd, iov, cnt, off);
      // The first half of the bytes: whole buffers, then part of one.
      std::vector<struct iovec> half;
      size_t left = total / 2;
      for (int i = 0; i < cnt && left > 0; ++i) {
        struct iovec v = iov[i];
        v.iov_len = std::min(v.iov_len, left);
        left -= v.iov_len;
        half.push_back(v);
      }
      return base_.preadv(fd, half.data(), static_cast<int>(half.size()), off);
    }
  }
}

void FaultEnv::arm(uint64_t k, Fault f) {
  std::lock_guard<std::mutex> g(mu_);
  count_ = 0;
  at_ = k;
  fault_ = f;
  fired_ = full_ = false;
  fired_at_.clear();
}

void FaultEnv::disarm() {
  std::lock_guard<std::mutex> g(mu_);
  at_ = 0;
  read_at_ = 0;
  open_at_ = 0;
  full_ = false;
}

void FaultEnv::reset_count() {
  std::lock_guard<std::mutex> g(mu_);
  count_ = 0;
  reads_ = 0;
  opens_ = 0;
}

uint64_t FaultEnv::points() const {
  std::lock_guard<std::mutex> g(mu_);
  return count_;
}

bool FaultEnv::fired() const {
  std::lock_guard<std::mutex> g(mu_);
  return fired_;
}

std::string FaultEnv::fired_at() const {
  std::lock_guard<std::mutex> g(mu_);
  return fired_at_;
}

std::string FaultEnv::fd_path(int fd) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = paths_.find(fd);
  return it == paths_.end() ? "fd " + std::to_string(fd) : it->second;
}

int FaultEnv::point(Kind kind, const char* call, const std::string& what) {
  std::lock_guard<std::mutex> g(mu_);
  ++count_;
  if (full_ && kind != Kind::kRemove) return ENOSPC;  // the disk stays full
  if (at_ == 0 || count_ != at_) return 0;
  fired_ = true;
  fired_at_ = std::string(call) + " '" + what + "'";
  switch (fault_) {
    case Fault::kIo: return EIO;
    case Fault::kNoSpace: full_ = true; return ENOSPC;
    default: full_ = true; return kind == Kind::kWrite ? -1 : ENOSPC;
  }
}

void FaultEnv::arm_open(uint64_t k, int err) {
  std::lock_guard<std::mutex> g(mu_);
  opens_ = 0;
  open_at_ = k;
  open_err_ = err;
  fired_ = false;
  fired_at_.clear();
}

uint64_t FaultEnv::opens() const {
  std::lock_guard<std::mutex> g(mu_);
  return opens_;
}

int FaultEnv::open(const char* path, int flags, mode_t mode) {
  if (flags & O_CREAT) {
    if (int e = point(Kind::kCreate, "open", path)) {
      errno = e > 0 ? e : ENOSPC;
      return -1;
    }
  } else {
    std::lock_guard<std::mutex> g(mu_);
    if (++opens_ == open_at_ && open_at_ != 0) {
      fired_ = true;
      fired_at_ = std::string("open '") + path + "'";
      errno = open_err_;
      return -1;
    }
  }
  int fd = base_.open(path, flags, mode);
  if (fd >= 0) {
    std::lock_guard<std::mutex> g(mu_);
    paths_[fd] = path;
  }
  return fd;
}

int FaultEnv::close(int fd) {
  {
    std::lock_guard<std::mutex> g(mu_);
    paths_.erase(fd);
  }
  return base_.close(fd);
}

ssize_t FaultEnv::pwrite(int fd, const void* buf, size_t n, off_t off) {
  int e = point(Kind::kWrite, "pwrite", fd_path(fd));
  if (e > 0) {
    errno = e;
    return -1;
  }
  if (e < 0 && n > 1) return base_.pwrite(fd, buf, n / 2, off);
  return base_.pwrite(fd, buf, n, off);
}

ssize_t FaultEnv::pwritev(int fd, const struct iovec* iov, int cnt, off_t off) {
  int e = point(Kind::kWrite, "pwritev", fd_path(fd));
  if (e > 0) {
    errno = e;
    return -1;
  }
  if (e < 0 && cnt > 0 && iov[0].iov_len > 1) return base_.pwrite(fd, iov[0].iov_base, iov[0].iov_len / 2, off);
  return base_.pwritev(fd, iov, cnt, off);
}

#define TESSERA_FAULT_POINT(kind, call, what) \
  if (int e = point(kind, call, what)) {      \
    errno = e > 0 ? e : ENOSPC;               \
    return -1;                                \
  }

int FaultEnv::fdatasync(int fd) {
  TESSERA_FAULT_POINT(Kind::kSync, "fdatasync", fd_path(fd));
  return base_.fdatasync(fd);
}

int FaultEnv::fsync(int fd) {
  TESSERA_FAULT_POINT(Kind::kSync, "fsync", fd_path(fd));
  return base_.fsync(fd);
}

int FaultEnv::syncfs(int fd) {
  TESSERA_FAULT_POINT(Kind::kSync, "syncfs", fd_path(fd));
  return base_.syncfs(fd);
}

int FaultEnv::ftruncate(int fd, off_t size) {
  // Cutting a file shorter frees blocks, like a removal: a full disk does not refuse it.
  struct stat st;
  const bool shrinks = base_.fstat(fd, &st) == 0 && size < st.st_size;
  TESSERA_FAULT_POINT(shrinks ? Kind::kRemove : Kind::kWrite, "ftruncate", fd_path(fd));
  return base_.ftruncate(fd, size);
}

int FaultEnv::mkdir(const char* path, mode_t mode) {
  TESSERA_FAULT_POINT(Kind::kCreate, "mkdir", path);
  return base_.mkdir(path, mode);
}

int FaultEnv::rmdir(const char* path) {
  TESSERA_FAULT_POINT(Kind::kRemove, "rmdir", path);
  return base_.rmdir(path);
}

int FaultEnv::unlink(const char* path) {
  TESSERA_FAULT_POINT(Kind::kRemove, "unlink", path);
  return base_.unlink(path);
}

int FaultEnv::rename(const char* from, const char* to) {
  TESSERA_FAULT_POINT(Kind::kCreate, "rename", to);
  return base_.rename(from, to);
}

int FaultEnv::link(const char* from, const char* to) {
  TESSERA_FAULT_POINT(Kind::kCreate, "link", to);
  return base_.link(from, to);
}

#undef TESSERA_FAULT_POINT

}  // namespace tessera
