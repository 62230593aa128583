// dataset.cc — H5D callbacks.  Skeleton: every operation fails with
// "tessera: dataset <op> not supported yet".  (None is reachable before files exist.)
#include "vol/error.h"
#include "vol/tessera_vol.h"

namespace tessera_vol {

void* dataset_create(void*, const H5VL_loc_params_t*, const char*, hid_t, hid_t, hid_t, hid_t, hid_t, hid_t,
                     void**) {
  TESSERA_VOL_UNSUPPORTED("dataset create");
  return nullptr;
}

void* dataset_open(void*, const H5VL_loc_params_t*, const char*, hid_t, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("dataset open");
  return nullptr;
}

herr_t dataset_read(size_t, void*[], hid_t[], hid_t[], hid_t[], hid_t, void*[], void**) {
  TESSERA_VOL_UNSUPPORTED("dataset read");
  return -1;
}

herr_t dataset_write(size_t, void*[], hid_t[], hid_t[], hid_t[], hid_t, const void*[], void**) {
  TESSERA_VOL_UNSUPPORTED("dataset write");
  return -1;
}

herr_t dataset_get(void*, H5VL_dataset_get_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "dataset get operation %d not supported yet", args ? static_cast<int>(args->op_type) : -1);
  return -1;
}

herr_t dataset_specific(void*, H5VL_dataset_specific_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "dataset specific operation %d not supported yet", args ? static_cast<int>(args->op_type) : -1);
  return -1;
}

herr_t dataset_optional(void*, H5VL_optional_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "dataset optional operation %d not supported yet", args ? args->op_type : -1);
  return -1;
}

herr_t dataset_close(void*, hid_t, void**) {
  TESSERA_VOL_UNSUPPORTED("dataset close");
  return -1;
}

}  // namespace tessera_vol
