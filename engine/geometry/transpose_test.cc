// transpose_copy (transpose.h) against the element-by-element definition: every element
// size (blocked: 1, 2, 4, 8; not: 3), full and partial blocks, strides wider than the
// copied extents (a plane of a tile into a box of a larger buffer), untouched elements
// around the copy left as they were.
#include "engine/geometry/transpose.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tessera {
namespace {

TEST(Transpose, MatchesElementwiseCopy) {
  const size_t sizes[] = {1, 2, 3, 4, 8};
  const uint64_t extents[][2] = {{1, 1}, {16, 16}, {8, 8}, {17, 5}, {5, 33}, {64, 64}, {31, 47}};
  for (size_t es : sizes)
    for (const auto& e : extents) {
      const uint64_t ni = e[0], nj = e[1], ss = ni + 5, ds = nj + 7;
      // src: element (i, j) at i + j * ss; bytes numbered so that neighbours differ.
      std::vector<uint8_t> src((ni + nj * ss) * es);
      for (size_t k = 0; k < src.size(); ++k) src[k] = static_cast<uint8_t>(k * 131 + k / 251);
      std::vector<uint8_t> dst(ni * ds * es, 0xee), want = dst;
      for (uint64_t i = 0; i < ni; ++i)
        for (uint64_t j = 0; j < nj; ++j)
          for (size_t b = 0; b < es; ++b) want[(i * ds + j) * es + b] = src[(i + j * ss) * es + b];
      transpose_copy(dst.data(), ds, src.data(), ss, ni, nj, es);
      ASSERT_EQ(dst, want) << "es " << es << " ni " << ni << " nj " << nj;
    }
}

}  // namespace
}  // namespace tessera
