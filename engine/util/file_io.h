// POSIX file helpers with the durability rules the format relies on:
//   * new files are written under a temporary name, fdatasync'ed, renamed into place,
//     and the parent directory is fsync'ed (publish = rename);
//   * every failure throws tessera::Error naming the path and errno.
// Short reads throw kCorrupt ("'<path>': truncated: wanted N bytes at offset O").
// Every call goes through an Env (env.h): a File keeps the one it was opened with, the
// free functions take it first.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/util/env.h"

struct iovec;

namespace tessera {

class File {
 public:
  File() = default;
  ~File();
  File(File&& o) noexcept;
  File& operator=(File&& o) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  static File open_read(Env& env, const std::string& path);
  // O_RDWR; creates the file when `create` (mode 0644); O_EXCL when `exclusive`.
  static File open_rw(Env& env, const std::string& path, bool create, bool exclusive = false);
  // Takes over a descriptor `env` opened (the file cache's reopens, file_cache.h).
  static File adopt(Env& env, int fd, std::string path);

  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  Env& env() const { return *env_; }
  uint64_t size() const;                                        // fstat
  void stat(struct stat* st) const;                             // fstat; throws
  // True when every page of [off, off + n) is in the page cache now (Env::cached_pages);
  // false when some is not or it cannot tell.  A hint: a read after it may still wait.
  bool resident(uint64_t off, uint64_t n) const;
  void pread_exact(void* buf, size_t n, uint64_t off) const;   // throws kCorrupt on EOF
  // Scatters the n = sum of lens bytes at off over the buffers (preadv; modifies iov).
  void preadv_exact(struct iovec* iov, int cnt, uint64_t off) const;
  void will_need(uint64_t off, uint64_t n) const;               // posix_fadvise WILLNEED; a hint
  size_t pread_some(void* buf, size_t n, uint64_t off) const;  // returns bytes read (0 at EOF)
  void pwrite_all(const void* buf, size_t n, uint64_t off);    // retries short writes/EINTR
  void sync();                                                  // fdatasync
  void truncate(uint64_t size);
  void close();                                                 // throws on close error

 private:
  int fd_ = -1;
  std::string path_;
  Env* env_ = nullptr;
};

// Appends sequentially to a file, tracking the offset (used by fragment writers).
class AppendFile {
 public:
  explicit AppendFile(File f, uint64_t start = 0) : f_(std::move(f)), off_(start) {}
  uint64_t offset() const { return off_; }
  void append(const void* p, size_t n) { f_.pwrite_all(p, n, off_); off_ += n; }
  // Two buffers, one after the other, in one write call.
  void append2(const void* a, size_t na, const void* b, size_t nb);
  // Buffers one after the other, cnt <= IOV_MAX, in as few pwritev calls as the kernel
  // allows (short writes continue where they stopped; modifies iov).
  void appendv(struct iovec* iov, int cnt);
  File& file() { return f_; }

 private:
  File f_;
  uint64_t off_;
};

bool path_exists(Env& env, const std::string& path);
bool is_directory(Env& env, const std::string& path);
void make_dir(Env& env, const std::string& path);           // ok if it already exists as a directory
void make_dirs(Env& env, const std::string& path);          // mkdir -p
void remove_file(Env& env, const std::string& path);        // ok if missing
void remove_tree(Env& env, const std::string& path);        // rm -rf; ok if missing
void sync_dir(Env& env, const std::string& dir);
// rename(from, to) then fsync the parent directory of `to`.
void rename_durable(Env& env, const std::string& from, const std::string& to);
// Entry names (not "." or "..") in a directory, sorted.
std::vector<std::string> list_dir(Env& env, const std::string& dir);
std::string parent_dir(const std::string& path);
std::string join_path(const std::string& a, const std::string& b);
std::vector<uint8_t> read_file(Env& env, const std::string& path);
// tmp file in the same directory + fdatasync + rename_durable.  With durable = false the
// replacement is still atomic (rename) but not synced: the caller syncs later (syncfs).
void write_file_atomic(Env& env, const std::string& path, const void* data, size_t n, bool durable = true);
// syncfs(2) on the file system holding `path`: one call makes every earlier write on it
// durable — cheaper than thousands of fsyncs when a flush publishes many small files.
void sync_filesystem(Env& env, const std::string& path);

// An advisory lock (flock) held for the object's lifetime.
class FileLock {
 public:
  FileLock() = default;
  ~FileLock();
  FileLock(FileLock&& o) noexcept;
  FileLock& operator=(FileLock&& o) noexcept;
  // Returns an unlocked FileLock (locked() == false) if another holder has it.
  static FileLock try_lock(Env& env, const std::string& path, bool exclusive);
  bool locked() const { return fd_ >= 0; }
  void unlock();

 private:
  int fd_ = -1;
  Env* env_ = nullptr;
};

}  // namespace tessera
