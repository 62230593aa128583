// opt_ops.cc — see opt_ops.h.
#include "vol/base/opt_ops.h"

#include <H5VLconnector.h>

namespace tessera_vol {

int register_opt_op(H5VL_subclass_t subcls, const char* name) {
  int val = -1;
  H5E_BEGIN_TRY {
    if (H5VLfind_opt_operation(subcls, name, &val) < 0 || val <= 0) {
      val = -1;
      if (H5VLregister_opt_operation(subcls, name, &val) < 0) val = -1;
    }
  }
  H5E_END_TRY;
  return val;
}

void unregister_opt_op(H5VL_subclass_t subcls, const char* name, int* val) {
  if (*val > 0) {
    H5E_BEGIN_TRY { H5VLunregister_opt_operation(subcls, name); }
    H5E_END_TRY;
  }
  *val = -1;
}

}  // namespace tessera_vol
