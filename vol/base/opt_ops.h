// opt_ops.h — the connector's own optional operations, registered with HDF5 by name
// (region_ops.h, sparse_ops.h): programs and the compat library find them with
// H5VLfind_opt_operation and call them through H5VL*_optional_op.
#pragma once

#include <hdf5.h>

namespace tessera_vol {

// The operation's value: found when already registered (the plugin loaded twice), else
// registered now; -1 if HDF5 refuses.  Never leaves an error on the stack.
int register_opt_op(H5VL_subclass_t subcls, const char* name);
// Unregisters it when *val says it was registered, and sets *val to -1.
void unregister_opt_op(H5VL_subclass_t subcls, const char* name, int* val);

}  // namespace tessera_vol
