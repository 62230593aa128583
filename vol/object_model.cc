// object_model.cc — catalog records and path resolution for HDF5 objects.
#include "vol/object_model.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "engine/bytes.h"
#include "vol/error.h"
#include "vol/parallel.h"
#include "vol/link_storage.h"
#include "vol/objects.h"  // Obj: open handles keep unreferenced objects
#include "vol/value_filters.h"
#include "vol/swmr.h"
#include "vol/connector_info.h"
#include "vol/file_settings.h"

namespace tessera_vol {

namespace {

// Recursive: a failed create/open destroys its half-built SharedFile, whose destructor
// takes this lock again, while create/open still hold it.
// Never destroyed: a program that exits without closing its files has them closed by
// HDF5's atexit handler, which runs after this library's static destructors.
std::recursive_mutex& g_files_mu = *new std::recursive_mutex;
std::map<std::string, std::weak_ptr<SharedFile>>& g_files =  // real path -> shared state
    *new std::map<std::string, std::weak_ptr<SharedFile>>;
uint64_t g_next_fileno = 1;

std::string real_path(const std::string& name) {
  char buf[PATH_MAX];
  if (::realpath(name.c_str(), buf)) return buf;
  return name;
}

constexpr uint8_t kRecordVersion = 1;

tessera::ByteReader reader(const std::string& s, const char* what) {
  return tessera::ByteReader(s.data(), s.size(), std::string("catalog record (") + what + ")");
}

}  // namespace

std::vector<std::string> path_components(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string p = path.substr(i, j - i);
    if (!p.empty() && p != ".") parts.push_back(p);
    i = j + 1;
  }
  return parts;
}

std::string hex16(uint64_t v) {
  // Every catalog key holds one: a plain loop, not snprintf (it showed in profiles).
  static const char kDigits[] = "0123456789abcdef";
  std::string b(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) b[i] = kDigits[v & 15];
  return b;
}

void fail_unsupported(const std::string& msg) { throw VolError{static_cast<int>(ErrorKind::kUnsupported), msg}; }
void fail_arg(const std::string& msg) { throw VolError{static_cast<int>(ErrorKind::kBadArgument), msg}; }
ErrorKind error_kind(tessera::Errc c) {
  switch (c) {
    case tessera::Errc::kInvalidArgument: return ErrorKind::kBadArgument;
    case tessera::Errc::kUnsupported: return ErrorKind::kUnsupported;
    case tessera::Errc::kNotFound: return ErrorKind::kNotFound;
    case tessera::Errc::kAlreadyExists: return ErrorKind::kAlreadyExists;
    case tessera::Errc::kCorrupt: return ErrorKind::kCorrupt;
    case tessera::Errc::kIo: return ErrorKind::kIo;
    case tessera::Errc::kNoSpace: return ErrorKind::kNoSpace;
    case tessera::Errc::kBusy: return ErrorKind::kBusy;
    default: return ErrorKind::kEngine;
  }
}

void fail_engine(const tessera::Status& st) { throw VolError{static_cast<int>(error_kind(st.code())), st.message()}; }

// ---------------------------------------------------------------- records

std::string ObjectRecord::serialize() const {
  tessera::ByteWriter w;
  w.u8(kRecordVersion);
  w.u8(static_cast<uint8_t>(type));
  w.u64(rc);
  w.str(cpl);
  w.str(type_enc);
  w.str(space_enc);
  w.u64(array_id);
  w.i64(next_link_corder);
  w.i64(next_attr_corder);
  w.str(comment);
  w.u64(committed_type);
  w.str(vlen_fill);
  w.i64(times);
  return std::string(w.buf().begin(), w.buf().end());
}

void ObjectRecord::stamp_times(hid_t cpl) {
  hbool_t track = 1;
  if (cpl != H5P_DEFAULT && cpl >= 0 && H5Pget_obj_track_times(cpl, &track) < 0) track = 1;
  times = track ? static_cast<int64_t>(std::time(nullptr)) : 0;
}

ObjectRecord ObjectRecord::deserialize(const std::string& s) {
  auto r = reader(s, "object");
  ObjectRecord o;
  if (r.u8() != kRecordVersion) r.fail("unknown record version");
  uint8_t t = r.u8();
  if (t < 1 || t > 3) r.fail("bad object type");
  o.type = static_cast<ObjType>(t);
  o.rc = r.u64();
  o.cpl = r.str();
  o.type_enc = r.str();
  o.space_enc = r.str();
  o.array_id = r.u64();
  o.next_link_corder = r.i64();
  o.next_attr_corder = r.i64();
  o.comment = r.str();
  if (!r.done()) o.committed_type = r.u64();  // absent in records written before it existed
  if (!r.done()) o.vlen_fill = r.str();
  if (!r.done()) o.times = r.i64();
  return o;
}

std::string LinkRecord::serialize() const {
  tessera::ByteWriter w;
  w.u8(kRecordVersion);
  w.u8(static_cast<uint8_t>(type));
  w.u64(target);
  w.str(soft_path);
  w.str(ext_obj);
  w.i64(corder);
  w.u8(static_cast<uint8_t>(cset));
  return std::string(w.buf().begin(), w.buf().end());
}

LinkRecord LinkRecord::hard(uint64_t target, hid_t lcpl) {
  LinkRecord l;
  l.type = H5L_TYPE_HARD;
  l.target = target;
  if (lcpl != H5P_DEFAULT && lcpl >= 0 && H5Pget_char_encoding(lcpl, &l.cset) < 0) l.cset = H5T_CSET_ASCII;
  return l;
}

