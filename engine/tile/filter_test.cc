// Filter pipeline round trips and hostile-input handling (engine/tile/filter.h).
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/tile/filter.h"

namespace tessera {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

// Slowly varying little-endian integers: the case shuffle + codec is built for.
Bytes compressible_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  uint32_t v = 1000;
  for (size_t i = 0; i < n; i += 4) {
    v += rng() % 3;
    for (size_t j = 0; j < 4 && i + j < n; ++j) b[i + j] = static_cast<uint8_t>(v >> (8 * j));
  }
  return b;
}

std::vector<FilterPipeline> pipelines() {
  using F = FilterType;
  return {
      FilterPipeline({}, 4),
      FilterPipeline({{F::kShuffle, 0}}, 4),
      FilterPipeline({{F::kShuffle, 0}}, 3),
      FilterPipeline({{F::kShuffle, 0}}, 8),
      FilterPipeline({{F::kShuffle, 0}}, 2),
      FilterPipeline({{F::kDeflate, 1}}, 1),
      FilterPipeline({{F::kDeflate, 9}}, 1),
      FilterPipeline({{F::kZstd, 0}}, 1),
      FilterPipeline({{F::kZstd, 19}}, 1),
      FilterPipeline({{F::kLz4, 0}}, 1),
      FilterPipeline({{F::kShuffle, 0}, {F::kDeflate, 6}}, 4),
      FilterPipeline({{F::kShuffle, 0}, {F::kZstd, 3}}, 8),
      FilterPipeline({{F::kShuffle, 0}, {F::kLz4, 0}}, 2),
      FilterPipeline({{F::kShuffle, 0}, {F::kZstd, 1}, {F::kDeflate, 1}}, 5),
      FilterPipeline({{F::kLz4, 0}, {F::kShuffle, 0}, {F::kZstd, 2}}, 4),
  };
}

const size_t kSizes[] = {0, 1, 3, 7, 8, 13, 4095, 4096, 65537, 300001};

TEST(FilterRoundTrip, AllPipelinesAllSizes) {
  uint32_t seed = 1;
  for (const auto& pl : pipelines()) {
    for (size_t n : kSizes) {
      for (bool compressible : {false, true}) {
        Bytes raw = compressible ? compressible_bytes(n, seed) : random_bytes(n, seed);
        ++seed;
        Bytes enc, dec;
        pl.encode(raw.data(), raw.size(), enc);
        pl.decode(enc.data(), enc.size(), raw.size(), dec, "tile");
        ASSERT_EQ(dec, raw) << "filters=" << pl.filters().size() << " es=" << pl.elem_size() << " n=" << n;
        if (compressible && n >= 65537 && !pl.empty() && pl.filters().back().type != FilterType::kShuffle) {
          // The data are 4-byte integers: a matching shuffle must at least halve them.
          bool shuffled = pl.filters().front().type == FilterType::kShuffle && pl.elem_size() == 4;
          EXPECT_LT(enc.size(), shuffled ? n / 2 : n) << "compressible data should shrink";
        }
      }
    }
  }
}

TEST(FilterShuffle, MatchesHdf5Layout) {
  // 3 elements of 4 bytes + 2 leftover bytes: bytes are grouped by significance, the
  // leftovers stay unchanged at the end.
  Bytes raw = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23, 98, 99};
  Bytes enc;
  FilterPipeline({{FilterType::kShuffle, 0}}, 4).encode(raw.data(), raw.size(), enc);
  EXPECT_EQ(enc, (Bytes{0, 10, 20, 1, 11, 21, 2, 12, 22, 3, 13, 23, 98, 99}));
  // Fewer bytes than one element: unchanged.
  Bytes small = {5, 6, 7}, out;
  FilterPipeline({{FilterType::kShuffle, 0}}, 4).encode(small.data(), small.size(), out);
  EXPECT_EQ(out, small);
  // An odd element size goes through the generic path.
  Bytes r5 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  FilterPipeline({{FilterType::kShuffle, 0}}, 5).encode(r5.data(), r5.size(), out);
  EXPECT_EQ(out, (Bytes{1, 6, 2, 7, 3, 8, 4, 9, 5, 10}));
}

TEST(FilterRoundTrip, OutputBufferIsReplacedAndMayAliasInput) {
  FilterPipeline pl({{FilterType::kShuffle, 0}, {FilterType::kZstd, 3}}, 4);
  Bytes raw = compressible_bytes(1001, 7);
  Bytes buf(50000, 0xEE);  // stale contents must not leak into the result
  pl.encode(raw.data(), raw.size(), buf);
  Bytes enc = buf;
  pl.decode(buf.data(), buf.size(), raw.size(), buf, "tile");  // in aliases out
  EXPECT_EQ(buf, raw);
  pl.encode(buf.data(), buf.size(), buf);
  EXPECT_EQ(buf, enc);
}

