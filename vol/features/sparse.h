// sparse.h — the connector side of sparse_ops.h: defined elements and erase on datasets
// (docs/sparse.md).  The engine does the work (Array::defined/erase); this maps HDF5
// selections onto it and the result back onto a dataspace.
#pragma once

#include <hdf5.h>

#include "tessera/sparse_ops.h"

namespace tessera_vol {

struct DatasetObj;

void register_sparse_ops();    // connector initialize
void unregister_sparse_ops();  // connector terminate
// True (and the operation done) if `op_type` is one of sparse_ops.h's.
bool sparse_op(DatasetObj& d, int op_type, void* args);

}  // namespace tessera_vol
