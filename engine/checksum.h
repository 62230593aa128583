// Checksums for tiles and metadata: XXH3-64 (libxxhash) — fast enough (~20 GB/s) that
// every tile is verified on every read.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tessera {
uint64_t checksum64(const void* data, size_t n);
}  // namespace tessera
