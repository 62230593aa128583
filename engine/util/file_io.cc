#include "engine/util/file_io.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "engine/util/error.h"
#include "engine/util/file_cache.h"

namespace tessera {

// ---- File -------------------------------------------------------------------------------

File::~File() {
  if (fd_ >= 0) env_->close(fd_);  // destructor: errors are unreportable; close() reports them
}

File::File(File&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)), env_(o.env_) { o.fd_ = -1; }

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) env_->close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    env_ = o.env_;
    o.fd_ = -1;
  }
  return *this;
}

// Out of descriptors (EMFILE, ENFILE): the file cache closes what it can and the open is
// tried again; when nothing is left to close, an error in words (file_cache.h).
static int open_fd(Env& env, const std::string& path, int flags, mode_t mode = 0) {
  for (;;) {
    int fd = env.open(path.c_str(), flags | O_CLOEXEC, mode);
    if (fd >= 0) return fd;
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EMFILE || err == ENFILE) {
      if (FileCache::process().relieve()) continue;
      FileCache::process().throw_too_many(path, err);
    }
    throw_errno("cannot open", path, err);
  }
}

File File::adopt(Env& env, int fd, std::string path) {
  File f;
  f.fd_ = fd;
  f.path_ = std::move(path);
  f.env_ = &env;
  return f;
}

File File::open_read(Env& env, const std::string& path) {
  File f;
  f.fd_ = open_fd(env, path, O_RDONLY);
  f.path_ = path;
  f.env_ = &env;
  return f;
}

File File::open_rw(Env& env, const std::string& path, bool create, bool exclusive) {
  int flags = O_RDWR;
  if (create) flags |= O_CREAT;
  if (create && exclusive) flags |= O_EXCL;
  File f;
  f.fd_ = open_fd(env, path, flags, 0644);
  f.path_ = path;
  f.env_ = &env;
  return f;
}

uint64_t File::size() const {
  struct stat st;
  stat(&st);
  return static_cast<uint64_t>(st.st_size);
}

void File::stat(struct stat* st) const {
  if (env_->fstat(fd_, st) != 0) throw_errno("cannot stat", path_, errno);
}

bool File::resident(uint64_t off, uint64_t n) const {
  if (n == 0) return true;
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t pages = (off + n - 1) / page - off / page + 1;
  return env_->cached_pages(fd_, off, n) == static_cast<int64_t>(pages);
}

void File::will_need(uint64_t off, uint64_t n) const {
  // Only a hint: a failure changes nothing but speed, so it is ignored.
  (void)::posix_fadvise(fd_, static_cast<off_t>(off), static_cast<off_t>(n), POSIX_FADV_WILLNEED);
}

