// env.h — every file-system call the engine makes goes through an Env (LevelDB's idea):
// the POSIX one in production, a wrapper in tests that injects ENOSPC, EIO and short
// writes at a chosen call (fault_env.h).  The engine takes its Env from the Context an
// array or container was opened with (context.h), never from a global or the process
// environment, so a test can fail one container's I/O while others in the process go on.
//
// The calls are the POSIX system calls themselves, with their contract: a failure
// returns -1 with errno set, a read or write may be short.  The retry loops, error
// messages and durability rules stay in file_io.cc, written once over any Env.
#pragma once
#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>

#include <memory>
#include <string>
#include <vector>

struct iovec;

namespace tessera {

class Env {
 public:
  virtual ~Env() = default;

  // Descriptors.
  virtual int open(const char* path, int flags, mode_t mode) = 0;
  virtual int close(int fd) = 0;
  virtual ssize_t pread(int fd, void* buf, size_t n, off_t off) = 0;
  virtual ssize_t preadv(int fd, const struct iovec* iov, int cnt, off_t off) = 0;
  // How many pages of [off, off + n) are in the page cache (cachestat(2), Linux 6.5+),
  // without reading any or starting a read; -1 with errno when it cannot tell (ENOSYS on
  // an older kernel; EOPNOTSUPP from this default: test Envs model the file, not the
  // page cache).  A hint for what a read would cost, never for what it returns.
  virtual int64_t cached_pages(int /*fd*/, uint64_t /*off*/, uint64_t /*n*/);
  virtual ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) = 0;
  virtual ssize_t pwritev(int fd, const struct iovec* iov, int cnt, off_t off) = 0;
  virtual int fdatasync(int fd) = 0;
  virtual int fsync(int fd) = 0;  // directories
  virtual int syncfs(int fd) = 0;
  virtual int ftruncate(int fd, off_t size) = 0;
  virtual int fstat(int fd, struct stat* st) = 0;
  virtual int flock(int fd, int op) = 0;

  // Names.  stat with follow = false is lstat.
  virtual int stat(const char* path, struct stat* st, bool follow) = 0;
  virtual int mkdir(const char* path, mode_t mode) = 0;
  virtual int rmdir(const char* path) = 0;
  virtual int unlink(const char* path) = 0;
  virtual int rename(const char* from, const char* to) = 0;
  virtual int link(const char* from, const char* to) = 0;
  // The entry names of a directory except "." and "..", in any order: 0, or an errno.
  virtual int list_dir(const char* path, std::vector<std::string>* names) = 0;

  // The process's POSIX environment (never destroyed).
  static Env& posix();
  static const std::shared_ptr<Env>& posix_shared();
};

// An Env that passes every call on to another (LevelDB's EnvWrapper): a test Env derives
// from it and overrides only the calls it watches or fails.  cached_pages is not passed
// on (a wrapper that models a file's bytes, power_loss_env.h, has no page cache to ask
// about); a wrapper that wants it overrides it.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env& base) : base_(base) {}

  int open(const char* path, int flags, mode_t mode) override { return base_.open(path, flags, mode); }
  int close(int fd) override { return base_.close(fd); }
  ssize_t pread(int fd, void* buf, size_t n, off_t off) override { return base_.pread(fd, buf, n, off); }
  ssize_t preadv(int fd, const struct iovec* iov, int cnt, off_t off) override {
    return base_.preadv(fd, iov, cnt, off);
  }
  ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) override { return base_.pwrite(fd, buf, n, off); }
  ssize_t pwritev(int fd, const struct iovec* iov, int cnt, off_t off) override {
    return base_.pwritev(fd, iov, cnt, off);
  }
  int fdatasync(int fd) override { return base_.fdatasync(fd); }
  int fsync(int fd) override { return base_.fsync(fd); }
  int syncfs(int fd) override { return base_.syncfs(fd); }
  int ftruncate(int fd, off_t size) override { return base_.ftruncate(fd, size); }
  int fstat(int fd, struct stat* st) override { return base_.fstat(fd, st); }
  int flock(int fd, int op) override { return base_.flock(fd, op); }
  int stat(const char* path, struct stat* st, bool follow) override { return base_.stat(path, st, follow); }
  int mkdir(const char* path, mode_t mode) override { return base_.mkdir(path, mode); }
  int rmdir(const char* path) override { return base_.rmdir(path); }
  int unlink(const char* path) override { return base_.unlink(path); }
  int rename(const char* from, const char* to) override { return base_.rename(from, to); }
  int link(const char* from, const char* to) override { return base_.link(from, to); }
  int list_dir(const char* path, std::vector<std::string>* names) override { return base_.list_dir(path, names); }

 protected:
  Env& base_;
};

}  // namespace tessera