void expect_corrupt(const FilterPipeline& pl, const Bytes& enc, size_t raw_size) {
  Bytes out;
  try {
    pl.decode(enc.data(), enc.size(), raw_size, out, "frag/t.tfr tile 3");
    FAIL() << "decode accepted bad data";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kCorrupt) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("frag/t.tfr tile 3", 0), 0u) << e.what();
  }
}

TEST(FilterCorrupt, TruncatedOrFlippedDataThrows) {
  for (const auto& pl : pipelines()) {
    Bytes raw = compressible_bytes(20000, 3);
    Bytes enc;
    pl.encode(raw.data(), raw.size(), enc);
    // Wrong expected size, truncations, and extensions.
    expect_corrupt(pl, enc, raw.size() + 1);
    if (raw.size() > 0) expect_corrupt(pl, enc, raw.size() - 1);
    for (size_t cut : {size_t{0}, size_t{1}, size_t{7}, enc.size() / 2, enc.size() - 1}) {
      Bytes t(enc.begin(), enc.begin() + cut);
      expect_corrupt(pl, t, raw.size());
    }
    // Bit flips: either detected, or (for filters that cannot detect, e.g. shuffle only)
    // decoded to the right size.  Never a crash or an overrun.
    std::mt19937 rng(11);
    for (int k = 0; k < 200 && !enc.empty(); ++k) {
      Bytes bad = enc;
      bad[rng() % bad.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
      Bytes out;
      try {
        pl.decode(bad.data(), bad.size(), raw.size(), out, "t");
        EXPECT_EQ(out.size(), raw.size());
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), Errc::kCorrupt);
      }
    }
  }
}

TEST(FilterCorrupt, HugeDeclaredSizeIsRejectedBeforeAllocating) {
  for (FilterType t : {FilterType::kDeflate, FilterType::kZstd, FilterType::kLz4}) {
    FilterPipeline pl({{t, 1}}, 1);
    Bytes raw = random_bytes(100, 1), enc;
    pl.encode(raw.data(), raw.size(), enc);
    uint64_t huge = uint64_t{1} << 60;
    std::memcpy(enc.data(), &huge, 8);
    expect_corrupt(pl, enc, raw.size());
  }
  // Two codecs: the last stage's declared size is bounded by what the first could produce.
  FilterPipeline pl2({{FilterType::kZstd, 1}, {FilterType::kLz4, 0}}, 1);
  Bytes raw = random_bytes(100, 2), enc;
  pl2.encode(raw.data(), raw.size(), enc);
  uint64_t huge = uint64_t{1} << 40;
  std::memcpy(enc.data(), &huge, 8);
  expect_corrupt(pl2, enc, raw.size());
}

TEST(FilterCorrupt, GarbageInput) {
  std::mt19937 rng(5);
  for (const auto& pl : pipelines()) {
    if (pl.empty()) continue;
    for (int k = 0; k < 50; ++k) {
      Bytes junk = random_bytes(rng() % 300, rng());
      Bytes out;
      try {
        pl.decode(junk.data(), junk.size(), 1000, out, "junk");
        EXPECT_EQ(out.size(), 1000u);
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), Errc::kCorrupt);
      }
    }
  }
}

TEST(FilterValidate, RejectsBadFiltersAndLevels) {
  auto code = [](const FilterPipeline& pl) {
    try {
      pl.validate();
    } catch (const Error& e) {
      return e.code();
    }
    return Errc::kOk;
  };
  using F = FilterType;
  EXPECT_EQ(code(FilterPipeline({{F::kDeflate, 0}}, 1)), Errc::kInvalidArgument);
  EXPECT_EQ(code(FilterPipeline({{F::kDeflate, 10}}, 1)), Errc::kInvalidArgument);
  EXPECT_EQ(code(FilterPipeline({{F::kDeflate, 1}}, 1)), Errc::kOk);
  EXPECT_EQ(code(FilterPipeline({{F::kZstd, -1}}, 1)), Errc::kInvalidArgument);
  EXPECT_EQ(code(FilterPipeline({{F::kZstd, 20}}, 1)), Errc::kInvalidArgument);
  EXPECT_EQ(code(FilterPipeline({{F::kZstd, 0}, {F::kZstd, 19}}, 1)), Errc::kOk);
  EXPECT_EQ(code(FilterPipeline({{static_cast<F>(9), 0}}, 1)), Errc::kInvalidArgument);
  EXPECT_EQ(code(FilterPipeline({{F::kShuffle, 0}}, 0)), Errc::kInvalidArgument);
  // encode validates too.
  Bytes out;
  EXPECT_THROW(FilterPipeline({{F::kDeflate, 12}}, 1).encode(nullptr, 0, out), Error);
}

