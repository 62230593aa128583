// fault_env.h — an Env (env.h) that fails the k-th write or sync call on purpose, for the
// fault-injection tests (fault_test.cc; docs/reliability.md, "Fault injection").
//
// Every call that changes the file system is a *point*: pwrite, pwritev, ftruncate
// (writes), fdatasync, fsync, syncfs (syncs), and open with O_CREAT, mkdir, rename, link,
// unlink, rmdir (names).  A test first runs an operation with the env unarmed to count
// its points, then runs it again once per point k and fault, armed at k:
//
//   kNoSpace    the k-th point fails with ENOSPC, and so does every later write, sync
//               and name creation until disarm() — a full disk stays full;
//   kIo         the k-th point fails with EIO, once (a transient device error);
//   kShortWrite the k-th point, if it is a write, writes half of its bytes and returns
//               the short count; from then on the disk is full as with kNoSpace (this is
//               how a filling disk shows up first).  Not a write: ENOSPC.
//
// Removing names (unlink, rmdir) and cutting a file shorter (ftruncate) never fail after
// the fault point for a full disk: that is how space is freed.  Thread-safe (pool threads write fragments too).
//
// Reads (pread, preadv) are counted apart, as *read points* (so the write points of an
// operation stay what they were), and fail with arm_read:
//
//   kReadIo     the k-th read fails with EIO, once (a bad sector, a device error);
//   kShortRead  the k-th read returns half of its bytes (legal: the caller must go on);
//   kEof        the k-th read returns 0, as if the file ended there (a file truncated
//               under the reader, or a device that returns nothing).
#pragma once
#include <cstdint>
#include <cerrno>
#include <map>
#include <mutex>
#include <string>

#include "engine/util/env.h"

namespace tessera {

class FaultEnv final : public EnvWrapper {
 public:
  enum class Fault { kNoSpace, kIo, kShortWrite };
  static const char* fault_name(Fault f);
  enum class ReadFault { kReadIo, kShortRead, kEof };
  static const char* fault_name(ReadFault f);

  explicit FaultEnv(Env& base = Env::posix()) : EnvWrapper(base) {}

  // Counts points from zero again and fails the k-th (1-based) from now with `f`.
  void arm(uint64_t k, Fault f);
  // Counts read points from zero again and fails the k-th (1-based) from now with `f`.
  void arm_read(uint64_t k, ReadFault f);
  uint64_t read_points() const;  // counted since the last arm_read() or reset_count()
  // Counts opens of existing files (no O_CREAT: what the file cache's reopens are) from
  // zero again and fails the k-th (1-based) from now with errno `err`, once (EIO: a device
  // error; EMFILE: the process out of descriptors; ENOENT: the file removed).  Counted
  // apart from the points and read points, so those of an operation stay what they were.
  void arm_open(uint64_t k, int err);
  uint64_t opens() const;  // counted since the last arm_open() or reset_count()
  // No more faults (writes or reads); counting goes on.
  void disarm();
  void reset_count();
  uint64_t points() const;  // counted since the last arm() or reset_count()
  bool fired() const;
  // What the fault hit, e.g. "pwrite '/tmp/x/frag/.…tmp'" (empty if it did not fire).
  std::string fired_at() const;

  int open(const char* path, int flags, mode_t mode) override;
  int close(int fd) override;
  ssize_t pread(int fd, void* buf, size_t n, off_t off) override;
  ssize_t preadv(int fd, const struct iovec* iov, int cnt, off_t off) override;
  ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) override;
  ssize_t pwritev(int fd, const struct iovec* iov, int cnt, off_t off) override;
  int fdatasync(int fd) override;
  int fsync(int fd) override;
  int syncfs(int fd) override;
  int ftruncate(int fd, off_t size) override;
  int mkdir(const char* path, mode_t mode) override;
  int rmdir(const char* path) override;
  int unlink(const char* path) override;
  int rename(const char* from, const char* to) override;
  int link(const char* from, const char* to) override;

 private:
  enum class Kind { kWrite, kSync, kCreate, kRemove };
  // Counts a point; returns 0 to let it through, an errno to fail it, or -1 for a short
  // write (kShortWrite at this point).
  int point(Kind kind, const char* call, const std::string& what);
  std::string fd_path(int fd);
  // Counts a read point; true (and *f) when it is the one to fail.
  bool read_point(const char* call, int fd, ReadFault* f);

  mutable std::mutex mu_;
  uint64_t count_ = 0, at_ = 0;  // at_ 0: unarmed
  uint64_t reads_ = 0, read_at_ = 0;
  uint64_t opens_ = 0, open_at_ = 0;
  int open_err_ = EIO;
  ReadFault read_fault_ = ReadFault::kReadIo;
  Fault fault_ = Fault::kNoSpace;
  bool fired_ = false, full_ = false;
  std::string fired_at_;
  std::map<int, std::string> paths_;  // open descriptors, for messages
};

}  // namespace tessera
