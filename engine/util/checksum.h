// Checksums for tiles and metadata: XXH3-64 (libxxhash) — fast enough (~20 GB/s) that
// every tile is verified on every read.  On x86-64 CPUs with AVX2 the same function runs
// as xxhash's AVX2 form (checksum_avx2.cc, picked once per process): twice the SSE2
// library's speed on bytes in cache (15 -> 30 GB/s here), 1.6x from memory; with
// AVX-512F, its AVX-512 form (checksum_avx512.cc), ~1.2x the AVX2 one — the
// checksum pass is most of what a dense write or a cold read does beyond the kernel's
// copy (issue 20).  The values never depend on the form: they are part of the format.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tessera {
uint64_t checksum64(const void* data, size_t n);

// Bytes that lie in several buffers, in order (a check block read scattered over the
// caller's rows and a scratch buffer).
struct ByteSpan {
  const void* data;
  size_t len;
};
// The checksum of the spans' bytes concatenated: equal to checksum64 over one buffer
// holding them (XXH3's streaming form gives the one-shot value).
uint64_t checksum64_spans(const ByteSpan* spans, size_t n);

// checksum64 of bytes that arrive piece by piece (XXH3's streaming state, kept here
// as bytes so that either form can own it).
class Checksum64Stream {
 public:
  Checksum64Stream() { reset(); }
  void reset();
  void update(const void* p, size_t n);
  uint64_t digest();  // of everything since the last reset; the state stays usable

  static constexpr size_t kStateBytes = 1024;  // >= sizeof(XXH3_state_t), asserted

 private:
  alignas(64) unsigned char state_[kStateBytes];
};

namespace xxh_avx2 {  // checksum_avx2.cc: the same functions, built for AVX2
bool compiled();      // built for AVX2 (x86-64); the CPU's support is checked apart
uint64_t hash(const void* p, size_t n);
void reset(void* state);
void update(void* state, const void* p, size_t n);
uint64_t digest(void* state);
}  // namespace xxh_avx2
namespace xxh_avx512 {  // checksum_avx512.cc: the same functions, built for AVX-512F
bool compiled();
uint64_t hash(const void* p, size_t n);
void reset(void* state);
void update(void* state, const void* p, size_t n);
uint64_t digest(void* state);
}  // namespace xxh_avx512
}  // namespace tessera
