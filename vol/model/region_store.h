// region_store.h — the connector side of region_ops.h: registration of the two
// operations, and the catalog records of old-style region references' selections.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>

#include "tessera/region_ops.h"

namespace tessera_vol {

class SharedFile;

void register_region_ops();    // connector initialize
void unregister_region_ops();  // connector terminate
// True (and the operation done) if `op_type` is one of region_ops.h's.
bool region_op(SharedFile& f, int op_type, void* args);
bool is_region_op(int op_type);
// The selection (H5Sencode2 bytes) stored under `id`; throws if there is none.
std::string region_selection(SharedFile& f, uint32_t id);

}  // namespace tessera_vol