LinkRecord LinkRecord::deserialize(const std::string& s) {
  auto r = reader(s, "link");
  LinkRecord l;
  if (r.u8() != kRecordVersion) r.fail("unknown record version");
  l.type = static_cast<H5L_type_t>(r.u8());
  l.target = r.u64();
  l.soft_path = r.str();
  l.ext_obj = r.str();
  l.corder = r.i64();
  l.cset = static_cast<H5T_cset_t>(r.u8());
  return l;
}

std::string AttrRecord::serialize() const {
  tessera::ByteWriter w;
  w.u8(kRecordVersion);
  w.str(type_enc);
  w.str(space_enc);
  w.u64(data.size());
  w.bytes(data.data(), data.size());
  w.i64(corder);
  w.u8(static_cast<uint8_t>(cset));
  w.u64(committed_type);
  return std::string(w.buf().begin(), w.buf().end());
}

AttrRecord AttrRecord::deserialize(const std::string& s) {
  auto r = reader(s, "attribute");
  AttrRecord a;
  if (r.u8() != kRecordVersion) r.fail("unknown record version");
  a.type_enc = r.str();
  a.space_enc = r.str();
  uint64_t n = r.count(1);
  a.data.resize(n);
  r.bytes(a.data.data(), n);
  a.corder = r.i64();
  a.cset = static_cast<H5T_cset_t>(r.u8());
  if (!r.done()) a.committed_type = r.u64();  // absent in records written before it existed
  return a;
}

// ---------------------------------------------------------------- open / create

std::shared_ptr<SharedFile> SharedFile::create(const std::string& name, unsigned flags, hid_t fcpl, hid_t fapl) {
  std::lock_guard<std::recursive_mutex> g(g_files_mu);
  (void)file_options(fapl);  // a bad setting fails before anything is created
  bool temporary = false;
  const std::string path = container_path(name, fapl, &temporary);  // the driver decides (file_settings.h)
  std::string real = real_path(path);
  if (auto it = g_files.find(real); it != g_files.end() && !it->second.expired())
    fail_arg("file '" + name + "' is already open; HDF5 cannot truncate an open file");
  auto f = std::shared_ptr<SharedFile>(new SharedFile());
  f->name_ = name;
  if (temporary) f->temporary_ = path;
  f->par_ = Parallel::from_fapl(fapl);
  if (f->par_) {
    f->open_container_parallel(path, flags, /*create=*/true);
  } else {
    auto mode = (flags & H5F_ACC_EXCL) ? tessera::Container::CreateMode::kExclusive
                                       : tessera::Container::CreateMode::kTruncate;
    check(tessera::Container::create(path, mode, &f->container_));
  }
  f->real_ = real_path(path);
  f->locking_ = LockingFlags::of(fapl);
  f->intent_ = H5F_ACC_RDWR | (flags & H5F_ACC_SWMR_WRITE);
  f->container_->catalog().set_durability(tessera::Catalog::Durability::kOnSync);
  f->fcpl_ = H5Pcopy(fcpl == H5P_DEFAULT ? H5P_FILE_CREATE_DEFAULT : fcpl);
  f->fapl_ = H5Pcopy(fapl == H5P_DEFAULT ? H5P_FILE_ACCESS_DEFAULT : fapl);
  apply_page_buffering(f->fapl_, f->fcpl_, /*create=*/true);
  f->apply_options();
  // The root group, and the fcpl so that reopened files report it.
  tessera::CatalogBatch b;
  ObjectRecord root;
  root.type = ObjType::kGroup;
  root.stamp_times(H5P_DEFAULT);
  root.rc = 1;
  b.put("o/" + hex16(kRootOid), root.serialize());
  link_storage_created(*f, b, kRootOid, f->fcpl_);  // HDF5 makes the root group from the fcpl
  b.put("sys/next_oid", std::to_string(kRootOid + 1));
  b.put(kUdLinksKey, "0");  // no external or user-defined links yet (add_link)
  swmr_on_create(flags, fapl, b);
  size_t sz = 0;
  if (H5Pencode2(f->fcpl_, nullptr, &sz, H5P_DEFAULT) >= 0 && sz > 0) {
    std::string enc(sz, '\0');
    if (H5Pencode2(f->fcpl_, enc.data(), &sz, H5P_DEFAULT) >= 0) b.put("sys/fcpl", enc);
  }
  f->commit(b);
  f->fileno_ = g_next_fileno++;
  g_files[f->real_] = f;
  return f;
}

