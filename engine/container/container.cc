#include "engine/container/container.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "engine/array/array_files.h"
#include "engine/container/one_file.h"
#include "engine/pack/pack_env.h"
#include "engine/util/checksum.h"
#include "engine/util/file_io.h"
#include "engine/catalog/history.h"
#include "engine/context/options.h"
#include "engine/publish/publish_log.h"

namespace tessera {

namespace {

const char kHeaderFile[] = "tessera.container";
const char kArraysDir[] = "arrays";
const char kNextIdKey[] = "sys/next_array_id";
const char kArrayKeys[] = "arr/";
// Version 2: everything in the container is in the one format of docs/format.md ("Format
// versions"); version 1 containers came from development builds and are refused here, at
// open, whatever they hold.
constexpr uint32_t kContainerVersion = 2;

// header: "TSRACONT" u32 version u32 reserved u64 XXH3 of the preceding 16 bytes
std::vector<uint8_t> header_bytes() {
  std::vector<uint8_t> h(24, 0);
  std::memcpy(h.data(), "TSRACONT", 8);
  std::memcpy(h.data() + 8, &kContainerVersion, 4);
  uint64_t ck = checksum64(h.data(), 16);
  std::memcpy(h.data() + 16, &ck, 8);
  return h;
}

// any_version: a container of a version this build does not read is still a tessera
// container (H5Fcreate may truncate it; the VOL claims it, and its open says why not).
void check_header(Env& env, const std::string& root, bool any_version = false) {
  std::string p = join_path(root, kHeaderFile);
  std::vector<uint8_t> h = read_file(env, p);
  if (h.size() != 24 || std::memcmp(h.data(), "TSRACONT", 8) != 0)
    throw_error(Errc::kCorrupt, "container header '" + p + "': not a tessera container");
  uint64_t ck;
  std::memcpy(&ck, h.data() + 16, 8);
  if (checksum64(h.data(), 16) != ck) throw_error(Errc::kCorrupt, "container header '" + p + "': checksum mismatch");
  uint32_t ver;
  std::memcpy(&ver, h.data() + 8, 4);
  if (ver != kContainerVersion && !any_version)
    throw_error(Errc::kUnsupported, unsupported_version("container '" + root + "'", ver, kContainerVersion));
}

}  // namespace

bool Container::is_container(const std::string& path, Env& env) {
  try {
    if (is_regular_file(env, path)) return PackEnv::is_pack(env, path);
    if (!is_directory(env, path)) return false;
    check_header(env, path, /*any_version=*/true);
    return true;
  } catch (...) {
    return false;
  }
}

// What a power loss during a creation that committed nothing may leave: a directory of
// the container's own names only, without a valid header, whose catalog holds no record.
// Anything else is not ours to delete.
bool Container::is_unfinished(Env& env, const std::string& path) {
  try {
    if (is_regular_file(env, path)) {
      // A one-file container's creation cut short: an empty file (the pack never synced),
      // or a pack holding only what is_unfinished accepts of a directory.
      struct stat st;
      if (env.stat(path.c_str(), &st, true) == 0 && st.st_size == 0) return true;
      auto pack = PackEnv::open(std::shared_ptr<Env>(std::shared_ptr<Env>(), &env), path, false);
      return is_unfinished(*pack, path);
    }
    std::vector<std::string> names = list_dir(env, path);
    if (names.empty()) return false;
    for (const std::string& n : names)
      if (n != kHeaderFile && n != kArraysDir && n != "catalog.log" && n != "catalog.lock" &&
          n.rfind(std::string(kHeaderFile) + ".tmp.", 0) != 0)  // write_file_atomic's
        return false;
    return Catalog::holds_no_record(env, path);
  } catch (...) {
    return false;
  }
}

Status Container::create(const std::string& path, CreateMode mode, std::unique_ptr<Container>* out,
                         const std::shared_ptr<Context>& ctx) {
  Form form;
  form.one_file = process_options().one_file != 0;  // TESSERA_ONE_FILE=1: every new container one file
  return create(path, mode, out, ctx, form);
}

Status Container::create(const std::string& path, CreateMode mode, std::unique_ptr<Container>* out,
                         const std::shared_ptr<Context>& ctx, const Form& form) {
  Env& base = ctx ? ctx->env() : Env::posix();
  return guard([&] {
    if (path_exists(base, path)) {
      if (mode == CreateMode::kExclusive) throw_errno("create container", path, EEXIST);
      if (is_directory(base, path)) {
        // Take the writer lock first so we never truncate a container another process writes.
        if (is_container(path, base)) {
          auto probe = Catalog::open(path, Catalog::Mode::kReadWrite, false, base);
          probe.reset();
        } else if (is_unfinished(base, path)) {
          FileLock probe = FileLock::try_lock(base, join_path(path, "catalog.lock"), /*exclusive=*/true);
          if (!probe.locked())
            throw_error(Errc::kBusy, "container '" + path + "' is open for writing by another process");
        } else {
          throw_error(Errc::kAlreadyExists, "cannot truncate '" + path +
                                                "': it is a directory but not a tessera container");
        }
        remove_tree(base, path);
      } else if (!form.one_file) {
        if (is_container(path, base)) open_one_file(ctx, path, true).reset();  // its writer lock first
        remove_file(base, path);
      }  // a file becoming a one-file container is cut in place, under the pack's writer lock
    }
    std::shared_ptr<Context> cctx = ctx;
    if (form.one_file) cctx = create_one_file(ctx, path, form.wrapper, mode == CreateMode::kExclusive);
    Env& env = cctx ? cctx->env() : base;
    make_dir(env, path);  // a pack's root exists already
    make_dir(env, join_path(path, kArraysDir));
    // Nothing is synced here: until the catalog's first record nothing is committed, and
    // the catalog makes the header and these names durable before it appends one
    // (pending_names.h).  A power loss before that leaves a directory without a valid
    // header and with an empty catalog, which a later create may truncate
    // (is_unfinished).  Written in place: a torn header is such a leftover too.
    const std::string header = join_path(path, kHeaderFile);
    {
      std::vector<uint8_t> h = header_bytes();
      File f = File::open_rw(env, header, /*create=*/true, /*exclusive=*/true);
      f.pwrite_all(h.data(), h.size(), 0);
      f.close();
    }
    std::unique_ptr<Container> c(new Container());
    c->path_ = path;
    c->ctx_ = cctx;
    c->env_ = &env;
    c->writable_ = true;
    c->one_file_ = form.one_file;
    c->catalog_ = Catalog::open(path, Catalog::Mode::kReadWrite, true, env);
    PendingNames& names = c->catalog_->pending_names();
    names.add_file(header);
    names.add_dir(path);               // the header, arrays/ and the catalog log
    names.add_dir(parent_dir(path));   // the container itself
    c->init_budget();
    *out = std::move(c);
  });
}

Status Container::open(const std::string& path, bool writable, std::unique_ptr<Container>* out,
                       const std::shared_ptr<Context>& ctx) {
  Env& base = ctx ? ctx->env() : Env::posix();
  return guard([&] {
    if (!path_exists(base, path)) throw_errno("open container", path, ENOENT);
    std::shared_ptr<Context> cctx = ctx;
    const bool one_file = is_regular_file(base, path);
    if (one_file) cctx = open_one_file(ctx, path, writable);
    else if (!is_directory(base, path)) throw_error(Errc::kCorrupt, "'" + path + "' is not a tessera container");
    Env& env = cctx ? cctx->env() : base;
    check_header(env, path);
    std::unique_ptr<Container> c(new Container());
    c->path_ = path;
    c->ctx_ = cctx;
    c->env_ = &env;
    c->writable_ = writable;
    c->one_file_ = one_file;
    c->catalog_ = Catalog::open(path, writable ? Catalog::Mode::kReadWrite : Catalog::Mode::kReadOnly, false, env);
    c->init_budget();
    *out = std::move(c);
  });
}

Status Container::open_as_of(const std::string& path, const std::string& when, std::unique_ptr<Container>* out,
                             const std::shared_ptr<Context>& ctx) {
  std::unique_ptr<Container> live;
  Status st = open(path, false, &live, ctx);
  if (!st.ok()) return st;
  CommitInfo commit;
  st = find_commit(live->catalog(), when, &commit);
  if (!st.ok()) return Status(st.code(), "container '" + path + "': " + st.message());
  return guard([&] {
    Env& env = live->env();  // a one-file container's pack, opened once
    std::unique_ptr<Container> c(new Container());
    c->path_ = path;
    c->ctx_ = live->ctx_;
    c->env_ = &env;
    c->writable_ = false;
    c->one_file_ = live->one_file_;
    c->as_of_seq_ = commit.seq;
    c->as_of_ts_ = commit.ts_ns;
    c->catalog_ = Catalog::open_as_of(path, commit.seq, env);
    c->init_budget();
    *out = std::move(c);
  });
}

Status Container::open_shadow(const std::string& path, std::unique_ptr<Container>* out,
                              const std::shared_ptr<Context>& ctx) {
  Env& env = ctx ? ctx->env() : Env::posix();
  return guard([&] {
    if (is_regular_file(env, path))
      throw_error(Errc::kUnsupported, "container '" + path + "': parallel access to a one-file container is not "
                                      "supported yet (create parallel files as directories)");
    check_header(env, path);
    std::unique_ptr<Container> c(new Container());
    c->path_ = path;
    c->ctx_ = ctx;
    c->env_ = &env;
    c->writable_ = true;
    c->shadow_ = true;
    c->file_arrays_ = true;
    c->catalog_ = Catalog::open(path, Catalog::Mode::kShadow, false, env);
    *out = std::move(c);
  });
}

uint64_t Container::committed_epoch() const {
  auto v = catalog_->get(kEpochKey);
  return v ? std::strtoull(v->c_str(), nullptr, 10) : 0;
}

Status Container::remove(const std::string& path, Env& env) {
  return guard([&] {
    if (!is_container(path, env)) throw_error(Errc::kNotFound, "'" + path + "' is not a tessera container");
    if (is_regular_file(env, path)) {
      // The writer lock first (the pack's own), as for a directory's catalog lock.
      PackEnv::open(std::shared_ptr<Env>(std::shared_ptr<Env>(), &env), path, true).reset();
      remove_file(env, path);
      return;
    }
    auto probe = Catalog::open(path, Catalog::Mode::kReadWrite, false, env);
    probe.reset();
    remove_tree(env, path);
  });
}

void Container::init_budget() {
  budget_->cap = process_options().inline_total_mb << 20;  // set_inline_cap: the opener's options
  budget_->used = catalog_->value_bytes(kArrayKeys);
  for (const std::string& name : list_dir(env(), join_path(path_, kArraysDir))) {
    char* end = nullptr;
    uint64_t id = std::strtoull(name.c_str(), &end, 16);
    if (name.size() == 16 && end && *end == 0) dirs_->insert(id);
  }
}

std::string Container::array_prefix(uint64_t id) {
  static const char kDigits[] = "0123456789abcdef";
  std::string key = std::string(kArrayKeys) + "0000000000000000/";
  for (size_t i = sizeof kArrayKeys - 1 + 15;; --i, id >>= 4) {
    key[i] = kDigits[id & 15];
    if (i == sizeof kArrayKeys - 1) break;
  }
  return key;
}

// <path>/arrays/<16 hex digits>, built in one allocation: every dataset open and creation
// asks for it (a snprintf and two join_paths were 1.6 % of a metadata workload, issue 20).
std::string Container::array_dir(uint64_t id) const {
  static const char kDigits[] = "0123456789abcdef";
  std::string dir;
  dir.reserve(path_.size() + sizeof kArraysDir + 17);
  dir += path_;
  if (!dir.empty() && dir.back() != '/') dir += '/';
  dir += kArraysDir;
  dir += '/';
  const size_t at = dir.size();
  dir.append(16, '0');
  for (size_t i = at + 15; id; --i, id >>= 4) dir[i] = kDigits[id & 15];
  return dir;
}

Status Container::sync() {
  // Names pending when the syncfs starts are covered by it once it returns; ones added
  // meanwhile stay pending.
  const PendingNames::Taken names = catalog_->pending_names().snapshot();
  Status st = guard([&] {
    sync_filesystem(env(), path_);
    *unsynced_arrays_ = false;
  });
  if (st.ok()) catalog_->pending_names().forget(names);
  return st;
}

Status Container::create_array(const Schema& requested, uint64_t* id, bool durable) {
  return guard([&] { create_array_impl(requested, id, durable, nullptr); });
}

Status Container::create_and_open_array(const Schema& schema, bool durable, bool writable, const ArrayOptions& opts,
                                        uint64_t* id, std::unique_ptr<Array>* out) {
  Schema created;
  Status st = guard([&] { create_array_impl(schema, id, durable, &created); });
  if (!st.ok()) return st;
  return open_array_impl(*id, writable, opts, file_arrays_ ? nullptr : &created, out);
}

Status Container::create_and_open_array_into(const Schema& schema, bool writable, const ArrayOptions& opts,
                                             CatalogBatch* into, uint64_t* id, std::unique_ptr<Array>* out) {
  if (file_arrays_ || shadow_)
    return Status(Errc::kInvalidArgument, "create_and_open_array_into: container '" + path_ +
                                              "' keeps its arrays in files (a parallel file)");
  Schema created;
  Status st = guard([&] { create_array_impl(schema, id, /*durable=*/false, &created, into); });
  if (!st.ok()) return st;
  st = open_array_impl(*id, writable, opts, &created, out);
  if (!st.ok()) abandon_array(*id);
  return st;
}

void Container::abandon_array(uint64_t id) {
  // Its records were never committed: only the inline room it reserved is held.
  budget_->give_back(budget_->claim_compact(array_prefix(id)));
}

void Container::create_array_impl(const Schema& requested, uint64_t* id, bool durable, Schema* created,
                                  CatalogBatch* into) {
  if (!writable_) throw_error(Errc::kInvalidArgument, "container '" + path_ + "' is open read-only");
  requested.validate();
  // A compact array is one catalog record: only where arrays live in the catalog, and
  // only while the container's inline budget has room for its cells.
  // The room is taken now, in one step with the check (two creations racing for the last
  // room must not both get it); the cells record, written later, claims it.
  Schema schema = requested;
  uint64_t reserved = 0;
  if (schema.compact) {
    const uint64_t bytes = CompactCells(schema).bytes();
    if (file_arrays_ || shadow_ || !budget_->try_take(bytes)) schema.compact = false;
    else reserved = bytes;
  }
  uint64_t next = 1;
  if (auto v = catalog_->get(kNextIdKey)) next = std::strtoull(v->c_str(), nullptr, 10);
  CatalogBatch own;
  CatalogBatch& b = into ? *into : own;
  b.put(kNextIdKey, std::to_string(next + 1));
  const std::string prefix = array_prefix(next);
  if (!file_arrays_) {
    b.put(prefix + "schema", Array::schema_record(schema));
    // New: every file it will publish is recorded (ArrayStore::files_complete).
    b.put(prefix + array_files::kFilesCompleteKey, "1");
  } else {
    // New: every file its ranks or serial writers will publish is recorded or logged
    // first (ArrayStore::files_logged, publish_log.h).
    b.put(prefix + array_files::kFilesLoggedKey, "1");
  }
  if (!into) {
    try {
      catalog_->commit(b);
    } catch (...) {
      budget_->give_back(reserved);
      throw;
    }
  }
  if (reserved) {
    std::lock_guard<std::mutex> g(budget_->mu);
    budget_->compact_reserved[prefix] = reserved;
  }
  if (!shadow_) {
    // The counter is the authority: a directory under an id it never handed out durably
    // is what a writer that crashed before its flush left behind.  Every directory that
    // existed at open is in dirs_ (init_budget lists them) and this container registers
    // each one it makes, so only a listed id needs the check (no stat per new array).
    bool listed;
    {
      std::lock_guard<std::mutex> g(*dirs_mu_);
      listed = dirs_->erase(next) != 0;
    }
    if (listed && path_exists(env(), array_dir(next))) remove_tree(env(), array_dir(next));
    if (file_arrays_) {
      if (!durable) *unsynced_arrays_ = true;
      Status st = Array::create(array_dir(next), schema, durable, env());
      if (!st.ok()) throw_error(st.code(), st.message());
      std::lock_guard<std::mutex> g(*dirs_mu_);
      dirs_->insert(next);
    }
  }
  *id = next;
  if (created) *created = std::move(schema);
}

void Container::note_published(uint64_t id) {
  std::lock_guard<std::mutex> g(published_mu_);
  published_.insert(id);
}

std::set<uint64_t> Container::take_published() {
  std::lock_guard<std::mutex> g(published_mu_);
  return std::exchange(published_, {});
}

Status Container::open_array(uint64_t id, bool writable, const ArrayOptions& opts, std::unique_ptr<Array>* out) {
  return open_array_impl(id, writable, opts, nullptr, out);
}

// known: the schema the array was just created with (its record need not be read back).
Status Container::open_array_impl(uint64_t id, bool writable, const ArrayOptions& opts, const Schema* known,
                                  std::unique_ptr<Array>* out) {
  ArrayOptions o = opts;
  if (!o.context) o.context = ctx_;  // the container's Env (null: the process's context)
  // A one-file container's arrays live in its pack: a caller's own context lends its pools,
  // cache and budget, never its Env (a POSIX one would look for directories in a file).
  else if (one_file_ && ctx_ && &o.context->env() != &ctx_->env())
    o.context = std::make_shared<Context>(o.context, ctx_->env_shared());
  Status st = guard([&] { o.committed_epoch = committed_epoch(); });
  if (!st.ok()) return st;
  if (shadow_) o.shadow = true;
  // We hold the catalog's writer lock; but ranks of a parallel file (collective) may
  // have temporary files in any array at any time: their cleanup is recover_arrays'.
  else if (!o.collective) o.sole_writer = writable && writable_;
  // Parallel files publish only through epoch journals, and only rank 0's catalog
  // persists: no inline fragments there.
  if (o.collective) o.inline_fragment_bytes = 0;
  o.as_of_ts = as_of_ts_;
  const std::string prefix = array_prefix(id);
  if (!known && !catalog_->contains(prefix + "schema")) {
    std::string dir = array_dir(id);
    // A parallel file's array keeps its schema in its directory.
    if (path_exists(env(), join_path(dir, "schema"))) {
      if (as_of_ts_)  // its schema file holds only the current extent
        return Status(Errc::kUnsupported, "array " + std::to_string(id) + " of '" + path_ +
                                              "' keeps its schema in a file (a parallel file's array): it cannot be read "
                                              "as of a past commit");
      return Array::open(dir, writable && writable_, o, out, catalog_, prefix);
    }
    return Status(Errc::kNotFound, "array " + std::to_string(id) + " has no schema record in the catalog '" +
                                       catalog_->log_path() + "'");
  }
  CatalogBinding b;
  b.catalog = catalog_;
  b.prefix = prefix;
  b.budget = budget_;
  {
    std::lock_guard<std::mutex> g(*dirs_mu_);
    b.dir_absent = dirs_->count(id) == 0;
  }
  auto mu = dirs_mu_;
  auto dirs = dirs_;
  // The catalog outlives every array bound to it (CatalogBinding holds it).
  Catalog* cat = catalog_.get();
  const std::string dir = array_dir(id);
  b.dir_created = [mu, dirs, cat, dir, id](bool synced) {
    // New entries (arrays/<id>, its frag/): durable before the records naming its files
    // (the flush's renames sync frag/ itself, or its syncfs covers all).
    if (!synced) {
      cat->pending_names().add_dir(dir);
      cat->pending_names().add_dir(parent_dir(dir));  // arrays/: computed only when needed
    }
    std::lock_guard<std::mutex> g(*mu);
    dirs->insert(id);
  };
  return Array::open_bound(dir, std::move(b), writable && writable_, o, out, known);
}

Status Container::recover_arrays() {
  return guard([&] {
    if (!writable_ || shadow_) throw_error(Errc::kInvalidArgument, "recover_arrays needs the writer");
    const std::string root = join_path(path_, kArraysDir);
    for (const std::string& name : list_dir(env(), root)) {
      if (name.size() != 16 || name.find_first_not_of("0123456789abcdef") != std::string::npos) continue;
      bool needed = false;
      const std::string frag = join_path(join_path(root, name), "frag");
      if (!is_directory(env(), frag)) continue;
      for (const std::string& f : list_dir(env(), frag)) {
        bool journal = f.find(".journal") != std::string::npos;
        bool tmp = (f.size() > 4 && f.compare(f.size() - 4, 4, ".tmp") == 0) || is_publish_log_temp(f);
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
    const bool bound = catalog_->contains(array_prefix(id) + "schema");
    CatalogBatch b;
    uint64_t freed = 0;
    for (auto& [key, value] : catalog_->scan(array_prefix(id))) {
      b.del(key);
      freed += value.size();
    }
    catalog_->commit(b);
    // A compact array never written still holds the room taken at its creation.
    budget_->give_back(freed + budget_->claim_compact(array_prefix(id)));
    // A catalog-bound array's files stay until a vacuum (vacuum_removed): reads as of
    // earlier commits still need them (history.h).  Ids are never handed out twice.
    if (!shadow_ && !bound) remove_tree(env(), array_dir(id));
    std::lock_guard<std::mutex> g(*dirs_mu_);
    dirs_->erase(id);
  });
}

Status Container::vacuum_removed(uint64_t* arrays, uint64_t* bytes) {
  *arrays = *bytes = 0;
  return guard([&] {
    if (!writable_ || shadow_) throw_error(Errc::kInvalidArgument, "container '" + path_ + "' is open read-only");
    const std::string root = join_path(path_, kArraysDir);
    for (const std::string& name : list_dir(env(), root)) {
      char* end = nullptr;
      const uint64_t id = std::strtoull(name.c_str(), &end, 16);
      if (name.size() != 16 || !end || *end) continue;
      const std::string dir = array_dir(id);
      if (catalog_->contains(array_prefix(id) + "schema") || path_exists(env(), join_path(dir, "schema"))) continue;
      std::vector<std::string> files;
      std::vector<std::string> stack{dir};
      while (!stack.empty()) {
        std::string d = stack.back();
        stack.pop_back();
        for (const std::string& e : list_dir(env(), d)) {
          const std::string p = join_path(d, e);
          if (is_directory(env(), p)) stack.push_back(p);
          else *bytes += File::open_read(env(), p).size();
        }
      }
      remove_tree(env(), dir);
      ++*arrays;
      std::lock_guard<std::mutex> g(*dirs_mu_);
      dirs_->erase(id);
    }
    sync_dir(env(), root);
  });
}

}  // namespace tessera
