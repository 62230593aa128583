// power_loss_env.h — an Env (env.h) that remembers what is not durable yet and drops it
// on a simulated power loss, for the power-loss tests (power_loss_test.cc;
// docs/reliability.md, "Power loss").  LevelDB's FaultInjectionTestEnv idea, with the
// POSIX minimum as the rule of what survives:
//
//   - file data survives once an fdatasync/fsync of the file (or a syncfs) returned 0
//     after it was written;
//   - a name change — a file or directory created, a rename, a link, an unlink, an
//     rmdir — survives once an fsync of the directory it changed (both, for a move
//     between two directories) or a syncfs returned 0 after it.
//
// A sync that fails (EIO from the layer below, e.g. a FaultEnv) makes nothing durable,
// and the file data it was to write is dropped for good, as Linux drops dirty pages whose
// writeback failed ("fsyncgate"): a later fsync that returns 0 does not bring it back —
// only writing those bytes again does.  The process still reads what it wrote (the page
// cache), so only a power loss shows the difference.
//
// stop_after(k): the machine stops after the k-th point (points as in FaultEnv: every
// write, sync and name change): every later call that would change the file system fails
// with EIO and changes nothing, while reads go on — the process may notice or not.
// power_loss() then rolls the files under `root` back to what is durable: name changes
// undone newest first (removed files come back from hard links kept in a stash
// directory, `root`/.power-loss-stash, which must be on the same file system), then the
// data of every file not durable rewritten to its durable bytes (a file never synced is
// empty).  Afterwards the env lets everything through again and everything counts as
// durable.  Thread-safe.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/util/env.h"

namespace tessera {

class PowerLossEnv final : public EnvWrapper {
 public:
  // base: where calls go (the POSIX env, or a FaultEnv to fail some of them); root: the
  // tree whose files are tracked (files outside it are never rolled back).
  PowerLossEnv(std::string root, Env& base = Env::posix());
  ~PowerLossEnv() override;

  // 0: never stop.  Counting starts again from zero.
  void stop_after(uint64_t k);
  uint64_t points() const;
  bool stopped() const;
  // What was durable is all that is left (see above).
  void power_loss();
  // Everything on disk now counts as durable (nothing to roll back).
  void settle();
  // Name changes and files not durable now (for messages: "rename '…'", "data '…'").
  std::vector<std::string> pending() const;

  int open(const char* path, int flags, mode_t mode) override;
  int close(int fd) override;
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
  // A name change not durable yet, and how to undo it.
  struct NameOp {
    enum Kind { kCreate, kMkdir, kRename, kLink, kUnlink, kRmdir } kind;
    std::string path, from;  // kRename: from -> path; kLink: from is the existing name
    std::string stash;       // kUnlink, kRename over a file: a hard link to what was removed
    std::set<std::string> dirs;  // directories whose fsync makes it durable
  };
  // The data of a file (by inode) written since it was last durable.
  struct Data {
    std::vector<uint8_t> image;  // its durable bytes
    std::vector<std::pair<uint64_t, uint64_t>> pending;  // [off, end) written since
    std::vector<std::pair<uint64_t, uint64_t>> dropped;  // lost by a failed sync, not rewritten
    bool size_pending = false;   // an ftruncate since
    std::string path;            // for messages
  };
  using Key = std::pair<dev_t, ino_t>;

  bool inside(const std::string& path) const;
  // Counts a point; false: the machine has stopped (the caller fails with EIO).
  bool point();
  Data& data_of(int fd, const std::string& path);
  void wrote(int fd, uint64_t off, uint64_t n);
  void synced(int fd, bool ok);
  void dir_synced(const std::string& dir);
  std::string stash_of(const std::string& path);
  void forget_locked();

  std::string root_, stash_dir_;
  Env& posix_;
  mutable std::mutex mu_;
  uint64_t count_ = 0, stop_at_ = 0;
  bool stopped_ = false;
  uint64_t stash_seq_ = 0;
  std::map<int, std::string> paths_;  // open descriptors
  std::map<Key, Data> data_;
  std::vector<NameOp> ops_;           // oldest first
};

}  // namespace tessera
