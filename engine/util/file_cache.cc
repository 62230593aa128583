// file_cache.cc — see file_cache.h.
#include "engine/util/file_cache.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <new>
#include <vector>

#include "engine/util/checksum.h"
#include "engine/util/error.h"

namespace tessera {

namespace {

constexpr size_t kMinAuto = 16, kMaxAuto = 4096;
constexpr char kRemovedTag[] = ".removed.";  // in the names remove() renames to
// relieve() never shrinks the cache below this: a read needs a few descriptors at once.
constexpr size_t kMinPressure = 8;

uint64_t identity_of(const struct stat& st) {
  const uint64_t file[2] = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  const uint64_t id = checksum64(file, sizeof file);
  return id + (id == 0);  // 0 is kept for "none" (ByteSource::identity)
}

size_t soft_limit() {
  struct rlimit rl;
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  return static_cast<size_t>(rl.rlim_cur);
}

}  // namespace

FileCache& FileCache::process() {
  // Leaked on purpose (fragments may be dropped while static destructors run).  A forked
  // child must not inherit the mutex held by a thread it does not have: it is held
  // across fork (every open, close and eviction holds it only briefly).
  static FileCache* c = [] {
    auto* x = new FileCache();
    ::pthread_atfork([] { FileCache::process().mu_.lock(); }, [] { FileCache::process().mu_.unlock(); },
                     [] { FileCache::process().in_forked_child(); });
    return x;
  }();
  return *c;
}

void FileCache::in_forked_child() {
  // Reads and reopens the parent's other threads had under way never finish here, and a
  // notify on the condition variable they waited on would wait for them (glibc): pins,
  // reopens and the condition variable start over.
  new (&opened_) std::condition_variable();
  open_ = 0;
  for (auto& [name, f] : by_name_) {
    f->opening_ = false;
    f->pins_ = 0;
    open_ += f->file_.is_open();
  }
  mu_.unlock();
}

size_t FileCache::auto_capacity() {
  const size_t soft = soft_limit();
  return soft == SIZE_MAX ? kMaxAuto : std::clamp<size_t>(soft / 2, kMinAuto, kMaxAuto);
}

void FileCache::set_capacity(size_t n) {
  std::lock_guard<std::mutex> g(mu_);
  capacity_ = n;
  auto_cap_ = auto_capacity();
  pressure_cap_ = SIZE_MAX;
  evict_locked(limit_locked());
}

size_t FileCache::capacity() const {
  std::lock_guard<std::mutex> g(mu_);
  return limit_locked();
}

size_t FileCache::limit_locked() const {
  if (!auto_cap_) auto_cap_ = auto_capacity();
  return std::min(capacity_ ? capacity_ : auto_cap_, pressure_cap_);
}

FileCache::Stats FileCache::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  Stats s = stats_;
  s.open = open_;
  s.files = by_name_.size();
  return s;
}

void FileCache::reset_peak() {
  std::lock_guard<std::mutex> g(mu_);
  stats_.peak_open = open_;
}

size_t FileCache::shed(size_t keep) {
  std::lock_guard<std::mutex> g(mu_);
  return evict_locked(keep);
}

bool FileCache::relieve() {
  std::lock_guard<std::mutex> g(mu_);
  auto_cap_ = auto_capacity();
  const size_t target = open_ / 2;
  const size_t closed = evict_locked(target);
  if (closed) pressure_cap_ = std::max(kMinPressure, std::min(pressure_cap_, std::max(target, open_)));
  return closed > 0;
}

void FileCache::throw_too_many(const std::string& path, int err) const {
  size_t open = 0, limit = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    open = open_;
    limit = limit_locked();
  }
  const size_t soft = soft_limit();
  const std::string why = err == ENFILE ? "the system's table of open files is full"
                                        : "the process reached its limit of open files (ulimit -n, RLIMIT_NOFILE: " +
                                              (soft == SIZE_MAX ? std::string("unlimited") : std::to_string(soft)) + ")";
  throw_error(Errc::kIo, "cannot open '" + path + "': " + why + "; tessera's file cache holds " +
                             std::to_string(open) + " descriptors (max_open_files: at most " + std::to_string(limit) +
                             ") and has closed every idle one.  The others belong to the application, to open "
                             "containers (each keeps its catalog open, and its lock while writable) and to files being "
                             "written: open fewer files at once, or raise the limit");
}

size_t FileCache::evict_locked(size_t keep) {
  size_t closed = 0;
  for (auto it = lru_.end(); open_ > keep && it != lru_.begin();) {
    --it;
    CachedFile* f = *it;
    if (f->pins_ > 0) continue;
    it = lru_.erase(it);
    f->in_lru_ = false;
    File gone = std::move(f->file_);  // closed here; an idle descriptor has no reader
    --open_;
    ++closed;
    ++stats_.evictions;
  }
  return closed;
}

