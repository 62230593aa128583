/* sparse_ops.h — the connector's dataset optional operations for sparse data, shared by
 * the connector (C++, vol/features/sparse.cc) and the public API library (C, api/tessera.c).
 *
 * Registered by name at connector initialisation (H5VLregister_opt_operation,
 * H5VL_SUBCLS_DATASET); the API library finds them with H5VLfind_opt_operation and calls
 * them with H5VLdataset_optional_op.  docs/sparse.md describes what they do. */
#ifndef TESSERA_SPARSE_OPS_H
#define TESSERA_SPARSE_OPS_H

#include <hdf5.h>

#define TESSERA_OP_DEFINED "tessera.defined"
#define TESSERA_OP_ERASE "tessera.erase"

/* defined: `file_space` (H5S_ALL: the whole dataset) selects where to look; the connector
 * sets `defined_space` to a new dataspace of the dataset's extent selecting the defined
 * elements among them (the caller owns it). */
typedef struct {
    hid_t file_space;
    hid_t defined_space;
} tessera_defined_args_t;

/* erase: makes the elements `file_space` selects (H5S_ALL: all) undefined. */
typedef struct {
    hid_t file_space;
} tessera_erase_args_t;

#endif
