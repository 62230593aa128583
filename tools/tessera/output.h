// output.h — what the `tessera` tool prints: JSON for scripts (--json) and numbers for
// people (sizes, times).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tool {

// A JSON document written as it goes: values and keys in order, commas and escapes
// handled here.  Usage: w.begin_object(); w.key("n"); w.value(3); w.end_object();
class Json {
 public:
  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  void key(const std::string& k);
  void value(const std::string& s);
  void value(const char* s) { value(std::string(s)); }
  void value(uint64_t v);
  void value(int64_t v);
  void value(int v) { value(static_cast<int64_t>(v)); }
  void value(unsigned v) { value(static_cast<uint64_t>(v)); }
  void value(double v);
  void value(bool v);
  void null();
  void values(const std::vector<uint64_t>& v);  // an array of numbers
  // key + value in one call.
  template <class T>
  void field(const std::string& k, const T& v) {
    key(k);
    value(v);
  }
  const std::string& str() const { return out_; }
  static std::string quote(const std::string& s);

 private:
  void open(char c);
  void close(char c);
  void sep();
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

// 1536 -> "1.5 KiB"
std::string human_bytes(uint64_t n);
// Nanoseconds since the epoch -> "2024-05-01 12:34:56.789 UTC".
std::string utc_time(uint64_t ns);
// "[0, 99] x [0, 49]" style boxes: low and high corner per dimension.
std::string box_text(const std::vector<uint64_t>& lo, const std::vector<uint64_t>& hi);
// "100 x 200"; "unlimited" for HDF5's H5S_UNLIMITED.
std::string dims_text(const std::vector<uint64_t>& d);

}  // namespace tool