void FileCache::touch_locked(CachedFile* f) {
  if (f->keep_open_) return;
  if (f->in_lru_) {
    if (f->lru_it_ != lru_.begin()) lru_.splice(lru_.begin(), lru_, f->lru_it_);
  } else {
    lru_.push_front(f);
    f->lru_it_ = lru_.begin();
    f->in_lru_ = true;
  }
}

void FileCache::open_for(CachedFile* f, std::unique_lock<std::mutex>& lk, bool first) {
  auto_cap_ = auto_capacity();
  const size_t limit = limit_locked();
  if (open_ >= limit) evict_locked(limit - 1);
  ++open_;  // the slot, taken before the open
  stats_.peak_open = std::max(stats_.peak_open, open_);
  std::string path = f->path_;
  int fd = -1, err = 0;
  struct stat st;
  for (;;) {
    lk.unlock();
    for (;;) {
      fd = f->env_.open(path.c_str(), O_RDONLY | O_CLOEXEC, 0);
      if (fd >= 0) break;
      err = errno;
      if (err == EINTR) continue;
      if ((err == EMFILE || err == ENFILE) && relieve()) continue;
      break;
    }
    lk.lock();
    // Renamed away meanwhile (remove() of a file this process reads): by its new name.
    if (fd < 0 && err == ENOENT && !first && f->path_ != path) {
      path = f->path_;
      continue;
    }
    break;
  }
  if (fd >= 0 && f->env_.fstat(fd, &st) != 0) {
    err = errno;
    f->env_.close(fd);
    fd = -1;
  }
  if (fd < 0) {
    --open_;
    lk.unlock();
    if (err == EMFILE || err == ENFILE) throw_too_many(path, err);
    if (first) throw_errno("cannot open", path, err);
    if (err == ENOENT)
      throw FileGone(Errc::kNotFound,
                  "'" + path + "' is gone: another process removed it (a consolidation or a vacuum) after tessera "
                  "closed its descriptor to stay within max_open_files (" + std::to_string(limit) +
                  "); open the file or refresh the dataset again to read what replaced it");
    throw_errno("cannot open again", path, err);
  }
  const uint64_t id = identity_of(st);
  if (!first && id != f->identity_) {
    f->env_.close(fd);
    --open_;
    lk.unlock();
    throw_error(Errc::kCorrupt, "'" + path + "' was replaced by another file since tessera first opened it "
                                "(a published file never changes)");
  }
  f->file_ = File::adopt(f->env_, fd, path);
  if (first) {
    f->size_ = static_cast<uint64_t>(st.st_size);
    f->identity_ = id;
    // Removed between its open and now (remove() renames or unlinks under the mutex):
    // renamed, it is reopened by its new name; unlinked, this descriptor is the only way
    // to it.
    const auto d = deferred_.find(id);
    if (d != deferred_.end()) f->path_ = d->second;
    f->keep_open_ = st.st_nlink == 0;
  } else {
    ++stats_.reopens;
  }
}

int FileCache::remove(Env& env, const std::string& path) {
  std::unique_lock<std::mutex> lk(mu_);
  const auto range = by_name_.equal_range(CachedFile::name_of(path));
  struct stat st;
  if (range.first != range.second && env.stat(path.c_str(), &st, false) == 0) {
    const uint64_t id = identity_of(st);
    std::vector<CachedFile*> readers;
    for (auto it = range.first; it != range.second; ++it)
      if (it->second->identity_ == id) readers.push_back(it->second);
    if (!readers.empty()) {
      // Out of every listing's sight at once (a dot and ".tmp": never a fragment's name;
      // the sole writer's recovery removes it after a crash), still at hand for these.
      static std::atomic<uint64_t> counter{0};
      const size_t slash = path.find_last_of('/');
      const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
      const std::string hidden = dir + "." + CachedFile::name_of(path) + kRemovedTag + std::to_string(::getpid()) +
                                 "." + std::to_string(counter++) + ".tmp";
      if (env.rename(path.c_str(), hidden.c_str()) == 0) {
        for (CachedFile* f : readers) f->rename_locked(hidden);
        deferred_[id] = hidden;
        ++stats_.deferred_unlinks;
        return 0;
      }
      // Not renamed: unlinked, the open descriptors kept (a closed one cannot come back).
      for (CachedFile* f : readers)
        if (f->file_.is_open() && !f->opening_) f->keep_locked();
    }
  }
  // Under the mutex: a CachedFile opened meanwhile sees the unlink (st_nlink, open_for).
  const int r = env.unlink(path.c_str());
  const int err = errno;
  lk.unlock();
  errno = err;
  return r;
}

