#include "engine/checksum.h"

#include <xxhash.h>

namespace tessera {

// Seed 0: the value is part of the on-disk format (docs/format.md), so it must never change.
#ifdef TESSERA_FUZZING
// Fuzzing builds only (CMake's TESSERA_FUZZ): a constant, so bytes a fuzzer mutates are
// not rejected by the checksum in front of every parser (fuzz/fuzz_util.h).
uint64_t checksum64(const void*, size_t) { return 0; }
#else
uint64_t checksum64(const void* data, size_t n) { return XXH3_64bits(data, n); }
#endif

}  // namespace tessera
