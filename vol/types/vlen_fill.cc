// vlen_fill.cc — see vlen_fill.h.
#include "vol/types/vlen_fill.h"

#include <vector>

#include "vol/types/dcpl.h"
#include "vol/base/error.h"  // fail_arg
#include "vol/types/vlen.h"

namespace tessera_vol {

namespace {

// One element of `type` in memory form, whose vlen parts are released on scope exit.
class VlenElement {
 public:
  explicit VlenElement(hid_t type) : type_(type), buf_(H5Tget_size(type), 0) {
    if (buf_.empty()) fail_arg("invalid datatype for the fill value");
  }
  ~VlenElement() {
    if (!filled_) return;
    hid_t space = H5Screate(H5S_SCALAR);
    if (space >= 0) {
      H5Treclaim(type_, space, H5P_DEFAULT, buf_.data());
      H5Sclose(space);
    }
  }
  VlenElement(const VlenElement&) = delete;
  VlenElement& operator=(const VlenElement&) = delete;
  void* data() { return buf_.data(); }
  void filled() { filled_ = true; }

 private:
  hid_t type_;
  std::vector<unsigned char> buf_;
  bool filled_ = false;
};

class Plist {
 public:
  explicit Plist(hid_t id) : id_(id) {}
  ~Plist() {
    if (id_ >= 0) H5Pclose(id_);
  }
  Plist(const Plist&) = delete;
  Plist& operator=(const Plist&) = delete;
  hid_t get() const { return id_; }
  hid_t release() {
    hid_t id = id_;
    id_ = H5I_INVALID_HID;
    return id;
  }

 private:
  hid_t id_;
};

}  // namespace

hid_t dataset_dcpl(hid_t dcpl, hid_t type) {
  Plist copy(H5Pcopy(dcpl));
  if (copy.get() < 0) fail_arg("cannot copy the dataset creation property list");
  H5D_fill_value_t fv = H5D_FILL_VALUE_DEFAULT;
  if (H5Pfill_value_defined(dcpl, &fv) < 0) fail_arg("cannot read the fill value from the dcpl");
  if (fv != H5D_FILL_VALUE_USER_DEFINED) return copy.release();
  VlenElement fill(type);
  if (H5Pget_fill_value(dcpl, type, fill.data()) < 0) fail_arg("cannot convert the fill value to the dataset type");
  if (type_has_vlen(type)) fill.filled();
  if (H5Pset_fill_value(copy.get(), type, fill.data()) < 0) fail_arg("cannot set the converted fill value");
  return copy.release();
}

StoredDcpl store_dcpl(hid_t dcpl, hid_t type) {
  H5D_fill_value_t fv = H5D_FILL_VALUE_DEFAULT;
  if (!type_has_vlen(type) || H5Pfill_value_defined(dcpl, &fv) < 0 || fv != H5D_FILL_VALUE_USER_DEFINED)
    return {encode_plist(dcpl), std::string()};
  StoredDcpl out;
  {
    VlenElement fill(type);
    // A deep copy (dataset_dcpl already converted it to the dataset's type).
    if (H5Pget_fill_value(dcpl, type, fill.data()) < 0) fail_arg("cannot convert the fill value to the dataset type");
    fill.filled();
    out.vlen_fill = vlen_serialize(type, 1, fill.data());
  }
  Plist cleared(H5Pcopy(dcpl));
  if (cleared.get() < 0 || H5Pset_fill_value(cleared.get(), type, nullptr) < 0)
    fail_arg("cannot copy the dataset creation property list");
  out.cpl = encode_plist(cleared.get());
  return out;
}

hid_t restore_dcpl(hid_t decoded, hid_t type, const std::string& vlen_fill) {
  Plist dcpl(H5Pcopy(decoded));
  if (dcpl.get() < 0) fail_arg("cannot copy the stored dataset creation property list");
  VlenElement fill(type);
  vlen_deserialize(type, 1, vlen_fill, fill.data(), VlenAlloc{});
  fill.filled();
  if (H5Pset_fill_value(dcpl.get(), type, fill.data()) < 0) fail_arg("cannot restore the stored fill value");
  return dcpl.release();
}

}  // namespace tessera_vol