bool FileCache::hidden_name(const std::string& name) {
  return name.size() > 4 && name[0] == '.' && name.find(kRemovedTag) != std::string::npos &&
         name.compare(name.size() - 4, 4, ".tmp") == 0;
}

// ---- CachedFile ---------------------------------------------------------------------------

std::string CachedFile::name_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::unique_ptr<CachedFile> CachedFile::open(Env& env, const std::string& path) {
  FileCache& c = FileCache::process();
  std::unique_ptr<CachedFile> f(new CachedFile(env, path));
  std::unique_lock<std::mutex> lk(c.mu_);
  c.open_for(f.get(), lk, /*first=*/true);
  c.by_name_.emplace(name_of(f->path_), f.get());
  c.touch_locked(f.get());
  return f;
}

CachedFile::~CachedFile() {
  FileCache& c = FileCache::process();
  std::lock_guard<std::mutex> g(c.mu_);
  if (in_lru_) c.lru_.erase(lru_it_);
  if (file_.is_open()) {
    File gone = std::move(file_);
    --c.open_;
  }
  bool others = false;
  const auto range = c.by_name_.equal_range(name_of(path_));
  for (auto it = range.first; it != range.second;) {
    if (it->second == this) {
      it = c.by_name_.erase(it);
      continue;
    }
    others = others || it->second->identity_ == identity_;
    ++it;
  }
  const auto d = c.deferred_.find(identity_);
  if (d == c.deferred_.end() || others) return;
  // The last reader of a removed file: its unlink now, if the name is still that file.
  const std::string p = d->second;
  c.deferred_.erase(d);
  struct stat st;
  if (env_.stat(p.c_str(), &st, false) == 0 && identity_of(st) == identity_) (void)env_.unlink(p.c_str());
}

std::string CachedFile::path() const {
  std::lock_guard<std::mutex> g(FileCache::process().mu_);
  return path_;
}

void CachedFile::set_path(const std::string& p) {
  std::lock_guard<std::mutex> g(FileCache::process().mu_);
  rename_locked(p);
}

void CachedFile::rename_locked(const std::string& p) {
  FileCache& c = FileCache::process();
  const auto range = c.by_name_.equal_range(name_of(path_));
  for (auto it = range.first; it != range.second; ++it)
    if (it->second == this) {
      c.by_name_.erase(it);
      break;
    }
  path_ = p;
  c.by_name_.emplace(name_of(p), this);
}

void CachedFile::keep_locked() {
  keep_open_ = true;
  if (in_lru_) {
    FileCache::process().lru_.erase(lru_it_);
    in_lru_ = false;
  }
}

bool CachedFile::is_open() const {
  std::lock_guard<std::mutex> g(FileCache::process().mu_);
  return file_.is_open();
}

CachedFile::Pin::Pin(const CachedFile& cf) : f_(const_cast<CachedFile&>(cf)) {
  FileCache& c = FileCache::process();
  std::unique_lock<std::mutex> lk(c.mu_);
  for (;;) {
    if (f_.file_.is_open() && !f_.opening_) break;
    if (f_.opening_) {
      c.opened_.wait(lk);
      continue;
    }
    f_.opening_ = true;
    try {
      c.open_for(&f_, lk, /*first=*/false);
    } catch (...) {
      // open_for threw with the mutex let go.
      std::lock_guard<std::mutex> g(c.mu_);
      f_.opening_ = false;
      c.opened_.notify_all();
      throw;
    }
    f_.opening_ = false;
    c.opened_.notify_all();
    break;
  }
  ++f_.pins_;
  c.touch_locked(&f_);
}

CachedFile::Pin::~Pin() {
  FileCache& c = FileCache::process();
  std::lock_guard<std::mutex> g(c.mu_);
  --f_.pins_;
  // Over the bound (every descriptor was in use when this one opened): back under it now.
  const size_t limit = c.limit_locked();
  if (c.open_ > limit) c.evict_locked(limit);
}

void CachedFile::pread_exact(void* buf, size_t n, uint64_t off) const {
  Pin p(*this);
  p.file().pread_exact(buf, n, off);
}

size_t CachedFile::pread_some(void* buf, size_t n, uint64_t off) const {
  Pin p(*this);
  return p.file().pread_some(buf, n, off);
}

void CachedFile::preadv_exact(struct iovec* iov, int cnt, uint64_t off) const {
  Pin p(*this);
  p.file().preadv_exact(iov, cnt, off);
}

void CachedFile::will_need(uint64_t off, uint64_t n) const {
  Pin p(*this);
  p.file().will_need(off, n);
}

bool CachedFile::resident(uint64_t off, uint64_t n) const {
  Pin p(*this);
  return p.file().resident(off, n);
}

void CachedFile::sync() {
  Pin p(*this);
  p.file().sync();
}

}  // namespace tessera
