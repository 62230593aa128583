#include "engine/block_checksummer.h"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <algorithm>

#include "engine/checksum.h"

namespace tessera {

struct BlockChecksummer::State {
  XXH3_state_t xxh;
};

BlockChecksummer::BlockChecksummer(uint64_t block) : st_(std::make_unique<State>()), block_(block) {
  XXH3_INITSTATE(&st_->xxh);
  XXH3_64bits_reset(&st_->xxh);
}

BlockChecksummer::~BlockChecksummer() = default;

namespace {
// The streaming digest, except in a fuzzing build, where every checksum is the constant
// checksum64 returns (checksum.cc) and this must agree with it.
uint64_t digest(XXH3_state_t* s) {
#ifdef TESSERA_FUZZING
  (void)s;
  return checksum64(nullptr, 0);
#else
  return XXH3_64bits_digest(s);
#endif
}
}  // namespace

void BlockChecksummer::update(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const uint64_t take = block_ == 0 ? n : std::min<uint64_t>(n, block_ - filled_);
    XXH3_64bits_update(&st_->xxh, b, take);
    b += take;
    n -= take;
    filled_ += take;
    if (block_ != 0 && filled_ == block_) {
      out_.push_back(digest(&st_->xxh));
      XXH3_64bits_reset(&st_->xxh);
      filled_ = 0;
    }
  }
}

std::vector<uint64_t> BlockChecksummer::finish() {
  if (block_ == 0 || filled_ > 0) out_.push_back(digest(&st_->xxh));
  XXH3_64bits_reset(&st_->xxh);
  filled_ = 0;
  return std::move(out_);
}

}  // namespace tessera
