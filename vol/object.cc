// object.cc — H5O callbacks.  Skeleton: every operation fails with
// "tessera: object <op> not supported yet".
#include "vol/error.h"
#include "vol/tessera_vol.h"

namespace tessera_vol {

void* object_open(void*, const H5VL_loc_params_t*, H5I_type_t*, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("object open");
  return nullptr;
}

herr_t object_copy(void*, const H5VL_loc_params_t*, const char*, void*, const H5VL_loc_params_t*, const char*,
                   hid_t, hid_t, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("object copy");
  return -1;
}

herr_t object_get(void*, const H5VL_loc_params_t*, H5VL_object_get_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "object get operation %d not supported yet", args ? static_cast<int>(args->op_type) : -1);
  return -1;
}

herr_t object_specific(void*, const H5VL_loc_params_t*, H5VL_object_specific_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "object specific operation %d not supported yet", args ? static_cast<int>(args->op_type) : -1);
  return -1;
}

herr_t object_optional(void*, const H5VL_loc_params_t*, H5VL_optional_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "object optional operation %d not supported yet", args ? args->op_type : -1);
  return -1;
}

}  // namespace tessera_vol
