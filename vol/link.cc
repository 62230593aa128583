// link.cc — H5L callbacks.  Skeleton: every operation fails with
// "tessera: link <op> not supported yet".
#include "vol/error.h"
#include "vol/tessera_vol.h"

namespace tessera_vol {

herr_t link_create(H5VL_link_create_args_t* args, void*, const H5VL_loc_params_t*, hid_t, hid_t, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "link create (type %d) not supported yet", args ? static_cast<int>(args->op_type) : -1);
  return -1;
}

herr_t link_copy(void*, const H5VL_loc_params_t*, void*, const H5VL_loc_params_t*, hid_t, hid_t, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("link copy");
  return -1;
}

herr_t link_move(void*, const H5VL_loc_params_t*, void*, const H5VL_loc_params_t*, hid_t, hid_t, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("link move");
  return -1;
}

herr_t link_get(void*, const H5VL_loc_params_t*, H5VL_link_get_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "link get operation %d not supported yet", args ? static_cast<int>(args->op_type) : -1);
  return -1;
}

herr_t link_specific(void*, const H5VL_loc_params_t*, H5VL_link_specific_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "link specific operation %d not supported yet", args ? static_cast<int>(args->op_type) : -1);
  return -1;
}

herr_t link_optional(void*, const H5VL_loc_params_t*, H5VL_optional_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "link optional operation %d not supported yet", args ? args->op_type : -1);
  return -1;
}

}  // namespace tessera_vol
