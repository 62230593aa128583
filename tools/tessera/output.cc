// output.cc — output.h.
#include "tools/tessera/output.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace tool {

std::string Json::quote(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += static_cast<char>(c);  // UTF-8 passes through
        }
    }
  }
  return o + "\"";
}

void Json::sep() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

void Json::open(char c) {
  sep();
  out_ += c;
  first_.push_back(true);
}

void Json::close(char c) {
  first_.pop_back();
  out_ += c;
}

void Json::key(const std::string& k) {
  sep();
  out_ += quote(k);
  out_ += ':';
  after_key_ = true;
}

void Json::value(const std::string& s) {
  sep();
  out_ += quote(s);
}

void Json::value(uint64_t v) {
  sep();
  out_ += std::to_string(v);
}

void Json::value(int64_t v) {
  sep();
  out_ += std::to_string(v);
}

void Json::value(double v) {
  sep();
  if (!std::isfinite(v)) {
    out_ += "null";
    return;
  }
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  out_ += b;
}

void Json::value(bool v) {
  sep();
  out_ += v ? "true" : "false";
}

void Json::null() {
  sep();
  out_ += "null";
}

void Json::values(const std::vector<uint64_t>& v) {
  begin_array();
  for (uint64_t x : v) value(x);
  end_array();
}

std::string human_bytes(uint64_t n) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char b[32];
  if (u == 0) std::snprintf(b, sizeof b, "%" PRIu64 " B", n);
  else std::snprintf(b, sizeof b, "%.1f %s", v, kUnits[u]);
  return b;
}

std::string utc_time(uint64_t ns) {
  std::time_t s = static_cast<std::time_t>(ns / 1000000000ull);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char b[64];
  std::snprintf(b, sizeof b, "%04d-%02d-%02d %02d:%02d:%02d.%03u UTC", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<unsigned>(ns / 1000000 % 1000));
  return b;
}

std::string box_text(const std::vector<uint64_t>& lo, const std::vector<uint64_t>& hi) {
  std::string s;
  for (size_t d = 0; d < lo.size(); ++d) {
    if (d) s += " x ";
    s += "[" + std::to_string(lo[d]) + ", " + std::to_string(hi[d]) + "]";
  }
  return s;
}

std::string dims_text(const std::vector<uint64_t>& d) {
  if (d.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i) s += " x ";
    s += d[i] == UINT64_MAX ? std::string("unlimited") : std::to_string(d[i]);
  }
  return s;
}

}  // namespace tool
