// Fragment identity and order.  Fragments form a total order: timestamp, then writer
// rank, then the writer's sequence number, then the consolidation generation; newer wins.
// A consolidated fragment takes the id of the newest fragment it replaced with gen + 1, so
// it sorts right after everything it replaced and before anything newer.
#pragma once
#include <cstdint>
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
  // Accepts exactly what name() writes: lowercase hex digits and dashes at 16, 25 and 34.
  // (Not sscanf's %x, which also takes a leading space, '+' or "0x": a file named so would
  // parse to an id whose name() is another file, and be taken for that fragment.)
  static bool parse(const std::string& stem, FragmentId* out) {
    if (stem.size() != 43) return false;
    auto hex = [&](size_t at, int digits, uint64_t* v) {
      *v = 0;
      for (int i = 0; i < digits; ++i) {
        char c = stem[at + i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return false;
        *v = *v << 4 | static_cast<uint64_t>(d);
      }
      return true;
    };
    uint64_t ts, r, s, g;
    if (stem[16] != '-' || stem[25] != '-' || stem[34] != '-') return false;
    if (!hex(0, 16, &ts) || !hex(17, 8, &r) || !hex(26, 8, &s) || !hex(35, 8, &g)) return false;
    *out = FragmentId{ts, static_cast<uint32_t>(r), static_cast<uint32_t>(s), static_cast<uint32_t>(g)};
    return true;
  }
};

}  // namespace tessera
