#include "engine/util/checksum.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t's size (the library's own header)
#include <xxhash.h>

namespace tessera {

static_assert(sizeof(XXH3_state_t) <= Checksum64Stream::kStateBytes, "XXH3 state does not fit");
static_assert(alignof(XXH3_state_t) <= 64, "XXH3 state alignment");

namespace {
// Decided once: every state a process makes is then handled by one form only.
enum class Form { kLib, kAvx2, kAvx512 };
Form pick() {
  if (xxh_avx512::compiled() && __builtin_cpu_supports("avx512f")) return Form::kAvx512;
  if (xxh_avx2::compiled() && __builtin_cpu_supports("avx2")) return Form::kAvx2;
  return Form::kLib;
}
Form form() {
  static const Form f = pick();
  return f;
}
XXH3_state_t* lib_state(unsigned char* s) { return reinterpret_cast<XXH3_state_t*>(s); }
}  // namespace

// Seed 0: the value is part of the on-disk format (docs/format.md), so it must never change.
#ifdef TESSERA_FUZZING
// Fuzzing builds only (CMake's TESSERA_FUZZ): a constant, so bytes a fuzzer mutates are
// not rejected by the checksum in front of every parser (fuzz/fuzz_util.h).
uint64_t checksum64(const void*, size_t) { return 0; }
uint64_t checksum64_spans(const ByteSpan*, size_t) { return 0; }
void Checksum64Stream::reset() {}
void Checksum64Stream::update(const void*, size_t) {}
uint64_t Checksum64Stream::digest() { return 0; }
#else
uint64_t checksum64(const void* data, size_t n) {
  switch (form()) {
    case Form::kAvx512: return xxh_avx512::hash(data, n);
    case Form::kAvx2: return xxh_avx2::hash(data, n);
    default: return XXH3_64bits(data, n);
  }
}

uint64_t checksum64_spans(const ByteSpan* spans, size_t n) {
  if (n == 1) return checksum64(spans[0].data, spans[0].len);
  Checksum64Stream st;
  for (size_t i = 0; i < n; ++i) st.update(spans[i].data, spans[i].len);
  return st.digest();
}

void Checksum64Stream::reset() {
  switch (form()) {
    case Form::kAvx512: return xxh_avx512::reset(state_);
    case Form::kAvx2: return xxh_avx2::reset(state_);
    default:
      XXH3_INITSTATE(lib_state(state_));
      XXH3_64bits_reset(lib_state(state_));
  }
}

void Checksum64Stream::update(const void* p, size_t n) {
  switch (form()) {
    case Form::kAvx512: return xxh_avx512::update(state_, p, n);
    case Form::kAvx2: return xxh_avx2::update(state_, p, n);
    default: XXH3_64bits_update(lib_state(state_), p, n);
  }
}

uint64_t Checksum64Stream::digest() {
  switch (form()) {
    case Form::kAvx512: return xxh_avx512::digest(state_);
    case Form::kAvx2: return xxh_avx2::digest(state_);
    default: return XXH3_64bits_digest(lib_state(state_));
  }
}
#endif

}  // namespace tessera
