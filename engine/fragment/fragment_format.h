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
// The one version written and read (docs/format.md, "Format versions"): versions 1 to 3
// came only from development builds and are refused.
constexpr uint32_t kFragVersion = 4;
// Block size of the checksums of unfiltered dense tiles: a read of part of a tile reads
// and verifies only the blocks it touches (64 KiB: the checksum table of a 1 GiB array
// is 128 KiB of footer; the extra bytes read around a box are at most two blocks per run).
constexpr uint64_t kCheckBlock = 64 << 10;
constexpr uint64_t kFragHeaderSize = 32;
constexpr uint64_t kFragTrailerSize = 40;
}  // namespace tessera
