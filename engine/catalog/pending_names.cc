#include "engine/catalog/pending_names.h"

#include <algorithm>

#include "engine/util/file_io.h"

namespace tessera {

void PendingNames::add_file(const std::string& path) {
  std::lock_guard<std::mutex> g(mu_);
  p_.files.push_back(path);
}

void PendingNames::add_dir(const std::string& dir) {
  std::lock_guard<std::mutex> g(mu_);
  p_.dirs.insert(dir);
}

size_t PendingNames::size() const {
  std::lock_guard<std::mutex> g(mu_);
  return p_.files.size() + p_.dirs.size();
}

void PendingNames::sync(Env& env) {
  std::lock_guard<std::mutex> g(mu_);
  // Files first: a header's bytes are durable before the name that makes it visible.
  while (!p_.files.empty()) {
    File::open_read(env, p_.files.back()).sync();
    p_.files.pop_back();
  }
  // Deepest first (reverse order: a child's path sorts after its parent's), so a
  // directory's own name is synced after its entries.
  while (!p_.dirs.empty()) {
    auto last = std::prev(p_.dirs.end());
    sync_dir(env, *last);
    p_.dirs.erase(last);
  }
}

PendingNames::Taken PendingNames::snapshot() const {
  std::lock_guard<std::mutex> g(mu_);
  return p_;
}

void PendingNames::forget(const Taken& t) {
  std::lock_guard<std::mutex> g(mu_);
  for (const std::string& d : t.dirs) p_.dirs.erase(d);
  // Files are only ever added at creation, one each: drop those the snapshot had.
  for (const std::string& f : t.files) {
    auto it = std::find(p_.files.begin(), p_.files.end(), f);
    if (it != p_.files.end()) p_.files.erase(it);
  }
}

}  // namespace tessera
