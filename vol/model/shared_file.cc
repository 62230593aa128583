// shared_file.cc — SharedFile's life: a container opened or created once per process
// (shared by every handle of it), its settings and SWMR state, and its destruction.
#include "vol/model/object_model.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "engine/util/bytes.h"
#include "vol/model/catalog_keys.h"
#include "vol/base/connector_info.h"
#include "vol/base/error.h"
#include "vol/model/file_image.h"
#include "vol/model/native_wrapper.h"
#include "vol/base/file_settings.h"
#include "vol/model/link_storage.h"
#include "vol/model/objects.h"  // Obj: open handles keep unreferenced objects
#include "vol/model/parallel.h"
#include "vol/model/swmr.h"
#include "vol/model/value_filters.h"

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

}  // namespace

// ---------------------------------------------------------------- open / create

std::shared_ptr<SharedFile> SharedFile::create(const std::string& name, unsigned flags, hid_t fcpl, hid_t fapl) {
  std::lock_guard<std::recursive_mutex> g(g_files_mu);
  // A bad setting fails before anything is created; the process-wide ones (pools, tile
  // cache, write budget) are taken before the container's first use of them.
  const tessera::EngineOptions opts = file_options(fapl);
  if (!opts.as_of.empty())
    fail_arg("setting as_of: a file opened as of a past commit is read-only; H5Fcreate cannot use it");
  tessera::configure_process(opts);
  bool temporary = false, foreign = false;
  const std::string path = container_path(name, fapl, &temporary, &foreign);  // the driver decides (file_settings.h)
  std::string real = real_path(path);
  if (auto it = g_files.find(real); it != g_files.end() && !it->second.expired())
    fail_arg("file '" + name + "' is already open; HDF5 cannot truncate an open file");
  auto f = std::shared_ptr<SharedFile>(new SharedFile());
  f->name_ = name;
  if (temporary) f->temporary_ = path;
  f->foreign_ = foreign;
  f->par_.comm = Parallel::from_fapl(fapl);
  if (f->par_.comm) {
    f->par_.comm->check_fapl(fapl);
    f->par_.open_container(path, flags, /*create=*/true, &f->container_);
  } else {
    auto mode = (flags & H5F_ACC_EXCL) ? tessera::Container::CreateMode::kExclusive
                                       : tessera::Container::CreateMode::kTruncate;
    // New files are one regular file beginning with a small native HDF5 file when the
    // setting one_file is on (docs/format.md, "The one-file container"); else a directory.
    tessera::Container::Form form;
    form.one_file = opts.one_file != 0 && !temporary;
    if (form.one_file) form.wrapper = native_wrapper();
    check(tessera::Container::create(path, mode, &f->container_, nullptr, form));
  }
  f->real_ = real_path(path);
  f->swmr_.locking = LockingFlags::of(fapl);
  f->swmr_.intent = H5F_ACC_RDWR | (flags & H5F_ACC_SWMR_WRITE);
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
  b.put(id_key("o/", kRootOid), root.serialize());
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
  bool temporary = false, foreign = false;
  std::string path = container_path(name, fapl, &temporary, &foreign);
  // A file image or a foreign driver's file (file_image.h): imported into a private
  // temporary container, which then opens like any other and goes when the file closes.
  const bool image = foreign || has_file_image(fapl);
  if (foreign) {
    import_file_image(name, fapl, path);
  } else if (image) {
    if (!temporary && (flags & H5F_ACC_RDWR))
      fail_unsupported("file '" + name + "': a file image opened read-write with a backing store would be "
                       "written to that file as native HDF5 at close, which tessera cannot do (open the image "
                       "without a backing store, H5Pset_fapl_core(fapl, incr, 0), or read-only)");
    if (!temporary) path = temporary_container_path(name);
    temporary = true;
    import_file_image(name, fapl, path);
  } else if (temporary) {  // a core file without backing store that is not open: nothing to open
    ::rmdir(path.substr(0, path.rfind('/')).c_str());
  }
  std::string real = real_path(path);
  // As of a past commit (engine/catalog/history.h): read-only, and a file of its own (the same
  // container opened as of now or of another commit is another file).
  const std::string as_of = file_options(fapl).as_of;
  if (!as_of.empty()) {
    if (flags & H5F_ACC_RDWR)
      fail_arg("setting as_of=" + as_of + ": a file opened as of a past commit is read-only (open it with H5F_ACC_RDONLY)");
    real += "\n@as_of=" + as_of;
  }
  if (auto it = g_files.find(real); it != g_files.end()) {
    if (auto f = it->second.lock()) {
      if ((flags & H5F_ACC_RDWR) && !f->writable())
        fail_arg("file '" + name + "' is already open read-only");
      if (!(LockingFlags::of(fapl) == f->swmr_.locking)) fail_arg("file locking flag values don't match");
      swmr_on_open(*f, flags, /*already_open=*/true);
      return f;
    }
  }
  if (temporary && !image) {  // core without backing store opens nothing that exists
    check(tessera::Status(tessera::Errc::kNotFound, "unable to open file: name = '" + name +
                                                        "', errno = 2 (an in-memory file without backing store)"));
  }
  tessera::configure_process(file_options(fapl));  // as in create(): before the container
  auto f = std::shared_ptr<SharedFile>(new SharedFile());
  f->name_ = name;
  if (image) f->temporary_ = path;
  f->foreign_ = foreign;
  f->swmr_.locking = LockingFlags::of(fapl);
  bool rw = (flags & H5F_ACC_RDWR) != 0;
  f->par_.comm = Parallel::from_fapl(fapl);
  if (f->par_.comm) f->par_.comm->check_fapl(fapl);
  if (f->par_.comm && !as_of.empty()) fail_unsupported("setting as_of: parallel files cannot be opened as of a past commit");
  if (f->par_.comm) f->par_.open_container(path, flags, /*create=*/false, &f->container_);
  else if (!as_of.empty()) check(tessera::Container::open_as_of(path, as_of, &f->container_));
  else check(tessera::Container::open(path, rw, &f->container_));
  f->par_.epoch = f->container_->committed_epoch();
  f->real_ = real;
  f->swmr_.intent = rw ? H5F_ACC_RDWR : H5F_ACC_RDONLY;
  if (rw) f->container_->catalog().set_durability(tessera::Catalog::Durability::kOnSync);
  f->fapl_ = H5Pcopy(fapl == H5P_DEFAULT ? H5P_FILE_ACCESS_DEFAULT : fapl);
  if (auto enc = f->container_->catalog().get("sys/fcpl")) f->fcpl_ = H5Pdecode(enc->data());
  if (f->fcpl_ < 0) f->fcpl_ = H5Pcopy(H5P_FILE_CREATE_DEFAULT);
  apply_page_buffering(f->fapl_, f->fcpl_, /*create=*/false);
  f->apply_options();
  if (!f->find_object(kRootOid)) fail_engine(tessera::Status(tessera::Errc::kCorrupt,
                                                               "container '" + name + "' has no root group"));
  f->swmr_.intent |= swmr_on_open(*f, flags, /*already_open=*/false);
  f->fileno_ = g_next_fileno++;
  g_files[real] = f;
  return f;
}

SharedFile::~SharedFile() {
  // Flush buffered writes; errors here cannot be reported (file_close flushes first).
  // Parallel files: arrays discard what no epoch committed (only a collective commit may
  // publish, and a destructor cannot be collective).
  try {
    commit_deferred_attr();  // file_close's callback committed it already, if it ran
  } catch (...) {
  }
  arrays_.clear();
  container_.reset();
  par_.comm.reset();
  plists_.clear();
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
  options_ = file_options(fapl_);  // engine/context/options.h; throws naming a bad setting
  tessera::configure_process(options_);  // pools and tile cache: the first file's sizes
  container_->set_inline_cap(options_.inline_total_mb << 20);
}

void* SharedFile::directory_handle() {
  if (dir_fd_ < 0) dir_fd_ = ::open(container_->path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) fail_arg("cannot open the container directory of '" + name_ + "'");
  return &dir_fd_;
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

void SharedFile::require_writable(const char* what) {
  if (!writable()) fail_arg(std::string(what) + ": file '" + name_ + "' is open read-only");
}

void SharedFile::commit(tessera::CatalogBatch& b) {
  check(tessera::guard([&] { container_->catalog().commit(std::move(b)); }));
  b = tessera::CatalogBatch();
}

}  // namespace tessera_vol
