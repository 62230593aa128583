// Fragment identity and order.  Fragments form a total order: timestamp, then writer
// rank, then the writer's sequence number, then the consolidation generation; newer wins.
// A consolidated fragment takes the id of the newest fragment it replaced with gen + 1, so
// it sorts right after everything it replaced and before anything newer.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <tuple>

namespace tessera {

struct FragmentId {
  uint64_t ts = 0;    // nanoseconds since the epoch, made strictly increasing per array
  uint32_t rank = 0;  // writer rank (MPI rank; 0 for serial writers)
  uint32_t seq = 0;   // per-writer sequence
  uint32_t gen = 0;   // consolidation generation

  auto tie() const { return std::tie(ts, rank, seq, gen); }
  bool operator<(const FragmentId& o) const { return tie() < o.tie(); }
  bool operator==(const FragmentId& o) const { return tie() == o.tie(); }
  bool operator!=(const FragmentId& o) const { return !(*this == o); }

  // File name stem: 16 + 8 + 8 + 8 hex digits; sorts like the id.
  // (A plain loop, not snprintf: inline fragments' catalog keys are built per write.)
  std::string name() const {
    std::string b(43, '-');
    auto hex = [&](size_t at, uint64_t v, int digits) {
      static const char kDigits[] = "0123456789abcdef";
      for (int i = digits - 1; i >= 0; --i, v >>= 4) b[at + i] = kDigits[v & 15];
    };
    hex(0, ts, 16);
    hex(17, rank, 8);
    hex(26, seq, 8);
    hex(35, gen, 8);
    return b;
  }
  static bool parse(const std::string& stem, FragmentId* out) {
    unsigned long long ts;
    unsigned r, s, g;
    int used = 0;
    if (stem.size() != 43) return false;
    if (std::sscanf(stem.c_str(), "%16llx-%8x-%8x-%8x%n", &ts, &r, &s, &g, &used) != 4 || used != 43)
      return false;
    *out = FragmentId{ts, r, s, g};
    return true;
  }
};

}  // namespace tessera
