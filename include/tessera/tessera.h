/* tessera.h — the tessera connector's own operations on HDF5 datasets (libtessera_api):
 * defined elements and erase (below), value indexes and queries (further below).
 *
 * A dataset stored by tessera knows which of its elements have been written: an element
 * is *defined* from its first write until it is erased (or cut off by H5Dset_extent), and
 * reads of undefined elements return the fill value, as in native HDF5.  These calls make
 * that visible (docs/sparse.md):
 *
 *   hid_t defined = tessera_Dget_defined(dset, file_space, H5P_DEFAULT);
 *   H5Sget_select_npoints(defined);   // how many of file_space's elements are defined
 *   H5Dread(dset, type, H5S_ALL, defined, ...);  // just those (memory space of that size)
 *   tessera_Derase(dset, file_space, H5P_DEFAULT); // back to undefined
 *
 * Both work on datasets of files opened through the tessera connector and fail, with a
 * message on HDF5's error stack, on any other dataset (a native HDF5 file, a virtual
 * dataset, a dataset with external raw data).  Link with -ltessera_api (build/lib). */
#ifndef TESSERA_H
#define TESSERA_H

#include <hdf5.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A new dataspace of the dataset's current extent whose selection is the defined elements
 * among those `file_space` selects (H5S_ALL: the whole dataset): a hyperslab selection
 * (possibly empty) — or a point selection, in the given order, when `file_space` is a
 * point selection.  The cost follows the defined elements and the stored fragments, not
 * the selection's size; no values are read.  Close it with H5Sclose.  H5I_INVALID_HID on
 * failure. */
hid_t tessera_Dget_defined(hid_t dset_id, hid_t file_space_id, hid_t dxpl_id);

/* Makes the elements `file_space` selects (H5S_ALL: all) undefined: reads return the
 * fill value, tessera_Dget_defined no longer reports them, and consolidation gives their
 * space back.  Atomic (one fragment) and durable at the next H5Fflush/H5Fclose, like a
 * write; newer writes win over it, it wins over older ones.  Negative on failure
 * (read-only file, a compact dataset, a selection outside the extent, ...). */
herr_t tessera_Derase(hid_t dset_id, hid_t file_space_id, hid_t dxpl_id);

/* Positive if the object's file is opened through the tessera connector, 0 if not,
 * negative on error. */
htri_t tessera_is_tessera(hid_t obj_id);

/* Time travel (docs/tool.md, "Reading the past"): makes `fapl_id` select the tessera
 * connector opening files read-only as of a past commit — `when` is the commit's number
 * ("12"), "@<ns since the epoch>" or a UTC time "2026-11-26T10:41:09Z" (the last commit at
 * or before it).  Settings the fapl already gives tessera are kept.  Then
 *   hid_t f = H5Fopen("run.h5", H5F_ACC_RDONLY, fapl);
 * reads exactly what that commit left (objects, attributes, extents, data); H5F_ACC_RDWR
 * fails.  `tessera commits run.h5` lists the commits.  Negative on failure (the connector
 * is not loaded, `when` has blanks). */
herr_t tessera_Pset_as_of(hid_t fapl_id, const char *when);

/* Layouts (docs/layouts.md): makes datasets created with `dcpl_id` store their tiles
 * (chunks) in the order `layout` names — "row-major" (the default, as HDF5), "column-major",
 * "z-order", "hilbert" or "multimap" — for a dataset read mostly along some dimension, or
 * in boxes; optionally followed by ":row-major" or ":column-major", the order of the cells
 * inside each tile (default row-major, except "multimap", whose cells go dimension 0
 * fastest: "multimap" is "multimap:column-major").  Overrides the connector's `layout=`
 * setting; values read and written are the same whatever the layout.  Native HDF5 ignores
 * it (the dcpl stays usable for native files).  The name is checked when the dataset is
 * created: an unknown one fails H5Dcreate with a message listing the names.  Negative on
 * failure (not a dataset creation property list, a name of 32 characters or more). */
herr_t tessera_Pset_layout(hid_t dcpl_id, const char *layout);

/* The layout name tessera_Pset_layout put in `dcpl_id` (NUL-terminated, into `buf` of
 * `size` bytes): its length, 0 if none was set, negative on failure. */
ssize_t tessera_Pget_layout(hid_t dcpl_id, char *buf, size_t size);

