// Tests for checked.h against products computed in 128 bits (an independent model).
#include "engine/util/checked.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera {
namespace {

std::optional<uint64_t> model(const std::vector<uint64_t>& v) {
  unsigned __int128 p = 1;
  bool over = false;
  for (uint64_t x : v) {
    if (x == 0) return 0;
    if (over) continue;
    p *= x;
    if (p >> 64) over = true;
  }
  if (over) return std::nullopt;
  return static_cast<uint64_t>(p);
}

TEST(Checked, ProductMatchesA128BitModel) {
  const std::vector<std::vector<uint64_t>> cases = {
      {},
      {7},
      {1804289383, 846930886, 1681692777},  // netCDF's tst_chunks2: 2.6e27
      {4294967296ull, 4294967295ull},       // 2^64 - 2^32: fits
      {4294967296ull, 4294967296ull},       // 2^64: does not
      {~0ull - 1, ~0ull - 1},
      {~0ull - 1, 0, ~0ull - 1},            // a zero wins over an overflow
      {2, 1ull << 63},
      {1ull << 32, 1ull << 31},             // 2^63
  };
  for (const auto& v : cases) EXPECT_EQ(checked_product(v.data(), v.size()), model(v));
  std::vector<uint64_t> rank32(32, 4);  // 2^64
  EXPECT_EQ(checked_product(rank32.data(), 32), std::nullopt);
  rank32[0] = 2;  // 2^63
  EXPECT_EQ(checked_product(rank32.data(), 32), uint64_t{1} << 63);
}

TEST(Checked, MulAndAdd) {
  EXPECT_EQ(checked_mul(1ull << 32, (1ull << 32) - 1), (1ull << 32) * ((1ull << 32) - 1));
  EXPECT_EQ(checked_mul(1ull << 32, 1ull << 32), std::nullopt);
  EXPECT_EQ(checked_mul(0, ~0ull), 0u);
  EXPECT_EQ(checked_add(~0ull - 1, 1), ~0ull);
  EXPECT_EQ(checked_add(~0ull, 1), std::nullopt);
}

}  // namespace
}  // namespace tessera
