#include "engine/fault_env.h"

#include <fcntl.h>
#include <sys/uio.h>

#include <cerrno>

namespace tessera {

const char* FaultEnv::fault_name(Fault f) {
  switch (f) {
    case Fault::kNoSpace: return "ENOSPC";
    case Fault::kIo: return "EIO";
    default: return "short write";
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
  full_ = false;
}

void FaultEnv::reset_count() {
  std::lock_guard<std::mutex> g(mu_);
  count_ = 0;
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

int FaultEnv::open(const char* path, int flags, mode_t mode) {
  if (flags & O_CREAT) {
    if (int e = point(Kind::kCreate, "open", path)) {
      errno = e > 0 ? e : ENOSPC;
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
  TESSERA_FAULT_POINT(Kind::kWrite, "ftruncate", fd_path(fd));
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
