#include "engine/tile_stats.h"

#include <cmath>

namespace tessera {

namespace {

template <class T>
T load(const uint8_t* p, bool swap) {
  T v;
  std::memcpy(&v, p, sizeof v);
  if (swap) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof v);
    for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
    std::memcpy(&v, b, sizeof v);
  }
  return v;
}

template <class T>
void store(TileStats* st, T lo, T hi) {
  st->has_minmax = true;
  std::memcpy(st->min, &lo, sizeof(T));
  std::memcpy(st->max, &hi, sizeof(T));
}

// Native byte order, the common case: every tile of a load passes through here, so the
// loop keeps 16 independent lanes without branches, which the compiler vectorizes (at
// -O2 too).  A NaN never replaces a lane ("v < lo" is false), as the scalar rule skips it;
// the lanes start at the first non-NaN value.
template <class T>
void minmax_native(const uint8_t* data, uint64_t n, TileStats* st) {
  uint64_t first = 0;
  T v0{};
  for (; first < n; ++first) {
    std::memcpy(&v0, data + first * sizeof(T), sizeof(T));
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v0)) continue;
    }
    break;
  }
  if (first == n) return;  // all NaN: no min/max
  constexpr int kLanes = 16;
  T lo[kLanes], hi[kLanes];
  for (int j = 0; j < kLanes; ++j) lo[j] = hi[j] = v0;
  uint64_t i = first;
  for (; i + kLanes <= n; i += kLanes) {
    T v[kLanes];
    std::memcpy(v, data + i * sizeof(T), sizeof v);
    for (int j = 0; j < kLanes; ++j) {
      lo[j] = v[j] < lo[j] ? v[j] : lo[j];
      hi[j] = hi[j] < v[j] ? v[j] : hi[j];
    }
  }
  for (; i < n; ++i) {
    T v;
    std::memcpy(&v, data + i * sizeof(T), sizeof v);
    lo[0] = v < lo[0] ? v : lo[0];
    hi[0] = hi[0] < v ? v : hi[0];
  }
  for (int j = 1; j < kLanes; ++j) {
    lo[0] = lo[j] < lo[0] ? lo[j] : lo[0];
    hi[0] = hi[0] < hi[j] ? hi[j] : hi[0];
  }
  store(st, lo[0], hi[0]);
}

template <class T>
void minmax(const uint8_t* data, uint64_t n, bool swap, TileStats* st) {
  if (!swap) return minmax_native<T>(data, n, st);
  bool any = false;
  T lo{}, hi{};
  for (uint64_t i = 0; i < n; ++i) {
    T v = load<T>(data + i * sizeof(T), swap);
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) continue;
    }
    if (!any) {
      lo = hi = v;
      any = true;
    } else {
      if (v < lo) lo = v;
      if (hi < v) hi = v;
    }
  }
  if (any) store(st, lo, hi);
}

}  // namespace

TileStats compute_stats(const Schema& s, const uint8_t* data, uint64_t n) {
  TileStats st;
  st.count = n;
  if (n == 0 || data == nullptr) return st;
  const bool swap = s.big_endian;
  switch (s.kind) {
    case ElementKind::kInt:
      switch (s.elem_size) {
        case 1: minmax<int8_t>(data, n, swap, &st); break;
        case 2: minmax<int16_t>(data, n, swap, &st); break;
        case 4: minmax<int32_t>(data, n, swap, &st); break;
        case 8: minmax<int64_t>(data, n, swap, &st); break;
      }
      break;
    case ElementKind::kUInt:
      switch (s.elem_size) {
        case 1: minmax<uint8_t>(data, n, swap, &st); break;
        case 2: minmax<uint16_t>(data, n, swap, &st); break;
        case 4: minmax<uint32_t>(data, n, swap, &st); break;
        case 8: minmax<uint64_t>(data, n, swap, &st); break;
      }
      break;
    case ElementKind::kFloat:
      if (s.elem_size == 4) minmax<float>(data, n, swap, &st);
      else minmax<double>(data, n, swap, &st);
      break;
    case ElementKind::kOpaque:
      break;
  }
  return st;
}

void TileStats::serialize(ByteWriter& w) const {
  w.u64(count);
  w.u8(has_minmax ? 1 : 0);
  w.bytes(min, 8);
  w.bytes(max, 8);
}

TileStats TileStats::deserialize(ByteReader& r) {
  TileStats st;
  st.count = r.u64();
  st.has_minmax = r.u8() != 0;
  r.bytes(st.min, 8);
  r.bytes(st.max, 8);
  return st;
}

}  // namespace tessera
