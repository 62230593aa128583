// query.h — the connector side of query_ops.h: value indexes on datasets and queries over
// the datasets of a file or group (docs/queries.md).  The engine does the work
// (Array::build_index, tessera::run_query); this maps HDF5 objects, names and
// selections onto it, and collective calls onto MPI ranks.
#pragma once

#include <hdf5.h>
#include <H5VLconnector.h>

#include "tessera/query_ops.h"

namespace tessera_vol {

struct Obj;
struct DatasetObj;

void register_query_ops();    // connector initialize
void unregister_query_ops();  // connector terminate
bool is_query_op(int op_type);  // the object operation (introspection)
// True (and the operation done) if `op_type` is one of query_ops.h's dataset operations.
bool index_op(DatasetObj& d, int op_type, void* args);
// True (and done) if it is the query (an object operation on a file or group).
bool query_op(Obj* o, const H5VL_loc_params_t* lp, int op_type, void* args);

}  // namespace tessera_vol
