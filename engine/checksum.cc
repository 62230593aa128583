#include "engine/checksum.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack (the library's own header)
#include <xxhash.h>

namespace tessera {

// Seed 0: the value is part of the on-disk format (docs/format.md), so it must never change.
#ifdef TESSERA_FUZZING
// Fuzzing builds only (CMake's TESSERA_FUZZ): a constant, so bytes a fuzzer mutates are
// not rejected by the checksum in front of every parser (fuzz/fuzz_util.h).
uint64_t checksum64(const void*, size_t) { return 0; }
uint64_t checksum64_spans(const ByteSpan*, size_t) { return 0; }
#else
uint64_t checksum64(const void* data, size_t n) { return XXH3_64bits(data, n); }

uint64_t checksum64_spans(const ByteSpan* spans, size_t n) {
  if (n == 1) return XXH3_64bits(spans[0].data, spans[0].len);
  XXH3_state_t st;
  XXH3_INITSTATE(&st);
  XXH3_64bits_reset(&st);
  for (size_t i = 0; i < n; ++i) XXH3_64bits_update(&st, spans[i].data, spans[i].len);
  return XXH3_64bits_digest(&st);
}
#endif

}  // namespace tessera
