// default_plists.cc — see default_plists.h.
#include "vol/base/default_plists.h"

#include "vol/base/error.h"  // fail_arg

namespace tessera_vol {

namespace {

// The library's globals, not the H5P_* macros (each macro calls H5open).
bool is_default(hid_t id, hid_t default_list) { return id == H5P_DEFAULT || id == default_list; }

// A string property read with one call when it fits a stack buffer (the getter returns
// the full length and copies what fits), else a second with the length it reported.
std::string text(hid_t plist, ssize_t (*get)(hid_t, char*, size_t), const char* what) {
  char buf[256];
  ssize_t n = get(plist, buf, sizeof buf);
  if (n < 0) fail_arg(std::string("cannot read the ") + what);
  if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, static_cast<size_t>(n));
  std::string v(static_cast<size_t>(n) + 1, '\0');
  if (get(plist, v.data(), v.size()) < 0) fail_arg(std::string("cannot read the ") + what);
  v.resize(static_cast<size_t>(n));
  return v;
}

}  // namespace

bool lcpl_intermediate(hid_t lcpl) {
  if (lcpl < 0 || is_default(lcpl, H5P_LST_LINK_CREATE_ID_g)) return false;
  unsigned crt = 0;
  return H5Pget_create_intermediate_group(lcpl, &crt) >= 0 && crt != 0;
}

H5T_cset_t lcpl_cset(hid_t lcpl) {
  H5T_cset_t c = H5T_CSET_ASCII;
  if (lcpl < 0 || is_default(lcpl, H5P_LST_LINK_CREATE_ID_g)) return c;
  return H5Pget_char_encoding(lcpl, &c) < 0 ? H5T_CSET_ASCII : c;
}

H5T_cset_t acpl_cset(hid_t acpl) {
  H5T_cset_t c = H5T_CSET_ASCII;
  if (acpl < 0 || is_default(acpl, H5P_LST_ATTRIBUTE_CREATE_ID_g)) return c;
  if (H5Pget_char_encoding(acpl, &c) < 0) fail_arg("cannot read the character encoding of the acpl");
  return c;
}

std::string dapl_efile_prefix(hid_t dapl) {
  if (is_default(dapl, H5P_LST_DATASET_ACCESS_ID_g)) return {};
  return text(dapl, H5Pget_efile_prefix, "external file prefix of the dapl");
}

std::string dapl_vds_prefix(hid_t dapl) {
  if (is_default(dapl, H5P_LST_DATASET_ACCESS_ID_g)) return {};
  return text(dapl, H5Pget_virtual_prefix, "VDS prefix of the dapl");
}

}  // namespace tessera_vol
