#include "engine/tile/filter.h"

#include <libdeflate.h>
#include <lz4.h>
#include <zstd.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace tessera {
namespace {

// Codec stages start with the stage's input size (u64) so decode can size its buffer
// exactly and check the codec produced exactly that many bytes.
constexpr size_t kSizePrefix = 8;

// Codecs get a valid pointer even for empty buffers (vector::data() may be null).
uint8_t g_empty_byte = 0;
uint8_t* ptr(std::vector<uint8_t>& v) { return v.empty() ? &g_empty_byte : v.data(); }
const uint8_t* ptr(const uint8_t* p) { return p ? p : &g_empty_byte; }

uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

// Upper bound on the encoded size of a stage given its input size.  Generous (every codec's
// own bound is smaller); decode uses it only to refuse absurd declared sizes from a corrupt
// tile before allocating.
uint64_t stage_bound(FilterType t, uint64_t n) {
  if (t == FilterType::kShuffle) return n;
  return sat_add(n, sat_add(n / 128, kSizePrefix + 1024));
}

std::string size_mismatch(uint64_t got, uint64_t want) {
  return "decoded " + std::to_string(got) + " bytes, expected " + std::to_string(want);
}

const char* filter_name(FilterType t) {
  switch (t) {
    case FilterType::kShuffle: return "shuffle";
    case FilterType::kDeflate: return "deflate";
    case FilterType::kZstd: return "zstd";
    case FilterType::kLz4: return "lz4";
    case FilterType::kZlib: return "zlib";
  }
  return "unknown";
}

bool known_type(FilterType t) {
  auto v = static_cast<uint8_t>(t);
  return v >= static_cast<uint8_t>(FilterType::kShuffle) && v <= static_cast<uint8_t>(FilterType::kZlib);
}

// ---- shuffle (HDF5-compatible byte transpose) ---------------------------------------------

// Byte j of element i goes to out[j * count + i].  A compile-time element size lets the
// compiler unroll the inner loop for the common 2/4/8-byte types.
template <size_t ES>
void transpose_fixed(const uint8_t* in, size_t count, uint8_t* out) {
  for (size_t i = 0; i < count; ++i)
    for (size_t j = 0; j < ES; ++j) out[j * count + i] = in[i * ES + j];
}
template <size_t ES>
void untranspose_fixed(const uint8_t* in, size_t count, uint8_t* out) {
  for (size_t i = 0; i < count; ++i)
    for (size_t j = 0; j < ES; ++j) out[i * ES + j] = in[j * count + i];
}

void shuffle_bytes(const uint8_t* in, size_t n, uint32_t es, uint8_t* out, bool forward) {
  size_t count = es ? n / es : 0;
  if (es <= 1 || count <= 1) {  // transpose would be the identity
    if (n) std::memcpy(out, in, n);
    return;
  }
  switch (es) {
    case 2: forward ? transpose_fixed<2>(in, count, out) : untranspose_fixed<2>(in, count, out); break;
    case 4: forward ? transpose_fixed<4>(in, count, out) : untranspose_fixed<4>(in, count, out); break;
    case 8: forward ? transpose_fixed<8>(in, count, out) : untranspose_fixed<8>(in, count, out); break;
    default:
      for (size_t i = 0; i < count; ++i)
        for (size_t j = 0; j < es; ++j) {
          if (forward) out[j * count + i] = in[i * es + j];
          else out[i * es + j] = in[j * count + i];
        }
  }
  // Like HDF5: trailing bytes of a partial element stay as they are, at the end.
  size_t done = count * es;
  if (n > done) std::memcpy(out + done, in + done, n - done);
}

// ---- deflate (libdeflate: zlib-format streams, several times faster than zlib) ---------

// libdeflate's (de)compressors are not thread-safe and cost a few hundred KiB to set up:
// one per thread (and per level), kept for the thread's lifetime.
struct DeflateCodecs {
  libdeflate_compressor* c[10] = {};
  libdeflate_decompressor* d = nullptr;
  ~DeflateCodecs() {
    for (auto* p : c)
      if (p) libdeflate_free_compressor(p);
    if (d) libdeflate_free_decompressor(d);
  }
  // Level 1 runs as libdeflate's level 2: libdeflate's level 1 uses a cruder match finder
  // that on regular integer data stores about twice zlib level 1's bytes (0.67 vs 0.36 of
  // the raw size on the benchmark's tiles), while its level 2 compresses as well as zlib's
  // level 1 (0.35) in about half zlib's time.  Levels 2..9 are libdeflate's own.
  libdeflate_compressor* compressor(int level) {
    if (!c[level]) c[level] = libdeflate_alloc_compressor(level == 1 ? 2 : level);
    if (!c[level]) throw_error(Errc::kInternal, "deflate: cannot allocate a compressor");
    return c[level];
  }
  libdeflate_decompressor* decompressor() {
    if (!d) d = libdeflate_alloc_decompressor();
    if (!d) throw_error(Errc::kInternal, "deflate: cannot allocate a decompressor");
    return d;
  }
};
DeflateCodecs& deflate_codecs() {
  thread_local DeflateCodecs codecs;
  return codecs;
}

// ---- one stage ------------------------------------------------------------------------------

void encode_stage(const Filter& f, uint32_t es, const uint8_t* in, size_t n,
                  std::vector<uint8_t>& out) {
  in = ptr(in);
  if (f.type == FilterType::kShuffle) {
    out.resize(n);
    shuffle_bytes(in, n, es, ptr(out), true);
    return;
  }
  if (f.type == FilterType::kZlib) {  // no size header: HDF5's bytes
    libdeflate_compressor* c = deflate_codecs().compressor(f.level);
    std::unique_ptr<uint8_t[]> buf(new uint8_t[libdeflate_zlib_compress_bound(c, n)]);
    size_t written = libdeflate_zlib_compress(c, in, n, buf.get(), libdeflate_zlib_compress_bound(c, n));
    if (written == 0) throw_error(Errc::kInternal, "deflate failed (output larger than its bound)");
    out.assign(buf.get(), buf.get() + written);
    return;
  }
  size_t cap = 0;
  switch (f.type) {
    case FilterType::kDeflate:
      cap = libdeflate_zlib_compress_bound(deflate_codecs().compressor(f.level), n);
      break;
    case FilterType::kZstd: cap = ZSTD_compressBound(n); break;
    case FilterType::kLz4:
      if (n > static_cast<size_t>(LZ4_MAX_INPUT_SIZE))
        throw_error(Errc::kInvalidArgument,
                    "lz4 cannot compress a tile of " + std::to_string(n) + " bytes (limit " +
                        std::to_string(LZ4_MAX_INPUT_SIZE) + ")");
      cap = static_cast<size_t>(LZ4_compressBound(static_cast<int>(n)));
      break;
    default: break;
  }
  // The codec writes into uninitialized memory: the bound is far above what compressible
  // data needs, and zero-filling it (vector::resize) touched every page of it — fresh
  // pages are what a 100,000-point spill spent most of its filter time on.  The written
  // bytes are copied into `out` afterwards.
  std::unique_ptr<uint8_t[]> buf(new uint8_t[kSizePrefix + cap]);
  uint64_t n64 = n;
  std::memcpy(buf.get(), &n64, kSizePrefix);
  uint8_t* dst = buf.get() + kSizePrefix;
  size_t written = 0;
  switch (f.type) {
    case FilterType::kDeflate: {
      written = libdeflate_zlib_compress(deflate_codecs().compressor(f.level), in, n, dst, cap);
      if (written == 0) throw_error(Errc::kInternal, "deflate failed (output larger than its bound)");
      break;
    }
    case FilterType::kZstd: {
      size_t r = ZSTD_compress(dst, cap, in, n, f.level == 0 ? 3 : f.level);
      if (ZSTD_isError(r))
        throw_error(Errc::kInternal, std::string("zstd failed: ") + ZSTD_getErrorName(r));
      written = r;
      break;
    }
    case FilterType::kLz4: {
      int r = LZ4_compress_default(reinterpret_cast<const char*>(in), reinterpret_cast<char*>(dst),
                                   static_cast<int>(n), static_cast<int>(cap));
      if (r <= 0) throw_error(Errc::kInternal, "lz4 compression failed");
      written = static_cast<size_t>(r);
      break;
    }
    default: break;
  }
  out.assign(buf.get(), buf.get() + kSizePrefix + written);
}

// `max_out`: the largest output this stage can legitimately have (see stage_bound).
void decode_stage(const Filter& f, uint32_t es, const uint8_t* in, size_t n, uint64_t max_out,
                  std::vector<uint8_t>& out, const std::string& what) {
  const char* name = filter_name(f.type);
  auto corrupt = [&](const std::string& why) {
    throw_error(Errc::kCorrupt, what + ": corrupt " + name + " data (" + why + ")");
  };
  in = ptr(in);
  if (f.type == FilterType::kShuffle) {
    if (n > max_out) corrupt("size " + std::to_string(n) + " exceeds " + std::to_string(max_out));
    out.resize(n);
    shuffle_bytes(in, n, es, ptr(out), false);
    return;
  }
  if (f.type == FilterType::kZlib) {  // no size header: at most max_out bytes
    out.resize(static_cast<size_t>(max_out));
    size_t consumed = 0, len = 0;
    libdeflate_result rc = libdeflate_zlib_decompress_ex(deflate_codecs().decompressor(), in, n, ptr(out),
                                                         static_cast<size_t>(max_out), &consumed, &len);
    if (rc != LIBDEFLATE_SUCCESS)
      corrupt(rc == LIBDEFLATE_INSUFFICIENT_SPACE ? "stream longer than " + std::to_string(max_out) + " bytes"
                                                  : "bad zlib stream");
    if (consumed != n) corrupt("trailing bytes after the stream");
    out.resize(len);
    return;
  }
  if (n < kSizePrefix) corrupt("missing size header");
  uint64_t want;
  std::memcpy(&want, in, kSizePrefix);
  if (want > max_out)
    corrupt("declared size " + std::to_string(want) + " exceeds " + std::to_string(max_out));
  const uint8_t* src = in + kSizePrefix;
  size_t src_n = n - kSizePrefix;
  out.resize(static_cast<size_t>(want));
  uint8_t* dst = ptr(out);
  switch (f.type) {
    case FilterType::kDeflate: {
      size_t consumed = 0, len = 0;
      libdeflate_result rc = libdeflate_zlib_decompress_ex(deflate_codecs().decompressor(), src, src_n, dst,
                                                           static_cast<size_t>(want), &consumed, &len);
      if (rc != LIBDEFLATE_SUCCESS) corrupt(rc == LIBDEFLATE_INSUFFICIENT_SPACE ? "stream longer than declared"
                                                                                : "bad zlib stream");
      if (len != want) corrupt(size_mismatch(len, want));
      if (consumed != src_n) corrupt("trailing bytes after the stream");
      break;
    }
    case FilterType::kZstd: {
      size_t r = ZSTD_decompress(dst, static_cast<size_t>(want), src, src_n);
      if (ZSTD_isError(r)) corrupt(ZSTD_getErrorName(r));
      if (r != want) corrupt(size_mismatch(r, want));
      break;
    }
    case FilterType::kLz4: {
      if (src_n > static_cast<size_t>(INT_MAX) || want > static_cast<uint64_t>(INT_MAX))
        corrupt("size out of range");
      int r = LZ4_decompress_safe(reinterpret_cast<const char*>(src), reinterpret_cast<char*>(dst),
                                  static_cast<int>(src_n), static_cast<int>(want));
      if (r < 0 || static_cast<uint64_t>(r) != want) corrupt("malformed block");
      break;
    }
    default: corrupt("unknown filter type");
  }
}

// True when [p, p+n) overlaps v's storage, i.e. resizing v could invalidate p.
bool aliases(const uint8_t* p, size_t n, const std::vector<uint8_t>& v) {
  if (!p || v.capacity() == 0) return false;
  auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(v.data());
  return a < b + v.capacity() && b < a + (n ? n : 1);
}

}  // namespace