std::shared_ptr<SharedFile> SharedFile::open(const std::string& name, unsigned flags, hid_t fapl) {
  std::lock_guard<std::recursive_mutex> g(g_files_mu);
  bool temporary = false;
  const std::string path = container_path(name, fapl, &temporary);
  if (temporary)  // a core file without backing store that is not open: nothing to open
    ::rmdir(path.substr(0, path.rfind('/')).c_str());
  std::string real = real_path(path);
  if (auto it = g_files.find(real); it != g_files.end()) {
    if (auto f = it->second.lock()) {
      if ((flags & H5F_ACC_RDWR) && !f->writable())
        fail_arg("file '" + name + "' is already open read-only");
      if (!(LockingFlags::of(fapl) == f->locking_)) fail_arg("file locking flag values don't match");
      swmr_on_open(*f, flags, /*already_open=*/true);
      return f;
    }
  }
  if (temporary) {  // core without backing store opens nothing that exists
    check(tessera::Status(tessera::Errc::kNotFound, "unable to open file: name = '" + name +
                                                        "', errno = 2 (an in-memory file without backing store)"));
  }
  auto f = std::shared_ptr<SharedFile>(new SharedFile());
  f->name_ = name;
  f->locking_ = LockingFlags::of(fapl);
  bool rw = (flags & H5F_ACC_RDWR) != 0;
  f->par_ = Parallel::from_fapl(fapl);
  if (f->par_) f->open_container_parallel(path, flags, /*create=*/false);
  else check(tessera::Container::open(path, rw, &f->container_));
  f->epoch_ = f->container_->committed_epoch();
  f->real_ = real;
  f->intent_ = rw ? H5F_ACC_RDWR : H5F_ACC_RDONLY;
  if (rw) f->container_->catalog().set_durability(tessera::Catalog::Durability::kOnSync);
  f->fapl_ = H5Pcopy(fapl == H5P_DEFAULT ? H5P_FILE_ACCESS_DEFAULT : fapl);
  if (auto enc = f->container_->catalog().get("sys/fcpl")) f->fcpl_ = H5Pdecode(enc->data());
  if (f->fcpl_ < 0) f->fcpl_ = H5Pcopy(H5P_FILE_CREATE_DEFAULT);
  apply_page_buffering(f->fapl_, f->fcpl_, /*create=*/false);
  f->apply_options();
  if (!f->find_object(kRootOid)) fail_engine(tessera::Status(tessera::Errc::kCorrupt,
                                                               "container '" + name + "' has no root group"));
  f->intent_ |= swmr_on_open(*f, flags, /*already_open=*/false);
  f->fileno_ = g_next_fileno++;
  g_files[real] = f;
  return f;
}

// Rank 0 creates (or opens and recovers) the container before any other rank reads it;
// the others then open a shadow (read-write intent) or a read-only view.  Both steps are
// agreed, so every rank succeeds or fails together.
void SharedFile::open_container_parallel(const std::string& name, unsigned flags, bool create) {
  Parallel& p = *par_;
  bool rw = create || (flags & H5F_ACC_RDWR) != 0;
  p.agree([&] {
    if (!p.root()) return;
    if (create) {
      auto mode = (flags & H5F_ACC_EXCL) ? tessera::Container::CreateMode::kExclusive
                                         : tessera::Container::CreateMode::kTruncate;
      check(tessera::Container::create(name, mode, &container_));
      container_->set_file_arrays(true);  // new arrays: directories + schema files
    } else {
      check(tessera::Container::open(name, rw, &container_));
      container_->set_file_arrays(true);
      // Recovery happens here, once, so that later array opens need no ordering.
      if (rw) check(container_->recover_arrays());
    }
  });
  p.agree([&] {
    if (p.root()) return;
    if (rw) check(tessera::Container::open_shadow(name, &container_));
    else check(tessera::Container::open(name, false, &container_));
  });
}

