// value_bins.cc — see value_bins.h.
#include "engine/value_bins.h"

#include <algorithm>
#include <cmath>

namespace tessera {

double precision_key(double v, int precision) {
  if (v == 0 || !std::isfinite(v)) return v == 0 ? 0.0 : v;
  const long double a = std::fabs(static_cast<long double>(v));
  int e = static_cast<int>(std::floor(std::log10(static_cast<double>(a))));
  // log10 may be off by one next to a power of ten: make 10^e <= a < 10^(e+1).
  if (std::pow(10.0L, e) > a) --e;
  else if (std::pow(10.0L, e + 1) <= a) ++e;
  const int s = precision - 1 - e;  // key = floor(v * 10^s) / 10^s
  const long double scale = std::pow(10.0L, s);
  long double m = std::floor(static_cast<long double>(v) * scale);
  // The key is the double nearest to m / 10^s; where v is itself the double nearest to a
  // round number the product may land just below it: take the larger key then.
  auto key_of = [&](long double mm) { return static_cast<double>(mm / scale); };
  if (key_of(m + 1) <= v) m += 1;
  return key_of(m);
}

BinEdges BinEdges::from_sample(std::vector<double> sample, int precision, uint32_t max_bins) {
  BinEdges e;
  for (double& v : sample) v = precision_key(v, precision);
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