TEST(FilterSerialize, RoundTripAndLayout) {
  FilterPipeline pl({{FilterType::kShuffle, 0}, {FilterType::kZstd, 7}}, 8);
  ByteWriter w;
  pl.serialize(w);
  EXPECT_EQ(w.size(), 4u + 2 * 5 + 4);
  EXPECT_EQ(w.buf()[0], 2);
  EXPECT_EQ(w.buf()[4], 1);  // shuffle
  EXPECT_EQ(w.buf()[9], 3);  // zstd
  EXPECT_EQ(w.buf()[10], 7);
  ByteReader r(w.buf().data(), w.size(), "footer");
  EXPECT_EQ(FilterPipeline::deserialize(r), pl);
  EXPECT_TRUE(r.done());

  ByteWriter e;
  FilterPipeline().serialize(e);
  ByteReader re(e.buf().data(), e.size(), "footer");
  FilterPipeline empty = FilterPipeline::deserialize(re);
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.elem_size(), 1u);
}

TEST(FilterSerialize, RejectsCorruptEncodings) {
  auto corrupt = [](Bytes b) {
    ByteReader r(b.data(), b.size(), "footer");
    try {
      FilterPipeline::deserialize(r);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kCorrupt);
      EXPECT_EQ(std::string(e.what()).rfind("footer", 0), 0u);
      return true;
    }
    return false;
  };
  FilterPipeline pl({{FilterType::kDeflate, 4}}, 4);
  ByteWriter w;
  pl.serialize(w);
  Bytes good = w.buf();
  Bytes bad_type = good;
  bad_type[4] = 77;
  EXPECT_TRUE(corrupt(bad_type));
  Bytes huge_count = good;
  huge_count[3] = 0x7f;
  EXPECT_TRUE(corrupt(huge_count));
  for (size_t cut = 0; cut < good.size(); ++cut) EXPECT_TRUE(corrupt(Bytes(good.begin(), good.begin() + cut)));
  Bytes zero_es = good;
  std::memset(zero_es.data() + zero_es.size() - 4, 0, 4);
  EXPECT_TRUE(corrupt(zero_es));
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// The deflate stage is `u64 length` + an RFC 1950 zlib stream (docs/format.md).  zlib is
// an independent implementation of that stream format: what the engine (libdeflate)
// writes must inflate with zlib, and what zlib's compress2 writes must decode here.
TEST(FilterDeflate, InteroperatesWithZlib) {
  std::mt19937_64 rng(31);
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{300000}}) {
    std::vector<uint8_t> raw(n);
    for (size_t i = 0; i < n; ++i) raw[i] = static_cast<uint8_t>(i % 7 == 0 ? rng() : i / 5);
    for (int level : {1, 2, 6, 9}) {
      SCOPED_TRACE("n " + std::to_string(n) + " level " + std::to_string(level));
      FilterPipeline p({{FilterType::kDeflate, level}}, 1);
      std::vector<uint8_t> enc;
      p.encode(raw.data(), raw.size(), enc);
      ASSERT_GE(enc.size(), 8u);
      uint64_t len;
      std::memcpy(&len, enc.data(), 8);
      EXPECT_EQ(len, n);
      std::vector<uint8_t> out(n + 1);
      uLongf out_len = static_cast<uLongf>(out.size());
      uLong src_len = static_cast<uLong>(enc.size() - 8);
      ASSERT_EQ(uncompress2(out.data(), &out_len, enc.data() + 8, &src_len), Z_OK);
      EXPECT_EQ(src_len, enc.size() - 8);
      out.resize(out_len);
      EXPECT_EQ(out, raw);

      std::vector<uint8_t> z(8 + compressBound(static_cast<uLong>(n)));
      uLongf zl = static_cast<uLongf>(z.size() - 8);
      ASSERT_EQ(compress2(z.data() + 8, &zl, raw.data(), static_cast<uLong>(n), level), Z_OK);
      std::memcpy(z.data(), &len, 8);
      z.resize(8 + zl);
      std::vector<uint8_t> dec;
      p.decode(z.data(), z.size(), n, dec, "zlib-written tile");
      EXPECT_EQ(dec, raw);
    }
  }
}

}  // namespace
}  // namespace tessera