SharedFile::~SharedFile() {
  // Flush buffered writes; errors here cannot be reported (file_close flushes first).
  // Parallel files: arrays discard what no epoch committed (only a collective commit may
  // publish, and a destructor cannot be collective).
  arrays_.clear();
  container_.reset();
  par_.reset();
  for (auto& [enc, id] : plists_)
    if (id >= 0) H5Pclose(id);
  if (default_dapl_ >= 0) H5Pclose(default_dapl_);
  for (auto& [cset, acpl] : acpls_) H5Pclose(acpl);
  if (fcpl_ >= 0) H5Pclose(fcpl_);
  if (fapl_ >= 0) H5Pclose(fapl_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
  if (!temporary_.empty()) {  // a core file without backing store leaves nothing behind
    (void)tessera::Container::remove(temporary_);
    ::rmdir(temporary_.substr(0, temporary_.rfind('/')).c_str());
  }
  std::lock_guard<std::recursive_mutex> g(g_files_mu);
  auto it = g_files.find(real_);
  if (it != g_files.end() && it->second.expired()) g_files.erase(it);
}

void SharedFile::apply_options() {
  options_ = file_options(fapl_);  // engine/options.h; throws naming a bad setting
  tessera::configure_process(options_);  // pools and tile cache: the first file's sizes
  container_->set_inline_cap(options_.inline_total_mb << 20);
}

void* SharedFile::directory_handle() {
  if (dir_fd_ < 0) dir_fd_ = ::open(container_->path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) fail_arg("cannot open the container directory of '" + name_ + "'");
  return &dir_fd_;
}

void SharedFile::require_writable(const char* what) {
  if (!writable()) fail_arg(std::string(what) + ": file '" + name_ + "' is open read-only");
}

void SharedFile::commit(tessera::CatalogBatch& b) {
  check(tessera::guard([&] { container_->catalog().commit(std::move(b)); }));
  b = tessera::CatalogBatch();
}

// ---------------------------------------------------------------- objects

std::optional<ObjectRecord> SharedFile::find_object(uint64_t oid) {
  auto v = container_->catalog().get("o/" + hex16(oid));
  if (!v) return std::nullopt;
  ObjectRecord r;
  check(tessera::guard([&] { r = ObjectRecord::deserialize(*v); }));
  return r;
}

ObjectRecord SharedFile::object(uint64_t oid) {
  auto r = find_object(oid);
  if (!r) fail_arg("object " + std::to_string(oid) + " does not exist in '" + name_ + "'");
  return *r;
}

void SharedFile::put_object(tessera::CatalogBatch& b, uint64_t oid, const ObjectRecord& r) {
  b.put("o/" + hex16(oid), r.serialize());
}

uint64_t SharedFile::allocate_oid(tessera::CatalogBatch& b) {
  // The batch may already hold an allocation: read the newest value from it.
  uint64_t next = kRootOid + 1;
  bool found = false;
  for (auto it = b.ops().rbegin(); it != b.ops().rend(); ++it)
    if (it->put && it->key == "sys/next_oid") {
      next = std::strtoull(it->value.c_str(), nullptr, 10);
      found = true;
      break;
    }
  if (!found)
    if (auto v = container_->catalog().get("sys/next_oid")) next = std::strtoull(v->c_str(), nullptr, 10);
  b.put("sys/next_oid", std::to_string(next + 1));
  return next;
}

uint64_t SharedFile::create_group_record(tessera::CatalogBatch& b, hid_t gcpl) {
  uint64_t oid = allocate_oid(b);
  ObjectRecord g;
  g.type = ObjType::kGroup;
  g.rc = 0;  // add_link counts the link
  g.stamp_times(gcpl);
  if (gcpl != H5P_DEFAULT && gcpl >= 0) {
    size_t sz = 0;
    if (H5Pencode2(gcpl, nullptr, &sz, H5P_DEFAULT) >= 0 && sz > 0) {
      g.cpl.resize(sz);
      if (H5Pencode2(gcpl, g.cpl.data(), &sz, H5P_DEFAULT) < 0) g.cpl.clear();
    }
  }
  put_object(b, oid, g);
  link_storage_created(*this, b, oid, gcpl);
  return oid;
}

// ---------------------------------------------------------------- links

namespace {
std::string link_key(uint64_t group, const std::string& name) { return "l/" + hex16(group) + "/" + name; }
std::string attr_key(uint64_t owner, const std::string& name) { return "a/" + hex16(owner) + "/" + name; }

// Reads a record from the batch if it was put there (newest wins), else nullopt.
std::optional<std::string> from_batch(const tessera::CatalogBatch& b, const std::string& key, bool* deleted) {
  *deleted = false;
  for (auto it = b.ops().rbegin(); it != b.ops().rend(); ++it) {
    if (it->key != key) continue;
    if (!it->put) {
      *deleted = true;
      return std::nullopt;
    }
    return it->value;
  }
  return std::nullopt;
}
}  // namespace

bool SharedFile::may_have_ud_links() {
  auto v = container_->catalog().get(kUdLinksKey);
  return !v || *v != "0";  // containers from before the key: unknown
}

std::optional<LinkRecord> SharedFile::find_link(uint64_t group, const std::string& name) {
  auto v = container_->catalog().get(link_key(group, name));
  if (!v) return std::nullopt;
  LinkRecord r;
  check(tessera::guard([&] { r = LinkRecord::deserialize(*v); }));
  return r;
}

std::vector<std::pair<std::string, LinkRecord>> SharedFile::links(uint64_t group) {
  std::string prefix = "l/" + hex16(group) + "/";
  std::vector<std::pair<std::string, LinkRecord>> out;
  check(tessera::guard([&] {
    for (auto& kv : container_->catalog().scan(prefix))
      out.emplace_back(kv.first.substr(prefix.size()), LinkRecord::deserialize(kv.second));
  }));
  return out;
}

void SharedFile::add_link(tessera::CatalogBatch& b, uint64_t group, const std::string& name, LinkRecord rec) {
  if (name.empty() || name == "." || name.find('/') != std::string::npos)
    fail_arg("invalid link name '" + name + "'");
  bool deleted;
  auto pending = from_batch(b, link_key(group, name), &deleted);
  if (pending || (!deleted && find_link(group, name)))
    fail_arg("link '" + name + "' already exists");
  // The group's record (possibly new in this batch) is read only the first time.
  if (link_corders_.find(group) == link_corders_.end()) {
    ObjectRecord g;
    if (auto v = from_batch(b, "o/" + hex16(group), &deleted)) g = ObjectRecord::deserialize(*v);
    else g = object(group);
    if (g.type != ObjType::kGroup) fail_arg("link parent is not a group");
    peek_link_corder(group, g);
  }
  rec.corder = link_corders_[group]++;
  link_storage_adding(*this, b, group);
  if (rec.type != H5L_TYPE_HARD && rec.type != H5L_TYPE_SOFT) b.put(kUdLinksKey, "1");
  if (rec.type == H5L_TYPE_HARD) {
    ObjectRecord t;
    if (auto v = from_batch(b, "o/" + hex16(rec.target), &deleted)) t = ObjectRecord::deserialize(*v);
    else t = object(rec.target);
    t.rc++;
    put_object(b, rec.target, t);
  }
  b.put(link_key(group, name), rec.serialize());
}

int64_t SharedFile::peek_link_corder(uint64_t group, const ObjectRecord& rec) {
  auto it = link_corders_.find(group);
  if (it == link_corders_.end()) {
    int64_t next = rec.next_link_corder;
    for (auto& [name, l] : links(group)) next = std::max(next, l.corder + 1);
    it = link_corders_.emplace(group, next).first;
  }
  return it->second;
}

void SharedFile::keep_link_corder(tessera::CatalogBatch& b, uint64_t group, int64_t removed) {
  bool deleted;
  ObjectRecord g;
  if (auto v = from_batch(b, "o/" + hex16(group), &deleted)) g = ObjectRecord::deserialize(*v);
  else if (deleted) return;  // the group itself goes in this batch
  else if (auto r = find_object(group)) g = *r;
  else return;
  if (g.next_link_corder > removed) return;
  g.next_link_corder = removed + 1;
  put_object(b, group, g);
}

void SharedFile::remove_link(uint64_t group, const std::string& name) {
  auto l = find_link(group, name);
  if (!l) fail_arg("link '" + name + "' does not exist");
  tessera::CatalogBatch b;
  b.del(link_key(group, name));
  link_storage_removing(*this, b, group);
  if (l->type == H5L_TYPE_HARD) {
    ObjectRecord t = object(l->target);
    if (t.rc > 0) t.rc--;
    if (t.rc == 0) delete_object(l->target, b, 0);
    else put_object(b, l->target, t);
  }
  keep_link_corder(b, group, l->corder);  // after: the target may be the group itself
  commit(b);
}

void SharedFile::delete_object(uint64_t oid, tessera::CatalogBatch& b, int depth) {
  if (depth > 1000) fail_arg("object graph too deep to delete");
  auto rec = find_object(oid);
  if (!rec) return;
  b.del("o/" + hex16(oid));
  if (rec->type == ObjType::kGroup) link_storage_deleted(b, oid);
  if (rec->type == ObjType::kDataset) b.del("ae/" + hex16(oid));  // allocation.h
  for (auto& [name, a] : attrs(oid)) {
    b.del(attr_key(oid, name));
    if (a.committed_type && a.committed_type != oid) unref_object(b, a.committed_type);
  }
  if (rec->type == ObjType::kGroup) {
    for (auto& [name, l] : links(oid)) {
      b.del(link_key(oid, name));
      if (l.type != H5L_TYPE_HARD || l.target == oid) continue;
      bool deleted;
      ObjectRecord t;
      if (auto v = from_batch(b, "o/" + hex16(l.target), &deleted)) t = ObjectRecord::deserialize(*v);
      else if (deleted) continue;
      else if (auto f = find_object(l.target)) t = *f;
      else continue;
      if (t.rc > 0) t.rc--;
      if (t.rc == 0) delete_object(l.target, b, depth + 1);
      else put_object(b, l.target, t);
    }
  } else if (rec->type == ObjType::kDataset) {
    drop_array(rec->array_id);
    if (rec->committed_type) unref_object(b, rec->committed_type);
  }
}

void SharedFile::ref_object(tessera::CatalogBatch& b, uint64_t oid) {
  bool deleted;
  ObjectRecord t;
  if (auto v = from_batch(b, "o/" + hex16(oid), &deleted)) t = ObjectRecord::deserialize(*v);
  else if (deleted) fail_arg("object " + std::to_string(oid) + " is being deleted");
  else t = object(oid);
  t.rc++;
  put_object(b, oid, t);
}

void SharedFile::unref_object(tessera::CatalogBatch& b, uint64_t oid) {
  bool deleted;
  ObjectRecord t;
  if (auto v = from_batch(b, "o/" + hex16(oid), &deleted)) t = ObjectRecord::deserialize(*v);
  else if (deleted) return;  // deleted earlier in this batch (reference cycles)
  else if (auto r = find_object(oid)) t = *r;
  else return;
  if (t.rc > 0) t.rc--;
  // An unreferenced object that is still open stays (refcount 0) until its last handle
  // closes, as in native HDF5; datatype_close removes such a committed type then.
  bool open = false;
  for (auto& [p, type] : open_)
    if (type == H5I_DATATYPE && static_cast<Obj*>(p)->oid == oid) open = true;
  if (t.rc == 0 && !open) delete_object(oid, b, 1);
  else put_object(b, oid, t);
}

// ---------------------------------------------------------------- paths

std::optional<uint64_t> SharedFile::try_resolve(uint64_t start, const std::string& path, bool follow_last) {
  uint64_t cur = path.size() && path[0] == '/' ? kRootOid : start;
  std::vector<std::string> parts = path_components(path);
  int soft_budget = 64;  // HDF5's default limit on soft link traversals is 16; be generous
  for (size_t k = 0; k < parts.size(); ++k) {
    auto l = find_link(cur, parts[k]);
    if (!l) return std::nullopt;
    bool last = k + 1 == parts.size();
    if (l->type == H5L_TYPE_HARD) {
      cur = l->target;
    } else if (l->type == H5L_TYPE_SOFT) {
      if (last && !follow_last) return std::nullopt;
      if (--soft_budget < 0) fail_arg("too many soft links while resolving '" + path + "'");
      auto t = try_resolve(cur, l->soft_path, true);
      if (!t) return std::nullopt;  // dangling
      cur = *t;
    } else {
      return std::nullopt;  // external links are not followed
    }
    if (!last) {
      auto o = find_object(cur);
      if (!o || o->type != ObjType::kGroup) return std::nullopt;
    }
  }
  return cur;
}

uint64_t SharedFile::resolve(uint64_t start, const std::string& path, bool follow_last) {
  auto r = try_resolve(start, path, follow_last);
  if (!r) fail_arg("object '" + path + "' doesn't exist");
  return *r;
}

std::pair<uint64_t, std::string> SharedFile::resolve_parent(uint64_t start, const std::string& path,
                                                            bool create_intermediate, tessera::CatalogBatch* b) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t slash = p.rfind('/');
  std::string parent = slash == std::string::npos ? "" : p.substr(0, slash);
  std::string last = slash == std::string::npos ? p : p.substr(slash + 1);
  if (last.empty() || last == ".") fail_arg("invalid object name '" + path + "'");
  uint64_t cur = slash == 0 || (p.size() && p[0] == '/') ? kRootOid : start;
  size_t i = 0;
  while (i < parent.size()) {
    size_t j = parent.find('/', i);
    if (j == std::string::npos) j = parent.size();
    std::string part = parent.substr(i, j - i);
    i = j + 1;
    if (part.empty() || part == ".") continue;
    bool deleted = false;
    std::optional<LinkRecord> l;
    if (b) {
      if (auto v = from_batch(*b, link_key(cur, part), &deleted)) l = LinkRecord::deserialize(*v);
    }
    if (!l && !deleted) l = find_link(cur, part);
    if (!l) {
      if (!create_intermediate || !b) fail_arg("parent group '" + parent + "' of '" + path + "' doesn't exist");
      uint64_t g = create_group_record(*b, H5P_DEFAULT);
      add_link(*b, cur, part, LinkRecord::hard(g));
      cur = g;
      continue;
    }
    auto t = l->type == H5L_TYPE_HARD ? std::optional<uint64_t>(l->target)
                                      : l->type == H5L_TYPE_SOFT ? try_resolve(cur, l->soft_path) : std::nullopt;
    if (!t) fail_arg("parent '" + part + "' of '" + path + "' cannot be resolved");
    cur = *t;
  }
  return {cur, last};
}

