/* region_ops.h — the connector's own optional operations for old-style dataset-region
 * references (hdset_reg_ref_t), shared by the connector (C++) and the compat library (C).
 *
 * An old-style region reference is 12 bytes: in native files the address of a global
 * heap collection and an index into it, where the selection is stored.  In a tessera
 * container it is the object id of the dataset (bytes 0..7, as hobj_ref_t) and the id
 * (bytes 8..11) of a catalog record `rg/<hex16 id>` holding the selection as H5Sencode2
 * bytes (docs/format.md).  The deprecated H5Rcreate/H5Rget_region live in the compat
 * library, which cannot reach the catalog: it asks the connector through two dynamically
 * registered object optional operations, found by name with H5VLfind_opt_operation and
 * called with H5VLobject_optional_op. */
#ifndef TESSERA_REGION_OPS_H
#define TESSERA_REGION_OPS_H

#include <stddef.h>
#include <stdint.h>

#define TESSERA_OP_REGION_PUT "tessera.region_put"
#define TESSERA_OP_REGION_GET "tessera.region_get"

/* region_put: stores `size` bytes at `enc` (an encoded selection); sets `id`. */
typedef struct {
    const void *enc;
    size_t      size;
    uint32_t    id;
} tessera_region_put_t;

/* region_get: copies up to `buf_size` bytes of selection `id` to `buf` (may be NULL) and
 * sets `size` to its full length. */
typedef struct {
    uint32_t id;
    void    *buf;
    size_t   buf_size;
    size_t   size;
} tessera_region_get_t;

#endif
