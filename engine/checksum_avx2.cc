// xxhash's XXH3, compiled into this file for AVX2 (engine/CMakeLists.txt builds it with
// -mavx2 on x86-64; XXH_INLINE_ALL makes every xxhash function a private copy here, so
// nothing clashes with the library's SSE2 build).  checksum.cc calls in only when the CPU
// has AVX2 (checked there: no code of this file runs before).  Without the flag (other
// CPUs' builds) compiled() is false.
#include "engine/checksum.h"

#if defined(__AVX2__)
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace tessera::xxh_avx2 {

static_assert(sizeof(XXH3_state_t) <= Checksum64Stream::kStateBytes, "XXH3 state does not fit");

namespace {
XXH3_state_t* st(void* s) { return static_cast<XXH3_state_t*>(s); }
}  // namespace

bool compiled() { return true; }
uint64_t hash(const void* p, size_t n) { return XXH3_64bits(p, n); }
void reset(void* s) {
  XXH3_INITSTATE(st(s));
  XXH3_64bits_reset(st(s));
}
void update(void* s, const void* p, size_t n) { XXH3_64bits_update(st(s), p, n); }
uint64_t digest(void* s) { return XXH3_64bits_digest(st(s)); }

}  // namespace tessera::xxh_avx2

#else

namespace tessera::xxh_avx2 {
bool compiled() { return false; }
uint64_t hash(const void*, size_t) { return 0; }
void reset(void*) {}
void update(void*, const void*, size_t) {}
uint64_t digest(void*) { return 0; }
}  // namespace tessera::xxh_avx2

#endif
