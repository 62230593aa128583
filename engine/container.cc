#include "engine/container.h"

#include <cstdio>
#include <cstring>

#include "engine/checksum.h"
#include "engine/file_io.h"

namespace tessera {

namespace {

const char kHeaderFile[] = "tessera.container";
const char kArraysDir[] = "arrays";
const char kNextIdKey[] = "sys/next_array_id";
constexpr uint32_t kContainerVersion = 1;

// header: "TSRACONT" u32 version u32 reserved u64 XXH3 of the preceding 16 bytes
std::vector<uint8_t> header_bytes() {
  std::vector<uint8_t> h(24, 0);
  std::memcpy(h.data(), "TSRACONT", 8);
  std::memcpy(h.data() + 8, &kContainerVersion, 4);
  uint64_t ck = checksum64(h.data(), 16);
  std::memcpy(h.data() + 16, &ck, 8);
  return h;
}

void check_header(const std::string& root) {
  std::string p = join_path(root, kHeaderFile);
  std::vector<uint8_t> h = read_file(p);
  if (h.size() != 24 || std::memcmp(h.data(), "TSRACONT", 8) != 0)
    throw_error(Errc::kCorrupt, "container header '" + p + "': not a tessera container");
  uint64_t ck;
  std::memcpy(&ck, h.data() + 16, 8);
  if (checksum64(h.data(), 16) != ck) throw_error(Errc::kCorrupt, "container header '" + p + "': checksum mismatch");
  uint32_t ver;
  std::memcpy(&ver, h.data() + 8, 4);
  if (ver != kContainerVersion)
    throw_error(Errc::kUnsupported, "container '" + root + "': format version " + std::to_string(ver) +
                                        " is not supported (this build reads version 1)");
}

}  // namespace

bool Container::is_container(const std::string& path) {
  try {
    if (!is_directory(path)) return false;
    check_header(path);
    return true;
  } catch (...) {
    return false;
  }
}

Status Container::create(const std::string& path, CreateMode mode, std::unique_ptr<Container>* out) {
  return guard([&] {
    if (path_exists(path)) {
      if (mode == CreateMode::kExclusive) throw_errno("create container", path, EEXIST);
      if (is_directory(path)) {
        if (!is_container(path))
          throw_error(Errc::kAlreadyExists, "cannot truncate '" + path +
                                                "': it is a directory but not a tessera container");
        // Take the writer lock first so we never truncate a container another process writes.
        auto probe = Catalog::open(path, Catalog::Mode::kReadWrite, false);
        probe.reset();
        remove_tree(path);
      } else {
        remove_file(path);
      }
    }
    make_dir(path);
    make_dir(join_path(path, kArraysDir));
    std::vector<uint8_t> h = header_bytes();
    write_file_atomic(join_path(path, kHeaderFile), h.data(), h.size());
    sync_dir(parent_dir(path));
    std::unique_ptr<Container> c(new Container());
    c->path_ = path;
    c->writable_ = true;
    c->catalog_ = Catalog::open(path, Catalog::Mode::kReadWrite, true);
    *out = std::move(c);
  });
}

Status Container::open(const std::string& path, bool writable, std::unique_ptr<Container>* out) {
  return guard([&] {
    if (!path_exists(path)) throw_errno("open container", path, ENOENT);
    if (!is_directory(path)) throw_error(Errc::kCorrupt, "'" + path + "' is not a tessera container");
    check_header(path);
    std::unique_ptr<Container> c(new Container());
    c->path_ = path;
    c->writable_ = writable;
    c->catalog_ = Catalog::open(path, writable ? Catalog::Mode::kReadWrite : Catalog::Mode::kReadOnly, false);
    *out = std::move(c);
  });
}

Status Container::open_shadow(const std::string& path, std::unique_ptr<Container>* out) {
  return guard([&] {
    check_header(path);
    std::unique_ptr<Container> c(new Container());
    c->path_ = path;
    c->writable_ = true;
    c->shadow_ = true;
    c->catalog_ = Catalog::open(path, Catalog::Mode::kShadow, false);
    *out = std::move(c);
  });
}

uint64_t Container::committed_epoch() const {
  auto v = catalog_->get(kEpochKey);
  return v ? std::strtoull(v->c_str(), nullptr, 10) : 0;
}

Status Container::remove(const std::string& path) {
  return guard([&] {
    if (!is_container(path)) throw_error(Errc::kNotFound, "'" + path + "' is not a tessera container");
    auto probe = Catalog::open(path, Catalog::Mode::kReadWrite, false);
    probe.reset();
    remove_tree(path);
  });
}

std::string Container::array_dir(uint64_t id) const {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(id));
  return join_path(join_path(path_, kArraysDir), name);
}

