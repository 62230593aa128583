// value_type.cc — see value_type.h.
#include "engine/index/value_type.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace tessera {

NumType num_type(const Schema& s, const std::string& what) {
  auto refuse = [&](const std::string& why) -> NumType {
    throw_error(Errc::kUnsupported, what + ": value queries and indexes need integer or floating-point elements; " + why);
  };
  if (s.var) return refuse("its elements have variable length");
  switch (s.kind) {
    case ElementKind::kInt:
      switch (s.elem_size) {
        case 1: return NumType::kI8;
        case 2: return NumType::kI16;
        case 4: return NumType::kI32;
        case 8: return NumType::kI64;
      }
      break;
    case ElementKind::kUInt:
      switch (s.elem_size) {
        case 1: return NumType::kU8;
        case 2: return NumType::kU16;
        case 4: return NumType::kU32;
        case 8: return NumType::kU64;
      }
      break;
    case ElementKind::kFloat:
      if (s.elem_size == 4) return NumType::kF32;
      if (s.elem_size == 8) return NumType::kF64;
      break;
    case ElementKind::kOpaque:
      return refuse("its elements (" + std::to_string(s.elem_size) +
                    " bytes each) are not numbers (a compound, string, opaque or other type)");
  }
  return refuse("elements of " + std::to_string(s.elem_size) + " bytes are not a supported number size");
}

bool valid_num_type(uint8_t code) { return code >= 1 && code <= 10; }

const char* num_type_name(NumType t) {
  switch (t) {
    case NumType::kI8: return "int8";
    case NumType::kI16: return "int16";
    case NumType::kI32: return "int32";
    case NumType::kI64: return "int64";
    case NumType::kU8: return "uint8";
    case NumType::kU16: return "uint16";
    case NumType::kU32: return "uint32";
    case NumType::kU64: return "uint64";
    case NumType::kF32: return "float32";
    case NumType::kF64: return "float64";
  }
  return "?";
}

const char* cmp_op_text(CmpOp op) {
  switch (op) {
    case CmpOp::kLt: return "<";
    case CmpOp::kLe: return "<=";
    case CmpOp::kGt: return ">";
    case CmpOp::kGe: return ">=";
    case CmpOp::kEq: return "==";
    case CmpOp::kNe: return "!=";
  }
  return "?";
}

bool Literal::parse(const std::string& text, Literal* out) {
  Literal l;
  l.text = text;
  size_t i = 0;
  bool neg = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) neg = text[i++] == '-';
  std::string rest = text.substr(i);
  std::string lower;
  for (char c : rest) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "nan") {
    l.nan = true;
    l.rounded = std::nan("");
    *out = l;
    return true;
  }
  if (lower == "inf" || lower == "infinity") {
    l.rounded = neg ? -HUGE_VAL : HUGE_VAL;
    l.exact = l.rounded;
    *out = l;
    return true;
  }
  if (rest.empty()) return false;
  bool digits_only = true;
  for (char c : rest) digits_only = digits_only && std::isdigit(static_cast<unsigned char>(c));
  if (digits_only) {
    // An integer: exact while it fits 64 bits (negative: down to -2^63).
    uint64_t v = 0;
    bool fits = true;
    for (char c : rest) {
      const uint64_t d = static_cast<uint64_t>(c - '0');
      if (v > (UINT64_MAX - d) / 10) {
        fits = false;
        break;
      }
      v = v * 10 + d;
    }
    if (fits && (!neg || v <= (uint64_t{1} << 63))) {
      l.exact = neg ? -static_cast<long double>(v) : static_cast<long double>(v);
      l.rounded = static_cast<double>(l.exact);
      l.fits_double = static_cast<long double>(l.rounded) == l.exact;
      *out = l;
      return true;
    }
  }
  // A decimal form: digits, at most one '.', an optional exponent; strtod rounds it.
  bool seen_digit = false, seen_dot = false;
  size_t k = 0;
  for (; k < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[k])) || rest[k] == '.'); ++k) {
    if (rest[k] == '.') {
      if (seen_dot) return false;
      seen_dot = true;
    } else {
      seen_digit = true;
    }
  }
  if (!seen_digit) return false;
  if (k < rest.size() && (rest[k] == 'e' || rest[k] == 'E')) {
    ++k;
    if (k < rest.size() && (rest[k] == '+' || rest[k] == '-')) ++k;
    size_t d0 = k;
    while (k < rest.size() && std::isdigit(static_cast<unsigned char>(rest[k]))) ++k;
    if (k == d0) return false;
  }
  if (k != rest.size()) return false;
  errno = 0;
  double d = std::strtod(text.c_str(), nullptr);  // ERANGE: ±HUGE_VAL or a denormal/0, as Python's float()
  l.rounded = d;
  l.exact = d;
  *out = l;
  return true;
}

Decision decide(int cmp_min, int cmp_max, CmpOp op) {
  if (cmp_min == 2 || cmp_max == 2) return op == CmpOp::kNe ? Decision::kAll : Decision::kNone;  // a NaN literal
  switch (op) {
    case CmpOp::kLt:
      return cmp_max < 0 ? Decision::kAll : cmp_min >= 0 ? Decision::kNone : Decision::kSome;
    case CmpOp::kLe:
      return cmp_max <= 0 ? Decision::kAll : cmp_min > 0 ? Decision::kNone : Decision::kSome;
    case CmpOp::kGt:
      return cmp_min > 0 ? Decision::kAll : cmp_max <= 0 ? Decision::kNone : Decision::kSome;
    case CmpOp::kGe:
      return cmp_min >= 0 ? Decision::kAll : cmp_max < 0 ? Decision::kNone : Decision::kSome;
    case CmpOp::kEq:
      if (cmp_min == 0 && cmp_max == 0) return Decision::kAll;
      return cmp_max < 0 || cmp_min > 0 ? Decision::kNone : Decision::kSome;
    case CmpOp::kNe:
      if (cmp_min == 0 && cmp_max == 0) return Decision::kNone;
      return cmp_max < 0 || cmp_min > 0 ? Decision::kAll : Decision::kSome;
  }
  return Decision::kSome;
}

}  // namespace tessera
