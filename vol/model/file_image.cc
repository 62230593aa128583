// file_image.cc — file_image.h.
#include "vol/model/file_image.h"

#include <H5FDcore.h>
#include <H5FDdevelop.h>
#include <H5VLconnector.h>
#include <H5VLnative.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#include "convert/failure.h"
#include "convert/h5copy.h"
#include "convert/hid.h"
#include "engine/container/container.h"
#include "vol/model/objects.h"
#include "vol/base/tessera_vol.h"

namespace tessera_vol {

FileObj* new_handle(const std::shared_ptr<SharedFile>& f);  // file.cc

namespace {

using tool::Hid;

std::string h5_reason() {
  std::string m = tool::h5_error_message();
  return m.empty() ? "" : ": " + m;
}

// A fapl selecting this connector (registered: HDF5 is calling it), to reach containers
// through HDF5's C API, which calls back into the connector.  `base`: the settings to
// keep (file locking, the connector's settings), else the defaults; the driver is the
// default one (the core driver would make a new in-memory file).
Hid tessera_fapl(hid_t base) {
  Hid fapl(base >= 0 ? H5Pcopy(base) : H5Pcreate(H5P_FILE_ACCESS));
  if (!fapl.valid() || H5Pset_fapl_sec2(fapl) < 0) fail_arg("cannot make a file access list" + h5_reason());
  if (base < 0) {
    Hid vol(H5VLget_connector_id_by_name(kConnectorName));
    if (!vol.valid() || H5Pset_vol(fapl, vol, nullptr) < 0)
      fail_arg("cannot select the tessera connector" + h5_reason());
  }
  return fapl;
}

// Copies f's container into a new native file `dst_name` made with `nfapl` (HDF5's
// native connector) and returns it, open.
Hid native_copy(SharedFile& f, hid_t nfapl, const std::string& dst_name, const std::string& what);

void remove_temporary(const std::string& container) {
  (void)tessera::Container::remove(container);
  ::rmdir(container.substr(0, container.rfind('/')).c_str());
}

}  // namespace

bool has_file_image(hid_t fapl) {
  if (fapl == H5P_DEFAULT) return false;
  if (H5Pget_driver(fapl) != H5FD_CORE) return false;
  size_t len = 0;
  herr_t rc;
  H5E_BEGIN_TRY { rc = H5Pget_file_image(fapl, nullptr, &len); }
  H5E_END_TRY
  return rc >= 0 && len > 0;
}

void import_file_image(const std::string& name, hid_t fapl, const std::string& container) {
  // The image opens natively, with the caller's fapl (its image callbacks run as natively).
  Hid nfapl(H5Pcopy(fapl));
  if (!nfapl.valid() || H5Pset_vol(nfapl, H5VL_NATIVE, nullptr) < 0)
    fail_arg("cannot open the file image of '" + name + "'" + h5_reason());
  Hid src(H5Fopen(name.c_str(), H5F_ACC_RDONLY, nfapl));
  if (!src.valid()) {
    remove_temporary(container);
    fail_arg("cannot open '" + name + "' as native HDF5 bytes (a file image, or a file whose driver keeps it "
             "outside the file system, must hold a native HDF5 file)" + h5_reason());
  }
  Hid fcpl(H5Fget_create_plist(src));
  try {
    Hid dfapl = tessera_fapl(H5I_INVALID_HID);
    Hid dst(H5Fcreate(container.c_str(), H5F_ACC_EXCL, fcpl.valid() ? fcpl.get() : H5P_DEFAULT, dfapl));
    if (!dst.valid()) fail_arg("cannot create a container for the file image" + h5_reason());
    tool::copy_file(src, dst, tool::CopyOptions{});
    if (H5Fclose(dst.release()) < 0) fail_arg("cannot commit the imported file image" + h5_reason());
  } catch (const tool::Failure& e) {
    remove_temporary(container);
    fail_arg("importing '" + name + "': " + e.message);
  } catch (...) {
    remove_temporary(container);
    throw;
  }
}

// Marks a write-back (or an image copy) under way: the copy's own open and close of the
// container must not write back again.
struct WriteBack {
  explicit WriteBack(SharedFile& f) : f_(f), was_(f.writing_back_) { f.writing_back_ = true; }
  ~WriteBack() { f_.writing_back_ = was_; }
  SharedFile& f_;
  bool was_;
};

namespace {

Hid native_copy(SharedFile& f, hid_t nfapl, const std::string& dst_name, const std::string& what) {
  WriteBack busy(f);
  // The container opened again through the C API: the same open file (SharedFile shares
  // it by path, buffered writes included), closed again after the copy.
  Hid sfapl = tessera_fapl(f.fapl());
  Hid src(H5Fopen(f.container().path().c_str(), H5F_ACC_RDONLY, sfapl));
  if (!src.valid()) fail_arg(what + ": cannot read file '" + f.name() + "'" + h5_reason());
  Hid afapl(H5Fget_access_plist(src));
  H5F_libver_t lo = H5F_LIBVER_EARLIEST, hi = H5F_LIBVER_LATEST;
  if (afapl.valid() && H5Pget_libver_bounds(afapl, &lo, &hi) >= 0) H5Pset_libver_bounds(nfapl, lo, hi);
  Hid fcpl(H5Fget_create_plist(src));
  Hid dst(H5Fcreate(dst_name.c_str(), H5F_ACC_TRUNC, fcpl.valid() ? fcpl.get() : H5P_DEFAULT, nfapl));
  if (!dst.valid()) fail_arg(what + ": cannot create the native file" + h5_reason());
  try {
    tool::copy_file(src, dst, tool::CopyOptions{});
  } catch (const tool::Failure& e) {
    fail_unsupported(what + " of '" + f.name() + "': " + e.message);
  }
  return dst;
}

}  // namespace

void write_back(SharedFile& f) {
  // The native image first (an in-memory core file), then its bytes through the file's
  // driver from offset 0, truncated to their length: an H5Fcreate through the driver
  // would rely on it truncating the old bytes, which h5py's file-object driver does not.
  Hid nfapl(H5Pcreate(H5P_FILE_ACCESS));
  if (!nfapl.valid() || H5Pset_fapl_core(nfapl, 1 << 20, 0) < 0 || H5Pset_vol(nfapl, H5VL_NATIVE, nullptr) < 0)
    fail_arg("cannot make an in-memory native file for '" + f.name() + "'" + h5_reason());
  static std::atomic<uint64_t> serial{0};
  const std::string mem = "tessera-write-back-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
  std::vector<unsigned char> image;
  {
    Hid dst = native_copy(f, nfapl, mem, "writing back through the file driver");
    if (H5Fflush(dst, H5F_SCOPE_LOCAL) < 0) fail_arg("cannot flush the in-memory native file" + h5_reason());
    ssize_t len = H5Fget_file_image(dst, nullptr, 0);
    if (len > 0) {
      image.resize(static_cast<size_t>(len));
      len = H5Fget_file_image(dst, image.data(), image.size());
    }
    if (len <= 0) fail_arg("cannot take the native image of '" + f.name() + "'" + h5_reason());
  }
  const std::string what = "writing '" + f.name() + "' back through its file driver";
  H5FD_t* fd = H5FDopen(f.name().c_str(), H5F_ACC_RDWR, f.fapl(), HADDR_UNDEF);
  if (!fd) fail_arg(what + ": cannot open it" + h5_reason());
  herr_t rc = H5FDset_eoa(fd, H5FD_MEM_SUPER, image.size());
  if (rc >= 0) rc = H5FDwrite(fd, H5FD_MEM_SUPER, H5P_DATASET_XFER_DEFAULT, 0, image.size(), image.data());
  if (rc >= 0) rc = H5FDtruncate(fd, H5P_DATASET_XFER_DEFAULT, 1);
  const std::string reason = rc < 0 ? h5_reason() : "";
  if (H5FDclose(fd) < 0 && rc >= 0) fail_arg(what + ": closing it failed" + h5_reason());
  if (rc < 0) fail_arg(what + " failed" + reason);
}

ssize_t file_image(FileObj& fo, void* buf, size_t size) {
  if (fo.file->parallel())
    fail_unsupported("H5Fget_file_image: file '" + fo.file->name() + "' is open in parallel (MPI-IO); "
                     "a parallel file has no file image");
  // The image is that of a native in-memory (core) file holding a copy of the container.
  Hid nfapl(H5Pcreate(H5P_FILE_ACCESS));
  if (!nfapl.valid() || H5Pset_fapl_core(nfapl, 1 << 20, 0) < 0 || H5Pset_vol(nfapl, H5VL_NATIVE, nullptr) < 0)
    fail_arg("cannot make an in-memory native file for the image" + h5_reason());
  static std::atomic<uint64_t> serial{0};
  const std::string name = "tessera-file-image-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
  Hid dst = native_copy(*fo.file, nfapl, name, "H5Fget_file_image");
  if (H5Fflush(dst, H5F_SCOPE_LOCAL) < 0) fail_arg("cannot flush the in-memory native file" + h5_reason());
  ssize_t len = H5Fget_file_image(dst, buf, buf ? size : 0);
  if (len < 0) fail_arg("H5Fget_file_image" + h5_reason());
  return len;
}

}  // namespace tessera_vol
