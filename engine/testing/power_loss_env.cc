// power_loss_env.cc — see power_loss_env.h.
#include "engine/testing/power_loss_env.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "engine/util/error.h"
#include "engine/util/file_io.h"

namespace tessera {

namespace {

// "/a//b/" -> "/a/b": directory names compare as strings.
std::string norm(const std::string& p) {
  std::string out;
  for (char c : p)
    if (!(c == '/' && !out.empty() && out.back() == '/')) out += c;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::vector<uint8_t> read_fd(Env& env, int fd) {
  struct stat st;
  std::vector<uint8_t> out;
  if (env.fstat(fd, &st) != 0) return out;
  out.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t r = env.pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (r <= 0) break;
    done += static_cast<size_t>(r);
  }
  out.resize(done);
  return out;
}

void write_whole(Env& env, const std::string& path, const std::vector<uint8_t>& bytes) {
  int fd = env.open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC, 0);
  if (fd < 0) return;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t r = env.pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (r <= 0) break;
    done += static_cast<size_t>(r);
  }
  env.close(fd);
}

// Removes [lo, hi) from a list of disjoint intervals.
void subtract(std::vector<std::pair<uint64_t, uint64_t>>& v, uint64_t lo, uint64_t hi) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (auto [a, b] : v) {
    if (b <= lo || a >= hi) {
      out.emplace_back(a, b);
      continue;
    }
    if (a < lo) out.emplace_back(a, lo);
    if (b > hi) out.emplace_back(hi, b);
  }
  v.swap(out);
}

}  // namespace

PowerLossEnv::PowerLossEnv(std::string root, Env& base)
    : EnvWrapper(base), root_(norm(root)), stash_dir_(root_ + "/.power-loss-stash"), posix_(Env::posix()) {
  posix_.mkdir(stash_dir_.c_str(), 0755);
}

PowerLossEnv::~PowerLossEnv() {
  std::lock_guard<std::mutex> g(mu_);
  forget_locked();
  posix_.rmdir(stash_dir_.c_str());
}

bool PowerLossEnv::inside(const std::string& path) const {
  const std::string p = norm(path);
  if (p.compare(0, stash_dir_.size(), stash_dir_) == 0) return false;
  return p == root_ || p.compare(0, root_.size() + 1, root_ + "/") == 0;
}

void PowerLossEnv::stop_after(uint64_t k) {
  std::lock_guard<std::mutex> g(mu_);
  count_ = 0;
  stop_at_ = k;
  stopped_ = false;
}

uint64_t PowerLossEnv::points() const {
  std::lock_guard<std::mutex> g(mu_);
  return count_;
}

bool PowerLossEnv::stopped() const {
  std::lock_guard<std::mutex> g(mu_);
  return stopped_;
}

bool PowerLossEnv::point() {
  if (stopped_) return false;
  ++count_;
  if (stop_at_ && count_ >= stop_at_) stopped_ = true;  // this one still happens
  return true;
}

std::vector<std::string> PowerLossEnv::pending() const {
  std::lock_guard<std::mutex> g(mu_);
  static const char* kNames[] = {"create", "mkdir", "rename", "link", "unlink", "rmdir"};
  std::vector<std::string> out;
  for (auto& op : ops_) out.push_back(std::string(kNames[op.kind]) + " '" + op.path + "'");
  for (auto& [k, d] : data_) out.push_back("data '" + d.path + "'");
  return out;
}

PowerLossEnv::Data& PowerLossEnv::data_of(int fd, const std::string& path) {
  struct stat st;
  posix_.fstat(fd, &st);
  const Key key{st.st_dev, st.st_ino};
  auto it = data_.find(key);
  if (it != data_.end()) return it->second;
  Data& d = data_[key];
  d.image = read_fd(posix_, fd);  // untracked: what is there now is durable
  d.path = path;
  return d;
}

