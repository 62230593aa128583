// hid.h — an owning HDF5 identifier and the innermost message of HDF5's error stack:
// what the file-to-file copy (h5copy.h) and the `tessera` tool need from HDF5 beyond its
// C API.
#pragma once
#include <hdf5.h>

#include <string>
#include <utility>

namespace tool {

// Closes the identifier it holds (H5Idec_ref) when it goes.
class Hid {
 public:
  Hid() = default;
  explicit Hid(hid_t id) : id_(id) {}
  ~Hid() { reset(); }
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)) {}
  Hid& operator=(Hid&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  bool valid() const { return id_ >= 0; }
  hid_t release() { return std::exchange(id_, H5I_INVALID_HID); }
  void reset(hid_t id = H5I_INVALID_HID) {
    if (id_ >= 0) {
      H5E_BEGIN_TRY { H5Idec_ref(id_); }
      H5E_END_TRY
    }
    id_ = id;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// The innermost message on HDF5's current error stack ("" if none), for error reports.
std::string h5_error_message();

}  // namespace tool
