#include "engine/tile/block_checksummer.h"

#include <algorithm>

#include "engine/util/checksum.h"

namespace tessera {

struct BlockChecksummer::State {
  Checksum64Stream xxh;
};

BlockChecksummer::BlockChecksummer(uint64_t block) : st_(std::make_unique<State>()), block_(block) {}

BlockChecksummer::~BlockChecksummer() = default;

void BlockChecksummer::update(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const uint64_t take = block_ == 0 ? n : std::min<uint64_t>(n, block_ - filled_);
    st_->xxh.update(b, take);
    b += take;
    n -= take;
    filled_ += take;
    if (block_ != 0 && filled_ == block_) {
      out_.push_back(st_->xxh.digest());
      st_->xxh.reset();
      filled_ = 0;
    }
  }
}

std::vector<uint64_t> BlockChecksummer::finish() {
  if (block_ == 0 || filled_ > 0) out_.push_back(st_->xxh.digest());
  st_->xxh.reset();
  filled_ = 0;
  return std::move(out_);
}

}  // namespace tessera