Status Container::sync() {
  return guard([&] {
    sync_filesystem(path_);
    unsynced_arrays_ = false;
  });
}

Status Container::create_array(const Schema& schema, uint64_t* id, bool durable) {
  return guard([&] {
    if (!writable_) throw_error(Errc::kInvalidArgument, "container '" + path_ + "' is open read-only");
    schema.validate();
    uint64_t next = 1;
    if (auto v = catalog_->get(kNextIdKey)) next = std::strtoull(v->c_str(), nullptr, 10);
    CatalogBatch b;
    b.put(kNextIdKey, std::to_string(next + 1));
    catalog_->commit(b);
    if (!shadow_) {
      if (!durable) unsynced_arrays_ = true;
      // The counter is the authority: a directory under an id it never handed out durably
      // is what a writer that crashed before its flush left behind.
      if (path_exists(array_dir(next))) remove_tree(array_dir(next));
      Status st = Array::create(array_dir(next), schema, durable);
      if (!st.ok()) throw_error(st.code(), st.message());
    }
    *id = next;
  });
}

Status Container::open_array(uint64_t id, bool writable, const ArrayOptions& opts, std::unique_ptr<Array>* out) {
  ArrayOptions o = opts;
  Status st = guard([&] { o.committed_epoch = committed_epoch(); });
  if (!st.ok()) return st;
  if (shadow_) o.shadow = true;
  // We hold the catalog's writer lock; but ranks of a parallel file (collective) may
  // have temporary files in any array at any time: their cleanup is recover_arrays'.
  else if (!o.collective) o.sole_writer = writable && writable_;
  return Array::open(array_dir(id), writable && writable_, o, out);
}

Status Container::recover_arrays() {
  return guard([&] {
    if (!writable_ || shadow_) throw_error(Errc::kInvalidArgument, "recover_arrays needs the writer");
    const std::string root = join_path(path_, kArraysDir);
    for (const std::string& name : list_dir(root)) {
      if (name.size() != 16 || name.find_first_not_of("0123456789abcdef") != std::string::npos) continue;
      bool needed = false;
      const std::string frag = join_path(join_path(root, name), "frag");
      if (!is_directory(frag)) continue;
      for (const std::string& f : list_dir(frag)) {
        bool journal = f.find(".journal") != std::string::npos;
        bool tmp = f.size() > 4 && f.compare(f.size() - 4, 4, ".tmp") == 0;
        if (journal || tmp) {
          needed = true;
          break;
        }
      }
      if (!needed) continue;
      std::unique_ptr<Array> a;  // durable mode: nothing pending, so closing writes nothing
      Status st = open_array(std::strtoull(name.c_str(), nullptr, 16), true, ArrayOptions{}, &a);
      if (!st.ok()) throw_error(st.code(), st.message());
    }
  });
}

Status Container::remove_array(uint64_t id) {
  return guard([&] {
    if (!writable_) throw_error(Errc::kInvalidArgument, "container '" + path_ + "' is open read-only");
    if (!shadow_) remove_tree(array_dir(id));
  });
}

}  // namespace tessera
