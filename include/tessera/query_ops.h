/* query_ops.h — the connector's optional operations for value indexes and queries, shared
 * by the connector (C++, vol/features/query.cc) and the public API library (C, api/tessera.c).
 *
 * Registered by name at connector initialisation (H5VLregister_opt_operation): the index
 * operations on datasets (H5VL_SUBCLS_DATASET, called with H5VLdataset_optional_op), the
 * query on a file or group (H5VL_SUBCLS_OBJECT, called with H5VLobject_optional_op on
 * the location and the name "."), so any program can use them without linking
 * libtessera_api.  docs/queries.md describes what they do. */
#ifndef TESSERA_QUERY_OPS_H
#define TESSERA_QUERY_OPS_H

#include <hdf5.h>

#include "tessera/tessera.h" /* tessera_index_config_t, tessera_index_info_t, tessera_query_result_t */

#define TESSERA_OP_BUILD_INDEX "tessera.build_index"
#define TESSERA_OP_DROP_INDEX "tessera.drop_index"
#define TESSERA_OP_INDEX_INFO "tessera.index_info"
#define TESSERA_OP_QUERY "tessera.query"

/* build_index: `config` may be NULL (the file's settings); the counts are set. */
typedef struct {
    const tessera_index_config_t *config;
    hsize_t built, cells, bytes;
} tessera_build_index_args_t;

/* drop_index: no arguments (a struct so that every operation passes one). */
typedef struct {
    int unused;
} tessera_drop_index_args_t;

/* index_info: fills `info`. */
typedef struct {
    tessera_index_info_t *info;
} tessera_index_info_args_t;

/* query: evaluates `expr` over the datasets found from the location (a file or group).
 * what = TESSERA_QUERY_COUNT: sets `count`; TESSERA_QUERY_SPACE: also `space`, a new
 * dataspace of the first variable's dataset selecting the hits (the caller closes it);
 * TESSERA_QUERY_POSITIONS: also fills `*result` (tessera_query_result_free releases it). */
#define TESSERA_QUERY_COUNT 0
#define TESSERA_QUERY_SPACE 1
#define TESSERA_QUERY_POSITIONS 2
typedef struct {
    const char *expr;
    int what;
    hsize_t count;
    hid_t space;
    tessera_query_result_t *result;
} tessera_query_args_t;

#endif
