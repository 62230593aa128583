/* tessera.h — the tessera connector's own operations on HDF5 datasets (libtessera_api).
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

#ifdef __cplusplus
}
#endif

#endif
