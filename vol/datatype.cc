// datatype.cc — H5T callbacks for committed (named) datatypes.  Skeleton: every
// operation fails with "tessera: datatype <op> not supported yet".
#include "vol/error.h"
#include "vol/tessera_vol.h"

namespace tessera_vol {

void* datatype_commit(void*, const H5VL_loc_params_t*, const char*, hid_t, hid_t, hid_t, hid_t, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("datatype commit");
  return nullptr;
}

void* datatype_open(void*, const H5VL_loc_params_t*, const char*, hid_t, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("datatype open");
  return nullptr;
}

herr_t datatype_get(void*, H5VL_datatype_get_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "datatype get operation %d not supported yet", args ? static_cast<int>(args->op_type) : -1);
  return -1;
}

herr_t datatype_specific(void*, H5VL_datatype_specific_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "datatype specific operation %d not supported yet", args ? static_cast<int>(args->op_type) : -1);
  return -1;
}

herr_t datatype_optional(void*, H5VL_optional_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "datatype optional operation %d not supported yet", args ? args->op_type : -1);
  return -1;
}

herr_t datatype_close(void*, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("datatype close");
  return -1;
}

}  // namespace tessera_vol
