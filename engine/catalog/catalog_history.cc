// catalog_history.cc — the catalog's archived logs (catalog.history/): compaction
// archives the log it replaces, reads as of an earlier commit replay them (catalog.h).
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/catalog/catalog.h"
#include "engine/catalog/catalog_log.h"
#include "engine/util/error.h"
#include "engine/util/file_io.h"

namespace tessera {

using namespace catalog_log;

namespace {

// Archived logs, oldest first: catalog.history/<16 hex digits>.log.
std::vector<std::string> history_files(Env& env, const std::string& dir) {
  std::vector<std::string> out;
  const std::string h = join_path(dir, Catalog::kHistoryDir);
  if (!is_directory(env, h)) return out;
  for (const std::string& name : list_dir(env, h))
    if (name.size() == 20 && name.compare(16, 4, ".log") == 0 &&
        name.find_first_not_of("0123456789abcdef") == 16)
      out.push_back(join_path(h, name));
  return out;  // list_dir sorts: the numbers have a fixed width
}

}  // namespace

void Catalog::archive_log() {
  const std::string h = join_path(dir_, kHistoryDir);
  if (!is_directory(*env_, h)) {
    make_dir(*env_, h);
    sync_dir(*env_, dir_);
  }
  // The next number; a crash after a link and before the rename left the live log linked
  // already (the same inode): then that link is the archive.
  struct stat live;
  if (env_->fstat(log_.fd(), &live) != 0) throw_errno("cannot stat", log_path_, errno);
  uint64_t next = 1;
  for (const std::string& p : history_files(*env_, dir_)) {
    struct stat st;
    if (env_->stat(p.c_str(), &st, true) == 0 && st.st_ino == live.st_ino && st.st_dev == live.st_dev) return;
    next = std::strtoull(p.c_str() + p.size() - 20, nullptr, 16) + 1;
  }
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.log", static_cast<unsigned long long>(next));
  const std::string to = join_path(h, name);
  if (env_->link(log_path_.c_str(), to.c_str()) != 0) throw_errno("cannot archive the catalog log as", to, errno);
  sync_dir(*env_, h);
}

uint64_t Catalog::drop_history() {
  std::lock_guard<std::mutex> g(mu_);
  uint64_t bytes = 0;
  for (const std::string& p : history_files(*env_, dir_)) {
    bytes += File::open_read(*env_, p).size();
    remove_file(*env_, p);
  }
  const std::string h = join_path(dir_, kHistoryDir);
  if (is_directory(*env_, h)) sync_dir(*env_, h);
  return bytes;
}

std::unique_ptr<Catalog> Catalog::open_as_of(const std::string& dir, uint64_t commit, Env& env) {
  const std::string want = std::to_string(commit);
  // A writer compacting meanwhile archives the live log after the archives were listed:
  // the commit is then in neither what was listed nor the new live log.  A replay that
  // missed it while the archives changed under it is made again (they only grow).
  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<Catalog> c(new Catalog());
    c->env_ = &env;
    c->mode_ = Mode::kReadOnly;
    c->frozen_ = true;
    c->dir_ = dir;
    c->log_path_ = join_path(dir, "catalog.log");
    const std::vector<std::string> archives = history_files(env, dir);
    std::vector<std::string> files = archives;
    files.push_back(c->log_path_);
    bool found = false;
    for (size_t i = 0; i < files.size() && !found; ++i) {
      const bool live = i + 1 == files.size();
      std::vector<uint8_t> buf = read_file(env, files[i]);
      if (buf.size() < kFileHeaderSize) {
        if (live && all_zero(buf.data(), buf.size())) break;  // an interrupted creation: empty
        throw_error(Errc::kCorrupt, "catalog '" + files[i] + "': bad file header");
      }
      if (std::memcmp(buf.data(), kMagic, sizeof kMagic) != 0)
        throw_error(Errc::kCorrupt, "catalog '" + files[i] + "': bad magic (not a tessera catalog)");
      uint32_t version;
      std::memcpy(&version, buf.data() + 8, 4);
      if (version == 0 || version > kVersion)
        throw_error(Errc::kUnsupported, "catalog '" + files[i] + "': format version " + std::to_string(version));
      parse_records(buf.data() + kFileHeaderSize, buf.size() - kFileHeaderSize, kFileHeaderSize, files[i],
                    /*tail_ok=*/live, [&](const std::vector<OpView>& batch, uint64_t) {
                      for (const OpView& op : batch) {
                        c->apply_one(op.put, op.key, op.value, false);
                        if (op.put && op.key == kCommitKey && op.value == want) found = true;
                      }
                      return !found;
                    });
    }
    if (found) {
      c->version_.fetch_add(1, std::memory_order_acq_rel);
      return c;
    }
    if (attempt >= 3 || history_files(env, dir) == archives)
      throw_error(Errc::kNotFound, "catalog '" + c->log_path_ + "': commit " + want +
                                       " is not in its history (removed by `tessera vacuum --history`?)");
  }
}

}  // namespace tessera
