#include "engine/util/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

namespace tessera {

namespace {

constexpr long kCachestat = 451;

class PosixEnv final : public Env {
 public:
  int open(const char* path, int flags, mode_t mode) override { return ::open(path, flags, mode); }
  int close(int fd) override { return ::close(fd); }
  ssize_t pread(int fd, void* buf, size_t n, off_t off) override { return ::pread(fd, buf, n, off); }
  ssize_t preadv(int fd, const struct iovec* iov, int cnt, off_t off) override {
    return ::preadv(fd, iov, cnt, off);
  }
  int64_t cached_pages(int fd, uint64_t off, uint64_t n) override {
    // cachestat(2): newer than this system's headers, so declared here (its number is
    // the same on every architecture: the generic syscall table's).
    struct Range {
      uint64_t off, len;
    } range{off, n};
    struct Stat {
      uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
    } st{};
    if (n == 0) return 0;
    if (::syscall(kCachestat, fd, &range, &st, 0u) != 0) return -1;
    return static_cast<int64_t>(st.nr_cache);
  }
  ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) override { return ::pwrite(fd, buf, n, off); }
  ssize_t pwritev(int fd, const struct iovec* iov, int cnt, off_t off) override {
    return ::pwritev(fd, iov, cnt, off);
  }
  int fdatasync(int fd) override { return ::fdatasync(fd); }
  int fsync(int fd) override { return ::fsync(fd); }
  int syncfs(int fd) override { return ::syncfs(fd); }
  int ftruncate(int fd, off_t size) override { return ::ftruncate(fd, size); }
  int fstat(int fd, struct stat* st) override { return ::fstat(fd, st); }
  int flock(int fd, int op) override { return ::flock(fd, op); }
  int stat(const char* path, struct stat* st, bool follow) override {
    return follow ? ::stat(path, st) : ::lstat(path, st);
  }
  int mkdir(const char* path, mode_t mode) override { return ::mkdir(path, mode); }
  int rmdir(const char* path) override { return ::rmdir(path); }
  int unlink(const char* path) override { return ::unlink(path); }
  int rename(const char* from, const char* to) override { return ::rename(from, to); }
  int link(const char* from, const char* to) override { return ::link(from, to); }
  int list_dir(const char* path, std::vector<std::string>* names) override {
    DIR* d = ::opendir(path);
    if (!d) return errno;
    for (;;) {
      errno = 0;
      struct dirent* e = ::readdir(d);
      if (!e) break;
      std::string name = e->d_name;
      if (name != "." && name != "..") names->push_back(std::move(name));
    }
    int err = errno;
    ::closedir(d);
    return err;
  }
};

}  // namespace

int64_t Env::cached_pages(int, uint64_t, uint64_t) {
  errno = EOPNOTSUPP;
  return -1;
}

const std::shared_ptr<Env>& Env::posix_shared() {
  // Leaked on purpose: pool threads may still do I/O while static destructors run.
  static const auto* env = new std::shared_ptr<Env>(std::make_shared<PosixEnv>());
  return *env;
}

Env& Env::posix() { return *posix_shared(); }

}  // namespace tessera
