// compute_stats against an independent scalar model: min/max over the non-NaN cells,
// for lengths around the vectorized loop's lane count and NaNs anywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/fragment/tile_stats.h"

namespace tessera {
namespace {

template <class T>
void check_against_model(ElementKind kind, const std::vector<T>& v) {
  Schema s;
  s.kind = kind;
  s.elem_size = sizeof(T);
  TileStats st = compute_stats(s, reinterpret_cast<const uint8_t*>(v.data()), v.size());
  EXPECT_EQ(st.count, v.size());
  bool any = false;
  T lo{}, hi{};
  for (T x : v) {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(x)) continue;
    if (!any || x < lo) lo = x;
    if (!any || hi < x) hi = x;
    any = true;
  }
  ASSERT_EQ(st.has_minmax, any) << "n=" << v.size();
  if (!any) return;
  T got_lo, got_hi;
  std::memcpy(&got_lo, st.min, sizeof(T));
  std::memcpy(&got_hi, st.max, sizeof(T));
  EXPECT_EQ(got_lo, lo) << "n=" << v.size();
  EXPECT_EQ(got_hi, hi) << "n=" << v.size();
}

TEST(TileStats, IntegersMatchScalarModel) {
  std::mt19937_64 rng(7);
  // The loop takes 64 bytes per step (64 int8 ... 8 int64): lengths around those steps.
  for (size_t n : {1u, 2u, 7u, 8u, 9u, 15u, 16u, 17u, 31u, 33u, 63u, 64u, 65u, 100u, 129u, 4099u}) {
    std::vector<int8_t> i8(n);
    for (auto& x : i8) x = static_cast<int8_t>(rng());
    check_against_model(ElementKind::kInt, i8);
    std::vector<uint8_t> u8(n);
    for (auto& x : u8) x = static_cast<uint8_t>(rng());
    check_against_model(ElementKind::kUInt, u8);
    std::vector<int16_t> i16(n);
    for (auto& x : i16) x = static_cast<int16_t>(rng());
    check_against_model(ElementKind::kInt, i16);
    std::vector<uint32_t> u32(n);
    for (auto& x : u32) x = static_cast<uint32_t>(rng());
    check_against_model(ElementKind::kUInt, u32);
    std::vector<uint64_t> u64(n);
    for (auto& x : u64) x = rng();
    check_against_model(ElementKind::kUInt, u64);
    std::vector<int32_t> a(n);
    for (auto& x : a) x = static_cast<int32_t>(rng());
    check_against_model(ElementKind::kInt, a);
    std::vector<uint16_t> b(n);
    for (auto& x : b) x = static_cast<uint16_t>(rng());
    check_against_model(ElementKind::kUInt, b);
    std::vector<int64_t> c(n);
    for (auto& x : c) x = static_cast<int64_t>(rng());
    check_against_model(ElementKind::kInt, c);
  }
}

TEST(TileStats, FloatsSkipNaNsAnywhere) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1e6, 1e6);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (size_t n : {1u, 5u, 8u, 9u, 16u, 17u, 33u, 40u, 1000u}) {
    for (int pattern = 0; pattern < 4; ++pattern) {
      std::vector<double> d(n);
      for (auto& x : d) x = u(rng);
      if (pattern == 1) d[0] = nan;                                       // leading NaN
      if (pattern == 2) for (size_t i = 0; i < n; i += 3) d[i] = nan;     // scattered
      if (pattern == 3) for (auto& x : d) x = nan;                        // all NaN
      check_against_model(ElementKind::kFloat, d);
      std::vector<float> f(d.begin(), d.end());
      check_against_model(ElementKind::kFloat, f);
    }
  }
}

}  // namespace
}  // namespace tessera
