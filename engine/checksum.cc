#include "engine/checksum.h"

#include <xxhash.h>

namespace tessera {

// Seed 0: the value is part of the on-disk format (docs/format.md), so it must never change.
uint64_t checksum64(const void* data, size_t n) { return XXH3_64bits(data, n); }

}  // namespace tessera
