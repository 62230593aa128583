// Little-endian binary encoding for every engine metadata record (docs/format.md).
// ByteReader is bounds-checked: reading past the end throws kCorrupt naming `what`
// (usually the file name), so a truncated or corrupt record can never overrun a buffer.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "engine/util/error.h"

namespace tessera {

class ByteWriter {
 public:
  // Room for a typical record up front: growing from empty took five reallocations (and
  // copies) for a 100-byte schema record, once per created dataset (issue 20).
  ByteWriter() { buf_.reserve(kInitialBytes); }
  static constexpr size_t kInitialBytes = 256;
  void u8(uint8_t v) { buf_.push_back(v); }
  void u32(uint32_t v) { put(&v, 4); }
  void u64(uint64_t v) { put(&v, 8); }
  void i64(int64_t v) { put(&v, 8); }
  void f64(double v) { put(&v, 8); }
  void bytes(const void* p, size_t n) { put(p, n); }
  // u32 length + bytes
  void str(std::string_view s) { u32(static_cast<uint32_t>(s.size())); put(s.data(), s.size()); }
  void blob(const std::vector<uint8_t>& b) { u64(b.size()); put(b.data(), b.size()); }
  std::vector<uint8_t>& buf() { return buf_; }
  const std::vector<uint8_t>& buf() const { return buf_; }
  size_t size() const { return buf_.size(); }

 private:
  void put(const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), c, c + n);
  }
  std::vector<uint8_t> buf_;
};

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "tessera's format code assumes a little-endian host");

class ByteReader {
 public:
  ByteReader(const void* p, size_t n, std::string what)
      : p_(static_cast<const uint8_t*>(p)), n_(n), what_(std::move(what)) {}
  // `what` a string literal (it must outlive the reader): no copy.  Catalog records are
  // decoded tens of thousands of times per file and the name matters only in an error.
  ByteReader(const void* p, size_t n, const char* what)
      : p_(static_cast<const uint8_t*>(p)), n_(n), what_lit_(what) {}
  uint8_t u8() { uint8_t v; get(&v, 1); return v; }
  uint32_t u32() { uint32_t v; get(&v, 4); return v; }
  uint64_t u64() { uint64_t v; get(&v, 8); return v; }
  int64_t i64() { int64_t v; get(&v, 8); return v; }
  double f64() { double v; get(&v, 8); return v; }
  void bytes(void* out, size_t n) { get(out, n); }
  std::string str() {
    uint32_t n = u32();
    need(n);
    std::string s(reinterpret_cast<const char*>(p_ + pos_), n);
    pos_ += n;
    return s;
  }
  // The same field as str(), as a view into the reader's buffer (valid while it is).
  std::string_view str_view() {
    uint32_t n = u32();
    need(n);
    std::string_view s(reinterpret_cast<const char*>(p_ + pos_), n);
    pos_ += n;
    return s;
  }
  std::vector<uint8_t> blob() {
    uint64_t n = u64();
    need(n);
    std::vector<uint8_t> b(p_ + pos_, p_ + pos_ + n);
    pos_ += n;
    return b;
  }
  // A count that will drive an allocation: each element needs at least `min_bytes`.
  uint64_t count(size_t min_bytes) {
    uint64_t c = u64();
    if (min_bytes && c > remaining() / min_bytes) fail("implausible element count");
    return c;
  }
  void skip(size_t n) { need(n); pos_ += n; }
  size_t remaining() const { return n_ - pos_; }
  size_t pos() const { return pos_; }
  bool done() const { return pos_ == n_; }
  [[noreturn]] void fail(const std::string& why) const {
    throw_error(Errc::kCorrupt, (what_lit_ ? std::string(what_lit_) : what_) + ": corrupt metadata (" + why + ")");
  }

 private:
  void need(uint64_t n) const {
    if (n > n_ - pos_) fail("record truncated");
  }
  void get(void* out, size_t n) {
    if (n == 0) return;  // `out` may be null for empty fields
    need(n);
    std::memcpy(out, p_ + pos_, n);
    pos_ += n;
  }
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  std::string what_;
  const char* what_lit_ = nullptr;
};

}  // namespace tessera
