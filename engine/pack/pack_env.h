// pack_env.h — an Env (env.h) that serves a container's directory tree out of one regular
// file, the pack (docs/format.md, "The one-file container").  Paths at or under the
// container's path are the virtual tree; every other path and descriptor goes on to the
// Env beneath (the POSIX one, or a fault or power-loss Env in tests).  The calls keep the
// POSIX contract the engine's protocols rely on: rename is atomic, data and names are
// durable after fdatasync/fsync, an unlinked file stays readable while open, a failed
// call returns -1 with errno.  Virtual descriptors are numbers no kernel hands out
// (kFirstFd and up), so a stray system call on one fails with EBADF.  Thread-safe.
#pragma once
#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/pack/pack_store.h"
#include "engine/util/env.h"

namespace tessera {

class PackEnv final : public Env {
 public:
  static constexpr int kFirstFd = 1 << 28;

  // Creates the pack at `path` (see PackStore::create) and serves it.  Throws Error.
  static std::shared_ptr<PackEnv> create(std::shared_ptr<Env> base, const std::string& path,
                                         const std::vector<uint8_t>& wrapper, bool exclusive);
  // Opens the pack at `path`: a writer (one process at a time) or a reader.  Throws Error.
  static std::shared_ptr<PackEnv> open(std::shared_ptr<Env> base, const std::string& path, bool writable);
  // True when `path` is a regular file holding a pack.  Never throws.
  static bool is_pack(Env& base, const std::string& path);
  ~PackEnv() override;  // a writer closes the pack cleanly (pack_store.h)

  const std::string& root() const { return root_; }
  bool writable() const;

  int open(const char* path, int flags, mode_t mode) override;
  int close(int fd) override;
  ssize_t pread(int fd, void* buf, size_t n, off_t off) override;
  ssize_t preadv(int fd, const struct iovec* iov, int cnt, off_t off) override;
  int64_t cached_pages(int fd, uint64_t off, uint64_t n) override;
  ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) override;
  ssize_t pwritev(int fd, const struct iovec* iov, int cnt, off_t off) override;
  int fdatasync(int fd) override;
  int fsync(int fd) override;
  int syncfs(int fd) override;
  int ftruncate(int fd, off_t size) override;
  int fstat(int fd, struct stat* st) override;
  int flock(int fd, int op) override;
  int stat(const char* path, struct stat* st, bool follow) override;
  int mkdir(const char* path, mode_t mode) override;
  int rmdir(const char* path) override;
  int unlink(const char* path) override;
  int rename(const char* from, const char* to) override;
  int link(const char* from, const char* to) override;
  int list_dir(const char* path, std::vector<std::string>* names) override;

 private:
  struct Vfd {
    uint64_t ino = 0;
    int flags = 0;
    int lock = 0;  // LOCK_SH, LOCK_EX or 0
  };
  PackEnv(std::shared_ptr<Env> base, std::string root, std::unique_ptr<pack::PackStore> store);
  // The path relative to the root when it is in the virtual tree ("" for the root).
  bool inside(const char* path, std::string* rel) const;
  static bool is_virtual(int fd) { return fd >= kFirstFd; }
  Vfd* vfd(int fd);  // null (errno EBADF) when not open; mu_ held
  // Writes iov's buffers at `off` of the file (allocating, zeroing gaps, growing the
  // size); mu_ held.  The bytes written, or -1 with errno.
  ssize_t write_locked(Vfd& f, const struct iovec* iov, int cnt, uint64_t off);
  int allocate_locked(uint64_t ino, uint64_t from, uint64_t to);
  int zero_locked(uint64_t ino, uint64_t from, uint64_t to);
  int log_locked(pack::Record r);  // 0 or errno
  int remove_locked(const std::string& rel, bool dir);
  void fill_stat(uint64_t ino, const pack::Inode& n, struct stat* st) const;

  std::shared_ptr<Env> base_owner_;
  Env& base_;
  const std::string root_;
  std::unique_ptr<pack::PackStore> store_;
  mutable std::mutex mu_;
  std::map<int, Vfd> fds_;
  int next_fd_ = kFirstFd;
  std::map<uint64_t, std::map<int, int>> locks_;  // ino -> holders (fd -> LOCK_SH/LOCK_EX)
};

}  // namespace tessera
