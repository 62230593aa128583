// h5error.cc — hid.h's h5_error_message.
#include "convert/hid.h"

namespace tool {

namespace {
herr_t innermost(unsigned, const H5E_error2_t* e, void* data) {
  auto* s = static_cast<std::string*>(data);
  if (s->empty() && e->desc && *e->desc) *s = e->desc;  // upward: the innermost first
  return 0;
}
}  // namespace

std::string h5_error_message() {
  std::string s;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, &s);
  return s;
}

}  // namespace tool
