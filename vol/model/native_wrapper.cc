// native_wrapper.cc — native_wrapper.h.
#include "vol/model/native_wrapper.h"

#include <hdf5.h>

#include <mutex>

#include "convert/hid.h"
#include "vol/base/error.h"
#include "vol/base/tessera_vol.h"

#ifndef TESSERA_VERSION_STRING
#define TESSERA_VERSION_STRING "0.0.0"
#endif

namespace tessera_vol {

std::string wrapper_notice() {
  return std::string("This is a tessera container (HDF5 VOL connector 'tessera', version ") + TESSERA_VERSION_STRING +
         "). Its datasets and groups are stored after this small HDF5 file. Open it with "
         "HDF5_VOL_CONNECTOR=tessera (and the plugin on HDF5_PLUGIN_PATH), or make a native HDF5 copy with "
         "`tessera export <this file> <copy.h5>`.";
}

namespace {

std::vector<uint8_t> make_wrapper() {
  using tool::Hid;
  // The native connector by name (H5VL_NATIVE differs between 1.14 and 2.x), the core
  // driver without a backing store: nothing touches the file system.
  Hid native(H5VLget_connector_id_by_name("native"));
  Hid fapl(H5Pcreate(H5P_FILE_ACCESS));
  if (!native.valid() || !fapl.valid() || H5Pset_vol(fapl, native, nullptr) < 0 ||
      H5Pset_fapl_core(fapl, 4096, 0) < 0 || H5Pset_libver_bounds(fapl, H5F_LIBVER_EARLIEST, H5F_LIBVER_V18) < 0)
    fail_arg("cannot make the HDF5 file a one-file container begins with");
  Hid file(H5Fcreate("tessera-one-file-wrapper", H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
  if (!file.valid()) fail_arg("cannot make the HDF5 file a one-file container begins with");
  const std::string text = wrapper_notice();
  Hid type(H5Tcopy(H5T_C_S1));
  Hid space(H5Screate(H5S_SCALAR));
  if (!type.valid() || H5Tset_size(type, text.size() + 1) < 0 || !space.valid())
    fail_arg("cannot make the HDF5 file a one-file container begins with");
  Hid attr(H5Acreate2(file, "tessera", type, space, H5P_DEFAULT, H5P_DEFAULT));
  if (!attr.valid() || H5Awrite(attr, type, text.c_str()) < 0 || H5Fflush(file, H5F_SCOPE_LOCAL) < 0)
    fail_arg("cannot make the HDF5 file a one-file container begins with");
  const ssize_t n = H5Fget_file_image(file, nullptr, 0);
  if (n <= 0) fail_arg("cannot take the image of the HDF5 file a one-file container begins with");
  std::vector<uint8_t> bytes(static_cast<size_t>(n));
  if (H5Fget_file_image(file, bytes.data(), bytes.size()) != n)
    fail_arg("cannot take the image of the HDF5 file a one-file container begins with");
  return bytes;
}

}  // namespace

const std::vector<uint8_t>& native_wrapper() {
  static std::mutex mu;
  static std::vector<uint8_t> bytes;
  std::lock_guard<std::mutex> g(mu);
  if (bytes.empty()) bytes = make_wrapper();
  return bytes;
}

}  // namespace tessera_vol