void FilterPipeline::validate() const {
  if (elem_size_ == 0)
    throw_error(Errc::kInvalidArgument, "filter pipeline: element size must be at least 1");
  for (const Filter& f : filters_) {
    auto bad_level = [&](int lo, int hi) {
      throw_error(Errc::kInvalidArgument, std::string(filter_name(f.type)) + " level " +
                                              std::to_string(f.level) + " is out of range " +
                                              std::to_string(lo) + ".." + std::to_string(hi));
    };
    switch (f.type) {
      case FilterType::kShuffle:
      case FilterType::kLz4: break;  // level unused
      case FilterType::kDeflate:
      case FilterType::kZlib:
        if (f.level < 1 || f.level > 9) bad_level(1, 9);
        break;
      case FilterType::kZstd:
        if (f.level < 0 || f.level > 19) bad_level(0, 19);
        break;
      default:
        throw_error(Errc::kInvalidArgument,
                    "unknown filter type " + std::to_string(static_cast<int>(f.type)));
    }
  }
}

void FilterPipeline::encode(const uint8_t* in, size_t n, std::vector<uint8_t>& out) const {
  if (aliases(in, n, out)) {  // rare; copying keeps the ping-pong below simple
    std::vector<uint8_t> copy(in, in + n);
    encode(copy.data(), n, out);
    return;
  }
  validate();
  const size_t k = filters_.size();
  if (k == 0) {
    out.assign(in, in + n);
    return;
  }
  // Ping-pong between `out` and one scratch buffer, arranged so the last stage lands in `out`.
  std::vector<uint8_t> tmp;
  const uint8_t* src = in;
  size_t src_n = n;
  for (size_t i = 0; i < k; ++i) {
    std::vector<uint8_t>& dst = ((k - 1 - i) % 2 == 0) ? out : tmp;
    encode_stage(filters_[i], elem_size_, src, src_n, dst);
    src = dst.data();
    src_n = dst.size();
  }
}

