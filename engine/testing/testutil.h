// Small helpers shared by the engine's randomized / crash / corruption tests.
//
// The reference model (ArrayModel) is a plain in-memory N-d byte array that knows nothing
// about fragments, tiles or orders: tests apply every operation to it and to the engine and
// compare what the engine reads against it.
#pragma once
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/geometry/box.h"
#include "engine/container/container.h"
#include "engine/util/error.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/schema/layout.h"
#include "engine/geometry/odometer.h"
#include "engine/schema/schema.h"

namespace tessera {
namespace testutil {

// True when built with AddressSanitizer (GCC defines __SANITIZE_ADDRESS__; clang has
// __has_feature).  Randomized tests run fewer iterations there.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// An unsigned integer from the environment, or `dflt` when unset/empty.
inline uint64_t env_u64(const char* name, uint64_t dflt) {
  const char* e = std::getenv(name);
  if (!e || !*e) return dflt;
  return std::strtoull(e, nullptr, 0);
}

// The base seed of randomized tests: TESSERA_TEST_SEED (a number, or "random" for a seed
// from the clock), else `dflt`.  Always printed so a failure can be replayed.
inline uint64_t base_seed(uint64_t dflt) {
  const char* e = std::getenv("TESSERA_TEST_SEED");
  if (e && std::string(e) == "random") return std::random_device{}() ^ (uint64_t(::getpid()) << 32);
  return env_u64("TESSERA_TEST_SEED", dflt);
}

// The seed of one named randomized run: the base seed mixed with the name (FNV-1a), or
// the base seed itself with TESSERA_TEST_SEED_EXACT=1 (replaying one printed seed).
inline uint64_t named_seed(const char* name, uint64_t dflt) {
  uint64_t base = base_seed(dflt);
  if (env_u64("TESSERA_TEST_SEED_EXACT", 0)) return base;
  uint64_t h = 1469598103934665603ULL;
  for (const char* p = name; *p; ++p) h = (h ^ static_cast<uint8_t>(*p)) * 1099511628211ULL;
  return base ^ h;
}

// A temporary directory removed (recursively) at scope exit.
class TempDir {
 public:
  explicit TempDir(const char* tag = "tessera_test") {
    std::string t = std::string("/tmp/") + tag + "_XXXXXX";
    std::vector<char> buf(t.begin(), t.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    path_ = buf.data();
  }
  ~TempDir() {
    try {
      remove_tree(Env::posix(), path_);
    } catch (...) {
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return join_path(path_, name); }

 private:
  std::string path_;
};

class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  // Uniform in [lo, hi] (inclusive); lo when hi < lo.
  uint64_t range(uint64_t lo, uint64_t hi) {
    if (hi <= lo) return lo;
    return std::uniform_int_distribution<uint64_t>(lo, hi)(g_);
  }
  uint64_t below(uint64_t n) { return n ? range(0, n - 1) : 0; }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(g_) < p; }
  uint8_t byte() { return static_cast<uint8_t>(g_()); }
  void fill(uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) p[i] = byte();
  }
  std::mt19937_64& gen() { return g_; }

 private:
  std::mt19937_64 g_;
};

// A random box inside `extent`, at most `max_len` cells along each dimension.
inline Box random_box(Rng& rng, const Coords& extent, uint64_t max_len) {
  const size_t r = extent.size();
  Coords lo(r), hi(r);
  for (size_t d = 0; d < r; ++d) {
    uint64_t len = rng.range(1, std::min<uint64_t>(extent[d], max_len));
    lo[d] = rng.below(extent[d] - len + 1);
    hi[d] = lo[d] + len - 1;
  }
  return Box(lo, hi);
}

inline Coords random_cell(Rng& rng, const Coords& extent) {
  Coords c(extent.size());
  for (size_t d = 0; d < extent.size(); ++d) c[d] = rng.below(extent[d]);
  return c;
}

// Calls f(cell) for every cell of b, row-major.
template <class F>
void each_cell(const Box& b, F f) {
  Coords c = b.lo;
  const int r = b.rank();
  for (uint64_t k = 0, n = b.cells(); k < n; ++k) {
    f(static_cast<const Coords&>(c));
    for (int d = r - 1; d >= 0; --d) {
      if (++c[d] <= b.hi[d]) break;
      c[d] = b.lo[d];
    }
  }
}

inline std::string coords_str(const uint64_t* c, int rank) {
  std::string s = "(";
  for (int d = 0; d < rank; ++d) s += (d ? "," : "") + std::to_string(c[d]);
  return s + ")";
}

inline std::string hex(const uint8_t* p, size_t n) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += k[p[i] >> 4];
    s += k[p[i] & 15];
  }
  return s;
}

