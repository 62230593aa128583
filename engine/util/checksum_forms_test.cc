// The checksum's forms (checksum.h): the SSE2 library, the AVX2 copy and the AVX-512 copy
// must give the library's XXH3-64 value for every length and alignment — one-shot and
// streamed in uneven pieces — since the values are part of the on-disk format.  The
// forms this build has and this CPU runs are compared; checksum64 (the picked one) too.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>
#include <xxhash.h>

#include "engine/util/checksum.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

struct Form {
  const char* name;
  bool usable;
  uint64_t (*hash)(const void*, size_t);
  void (*reset)(void*);
  void (*update)(void*, const void*, size_t);
  uint64_t (*digest)(void*);
};

std::vector<Form> forms() {
  std::vector<Form> f;
  f.push_back({"avx2", xxh_avx2::compiled() && __builtin_cpu_supports("avx2"), xxh_avx2::hash, xxh_avx2::reset,
               xxh_avx2::update, xxh_avx2::digest});
  f.push_back({"avx512", xxh_avx512::compiled() && __builtin_cpu_supports("avx512f"), xxh_avx512::hash,
               xxh_avx512::reset, xxh_avx512::update, xxh_avx512::digest});
  return f;
}

TEST(ChecksumForms, EveryFormGivesTheLibrarysValue) {
  testutil::Rng rng(2026);
  std::vector<uint8_t> buf(3 << 20);
  rng.fill(buf.data(), buf.size());
  std::vector<size_t> lengths = {0, 1, 3, 16, 17, 128, 129, 240, 241, 1023, 1024, 1025, 4096, 65536, 65537};
  for (int k = 0; k < 40; ++k) lengths.push_back(rng.below(buf.size() - 64));
  lengths.push_back(buf.size() - 64);
  alignas(64) unsigned char state[Checksum64Stream::kStateBytes];
  int compared = 0;
  for (size_t n : lengths)
    for (size_t align : {size_t{0}, size_t{1}, size_t{7}, size_t{63}}) {
      const uint8_t* p = buf.data() + align;
      const uint64_t want = XXH3_64bits(p, n);
      EXPECT_EQ(checksum64(p, n), want) << "picked form, length " << n << " offset " << align;
      Checksum64Stream st;
      for (size_t at = 0; at < n;) {  // uneven pieces
        const size_t take = std::min(n - at, size_t{1} + rng.below(300000));
        st.update(p + at, take);
        at += take;
      }
      EXPECT_EQ(st.digest(), want) << "picked form streamed, length " << n;
      for (const Form& f : forms()) {
        if (!f.usable) continue;
        ++compared;
        EXPECT_EQ(f.hash(p, n), want) << f.name << ", length " << n << " offset " << align;
        f.reset(state);
        for (size_t at = 0; at < n;) {
          const size_t take = std::min(n - at, size_t{1} + rng.below(200000));
          f.update(state, p + at, take);
          at += take;
        }
        EXPECT_EQ(f.digest(state), want) << f.name << " streamed, length " << n;
      }
    }
  // Which forms ran is printed, not asserted: another CPU may have neither.
  std::printf("checksum forms compared with the library: %d cases\n", compared);
}

}  // namespace
}  // namespace tessera