std::string PowerLossEnv::stash_of(const std::string& path) {
  struct stat st;
  if (posix_.stat(path.c_str(), &st, false) != 0 || !S_ISREG(st.st_mode)) return "";
  const std::string s = stash_dir_ + "/" + std::to_string(++stash_seq_);
  return posix_.link(path.c_str(), s.c_str()) == 0 ? s : "";
}

#define TESSERA_STOPPED_FAILS \
  if (!point()) {             \
    errno = EIO;              \
    return -1;                \
  }

int PowerLossEnv::open(const char* path, int flags, mode_t mode) {
  std::lock_guard<std::mutex> g(mu_);
  const bool tracked = inside(path);
  bool existed = false;
  if (flags & (O_CREAT | O_TRUNC)) {
    TESSERA_STOPPED_FAILS
    struct stat st;
    existed = posix_.stat(path, &st, true) == 0;
    if (tracked && existed && (flags & O_TRUNC)) {  // its old bytes are durable until a sync
      int rfd = posix_.open(path, O_RDONLY | O_CLOEXEC, 0);
      if (rfd >= 0) {
        data_of(rfd, path).size_pending = true;
        posix_.close(rfd);
      }
    }
  }
  int fd = base_.open(path, flags, mode);
  if (fd < 0 || !tracked) return fd;
  paths_[fd] = norm(path);
  if ((flags & O_CREAT) && !existed) {
    ops_.push_back({NameOp::kCreate, norm(path), "", "", {parent_dir(norm(path))}});
    struct stat st;
    posix_.fstat(fd, &st);
    Data& d = data_[{st.st_dev, st.st_ino}];  // new: nothing of it is durable
    d.image.clear();
    d.path = norm(path);
  }
  return fd;
}

int PowerLossEnv::close(int fd) {
  {
    std::lock_guard<std::mutex> g(mu_);
    paths_.erase(fd);
  }
  return base_.close(fd);
}

ssize_t PowerLossEnv::pwrite(int fd, const void* buf, size_t n, off_t off) {
  std::lock_guard<std::mutex> g(mu_);
  TESSERA_STOPPED_FAILS
  auto it = paths_.find(fd);
  if (it == paths_.end()) return base_.pwrite(fd, buf, n, off);
  Data& d = data_of(fd, it->second);
  ssize_t r = base_.pwrite(fd, buf, n, off);
  if (r > 0) {
    const uint64_t lo = static_cast<uint64_t>(off), hi = lo + static_cast<uint64_t>(r);
    d.pending.emplace_back(lo, hi);
    subtract(d.dropped, lo, hi);  // rewritten: dirty again, the next sync may keep it
  }
  return r;
}

ssize_t PowerLossEnv::pwritev(int fd, const struct iovec* iov, int cnt, off_t off) {
  std::lock_guard<std::mutex> g(mu_);
  TESSERA_STOPPED_FAILS
  auto it = paths_.find(fd);
  if (it == paths_.end()) return base_.pwritev(fd, iov, cnt, off);
  Data& d = data_of(fd, it->second);
  ssize_t r = base_.pwritev(fd, iov, cnt, off);
  if (r > 0) {
    const uint64_t lo = static_cast<uint64_t>(off), hi = lo + static_cast<uint64_t>(r);
    d.pending.emplace_back(lo, hi);
    subtract(d.dropped, lo, hi);
  }
  return r;
}

int PowerLossEnv::ftruncate(int fd, off_t size) {
  std::lock_guard<std::mutex> g(mu_);
  TESSERA_STOPPED_FAILS
  auto it = paths_.find(fd);
  if (it != paths_.end()) data_of(fd, it->second).size_pending = true;
  return base_.ftruncate(fd, size);
}

