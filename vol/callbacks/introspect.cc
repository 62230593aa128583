// introspect.cc — connector introspection callbacks.
//
// All three are mandatory in practice (see docs in the shared VOL notes):
//  - get_conn_cls: HDF5 asks which connector owns an object; a terminal connector
//    answers with its own class for both the current and the terminal level.
//  - get_cap_flags: H5Pget_vol_cap_flags calls this rather than reading the class
//    field, so both report kCapFlags.
//  - opt_query: H5Fcreate/H5Fopen query support for the native "post open" optional
//    operation; NULL would make every file open fail.  It answers for every optional
//    operation: flags = 0 ("not supported") except the few tessera implements.
#include "vol/base/error.h"
#include "vol/features/query.h"
#include "vol/model/region_store.h"
#include "vol/base/tessera_vol.h"

namespace tessera_vol {

herr_t introspect_get_conn_cls(void* /*obj*/, H5VL_get_conn_lvl_t lvl, const H5VL_class_t** conn_cls) {
  if (!conn_cls) {
    TESSERA_VOL_ERROR(kBadArgument, "get_conn_cls: NULL output pointer");
    return -1;
  }
  switch (lvl) {
    case H5VL_GET_CONN_LVL_CURR:
    case H5VL_GET_CONN_LVL_TERM:
      *conn_cls = &kTesseraClass;
      return 0;
  }
  TESSERA_VOL_ERROR(kBadArgument, "get_conn_cls: unknown level %d", static_cast<int>(lvl));
  return -1;
}

herr_t introspect_get_cap_flags(const void* /*info*/, uint64_t* cap_flags) {
  if (!cap_flags) {
    TESSERA_VOL_ERROR(kBadArgument, "get_cap_flags: NULL output pointer");
    return -1;
  }
  *cap_flags = kCapFlags;
  return 0;
}

herr_t introspect_opt_query(void* /*obj*/, H5VL_subclass_t cls, int opt_type, uint64_t* flags) {
  if (!flags) {
    TESSERA_VOL_ERROR(kBadArgument, "opt_query: NULL output pointer");
    return -1;
  }
  // Supported optional operations carry the same flags the native connector reports
  // (H5VLnative_introspect.c); everything else is flags = 0, "not supported".
  *flags = 0;
  switch (cls) {
    case H5VL_SUBCLS_FILE:
      switch (opt_type) {
        case H5VL_NATIVE_FILE_CLEAR_ELINK_CACHE:
        case H5VL_NATIVE_FILE_START_SWMR_WRITE:
        case H5VL_NATIVE_FILE_SET_MDC_CONFIG:
        case H5VL_NATIVE_FILE_RESET_MDC_HIT_RATE:
        case H5VL_NATIVE_FILE_RESET_PAGE_BUFFERING_STATS:
        case H5VL_NATIVE_FILE_SET_LIBVER_BOUNDS:
          *flags = H5VL_OPT_QUERY_SUPPORTED | H5VL_OPT_QUERY_MODIFY_METADATA;
          break;
        case H5VL_NATIVE_FILE_GET_MDC_CONF:
        case H5VL_NATIVE_FILE_GET_MDC_HR:
        case H5VL_NATIVE_FILE_GET_MDC_SIZE:
        case H5VL_NATIVE_FILE_GET_VFD_HANDLE:
        case H5VL_NATIVE_FILE_GET_PAGE_BUFFERING_STATS:
          *flags = H5VL_OPT_QUERY_SUPPORTED | H5VL_OPT_QUERY_QUERY_METADATA;
          break;
        case H5VL_NATIVE_FILE_GET_SIZE:
        case H5VL_NATIVE_FILE_GET_FREE_SPACE:
          *flags = H5VL_OPT_QUERY_SUPPORTED | H5VL_OPT_QUERY_QUERY_METADATA;
          break;
        default: break;
      }
      break;
    case H5VL_SUBCLS_GROUP:
      if (opt_type == H5VL_NATIVE_GROUP_GET_OBJINFO) *flags = H5VL_OPT_QUERY_SUPPORTED | H5VL_OPT_QUERY_QUERY_METADATA;
      break;
    case H5VL_SUBCLS_OBJECT:
      if (opt_type == H5VL_NATIVE_OBJECT_GET_COMMENT) *flags = H5VL_OPT_QUERY_SUPPORTED | H5VL_OPT_QUERY_QUERY_METADATA;
      if (opt_type == H5VL_NATIVE_OBJECT_SET_COMMENT) *flags = H5VL_OPT_QUERY_SUPPORTED | H5VL_OPT_QUERY_MODIFY_METADATA;
      if (is_region_op(opt_type)) *flags = H5VL_OPT_QUERY_SUPPORTED | H5VL_OPT_QUERY_MODIFY_METADATA;
      if (is_query_op(opt_type)) *flags = H5VL_OPT_QUERY_SUPPORTED | H5VL_OPT_QUERY_READ_DATA;
      break;
    case H5VL_SUBCLS_DATASET:  // chunk_io.h
      switch (opt_type) {
        case H5VL_NATIVE_DATASET_CHUNK_WRITE:
          *flags = H5VL_OPT_QUERY_SUPPORTED | H5VL_OPT_QUERY_WRITE_DATA;
          break;
        case H5VL_NATIVE_DATASET_CHUNK_READ:
          *flags = H5VL_OPT_QUERY_SUPPORTED | H5VL_OPT_QUERY_READ_DATA;
          break;
        case H5VL_NATIVE_DATASET_FORMAT_CONVERT:
          *flags = H5VL_OPT_QUERY_SUPPORTED | H5VL_OPT_QUERY_MODIFY_METADATA;
          break;
        case H5VL_NATIVE_DATASET_GET_CHUNK_INDEX_TYPE:
        case H5VL_NATIVE_DATASET_GET_CHUNK_STORAGE_SIZE:
        case H5VL_NATIVE_DATASET_GET_NUM_CHUNKS:
        case H5VL_NATIVE_DATASET_GET_CHUNK_INFO_BY_IDX:
        case H5VL_NATIVE_DATASET_GET_CHUNK_INFO_BY_COORD:
        case H5VL_NATIVE_DATASET_CHUNK_ITER:
        case H5VL_NATIVE_DATASET_GET_OFFSET:
          *flags = H5VL_OPT_QUERY_SUPPORTED | H5VL_OPT_QUERY_QUERY_METADATA;
          break;
        default: break;  // H5Dvlen_get_buf_size: HDF5's generic path computes it
      }
      break;
    default:
      break;  // attribute, datatype, link, request, blob, token: none yet
  }
  return 0;
}

}  // namespace tessera_vol
