// dcpl.h — maps an HDF5 dataset's datatype, dataspace and creation property list onto an
// engine Schema, validating what native HDF5 validates (H5Dcreate passes these unchecked).
#pragma once

#include <hdf5.h>

#include <string>

#include "vol/base/plist_cache.h"
#include "vol/types/stored_space.h"

#include "engine/schema/schema.h"

namespace tessera_vol {

// Rank of the engine array for an HDF5 dataspace: scalar spaces become rank 1, extent 1;
// null spaces rank 1, extent 0 (the engine needs rank >= 1).
int engine_rank(hid_t space);
// Current dims of `space` as engine coordinates (see engine_rank).
tessera::Coords engine_dims(hid_t space);

// Builds the schema for a new dataset.  Throws VolError (fail_arg / fail_unsupported)
// with a message naming the problem: unlimited dims without chunking, filters without
// chunking, chunk dims larger than fixed max dims, ...  Types holding variable-length
// data (vlen strings, sequences, nested) become variable-length arrays (Schema::var): a
// cell holds one element serialized by vlen.h.
//
// Filters: deflate -> kZlib (HDF5's own bytes; level 0 = no deflate), shuffle -> kShuffle, fletcher32 ->
// nothing (every engine tile is checksummed anyway).  Other filters (szip, nbit,
// scaleoffset, user filters) are not applied to the stored tiles, but they stay in the
// stored dcpl, so H5Dget_create_plist reports them as the user set them.
// `facts`: what the dcpl's encoding determines (plist_cache.h), read once per encoding.
tessera::Schema schema_from_dcpl(hid_t type, const SpaceExtent& space, hid_t dcpl, const DcplFacts& facts);
// Drops the element facts schema_from_dcpl keeps per predefined type (connector terminate:
// the library's type IDs die with it).
void clear_element_facts();

// The tile and cell orders of a new dataset (docs/layouts.md, tessera::parse_layout): the
// name tessera_Pset_layout put in the dcpl, else `file_default` (the connector's layout=
// setting; empty: row-major).  Throws VolError naming an unknown or unsupported layout.  Compact datasets keep row-major (one record,
// no tiles to order).
void apply_layout(hid_t dcpl, const std::string& file_default, tessera::Schema* s);

// Encodes a property list / type (H5Pencode2, H5Tencode) to bytes; dataspaces:
// stored_space.h encode_space.
std::string encode_plist(hid_t plist);
std::string encode_type(hid_t type);

// dcpl: the list's H5Pencode2 bytes, as a dataset create stores them.  For the library's
// default dcpl (and H5P_DEFAULT): the bytes encoded at the first such create in this
// process, as native makes every dataset created with the default list from a copy of it
// made at library init (H5Dint.c H5D_def_dset for the layout, fill value, filters and
// external files; H5CX.c for the object header flags and the no-attributes hint), so a
// change the application makes to the default list later is not seen by either.  Native
// still reports the list as it is now from the handle's H5Dget_create_plist; when one of
// the properties that report shows (times tracked, attribute creation order, attribute
// phase change, no-attributes hint) differs from the kept bytes, *default_changed is set
// and the caller makes the handle's dcpl from the list.  Encoding is two passes over some
// 30 properties (issue 20: 17,000 instructions, an eighth of creating a small dataset);
// the check is four property lookups.
std::string dcpl_encoding(hid_t dcpl, bool* default_changed);
// Forgets the kept default encoding (connector terminate: the library's lists die with it).
void clear_default_dcpl();

}  // namespace tessera_vol
