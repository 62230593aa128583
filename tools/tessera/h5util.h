// h5util.h — small HDF5 helpers for the `tessera` tool: an owning identifier and
// readable names of datatypes and filters.
#pragma once
#include <hdf5.h>

#include <string>
#include <utility>
#include <vector>

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

// A datatype as people write it: "int32 (LE)", "float64", "string[10] (ASCII)",
// "vlen string (UTF-8)", "compound {x: int32, y: float64}", "enum int8 {A=0, B=1}",
// "array[3x2] of float32", "object reference", ...
std::string type_text(hid_t type);

// A dataset creation plist's filters, in pipeline order: "shuffle", "deflate(6)",
// "fletcher32", "szip", "nbit", "scaleoffset", or "<name>(id N)" for registered ones.
std::vector<std::string> filter_texts(hid_t dcpl);

// The innermost message on HDF5's current error stack ("" if none), for error reports.
std::string h5_error_message();

}  // namespace tool

namespace tool {

// File access property lists selecting a connector: tessera's (loaded from the build's
// plugins/ beside this program's tools/, else from HDF5_PLUGIN_PATH) or HDF5's native
// one.  Throw Failure when the connector cannot be loaded.
// settings: the connector's settings for this open ("as_of=12"), as after its name in
// HDF5_VOL_CONNECTOR.
Hid tessera_fapl(const std::string& settings = "");
Hid native_fapl();

}  // namespace tool
