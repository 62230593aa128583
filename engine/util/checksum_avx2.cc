// xxhash's XXH3, compiled into this file for AVX2 (engine/CMakeLists.txt builds it with
// -mavx2 on x86-64; XXH_INLINE_ALL makes every xxhash function a private copy here, so
// nothing clashes with the library's SSE2 build).  checksum.cc calls in only when the CPU
// has AVX2 (checked there: no code of this file runs before).  Without the flag (other
// CPUs' builds) compiled() is false.  The functions: checksum_form.inc.
#define TESSERA_XXH_FORM xxh_avx2
#if defined(__AVX2__)
#define XXH_INLINE_ALL
#include <xxhash.h>
#define TESSERA_XXH_FORM_COMPILED 1
#else
#define TESSERA_XXH_FORM_COMPILED 0
#endif
#include "engine/util/checksum_form.inc"