// ---------------------------------------------------------------- attributes

std::vector<std::pair<std::string, AttrRecord>> SharedFile::attrs(uint64_t owner) {
  std::string prefix = "a/" + hex16(owner) + "/";
  std::vector<std::pair<std::string, AttrRecord>> out;
  check(tessera::guard([&] {
    for (auto& kv : container_->catalog().scan(prefix))
      out.emplace_back(kv.first.substr(prefix.size()), AttrRecord::deserialize(kv.second));
  }));
  return out;
}

std::optional<AttrRecord> SharedFile::find_attr(uint64_t owner, const std::string& name) {
  // H5Aopen, H5Aget_type/space and H5Aread of one attribute each need its record: the
  // last one decoded is kept while the catalog does not change.
  const uint64_t version = container_->catalog().version();
  if (last_attr_ && last_attr_->version == version && last_attr_->owner == owner && last_attr_->name == name)
    return last_attr_->rec;
  auto v = container_->catalog().get(attr_key(owner, name));
  if (!v) return std::nullopt;
  AttrRecord r;
  check(tessera::guard([&] { r = AttrRecord::deserialize(*v); }));
  last_attr_ = LastAttr{version, owner, name, r};
  return r;
}

void SharedFile::put_attr(tessera::CatalogBatch& b, uint64_t owner, const std::string& name, const AttrRecord& r) {
  b.put(attr_key(owner, name), r.serialize());
}

