// value_type.h — the numeric elements value indexes and queries understand, and the one
// comparison rule they all use.
//
// A query compares a stored value with a number from the expression.  The rule is the
// exact mathematical comparison of the two: integer literals are kept exactly (64-bit),
// decimal literals are first rounded to the nearest double (as C's strtod and Python's
// float() do).  For float64 and integer data that is what numpy computes; float32 values
// are compared as the exact float32 value (numpy's `a.astype(float64) < t`, whereas
// numpy's own `a < t` first rounds t to float32).  NaN compares false with everything
// except `!=`.  Bins decide whole groups of cells by the same rule applied to the
// group's minimum and maximum (decide()), so an index answer equals a scan's.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "engine/util/error.h"
#include "engine/schema/schema.h"

namespace tessera {

enum class NumType : uint8_t { kI8 = 1, kI16, kI32, kI64, kU8, kU16, kU32, kU64, kF32, kF64 };

// The numeric type of a schema's elements; throws kUnsupported naming `what` (the dataset)
// for anything else (opaque, compound, strings, variable-length, 16-bit floats).
NumType num_type(const Schema& s, const std::string& what);
// Valid codes only (index files store them).
bool valid_num_type(uint8_t code);
const char* num_type_name(NumType t);

// Calls f(T{}) with the C++ type of t.
template <class F>
decltype(auto) visit_num(NumType t, F&& f) {
  switch (t) {
    case NumType::kI8: return f(int8_t{});
    case NumType::kI16: return f(int16_t{});
    case NumType::kI32: return f(int32_t{});
    case NumType::kI64: return f(int64_t{});
    case NumType::kU8: return f(uint8_t{});
    case NumType::kU16: return f(uint16_t{});
    case NumType::kU32: return f(uint32_t{});
    case NumType::kU64: return f(uint64_t{});
    case NumType::kF32: return f(float{});
    case NumType::kF64: return f(double{});
  }
  throw_error(Errc::kInternal, "unknown numeric type");
}

// One element from its stored bytes (byte-swapped when the dataset is big-endian).
template <class T>
inline T load_value(const uint8_t* p, bool big_endian) {
  T v;
  if (!big_endian) {
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  uint8_t b[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i) b[i] = p[sizeof(T) - 1 - i];
  std::memcpy(&v, b, sizeof v);
  return v;
}

enum class CmpOp : uint8_t { kLt, kLe, kGt, kGe, kEq, kNe };
const char* cmp_op_text(CmpOp op);

// The number of a comparison.
struct Literal {
  std::string text;     // as written
  long double exact = 0;  // its value (exact: an integer of 64 bits, or the rounded double)
  double rounded = 0;   // the nearest double
  bool fits_double = true;  // rounded == exact
  bool nan = false;
  // Parses a decimal number: an integer (exact up to 64 bits), a decimal or exponent form
  // (rounded to double), "inf" or "nan" (any case), with an optional sign.  False when
  // `text` is not entirely such a number.
  static bool parse(const std::string& text, Literal* out);
};

// -1, 0 or 1: v below, equal to or above the literal; 2 when they are unordered (a NaN).
template <class T>
inline int compare3(T v, const Literal& lit) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v) || lit.nan) return 2;
  } else {
    if (lit.nan) return 2;
  }
  // double holds every float and 32-bit integer exactly; 64-bit integers go through
  // long double (exact on x86-64 and AArch64 Linux).
  if constexpr (sizeof(T) <= 4 || std::is_floating_point_v<T>) {
    if (lit.fits_double) {
      const double d = static_cast<double>(v);
      return d < lit.rounded ? -1 : d > lit.rounded ? 1 : 0;
    }
  }
  const long double d = static_cast<long double>(v);
  return d < lit.exact ? -1 : d > lit.exact ? 1 : 0;
}

inline bool holds(int c, CmpOp op) {
  if (c == 2) return op == CmpOp::kNe;
  switch (op) {
    case CmpOp::kLt: return c < 0;
    case CmpOp::kLe: return c <= 0;
    case CmpOp::kGt: return c > 0;
    case CmpOp::kGe: return c >= 0;
    case CmpOp::kEq: return c == 0;
    case CmpOp::kNe: return c != 0;
  }
  return false;
}

// What a comparison says about a group of values.
enum class Decision : uint8_t { kNone, kAll, kSome };  // none hold, all hold, must look

// The decision for non-NaN values in [min, max], from compare3 of min and max.
Decision decide(int cmp_min, int cmp_max, CmpOp op);

}  // namespace tessera