inline std::string status_str(const Status& st) {
  return std::string(errc_name(st.code())) + ": " + st.message();
}

// The per-dimension index sets of a selection, computed independently of the engine's
// Selection class: sorted, unique.
using IndexSets = std::vector<std::vector<uint64_t>>;

inline IndexSets index_sets_of_intervals(const std::vector<std::vector<Interval>>& dims) {
  IndexSets out(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    for (const Interval& iv : dims[d])
      for (uint64_t x = iv.lo; x <= iv.hi; ++x) out[d].push_back(x);
    std::sort(out[d].begin(), out[d].end());
    out[d].erase(std::unique(out[d].begin(), out[d].end()), out[d].end());
  }
  return out;
}

inline IndexSets index_sets_of_hyperslab(const Coords& start, const Coords& stride, const Coords& count,
                                         const Coords& block) {
  IndexSets out(start.size());
  for (size_t d = 0; d < start.size(); ++d)
    for (uint64_t i = 0; i < count[d]; ++i)
      for (uint64_t j = 0; j < block[d]; ++j) out[d].push_back(start[d] + i * stride[d] + j);
  return out;
}

// Calls f(coords, ranks) for every cell of the product of `sets` in row-major order, where
// ranks[d] is the position of coords[d] within sets[d].
template <class F>
void for_each_product(const IndexSets& sets, F f) {
  const int r = static_cast<int>(sets.size());
  std::vector<uint64_t> counts(r), c(r);
  for (int d = 0; d < r; ++d) counts[d] = sets[d].size();
  for_each_index(r, counts.data(), [&](const uint64_t* idx) {
    for (int d = 0; d < r; ++d) c[d] = sets[d][idx[d]];
    f(c.data(), idx);
  });
}

// The reference: an N-d array of elements over [0, cap) with a current extent.  Cells
// outside the extent hold the fill value (a shrink resets the cut cells, so a later grow
// exposes fill, as in HDF5).
class ArrayModel {
 public:
  ArrayModel(Coords cap, Coords extent, size_t elem_size, std::vector<uint8_t> fill)
      : cap_(std::move(cap)), extent_(std::move(extent)), es_(elem_size), fill_(std::move(fill)) {
    if (fill_.empty()) fill_.assign(es_, 0);
    uint64_t n = 1;
    for (uint64_t c : cap_) n *= c;
    data_.resize(n * es_);
    for (uint64_t i = 0; i < n; ++i) std::memcpy(&data_[i * es_], fill_.data(), es_);
  }
  int rank() const { return static_cast<int>(cap_.size()); }
  size_t elem_size() const { return es_; }
  const Coords& extent() const { return extent_; }
  const Coords& cap() const { return cap_; }
  const std::vector<uint8_t>& fill() const { return fill_; }
  bool empty() const {
    for (uint64_t e : extent_)
      if (e == 0) return true;
    return false;
  }
  uint64_t cells() const {
    uint64_t n = 1;
    for (uint64_t e : extent_) n *= e;
    return n;
  }
  bool inside(const uint64_t* c) const {
    for (int d = 0; d < rank(); ++d)
      if (c[d] >= extent_[d]) return false;
    return true;
  }
  const uint8_t* at(const uint64_t* c) const { return &data_[offset(c) * es_]; }
  void set(const uint64_t* c, const uint8_t* v) { std::memcpy(&data_[offset(c) * es_], v, es_); }

  void set_extent(const Coords& e) {
    extent_ = e;
    // Everything outside the new extent reads as fill if it ever comes back.
    std::vector<uint64_t> c(rank(), 0);
    uint64_t n = data_.size() / es_;
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t rem = i;
      for (int d = rank() - 1; d >= 0; --d) {
        c[d] = rem % cap_[d];
        rem /= cap_[d];
      }
      if (!inside(c.data())) std::memcpy(&data_[i * es_], fill_.data(), es_);
    }
  }

  // Applies a write of the product `sets` from src (strides in elements per dimension over
  // the selection ranks).
  void write(const IndexSets& sets, const uint8_t* src, const uint64_t* strides) {
    for_each_product(sets, [&](const uint64_t* c, const uint64_t* rk) {
      uint64_t o = 0;
      for (int d = 0; d < rank(); ++d) o += rk[d] * strides[d];
      set(c, src + o * es_);
    });
  }
  // Expected read of the product `sets` into dst (strides as above); cells not selected
  // are left alone.
  void read(const IndexSets& sets, uint8_t* dst, const uint64_t* strides) const {
    for_each_product(sets, [&](const uint64_t* c, const uint64_t* rk) {
      uint64_t o = 0;
      for (int d = 0; d < rank(); ++d) o += rk[d] * strides[d];
      std::memcpy(dst + o * es_, at(c), es_);
    });
  }

 private:
  uint64_t offset(const uint64_t* c) const {
    uint64_t o = 0;
    for (int d = 0; d < rank(); ++d) o = o * cap_[d] + c[d];
    return o;
  }
  Coords cap_, extent_;
  size_t es_;
  std::vector<uint8_t> fill_;
  std::vector<uint8_t> data_;
};