size_t File::pread_some(void* buf, size_t n, uint64_t off) const {
  auto* p = static_cast<uint8_t*>(buf);
  size_t done = 0;
  while (done < n) {
    ssize_t r = env_->pread(fd_, p + done, n - done, static_cast<off_t>(off + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot read", path_, errno);
    }
    if (r == 0) break;  // EOF
    done += static_cast<size_t>(r);
  }
  return done;
}

void File::pread_exact(void* buf, size_t n, uint64_t off) const {
  if (pread_some(buf, n, off) == n) return;
  throw_error(Errc::kCorrupt, "'" + path_ + "': truncated: wanted " + std::to_string(n) +
                                  " bytes at offset " + std::to_string(off) + " (file size " +
                                  std::to_string(size()) + ")");
}

void File::preadv_exact(struct iovec* iov, int cnt, uint64_t off) const {
  uint64_t want = 0;
  for (int i = 0; i < cnt; ++i) want += iov[i].iov_len;
  uint64_t done = 0;
  while (cnt > 0) {
    ssize_t r = env_->preadv(fd_, iov, cnt, static_cast<off_t>(off + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot read", path_, errno);
    }
    if (r == 0)
      throw_error(Errc::kCorrupt, "'" + path_ + "': truncated: wanted " + std::to_string(want) +
                                      " bytes at offset " + std::to_string(off) + " (file size " +
                                      std::to_string(size()) + ")");
    done += static_cast<uint64_t>(r);
    auto left = static_cast<size_t>(r);
    while (cnt > 0 && left >= iov->iov_len) {  // drop the buffers filled, trim a partial one
      left -= iov->iov_len;
      ++iov;
      --cnt;
    }
    if (cnt > 0) {
      iov->iov_base = static_cast<uint8_t*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
}

void File::pwrite_all(const void* buf, size_t n, uint64_t off) {
  const auto* p = static_cast<const uint8_t*>(buf);
  size_t done = 0;
  while (done < n) {
    ssize_t r = env_->pwrite(fd_, p + done, n - done, static_cast<off_t>(off + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot write", path_, errno);
    }
    if (r == 0) throw_errno("cannot write", path_, EIO);  // no progress: never spin
    // A short write usually precedes ENOSPC; the retry surfaces the real errno.
    done += static_cast<size_t>(r);
  }
}

void File::sync() {
  while (env_->fdatasync(fd_) != 0) {
    if (errno != EINTR) throw_errno("cannot sync", path_, errno);
  }
}

void AppendFile::append2(const void* a, size_t na, const void* b, size_t nb) {
  struct iovec iov[2] = {{const_cast<void*>(a), na}, {const_cast<void*>(b), nb}};
  ssize_t r;
  do {
    r = f_.env().pwritev(f_.fd(), iov, 2, static_cast<off_t>(off_));
  } while (r < 0 && errno == EINTR);
  const size_t done = r > 0 ? static_cast<size_t>(r) : 0;
  // A short or failed vector write: the rest (and the real errno) through pwrite_all.
  if (done < na) {
    f_.pwrite_all(static_cast<const uint8_t*>(a) + done, na - done, off_ + done);
    f_.pwrite_all(b, nb, off_ + na);
  } else if (done < na + nb) {
    f_.pwrite_all(static_cast<const uint8_t*>(b) + (done - na), nb - (done - na), off_ + done);
  }
  off_ += na + nb;
}

void AppendFile::appendv(struct iovec* iov, int cnt) {
  while (cnt > 0) {
    ssize_t r;
    do {
      r = f_.env().pwritev(f_.fd(), iov, cnt, static_cast<off_t>(off_));
    } while (r < 0 && errno == EINTR);
    if (r <= 0) {
      // A failed vector write: the rest through pwrite_all, which throws with the errno.
      for (int i = 0; i < cnt; ++i) append(iov[i].iov_base, iov[i].iov_len);
      return;
    }
    auto done = static_cast<size_t>(r);
    off_ += done;
    while (cnt > 0 && done >= iov->iov_len) {
      done -= iov->iov_len;
      ++iov;
      --cnt;
    }
    if (cnt > 0) {
      iov->iov_base = static_cast<uint8_t*>(iov->iov_base) + done;
      iov->iov_len -= done;
    }
  }
}

void File::truncate(uint64_t size) {
  while (env_->ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    if (errno != EINTR) throw_errno("cannot truncate", path_, errno);
  }
}

void File::close() {
  if (fd_ < 0) return;
  int fd = fd_;
  fd_ = -1;
  // Never retry close(): on Linux the descriptor is gone even when it reports EINTR.
  if (env_->close(fd) != 0 && errno != EINTR) throw_errno("cannot close", path_, errno);
}

// ---- paths and directories ----------------------------------------------------------------

static bool stat_path(Env& env, const std::string& path, struct stat* st, bool follow) {
  int rc = env.stat(path.c_str(), st, follow);
  if (rc == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  throw_errno("cannot stat", path, errno);
}

bool path_exists(Env& env, const std::string& path) {
  struct stat st;
  return stat_path(env, path, &st, true);
}

bool is_directory(Env& env, const std::string& path) {
  struct stat st;
  return stat_path(env, path, &st, true) && S_ISDIR(st.st_mode);
}

void make_dir(Env& env, const std::string& path) {
  if (env.mkdir(path.c_str(), 0755) == 0) return;
  int err = errno;
  if (err == EEXIST && is_directory(env, path)) return;
  throw_errno("cannot create directory", path, err);
}

void make_dirs(Env& env, const std::string& path) {
  if (path.empty()) return;
  // Create each prefix ending before a '/', then the full path.
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    if (path[pos - 1] != '/') make_dir(env, path.substr(0, pos));
  }
  make_dir(env, path);
}

void remove_file(Env& env, const std::string& path) {
  // Through the file cache: a file this process still reads may have its unlink deferred.
  if (FileCache::process().remove(env, path) != 0 && errno != ENOENT) throw_errno("cannot remove", path, errno);
}

// What remove_tree left: files renamed away by the file cache, in directories of them.
static bool holds_only_hidden(Env& env, const std::string& dir) {
  for (const auto& name : list_dir(env, dir)) {
    if (FileCache::hidden_name(name)) continue;
    const std::string p = join_path(dir, name);
    if (!is_directory(env, p) || !holds_only_hidden(env, p)) return false;
  }
  return true;
}

void remove_tree(Env& env, const std::string& path) {
  struct stat st;
  if (!stat_path(env, path, &st, false)) return;
  if (!S_ISDIR(st.st_mode)) {  // files and symlinks (never followed)
    remove_file(env, path);
    return;
  }
  for (const auto& name : list_dir(env, path)) remove_tree(env, join_path(path, name));
  if (env.rmdir(path.c_str()) != 0 && errno != ENOENT) {
    const int err = errno;
    // Files this process still reads were renamed away, not removed (file_cache.h): the
    // directory stays until they go (a later vacuum or removal takes it).
    if (err == ENOTEMPTY && holds_only_hidden(env, path)) return;
    throw_errno("cannot remove directory", path, err);
  }
}

void sync_dir(Env& env, const std::string& dir) {
  int fd = open_fd(env, dir, O_RDONLY | O_DIRECTORY);
  while (env.fsync(fd) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    env.close(fd);
    throw_errno("cannot sync directory", dir, err);
  }
  env.close(fd);
}

void rename_durable(Env& env, const std::string& from, const std::string& to) {
  if (env.rename(from.c_str(), to.c_str()) != 0)
    throw_errno("cannot rename '" + from + "' to", to, errno);
  std::string to_dir = parent_dir(to), from_dir = parent_dir(from);
  sync_dir(env, to_dir);
  // A cross-directory move also changed the source directory.
  if (from_dir != to_dir) sync_dir(env, from_dir);
}

std::vector<std::string> list_dir(Env& env, const std::string& dir) {
  std::vector<std::string> names;
  if (int err = env.list_dir(dir.c_str(), &names); err != 0) throw_errno("cannot list directory", dir, err);
  std::sort(names.begin(), names.end());
  return names;
}

std::string parent_dir(const std::string& path) {
  size_t end = path.size();
  while (end > 1 && path[end - 1] == '/') --end;  // ignore trailing slashes
  size_t slash = path.rfind('/', end - 1);
  if (end == 0 || slash == std::string::npos) return ".";
  while (slash > 0 && path[slash - 1] == '/') --slash;  // collapse "a//b"
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string join_path(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (a.back() == '/') return a + b;
  return a + "/" + b;
}

std::vector<uint8_t> read_file(Env& env, const std::string& path) {
  File f = File::open_read(env, path);
  std::vector<uint8_t> data(f.size());
  f.pread_exact(data.data(), data.size(), 0);
  return data;
}

void write_file_atomic(Env& env, const std::string& path, const void* data, size_t n, bool durable) {
  // pid + counter keeps concurrent writers (threads or processes) off each other's temp file.
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(counter.fetch_add(1));
  try {
    File f = File::open_rw(env, tmp, /*create=*/true, /*exclusive=*/true);
    f.pwrite_all(data, n, 0);
    if (durable) f.sync();
    f.close();
    if (durable) {
      rename_durable(env, tmp, path);
    } else if (env.rename(tmp.c_str(), path.c_str()) != 0) {
      throw_errno("rename to", path, errno);
    }
  } catch (...) {
    env.unlink(tmp.c_str());  // best effort; the original error is what matters
    throw;
  }
}

void sync_filesystem(Env& env, const std::string& path) {
  int fd = open_fd(env, path, O_RDONLY);
  int rc = env.syncfs(fd);
  int err = errno;
  env.close(fd);
  if (rc != 0) throw_errno("syncfs", path, err);
}

// ---- FileLock -----------------------------------------------------------------------------

FileLock::~FileLock() { unlock(); }

FileLock::FileLock(FileLock&& o) noexcept : fd_(o.fd_), env_(o.env_) { o.fd_ = -1; }

FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    unlock();
    fd_ = o.fd_;
    env_ = o.env_;
    o.fd_ = -1;
  }
  return *this;
}

FileLock FileLock::try_lock(Env& env, const std::string& path, bool exclusive) {
  // flock locks belong to the open file description, so a second try_lock in the same
  // process (a fresh open()) conflicts just like another process would.
  int fd = open_fd(env, path, O_RDWR | O_CREAT, 0644);
  int op = (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
  while (env.flock(fd, op) != 0) {
    int err = errno;
    if (err == EINTR) continue;
    env.close(fd);
    if (err == EWOULDBLOCK) return FileLock();
    throw_errno("cannot lock", path, err);
  }
  FileLock l;
  l.fd_ = fd;
  l.env_ = &env;
  return l;
}

void FileLock::unlock() {
  if (fd_ >= 0) env_->close(fd_);  // closing the last descriptor releases the flock
  fd_ = -1;
}

}  // namespace tessera
