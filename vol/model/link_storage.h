// link_storage.h — how native HDF5 would be storing a group's links, so that
// H5Gget_info reports the same storage type (symbol table, compact or dense).
//
// Tessera stores every link as one catalog record whatever the group, but the storage
// type is part of what HDF5 reports, and it has history: a "new-style" group (file
// created with a low library-version bound of 1.8 or later, or a gcpl tracking link
// creation order or with filters — H5G__obj_create_real) starts compact, turns dense
// when a link is added to a group holding max_compact links, and turns compact again
// when removing a link leaves fewer than min_dense (H5Pset_link_phase_change).  Other
// groups are symbol tables forever.  The state is the catalog key `gs/<hex16 group>`
// ('s', 'c' or 'd', docs/format.md); a group created before the key existed has none
// and is reported as before (derived from its creation-order tracking and link count).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>

#include "engine/catalog/catalog.h"

namespace tessera_vol {

class SharedFile;

// A new group `group` with creation plist `gcpl` (the fcpl for the root group).
void link_storage_created(SharedFile& f, tessera::CatalogBatch& b, uint64_t group, hid_t gcpl);
// Before batch b adds one link to `group` (the group's links so far are committed).
void link_storage_adding(SharedFile& f, tessera::CatalogBatch& b, uint64_t group);
// Batch b removes one committed link of `group`.
void link_storage_removing(SharedFile& f, tessera::CatalogBatch& b, uint64_t group);
// Batch b deletes the group itself.
void link_storage_deleted(tessera::CatalogBatch& b, uint64_t group);
// The recorded storage type; nullopt for a group from before the record existed.
std::optional<H5G_storage_type_t> link_storage(SharedFile& f, uint64_t group);

}  // namespace tessera_vol
