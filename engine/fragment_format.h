// Fixed parts of a fragment file (docs/format.md, "Fragment files"):
//   header  32 bytes: "TSRAFRAG", u32 version, u32 flags, 16 reserved bytes
//   blobs   filtered tile bytes, in the order they were written
//   footer  FragmentMeta::serialize()
//   trailer 40 bytes: u64 footer offset, u64 footer size, u64 XXH3 of footer,
//           u32 version, u32 reserved, "TSRAFEND"
#pragma once
#include <cstdint>

namespace tessera {
constexpr char kFragMagic[8] = {'T', 'S', 'R', 'A', 'F', 'R', 'A', 'G'};
constexpr char kFragEndMagic[8] = {'T', 'S', 'R', 'A', 'F', 'E', 'N', 'D'};
constexpr uint32_t kFragVersion = 1;
constexpr uint64_t kFragHeaderSize = 32;
constexpr uint64_t kFragTrailerSize = 40;
}  // namespace tessera
