// Checksums for tiles and metadata: XXH3-64 (libxxhash) — fast enough (~20 GB/s) that
// every tile is verified on every read.
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
}  // namespace tessera