void SharedFile::del_attr(tessera::CatalogBatch& b, uint64_t owner, const std::string& name) {
  b.del(attr_key(owner, name));
}

bool SharedFile::has_attr(uint64_t owner, const std::string& name) {
  return container_->catalog().contains(attr_key(owner, name));
}

bool SharedFile::tracks_attr_corder(uint64_t owner, const ObjectRecord& rec) {
  hid_t pl = H5I_INVALID_HID;
  if (!rec.cpl.empty()) pl = decoded_plist(rec.cpl);
  else if (owner == kRootOid) pl = fcpl();
  unsigned flags = 0;
  if (pl >= 0 && H5Pget_attr_creation_order(pl, &flags) < 0) flags = 0;
  return (flags & H5P_CRT_ORDER_TRACKED) != 0;
}

void SharedFile::note_new_object(uint64_t oid, hid_t cpl) {
  unsigned flags = 0;
  if (cpl < 0 || H5Pget_attr_creation_order(cpl, &flags) < 0) return;  // computed on first use
  attr_corders_[oid] = AttrOrder{0, (flags & H5P_CRT_ORDER_TRACKED) != 0};
}

SharedFile::AttrOrder SharedFile::take_attr_corder(uint64_t owner) {
  auto it = attr_corders_.find(owner);
  if (it == attr_corders_.end()) {
    const ObjectRecord rec = object(owner);
    int64_t next = rec.next_attr_corder;
    for (auto& [name, a] : attrs(owner)) next = std::max(next, a.corder + 1);
    it = attr_corders_.emplace(owner, AttrOrder{next, tracks_attr_corder(owner, rec)}).first;
  }
  AttrOrder taken = it->second;
  ++it->second.corder;
  return taken;
}

// ---------------------------------------------------------------- arrays

std::shared_ptr<tessera::Array> SharedFile::array(uint64_t array_id) {
  auto it = arrays_.find(array_id);
  if (it != arrays_.end()) return it->second;
  std::unique_ptr<tessera::Array> a;
  tessera::ArrayOptions opts = array_options();
  if (par_) {
    // Each rank writes fragments named by its rank.  Not collective: recovery was done
    // at file open (recover_arrays), so a rank may open a dataset the others never open
    // (h5py's `if rank == 0: print(f["x"][...])`).
    opts.writer_rank = static_cast<uint32_t>(par_->rank());
    opts.collective = true;
  }
  check(container_->open_array(array_id, writable(), opts, &a));
  std::shared_ptr<tessera::Array> sp(std::move(a));
  arrays_[array_id] = sp;
  return sp;
}

std::shared_ptr<tessera::Array> SharedFile::open_array(uint64_t array_id) {
  bool cached = arrays_.count(array_id) != 0;
  auto a = array(array_id);
  // A freshly opened array listed its directory just now; a cached one may miss what
  // other ranks published since (rank-local, at their H5Dclose).
  if (par_ && cached) check(a->refresh_fragments());
  return a;
}

