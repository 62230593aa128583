// default_plists.h — properties native HDF5 takes from a library *default* list without
// reading the list.
//
// Native reads a few properties of H5P_LINK_CREATE_DEFAULT and H5P_DATASET_ACCESS_DEFAULT
// once, at library init (H5CX.c, H5CX_def_*_cache), and answers from that copy whenever
// an API call carries the default list; an attribute created with
// H5P_ATTRIBUTE_CREATE_DEFAULT gets H5F_DEFAULT_CSET (H5Aint.c).  An application that
// changes a default list with H5Pset_* therefore changes nothing for these properties in
// native HDF5.  We answer the same way: for the library's default lists (and H5P_DEFAULT)
// the library's default values, for any other list what it holds.  Besides matching
// native, this spares a property lookup per create (issue 20: about 1,300 instructions
// each, four to six per dataset of a typical create).
#pragma once

#include <hdf5.h>

#include <string>

namespace tessera_vol {

// lcpl: create missing intermediate groups?  (default: no)
bool lcpl_intermediate(hid_t lcpl);
// lcpl: character set of the link's name.  (default: ASCII)
H5T_cset_t lcpl_cset(hid_t lcpl);
// acpl: character set of the attribute's name.  (default: ASCII)
H5T_cset_t acpl_cset(hid_t acpl);
// dapl: the external file and VDS prefixes as the list holds them (default: none, "").
// The HDF5_EXTFILE_PREFIX / HDF5_VDS_PREFIX environment variables are not applied here.
std::string dapl_efile_prefix(hid_t dapl);
std::string dapl_vds_prefix(hid_t dapl);

}  // namespace tessera_vol
