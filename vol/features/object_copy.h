// object_copy.h — deep copies of objects (H5Ocopy), within a tessera file or between two.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/catalog/catalog.h"
#include "vol/model/object_model.h"

namespace tessera_vol {

// Copies object `from` of `src` (a group with everything under it, a dataset with its
// data, a committed datatype) into `dst` as native H5Ocopy does under `flags`
// (H5O_COPY_*: shallow hierarchy, soft and external links expanded, references expanded,
// attributes left out).  Returns the new object's id; its records and those of every
// object below it go into `b`, which the caller links and commits.  new_arrays receives
// the engine arrays created, for the caller to remove if it does not commit.
uint64_t copy_object(SharedFile& src, uint64_t from, SharedFile& dst, tessera::CatalogBatch& b, unsigned flags,
                     std::vector<uint64_t>* new_arrays);

}  // namespace tessera_vol
