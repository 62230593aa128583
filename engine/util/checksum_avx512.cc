// xxhash's XXH3, compiled into this file for AVX-512 (engine/CMakeLists.txt builds it
// with -mavx512f on x86-64; XXH_INLINE_ALL makes every xxhash function a private copy
// here, as in checksum_avx2.cc).  checksum.cc calls in only when the CPU has AVX-512F
// (checked there: no code of this file runs before): 64-byte lanes, ~1.2x the AVX2
// form's speed on this machine's CPU (issue 20).  Without the flag compiled() is false.
// The functions: checksum_form.inc.
#define TESSERA_XXH_FORM xxh_avx512
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
#define TESSERA_XXH_FORM_COMPILED 1
#else
#define TESSERA_XXH_FORM_COMPILED 0
#endif
#include "engine/util/checksum_form.inc"
