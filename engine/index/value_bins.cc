// value_bins.cc — see value_bins.h.
#include "engine/index/value_bins.h"

#include <algorithm>
#include <cmath>

namespace tessera {

namespace {

// 10^k as long double for every exponent a double's keys need (|k| <= 350): computed once,
// so a key costs a log10 and two lookups instead of two powl calls.
constexpr int kMaxExp = 350;
const long double* pow10_table() {
  static const std::vector<long double> t = [] {
    std::vector<long double> v(2 * kMaxExp + 1);
    for (int k = -kMaxExp; k <= kMaxExp; ++k) v[k + kMaxExp] = std::pow(10.0L, k);
    return v;
  }();
  return t.data() + kMaxExp;
}

}  // namespace

double precision_key(double v, int precision) {
  if (v == 0 || !std::isfinite(v)) return v == 0 ? 0.0 : v;
  const long double* p10 = pow10_table();
  const long double a = std::fabs(static_cast<long double>(v));
  int e = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  // log10 may be off by one next to a power of ten: make 10^e <= a < 10^(e+1).
  if (p10[e] > a) --e;
  else if (p10[e + 1] <= a) ++e;
  const int s = precision - 1 - e;  // key = floor(v * 10^s) / 10^s  (|s| <= 340)
  const long double scale = p10[s];
  long double m = std::floor(static_cast<long double>(v) * scale);
  // The key is the double nearest to m / 10^s; where v is itself the double nearest to a
  // round number the product may land just below it: take the larger key then.
  auto key_of = [&](long double mm) { return static_cast<double>(mm / scale); };
  if (key_of(m + 1) <= v) m += 1;
  return key_of(m);
}

BinEdges BinEdges::from_sample(std::vector<double> sample, int precision, uint32_t max_bins) {
  for (double& v : sample) v = precision_key(v, precision);
  return from_keys(std::move(sample), max_bins);
}

BinEdges BinEdges::from_keys(std::vector<double> sample, uint32_t max_bins) {
  BinEdges e;
  std::sort(sample.begin(), sample.end());
  // Distinct keys with their counts.
  std::vector<std::pair<double, uint64_t>> keys;
  for (double k : sample) {
    if (!keys.empty() && keys.back().first == k) ++keys.back().second;
    else keys.push_back({k, 1});
  }
  // Each boundary opens a bin; bin 0 (below the first) holds values below every sampled
  // key.  Past max_bins, neighbouring keys merge into groups of about equal counts.
  const uint64_t groups = max_bins > 1 ? max_bins - 1 : 1;
  if (keys.size() <= groups) {
    for (auto& k : keys) e.lower_.push_back(k.first);
    return e;
  }
  const uint64_t total = sample.size();
  const uint64_t target = (total + groups - 1) / groups;
  uint64_t in_group = 0;
  for (auto& k : keys) {
    if (e.lower_.empty() || in_group >= target) {
      e.lower_.push_back(k.first);
      in_group = 0;
    }
    in_group += k.second;
  }
  return e;
}

}  // namespace tessera