/* ---- Value indexes and queries (docs/queries.md) -------------------------------------
 *
 *   tessera_Dbuild_index(temp, NULL, H5P_DEFAULT);            // binned bitmap index
 *   hssize_t n = tessera_Fquery_count(file, "T[0:50, :] > 270 && P < 1e5", H5P_DEFAULT);
 *   hid_t hits = tessera_Fquery(file, "T > 270", H5P_DEFAULT);  // a selection of T
 *   H5Dread(temp, H5T_NATIVE_FLOAT, mem, hits, H5P_DEFAULT, buf);
 *
 * A query compares datasets (by path, relative to the location or absolute, or re"regex")
 * with numbers; variables may carry subarrays x[start:end:stride, ...] and must have the
 * same number of elements, paired in row-major order.  Datasets without an index are
 * scanned (correct, slower).  Elements must be integers or floating-point numbers. */

/* Called while an index is built (on the caller's thread): cells done and to do.  A
 * nonzero return stops the build (tessera_Dbuild_index then fails). */
typedef int (*tessera_progress_t)(hsize_t done, hsize_t total, void *udata);

typedef struct {
    unsigned precision;  /* significant decimal digits of bin boundaries, 1..9; 0: the file's
                          * setting (index_precision, default 3) */
    unsigned max_bins;   /* most bins per fragment, 2..65536; 0: the file's (index_max_bins, 1024) */
    int rebuild;         /* nonzero: rebuild indexes that exist too */
    tessera_progress_t progress; /* may be NULL */
    void *udata;
} tessera_index_config_t;

/* Builds the value index of every fragment of the dataset that has none (written data
 * still buffered is written out first).  Under MPI (an MPI-IO file) the call is
 * collective: each rank builds the indexes of its share of the flushed fragments.
 * `config` may be NULL.  Negative on failure (non-numeric elements, a virtual dataset...). */
herr_t tessera_Dbuild_index(hid_t dset_id, const tessera_index_config_t *config, hid_t dxpl_id);

/* Removes the dataset's value indexes (queries then scan).  Collective under MPI. */
herr_t tessera_Ddrop_index(hid_t dset_id, hid_t dxpl_id);

typedef struct {
    hsize_t fragments;          /* fragments stored as files */
    hsize_t indexed;            /* of those, with an index */
    hsize_t inline_fragments;   /* small fragments kept in the catalog: always scanned */
    hsize_t data_bytes;         /* bytes of the file fragments */
    hsize_t indexed_data_bytes; /* bytes of the indexed ones */
    hsize_t index_bytes;        /* bytes of their indexes */
    hsize_t unindexed_cells;    /* stored cells a query would scan */
} tessera_index_info_t;

herr_t tessera_Dget_index_info(hid_t dset_id, tessera_index_info_t *info);

/* The number of elements satisfying `expr`; negative on failure (a malformed expression:
 * the message on HDF5's error stack names the character where it goes wrong). */
hssize_t tessera_Fquery_count(hid_t loc_id, const char *expr, hid_t dxpl_id);

/* A new dataspace of the first variable's dataset (its current extent) selecting the
 * elements satisfying `expr` (a hyperslab selection, possibly empty): pass it to H5Dread
 * as the file space.  Close it with H5Sclose.  H5I_INVALID_HID on failure. */
hid_t tessera_Fquery(hid_t loc_id, const char *expr, hid_t dxpl_id);

#define TESSERA_MAX_RANK 32
typedef struct {
    char *dataset;                       /* full path of the first variable's dataset */
    int rank;
    hsize_t start[TESSERA_MAX_RANK];     /* the first variable's subarray: start, */
    hsize_t stride[TESSERA_MAX_RANK];    /* stride */
    hsize_t shape[TESSERA_MAX_RANK];     /* and shape (elements per dimension) */
    hsize_t count;                       /* elements satisfying the expression */
    hsize_t *positions;                  /* their row-major positions in `shape`, ascending:
                                          * element p is start + stride * unravel(p, shape) */
} tessera_query_result_t;

/* The hits as positions (for coordinates, masks and values without building an HDF5
 * selection).  Release with tessera_query_result_free. */
herr_t tessera_Fquery_positions(hid_t loc_id, const char *expr, hid_t dxpl_id, tessera_query_result_t *result);
void tessera_query_result_free(tessera_query_result_t *result);

#ifdef __cplusplus
}
#endif

#endif