void FilterPipeline::decode(const uint8_t* in, size_t n, size_t raw_size, std::vector<uint8_t>& out,
                            const std::string& what) const {
  if (aliases(in, n, out)) {
    std::vector<uint8_t> copy(in, in + n);
    decode(copy.data(), n, raw_size, out, what);
    return;
  }
  const size_t k = filters_.size();
  if (k == 0) {
    if (n != raw_size)
      throw_error(Errc::kCorrupt, what + ": stored size " + std::to_string(n) +
                                      " differs from expected " + std::to_string(raw_size));
    out.assign(in, in + n);
    return;
  }
  // max_in[i]: the largest input stage i could have had when encoding raw_size bytes.
  std::vector<uint64_t> max_in(k);
  max_in[0] = raw_size;
  for (size_t i = 1; i < k; ++i) max_in[i] = stage_bound(filters_[i - 1].type, max_in[i - 1]);

  std::vector<uint8_t> tmp;
  const uint8_t* src = in;
  size_t src_n = n;
  for (size_t i = k; i-- > 0;) {
    std::vector<uint8_t>& dst = (i % 2 == 0) ? out : tmp;  // stage 0 finishes in `out`
    decode_stage(filters_[i], elem_size_, src, src_n, max_in[i], dst, what);
    src = dst.data();
    src_n = dst.size();
  }
  if (out.size() != raw_size)
    throw_error(Errc::kCorrupt, what + ": decoded " + std::to_string(out.size()) +
                                    " bytes, expected " + std::to_string(raw_size));
}