void SharedFile::publish_own(tessera::Array& a) {
  if (!par_ || !writable()) return;
  size_t n = 0;
  check(a.publish_own(&n));
  if (n == 0) return;
  for (auto& [id, sp] : arrays_)
    if (sp.get() == &a) own_published_[id] += n;
}

tessera::ArrayOptions SharedFile::array_options() {
  if (!array_opts_) {  // the file's options (apply_options), read once per open file
    array_opts_ = options_.array_options();
    array_opts_->durable_writes = false;  // published at flush/close (flush_arrays)
  }
  return *array_opts_;
}

void SharedFile::create_array(const tessera::Schema& schema, uint64_t* id) {
  // Parallel: every rank allocates the same id; rank 0 alone creates the directory.
  if (par_) {
    par_->agree([&] { check(container_->create_array(schema, id, /*durable=*/false)); });
    return;
  }
  // Serial: opened at once (the dataset's handle needs it) from what was just created.
  std::unique_ptr<tessera::Array> a;
  check(container_->create_and_open_array(schema, /*durable=*/false, writable(), array_options(), id, &a));
  arrays_[*id] = std::shared_ptr<tessera::Array>(std::move(a));
}

void SharedFile::set_extent(tessera::Array& a, const tessera::Coords& extent) {
  if (!par_) {
    check(a.set_extent(extent));
    return;
  }
  // A shrink erases the cut cells with a fill fragment that rank 0 writes from its view
  // of the data, so every rank's data must be published (and seen by rank 0) first, and
  // the fill fragment published right after, before any rank could grow the extent back
  // and read the cut region.  Two epochs; growing needs neither.
  bool shrink = false;
  const tessera::Coords& cur = a.schema().extent;
  for (size_t d = 0; d < extent.size() && d < cur.size(); ++d) shrink |= extent[d] < cur[d];
  if (shrink) commit_epoch();
  std::vector<uint64_t> ts{a.last_timestamp()};
  par_->max(ts);  // the change (and the fill fragment) sorts after every rank's writes
  a.raise_timestamp(ts[0]);
  par_->agree([&] { check(a.set_extent(extent)); });
  if (shrink) commit_epoch();
}

namespace {
// Crash tests (python_tests/test_mpi_kill.py): TESSERA_TEST_KILL_AT=<step>:<rank>[:<epoch>]
// makes that rank SIGKILL itself at that step of an epoch commit.  "staged": its journals
// are durable but no rank has agreed yet, so the epoch can never commit; "committed": the
// epoch record is durable and this rank has renamed nothing.
void test_kill_point(const char* step, int rank, uint64_t epoch) {
  static const char* spec = std::getenv("TESSERA_TEST_KILL_AT");
  if (!spec) return;
  std::string at = std::string(step) + ":" + std::to_string(rank);
  if (spec == at || spec == at + ":" + std::to_string(epoch)) std::raise(SIGKILL);
}
}  // namespace

void SharedFile::commit_epoch() {
  Parallel& p = *par_;
  // Ranks may have opened different datasets: agree on the union of open arrays (sorted
  // ids), and let a rank stand in with zeros for an array it does not have open.
  std::vector<uint64_t> ids;
  for (auto& [id, a] : arrays_) ids.push_back(id);
  ids = p.union_of(ids);
  std::vector<std::shared_ptr<tessera::Array>> list;  // parallel to ids; null: not open here
  for (uint64_t id : ids) {
    auto it = arrays_.find(id);
    list.push_back(it == arrays_.end() ? nullptr : it->second);
  }
  // Syncing.  A rank publishing a few fragments into existing arrays (a point update)
  // fdatasyncs just those files itself, as the serial flush does; a rank with many
  // fragments or new array directories needs one file-system sync after step 1.  The
  // ranks of one node share its page cache, so one syncfs(2) by the node's leader, after
  // every rank of the node finished step 1, covers them all (syncfs also waits for other
  // programs' dirty data: N ranks calling it would pay that N times).  The journals and
  // renames of steps 2 and 4 are a few files per array: each rank syncs them itself
  // (journal fdatasync, directory fsync), so no step after 1 needs a syncfs.
  bool per_file = true;
  // 1. Every rank turns its pending writes into finished fragments under temporary names.
  p.agree([&] {
    size_t pending = 0;
    for (auto& a : list)
      if (a) {
        check(a->prepare_flush());
        pending += a->pending_publish();
      }
    per_file = pending <= 4 && !container_->has_unsynced_arrays();
  });
  const bool node_syncfs = p.node_any(!per_file);  // also the node's barrier before it
  p.agree([&] {
    if (node_syncfs && p.node_leader()) check(container_->sync());
    if (node_syncfs) container_->note_synced();
  });
  // Later writes on any rank sort after everything written before this point.
  std::vector<uint64_t> ts, pub, mine;
  for (size_t i = 0; i < list.size(); ++i) {
    auto& a = list[i];
    ts.push_back(a ? a->last_timestamp() : 0);
    // Fragments a rank published on its own since the last epoch (H5Dclose) count too:
    // ranks that kept the dataset open pick them up below.
    auto own = own_published_.find(ids[i]);
    pub.push_back((a ? a->unpublished_count() : 0) + (own == own_published_.end() ? 0 : own->second));
  }
  own_published_.clear();
  mine = pub;
  p.max(ts);
  p.sum(pub);
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i]) list[i]->raise_timestamp(ts[i]);
  // 2. Every rank stages its batch: a per-rank journal tagged with the epoch, durable
  //    before the agreement (per file: each fragment fdatasync'ed first; else the syncfs
  //    above already made them durable).
  const uint64_t e = epoch_ + 1;
  p.agree([&] {
    for (auto& a : list)
      if (a) check(a->stage_prepared(false, e, /*fragments_synced=*/!per_file));
    test_kill_point("staged", p.rank(), e);  // before the others know: never committed
  });
  // 3. The commit point: rank 0 makes the epoch record durable, with the metadata queued
  //    since the last commit.  Journals of epochs up to it roll forward after a crash,
  //    later ones roll back, so the epoch is all ranks' data or none of it.
  p.agree([&] {
    tessera::CatalogBatch b;
    b.put(tessera::Container::kEpochKey, std::to_string(e));
    commit(b);  // shadows apply it in memory: catalogs stay identical
    if (p.root()) check(tessera::guard([&] { container_->catalog().sync(); }));
  });
  epoch_ = e;
  test_kill_point("committed", p.rank(), e);
  // 4. Renames, each array's directory fsync'ed (rank 0 also writes changed schemas,
  //    durably); agreeing doubles as the barrier before the others look at the directory.
  p.agree([&] {
    for (auto& a : list)
      if (a) check(a->publish_prepared(false));
  });
  // 5. Every rank picks up the fragments the others published.
  if (p.size() > 1)
    p.agree([&] {
      for (size_t i = 0; i < list.size(); ++i)
        if (list[i] && pub[i] > mine[i]) check(list[i]->refresh());
    });
}

