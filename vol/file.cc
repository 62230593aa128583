// file.cc — H5F callbacks.
//
// Skeleton behaviour: tessera cannot create or open files yet.  create/open push
// "tessera: file ... not supported yet" and return NULL.  file.specific answers
// IS_ACCESSIBLE truthfully (HDF5 calls it with obj == NULL, and after any failed open
// of the default connector it probes every plugin this way, so it must answer false —
// not fail — for files that are not tessera containers); DELETE is not supported yet.
#include "vol/error.h"
#include "vol/tessera_vol.h"

#include <sys/stat.h>

#include <string>

namespace tessera_vol {

bool is_tessera_container(const char* path) noexcept {
  if (!path || !*path) return false;
  struct stat st {};
  if (::stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  try {
    std::string marker(path);
    if (marker.back() != '/') marker += '/';
    marker += kContainerMarker;
    return ::stat(marker.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  } catch (...) {  // std::bad_alloc: treat as "not ours" rather than throwing into HDF5
    return false;
  }
}

void* file_create(const char* name, unsigned /*flags*/, hid_t /*fcpl_id*/, hid_t /*fapl_id*/,
                  hid_t /*dxpl_id*/, void** /*req*/) {
  TESSERA_VOL_ERROR(kUnsupported, "file create not supported yet (\"%s\")", name ? name : "");
  return nullptr;
}

void* file_open(const char* name, unsigned /*flags*/, hid_t /*fapl_id*/, hid_t /*dxpl_id*/,
                void** /*req*/) {
  TESSERA_VOL_ERROR(kUnsupported, "file open not supported yet (\"%s\")", name ? name : "");
  return nullptr;
}

herr_t file_get(void* /*obj*/, H5VL_file_get_args_t* args, hid_t /*dxpl_id*/, void** /*req*/) {
  TESSERA_VOL_ERROR(kUnsupported, "file get operation %d not supported yet", args ? static_cast<int>(args->op_type) : -1);
  return -1;
}

herr_t file_specific(void* /*obj*/, H5VL_file_specific_args_t* args, hid_t /*dxpl_id*/, void** /*req*/) {
  if (!args) {
    TESSERA_VOL_ERROR(kBadArgument, "file specific: NULL arguments");
    return -1;
  }
  switch (args->op_type) {
    case H5VL_FILE_IS_ACCESSIBLE: {
      hbool_t* accessible = args->args.is_accessible.accessible;
      if (!accessible) {
        TESSERA_VOL_ERROR(kBadArgument, "file is_accessible: NULL output pointer");
        return -1;
      }
      *accessible = is_tessera_container(args->args.is_accessible.filename);
      return 0;
    }
    case H5VL_FILE_DELETE:
      TESSERA_VOL_ERROR(kUnsupported, "file delete not supported yet (\"%s\")",
                        args->args.del.filename ? args->args.del.filename : "");
      return -1;
    case H5VL_FILE_FLUSH:
      TESSERA_VOL_UNSUPPORTED("file flush");
      return -1;
    case H5VL_FILE_REOPEN:
      TESSERA_VOL_UNSUPPORTED("file reopen");
      return -1;
    case H5VL_FILE_IS_EQUAL:
      TESSERA_VOL_UNSUPPORTED("file is_equal");
      return -1;
  }
  TESSERA_VOL_ERROR(kUnsupported, "file specific operation %d not supported yet", static_cast<int>(args->op_type));
  return -1;
}

herr_t file_optional(void* /*obj*/, H5VL_optional_args_t* args, hid_t /*dxpl_id*/, void** /*req*/) {
  TESSERA_VOL_ERROR(kUnsupported, "file optional operation %d not supported yet", args ? args->op_type : -1);
  return -1;
}

herr_t file_close(void* /*file*/, hid_t /*dxpl_id*/, void** /*req*/) {
  // Unreachable while create/open always fail; fail loudly rather than pretend.
  TESSERA_VOL_UNSUPPORTED("file close");
  return -1;
}

}  // namespace tessera_vol