// A file's sync: what was written since becomes durable (ok), or is dropped for good (a
// failed sync: the kernel marked those pages clean without writing them).
void PowerLossEnv::synced(int fd, bool ok) {
  struct stat st;
  if (posix_.fstat(fd, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    auto it = paths_.find(fd);
    if (ok && it != paths_.end()) dir_synced(it->second);
    return;
  }
  auto it = data_.find({st.st_dev, st.st_ino});
  if (it == data_.end()) return;
  Data& d = it->second;
  if (!ok) {
    d.dropped.insert(d.dropped.end(), d.pending.begin(), d.pending.end());
    d.pending.clear();
    return;
  }
  std::vector<uint8_t> now = read_fd(posix_, fd);
  for (auto [lo, hi] : d.dropped)  // never reached the disk: the old bytes (or a hole)
    for (uint64_t i = lo; i < hi && i < now.size(); ++i) now[i] = i < d.image.size() ? d.image[i] : 0;
  d.image.swap(now);
  d.pending.clear();
  d.size_pending = false;
  if (d.dropped.empty()) data_.erase(it);
}

void PowerLossEnv::dir_synced(const std::string& dir) {
  const std::string d = norm(dir);
  std::vector<NameOp> keep;
  for (auto& op : ops_) {
    op.dirs.erase(d);
    if (!op.dirs.empty()) {
      keep.push_back(std::move(op));
      continue;
    }
    if (!op.stash.empty()) posix_.unlink(op.stash.c_str());  // durable: no way back
  }
  ops_.swap(keep);
}

int PowerLossEnv::fdatasync(int fd) {
  std::lock_guard<std::mutex> g(mu_);
  TESSERA_STOPPED_FAILS
  int r = base_.fdatasync(fd);
  const int err = errno;
  if (paths_.count(fd)) synced(fd, r == 0);
  errno = err;
  return r;
}

int PowerLossEnv::fsync(int fd) {
  std::lock_guard<std::mutex> g(mu_);
  TESSERA_STOPPED_FAILS
  int r = base_.fsync(fd);
  const int err = errno;
  if (paths_.count(fd)) synced(fd, r == 0);
  errno = err;
  return r;
}

int PowerLossEnv::syncfs(int fd) {
  std::lock_guard<std::mutex> g(mu_);
  TESSERA_STOPPED_FAILS
  int r = base_.syncfs(fd);
  if (r != 0) return r;
  // Everything durable, but bytes a failed sync dropped.
  for (auto it = data_.begin(); it != data_.end();) {
    Data& d = it->second;
    if (d.dropped.empty()) {
      it = data_.erase(it);
      continue;
    }
    int f = posix_.open(d.path.c_str(), O_RDONLY | O_CLOEXEC, 0);
    if (f >= 0) {
      std::vector<uint8_t> now = read_fd(posix_, f);
      posix_.close(f);
      for (auto [lo, hi] : d.dropped)
        for (uint64_t i = lo; i < hi && i < now.size(); ++i) now[i] = i < d.image.size() ? d.image[i] : 0;
      d.image.swap(now);
    }
    d.pending.clear();
    d.size_pending = false;
    ++it;
  }
  for (auto& op : ops_)
    if (!op.stash.empty()) posix_.unlink(op.stash.c_str());
  ops_.clear();
  return 0;
}

int PowerLossEnv::mkdir(const char* path, mode_t mode) {
  std::lock_guard<std::mutex> g(mu_);
  TESSERA_STOPPED_FAILS
  int r = base_.mkdir(path, mode);
  if (r == 0 && inside(path)) ops_.push_back({NameOp::kMkdir, norm(path), "", "", {parent_dir(norm(path))}});
  return r;
}

int PowerLossEnv::rmdir(const char* path) {
  std::lock_guard<std::mutex> g(mu_);
  TESSERA_STOPPED_FAILS
  int r = base_.rmdir(path);
  if (r == 0 && inside(path)) ops_.push_back({NameOp::kRmdir, norm(path), "", "", {parent_dir(norm(path))}});
  return r;
}

int PowerLossEnv::unlink(const char* path) {
  std::lock_guard<std::mutex> g(mu_);
  TESSERA_STOPPED_FAILS
  if (!inside(path)) return base_.unlink(path);
  const std::string stash = stash_of(path);
  int r = base_.unlink(path);
  const int err = errno;
  if (r == 0) ops_.push_back({NameOp::kUnlink, norm(path), "", stash, {parent_dir(norm(path))}});
  else if (!stash.empty()) posix_.unlink(stash.c_str());
  errno = err;
  return r;
}

int PowerLossEnv::rename(const char* from, const char* to) {
  std::lock_guard<std::mutex> g(mu_);
  TESSERA_STOPPED_FAILS
  if (!inside(to) || !inside(from)) return base_.rename(from, to);
  const std::string stash = stash_of(to);  // what the rename replaces comes back on undo
  int r = base_.rename(from, to);
  const int err = errno;
  if (r == 0) {
    ops_.push_back({NameOp::kRename, norm(to), norm(from), stash, {parent_dir(norm(from)), parent_dir(norm(to))}});
    for (auto& [k, d] : data_)
      if (d.path == norm(from)) d.path = norm(to);
  } else if (!stash.empty()) {
    posix_.unlink(stash.c_str());
  }
  errno = err;
  return r;
}

int PowerLossEnv::link(const char* from, const char* to) {
  std::lock_guard<std::mutex> g(mu_);
  TESSERA_STOPPED_FAILS
  int r = base_.link(from, to);
  if (r == 0 && inside(to)) ops_.push_back({NameOp::kLink, norm(to), norm(from), "", {parent_dir(norm(to))}});
  return r;
}

#undef TESSERA_STOPPED_FAILS

void PowerLossEnv::power_loss() {
  std::lock_guard<std::mutex> g(mu_);
  // Name changes, newest first (best effort: a later change may have moved things on).
  for (auto it = ops_.rbegin(); it != ops_.rend(); ++it) {
    const NameOp& op = *it;
    switch (op.kind) {
      case NameOp::kCreate:
      case NameOp::kLink: posix_.unlink(op.path.c_str()); break;
      case NameOp::kMkdir: (void)guard([&] { remove_tree(posix_, op.path); }); break;
      case NameOp::kRmdir: posix_.mkdir(op.path.c_str(), 0755); break;
      case NameOp::kRename:
        posix_.rename(op.path.c_str(), op.from.c_str());
        if (!op.stash.empty()) posix_.link(op.stash.c_str(), op.path.c_str());
        break;
      case NameOp::kUnlink:
        if (!op.stash.empty()) posix_.link(op.stash.c_str(), op.path.c_str());
        break;
    }
  }
  // Then the data of every file left whose bytes are not all durable.
  std::vector<std::string> dirs{root_};
  while (!dirs.empty()) {
    const std::string d = dirs.back();
    dirs.pop_back();
    std::vector<std::string> names;
    if (posix_.list_dir(d.c_str(), &names) != 0) continue;
    for (const std::string& n : names) {
      const std::string p = d + "/" + n;
      if (p == stash_dir_) continue;
      struct stat st;
      if (posix_.stat(p.c_str(), &st, false) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        dirs.push_back(p);
        continue;
      }
      auto it = data_.find({st.st_dev, st.st_ino});
      if (S_ISREG(st.st_mode) && it != data_.end()) write_whole(posix_, p, it->second.image);
    }
  }
  forget_locked();
}

void PowerLossEnv::settle() {
  std::lock_guard<std::mutex> g(mu_);
  forget_locked();
}

void PowerLossEnv::forget_locked() {
  for (auto& op : ops_)
    if (!op.stash.empty()) posix_.unlink(op.stash.c_str());
  ops_.clear();
  data_.clear();
  stopped_ = false;
  stop_at_ = 0;
  count_ = 0;
}

}  // namespace tessera
