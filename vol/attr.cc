// attr.cc — H5A callbacks.  Skeleton: every operation fails with
// "tessera: attribute <op> not supported yet".  (None is reachable before files exist.)
#include "vol/error.h"
#include "vol/tessera_vol.h"

namespace tessera_vol {

void* attr_create(void*, const H5VL_loc_params_t*, const char*, hid_t, hid_t, hid_t, hid_t, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("attribute create");
  return nullptr;
}

void* attr_open(void*, const H5VL_loc_params_t*, const char*, hid_t, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("attribute open");
  return nullptr;
}

herr_t attr_read(void*, hid_t, void*, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("attribute read");
  return -1;
}

herr_t attr_write(void*, hid_t, const void*, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("attribute write");
  return -1;
}

herr_t attr_get(void*, H5VL_attr_get_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "attribute get operation %d not supported yet", args ? static_cast<int>(args->op_type) : -1);
  return -1;
}

herr_t attr_specific(void*, const H5VL_loc_params_t*, H5VL_attr_specific_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "attribute specific operation %d not supported yet", args ? static_cast<int>(args->op_type) : -1);
  return -1;
}

herr_t attr_optional(void*, H5VL_optional_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "attribute optional operation %d not supported yet", args ? args->op_type : -1);
  return -1;
}

herr_t attr_close(void*, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("attribute close");
  return -1;
}

}  // namespace tessera_vol
