// xxhash's XXH3, compiled into this file for AVX-512 (engine/CMakeLists.txt builds it
// with -mavx512f on x86-64; XXH_INLINE_ALL makes every xxhash function a private copy
// here, as in checksum_avx2.cc).  checksum.cc calls in only when the CPU has AVX-512F
// (checked there: no code of this file runs before): 64-byte lanes, ~1.2x the AVX2
// form's speed on this machine's CPU (issue 20).  Without the flag compiled() is false.
#include "engine/checksum.h"

#if defined(__AVX512F__)
#define XXH_INLINE_ALL
// GCC 12's own AVX-512 intrinsics (_mm512_undefined_epi32: `__m512i __Y = __Y;`, an
// intentionally undefined value) trip -W(maybe-)uninitialized where they are inlined into
// xxhash's functions, in this file: a false positive of the compiler's header, off here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <xxhash.h>

namespace tessera::xxh_avx512 {

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

}  // namespace tessera::xxh_avx512

#else

namespace tessera::xxh_avx512 {
bool compiled() { return false; }
uint64_t hash(const void*, size_t) { return 0; }
void reset(void*) {}
void update(void*, const void*, size_t) {}
uint64_t digest(void*) { return 0; }
}  // namespace tessera::xxh_avx512

#endif
