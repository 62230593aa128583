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

}  // namespace tessera
