// A filter pipeline as stored in a fragment footer, then a stored tile decoded through
// it (engine/tile/filter.h: shuffle, deflate, zstd, lz4, zlib).  Input: [u32 raw size]
// [u32 pipeline length][pipeline][stored bytes].  The raw size is what a footer claims,
// capped at 16 MiB here (a footer's raw sizes are checked against the tile's cells by
// the fragment parser, which fuzz_fragment covers).
#include "engine/util/bytes.h"
#include "engine/tile/filter.h"
#include "fuzz/fuzz_util.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  uint32_t raw;
  std::memcpy(&raw, data, 4);
  raw &= (16u << 20) - 1;
  fuzz::Parts parts(data + 4, size - 4);
  std::vector<uint8_t> pipe;
  if (!parts.next(&pipe)) return 0;
  std::vector<uint8_t> stored = parts.rest();
  fuzz::expect_clean([&] {
    ByteReader r(pipe.data(), pipe.size(), "pipeline");
    FilterPipeline p = FilterPipeline::deserialize(r);
    std::vector<uint8_t> out;
    p.decode(stored.data(), stored.size(), raw, out, "tile");
    if (out.size() != raw) std::abort();  // decode promises exactly raw_size bytes
  });
  return 0;
}
