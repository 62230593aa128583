// type_conv.cc — H5Tconvert with background buffers (see type_conv.h).
#include "vol/types/type_conv.h"

#include <string>

#include "vol/base/error.h"

namespace tessera_vol {

namespace {
const char* class_name(hid_t t) {
  switch (H5Tget_class(t)) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "float";
    case H5T_STRING: return "string";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_COMPOUND: return "compound";
    case H5T_REFERENCE: return "reference";
    case H5T_ENUM: return "enum";
    case H5T_VLEN: return "variable-length";
    case H5T_ARRAY: return "array";
    default: return "unknown";
  }
}
}  // namespace

bool needs_background(hid_t src, hid_t dst) {
  return H5Tdetect_class(src, H5T_COMPOUND) > 0 || H5Tdetect_class(dst, H5T_COMPOUND) > 0;
}

void convert(hid_t src, hid_t dst, size_t n, void* buf, void* bkg, hid_t dxpl) {
  if (n == 0) return;
  if (H5Tconvert(src, dst, n, buf, bkg, dxpl) < 0)
    fail_arg(std::string("cannot convert between the ") + class_name(src) + " and " + class_name(dst) +
             " datatypes (no conversion path, or a value did not convert)");
}

}  // namespace tessera_vol