void SharedFile::flush_arrays() {
  if (!writable()) return;
  flush_value_filters(*this);  // chunks written through value-changing filters
  if (par_) {
    commit_epoch();
    return;
  }
  // HDF5's rule: everything is durable after a flush or close, not before.  Fragments and
  // new arrays were written unsynced; one syncfs makes them all durable, each array's
  // publish journal is then written and synced, the renames publish the batch (a crash
  // mid-way is finished from the journal on the next open), a last syncfs makes them
  // durable, and only then the catalog — which names the arrays — is synced.
  // Small fragments are inline catalog records: when no array wrote a file, the catalog's
  // one fdatasync is the whole flush (a syncfs would also flush other programs' data).
  bool files = false;
  size_t pending = 0;
  for (auto& [id, a] : arrays_) {
    check(a->prepare_flush());
    files = files || a->has_unsynced_files();
    pending += a->pending_publish();
  }
  // A flush publishing a few fragments into existing arrays (a point update) syncs just
  // those files: each fragment's fdatasync, its directory's fsync (Array's own durable
  // publish) — syncfs would also wait for every other writer's dirty data on the file
  // system.  Many fragments or new array directories: the syncfs batch below is cheaper.
  // Every array's catalog records (inline fragments, schemas) go in one batch; an array
  // failing to publish does not keep the others' records from it.
  tessera::CatalogBatch records;
  auto publish_all = [&](bool synced) {
    tessera::Status first;
    for (auto& [id, a] : arrays_) {
      tessera::Status st = a->publish_prepared(synced, &records);
      if (first.ok() && !st.ok()) first = st;
    }
    if (files && synced) {
      tessera::Status st = container_->sync();
      if (first.ok() && !st.ok()) first = st;
    }
    check(tessera::guard([&] {
      container_->catalog().commit(std::move(records));
      container_->catalog().sync();
    }));
    check(first);
  };
  if (files && pending <= 4 && !container_->has_unsynced_arrays()) {
    for (auto& [id, a] : arrays_) check(a->stage_prepared(false));
    publish_all(false);
    return;
  }
  if (files) check(container_->sync());
  for (auto& [id, a] : arrays_) check(a->stage_prepared(true));
  if (files) check(container_->sync());
  publish_all(true);
}

hid_t SharedFile::decoded_plist(const std::string& enc) {
  auto it = plists_.find(enc);
  if (it != plists_.end()) return it->second;
  if (plists_.size() >= 256) {  // bounded: files rarely hold more than a few distinct plists
    for (auto& [e, id] : plists_)
      if (id >= 0) H5Pclose(id);
    plists_.clear();
  }
  hid_t id = H5Pdecode(enc.data());
  plists_[enc] = id;
  return id;
}

hid_t SharedFile::shared_acpl(H5T_cset_t cset) {
  auto it = acpls_.find(static_cast<int>(cset));
  if (it != acpls_.end()) return it->second;
  hid_t acpl = H5Pcreate(H5P_ATTRIBUTE_CREATE);
  if (acpl >= 0 && H5Pset_char_encoding(acpl, cset) < 0) {
    H5Pclose(acpl);
    acpl = H5I_INVALID_HID;
  }
  if (acpl >= 0) acpls_[static_cast<int>(cset)] = acpl;
  return acpl;
}

hid_t SharedFile::shared_default_dapl() {
  if (default_dapl_ < 0) default_dapl_ = H5Pcopy(H5P_DATASET_ACCESS_DEFAULT);
  return default_dapl_;
}

void SharedFile::drop_array(uint64_t array_id) {
  arrays_.erase(array_id);
  if (writable()) (void)container_->remove_array(array_id);
}

// ---------------------------------------------------------------- open objects

void SharedFile::register_open(void* obj, H5I_type_t type) { open_[obj] = type; }
void SharedFile::unregister_open(void* obj) { open_.erase(obj); }
std::vector<std::pair<void*, H5I_type_t>> SharedFile::open_objects() {
  return std::vector<std::pair<void*, H5I_type_t>>(open_.begin(), open_.end());
}

}  // namespace tessera_vol
