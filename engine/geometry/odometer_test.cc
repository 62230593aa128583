// for_each_index (odometer.h) against a model — the row-major linear index decoded by
// division — and strided_copy, which walks rows with it, against element-wise copying.
#include <gtest/gtest.h>

#include <vector>

#include "engine/geometry/odometer.h"
#include "engine/geometry/strided_copy.h"
#include "engine/testing/testutil.h"

using namespace tessera;

TEST(Odometer, VisitsEveryIndexInRowMajorOrder) {
  testutil::Rng rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int dims = static_cast<int>(rng.below(5));
    std::vector<uint64_t> counts(dims);
    uint64_t total = 1;
    for (auto& c : counts) total *= (c = 1 + rng.below(4));
    uint64_t k = 0;
    for_each_index(dims, counts.data(), [&](const uint64_t* idx) {
      uint64_t rem = k++;
      for (int d = dims - 1; d >= 0; --d) {
        ASSERT_EQ(idx[d], rem % counts[d]) << "visit " << k - 1 << " dim " << d;
        rem /= counts[d];
      }
    });
    EXPECT_EQ(k, total);  // dims == 0: once
  }
  uint64_t zero[3] = {2, 0, 3};
  int n = 0;
  for_each_index(3, zero, [&](const uint64_t*) { ++n; });
  EXPECT_EQ(n, 0);
}

TEST(Odometer, StridedCopyMatchesElementWiseCopy) {
  testutil::Rng rng(12);
  for (int trial = 0; trial < 100; ++trial) {
    const int rank = 1 + static_cast<int>(rng.below(4));
    const size_t es = 1 + rng.below(8);
    std::vector<uint64_t> shape(rank), sdims(rank), ddims(rank), so(rank), dof(rank);
    for (int d = 0; d < rank; ++d) {
      shape[d] = 1 + rng.below(5);
      sdims[d] = shape[d] + rng.below(3);
      ddims[d] = shape[d] + rng.below(3);
      so[d] = rng.below(sdims[d] - shape[d] + 1);
      dof[d] = rng.below(ddims[d] - shape[d] + 1);
    }
    std::vector<uint64_t> ss(rank), ds(rank);
    uint64_t sn = 1, dn = 1;
    for (int d = rank - 1; d >= 0; --d) {
      ss[d] = sn, sn *= sdims[d];
      ds[d] = dn, dn *= ddims[d];
    }
    std::vector<uint8_t> src(sn * es), dst(dn * es, 0xAB), want(dn * es, 0xAB);
    for (auto& b : src) b = static_cast<uint8_t>(rng.below(256));
    uint64_t s0 = 0, d0 = 0;
    for (int d = 0; d < rank; ++d) s0 += so[d] * ss[d], d0 += dof[d] * ds[d];
    strided_copy(rank, shape.data(), src.data() + s0 * es, ss.data(), dst.data() + d0 * es, ds.data(), es);
    // The model: every element of the shape, one at a time.
    uint64_t cells = 1;
    for (auto x : shape) cells *= x;
    for (uint64_t k = 0; k < cells; ++k) {
      uint64_t rem = k, si = s0, di = d0;
      for (int d = rank - 1; d >= 0; --d) {
        si += (rem % shape[d]) * ss[d];
        di += (rem % shape[d]) * ds[d];
        rem /= shape[d];
      }
      std::memcpy(&want[di * es], &src[si * es], es);
    }
    ASSERT_EQ(dst, want) << "trial " << trial;
  }
}