FilterPipeline fast_variant(const FilterPipeline& p) {
  std::vector<Filter> out;
  bool codec = false;
  for (const Filter& f : p.filters()) {
    if (f.type == FilterType::kShuffle) {
      out.push_back(f);
    } else if (!codec) {  // deflate, zstd or lz4: one lz4 stage
      out.push_back({FilterType::kLz4, 0});
      codec = true;
    }
  }
  return FilterPipeline(std::move(out), p.elem_size());
}

void FilterPipeline::serialize(ByteWriter& w) const {
  w.u32(static_cast<uint32_t>(filters_.size()));
  for (const Filter& f : filters_) {
    w.u8(static_cast<uint8_t>(f.type));
    w.u32(static_cast<uint32_t>(f.level));
  }
  w.u32(elem_size_);
}

FilterPipeline FilterPipeline::deserialize(ByteReader& r) {
  uint32_t count = r.u32();
  if (count > r.remaining() / 5) r.fail("implausible filter count " + std::to_string(count));
  std::vector<Filter> filters;
  filters.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    auto type = static_cast<FilterType>(r.u8());
    auto level = static_cast<int32_t>(r.u32());
    if (!known_type(type)) r.fail("unknown filter type " + std::to_string(static_cast<int>(type)));
    filters.push_back({type, level});
  }
  uint32_t elem_size = r.u32();
  if (elem_size == 0) r.fail("element size 0");
  return FilterPipeline(std::move(filters), elem_size);
}

}  // namespace tessera
