// value_bins.h — how a fragment's values are cut into the bins of its index.
//
// FastBit's precision binning (the FastQuery paper's "precision=3"): a bin boundary is a
// number of `precision` significant decimal digits (0.123, 4.56e-7, 271000), so a query
// constant written with that many digits — the constants people write — falls between
// bins and the index answers it alone, without looking at a value.  Boundaries come from
// the values present (a sample of the fragment, sample_values), so empty ranges cost
// nothing; past `max_bins` distinct keys, neighbouring keys are merged into bins of about
// equal counts (equi-depth), keeping only boundaries that are still round numbers.
// Every bin records the true minimum and maximum of the values it got (index_format.h):
// the decision for a constant that does fall inside a bin is then still exact whenever
// the constant lies outside the bin's actual [min, max], and only otherwise are the
// bin's cells checked against their values ("candidate check").
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera {

// v floored to `precision` significant decimal digits (toward -inf): 0.1237 -> 0.123,
// -0.1237 -> -0.124, 123456 -> 123000 (precision 3); the result is the double nearest
// to that decimal number.  0 and infinities map to themselves.
double precision_key(double v, int precision);

class BinEdges {
 public:
  // From sampled non-NaN values: the distinct precision keys, merged to at most
  // max_bins bins.  An empty sample gives one bin.
  static BinEdges from_sample(std::vector<double> sample, int precision, uint32_t max_bins);
  // The same from the sample's keys (precision_key already applied, e.g. in parallel).
  static BinEdges from_keys(std::vector<double> keys, uint32_t max_bins);
  // Bins of the values: bin i holds v with lower(i) <= v < lower(i+1) (lower(0) = -inf).
  uint32_t bins() const { return static_cast<uint32_t>(lower_.size()) + 1; }
  // The bin of a non-NaN value.
  uint32_t bin_of(double v) const {
    // Branch-light binary search over the boundaries (at most max_bins - 1 of them).
    const double* b = lower_.data();
    size_t n = lower_.size(), lo = 0;
    while (n > 0) {
      const size_t half = n / 2;
      const bool right = b[lo + half] <= v;
      lo = right ? lo + half + 1 : lo;
      n = right ? n - half - 1 : half;
    }
    return static_cast<uint32_t>(lo);
  }
  const std::vector<double>& boundaries() const { return lower_; }

 private:
  std::vector<double> lower_;  // ascending; bin i+1 starts at lower_[i]
};

}  // namespace tessera