// Dense row-major strides of the shape given by the set sizes.
inline std::vector<uint64_t> dense_strides(const IndexSets& sets) {
  std::vector<uint64_t> s(sets.size());
  uint64_t n = 1;
  for (size_t d = sets.size(); d-- > 0;) {
    s[d] = n;
    n *= sets[d].size();
  }
  return s;
}

inline uint64_t product_cells(const IndexSets& sets) {
  uint64_t n = 1;
  for (const auto& s : sets) n *= s.size();
  return n;
}

// Files (not directories) below `root`, as paths relative to it, sorted.
inline void list_files_rec(const std::string& root, const std::string& rel, std::vector<std::string>* out) {
  std::string dir = rel.empty() ? root : join_path(root, rel);
  for (const std::string& name : list_dir(Env::posix(), dir)) {
    std::string r = rel.empty() ? name : join_path(rel, name);
    if (is_directory(Env::posix(), join_path(root, r))) list_files_rec(root, r, out);
    else out->push_back(r);
  }
}
inline std::vector<std::string> list_files(const std::string& root) {
  std::vector<std::string> out;
  list_files_rec(root, "", &out);
  std::sort(out.begin(), out.end());
  return out;
}

// Damages one byte of a file in place (XOR with `mask`): the corruption tests' disk error.
inline void flip_byte(const std::string& path, uint64_t off, uint8_t mask = 0x5A) {
  File f = File::open_rw(Env::posix(), path, false);
  uint8_t b;
  f.pread_exact(&b, 1, off);
  b ^= mask;
  f.pwrite_all(&b, 1, off);
  f.close();
}

inline uint64_t file_size(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

// Opens the fragment file and decodes every tile it holds (each read verifies the tile's
// checksum).  Throws tessera::Error on any damage.  The one place that depends on the
// internal Fragment API.
inline void read_every_tile(const std::string& path, const Schema& schema,
                            const std::shared_ptr<Context>& ctx = nullptr) {
  auto f = Fragment::open(path, ctx);
  const Layout& layout = f->layout(schema);
  for (size_t i = 0; i < f->meta().dense.size(); ++i)
    if (f->meta().dense[i].kind == DenseEntry::kData) f->dense_tile(i);
  for (size_t i = 0; i < f->meta().sparse.size(); ++i) f->sparse_tile(i, layout);
}

// The frame of a randomized run of one array against a model: a container holding the
// array (reopened at will with opts_), a seeded Rng, the current extent, and a log of the
// operations for the failure message.  Subclasses add the model and the operations.
class ArrayRun {
 protected:
  ArrayRun(const Coords& extent, uint64_t seed, const char* tag)
      : seed_(seed), rng_(seed), dir_(tag), rank_(static_cast<int>(extent.size())), extent_(extent) {}
  Box random_box(uint64_t max_len) { return testutil::random_box(rng_, extent_, max_len); }
  Coords random_cell() { return testutil::random_cell(rng_, extent_); }
  void expect_ok(const Status& st, const char* what) { ASSERT_TRUE(st.ok()) << what << ": " << status_str(st); }
  // Flushes and reopens the array (id_ in cont_) with opts_.
  void reopen() {
    if (arr_) expect_ok(arr_->flush(), "flush");
    arr_.reset();
    expect_ok(cont_->open_array(id_, true, opts_, &arr_), "open_array");
  }

  uint64_t seed_;
  Rng rng_;
  TempDir dir_;
  int rank_;
  Coords extent_;
  std::unique_ptr<Container> cont_;
  uint64_t id_ = 0;
  ArrayOptions opts_;
  std::unique_ptr<Array> arr_;
  std::string log_;
};

}  // namespace testutil
}  // namespace tessera
