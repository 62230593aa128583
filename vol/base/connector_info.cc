// connector_info.cc — see connector_info.h.
#include "vol/base/connector_info.h"

#include <cstring>
#include <string>

#include "vol/base/error.h"

namespace tessera_vol {

namespace {

// The info object: the settings text, as given.
struct Info {
  char* settings;
};

Info* make(const char* text) {
  auto* i = static_cast<Info*>(std::malloc(sizeof(Info)));
  if (!i) return nullptr;
  i->settings = strdup(text ? text : "");
  if (!i->settings) {
    std::free(i);
    return nullptr;
  }
  return i;
}

}  // namespace

void* info_copy_cb(const void* info) {
  const auto* i = static_cast<const Info*>(info);
  return make(i ? i->settings : "");
}

herr_t info_cmp_cb(int* cmp, const void* a, const void* b) {
  const auto* x = static_cast<const Info*>(a);
  const auto* y = static_cast<const Info*>(b);
  *cmp = std::strcmp(x ? x->settings : "", y ? y->settings : "");
  return 0;
}

herr_t info_free_cb(void* info) {
  auto* i = static_cast<Info*>(info);
  if (i) {
    std::free(i->settings);
    std::free(i);
  }
  return 0;
}

herr_t info_to_str_cb(const void* info, char** str) {
  const auto* i = static_cast<const Info*>(info);
  const char* s = i ? i->settings : "";
  *str = static_cast<char*>(H5allocate_memory(std::strlen(s) + 1, false));  // HDF5 frees it
  if (!*str) return -1;
  std::memcpy(*str, s, std::strlen(s) + 1);
  return 0;
}

herr_t info_from_str_cb(const char* str, void** info) {
  *info = make(str);
  return *info ? 0 : -1;
}

tessera::EngineOptions file_options(hid_t fapl) {
  tessera::EngineOptions o;
  tessera::Status st = tessera::EngineOptions::from_env(&o);
  if (!st.ok()) fail_arg("tessera settings from the environment: " + st.message());
  if (fapl == H5P_DEFAULT) fapl = H5P_FILE_ACCESS_DEFAULT;
  void* info = nullptr;
  hid_t vol = H5I_INVALID_HID;
  if (H5Pget_vol_id(fapl, &vol) < 0) return o;
  if (H5Pget_vol_info(fapl, &info) >= 0 && info) {
    std::string text = static_cast<Info*>(info)->settings;
    H5VLfree_connector_info(vol, info);
    st = o.apply(text);
    if (!st.ok()) {
      H5VLclose(vol);
      fail_arg("tessera settings \"" + text + "\" (HDF5_VOL_CONNECTOR or H5Pset_vol): " + st.message());
    }
  }
  H5VLclose(vol);
  return o;
}

}  // namespace tessera_vol
