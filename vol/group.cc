// group.cc — H5G callbacks.  Skeleton: every operation fails with
// "tessera: group <op> not supported yet".
#include "vol/error.h"
#include "vol/tessera_vol.h"

namespace tessera_vol {

void* group_create(void*, const H5VL_loc_params_t*, const char*, hid_t, hid_t, hid_t, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("group create");
  return nullptr;
}

void* group_open(void*, const H5VL_loc_params_t*, const char*, hid_t, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("group open");
  return nullptr;
}

herr_t group_get(void*, H5VL_group_get_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "group get operation %d not supported yet", args ? static_cast<int>(args->op_type) : -1);
  return -1;
}

herr_t group_specific(void*, H5VL_group_specific_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "group specific operation %d not supported yet", args ? static_cast<int>(args->op_type) : -1);
  return -1;
}

herr_t group_optional(void*, H5VL_optional_args_t* args, hid_t, void**) {
  // Includes H5VL_NATIVE_GROUP_GET_OBJINFO, which h5py uses for H5Gget_objinfo.
  TESSERA_VOL_ERROR(kUnsupported, "group optional operation %d not supported yet", args ? args->op_type : -1);
  return -1;
}

herr_t group_close(void*, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("group close");
  return -1;
}

}  // namespace tessera_vol
