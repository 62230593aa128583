// blob_memory.cc — see blob_memory.h.
#include "engine/write/blob_memory.h"

namespace tessera {

BlobMemory::BlobMemory(WriteBudget& budget) : budget_(budget) {}

// Out of the budget's queue, and any flush of this one finished, before the memory goes.
BlobMemory::~BlobMemory() { budget_.forget(this); }

std::vector<uint8_t> BlobMemory::take(size_t n) {
  {
    std::lock_guard<std::mutex> g(mu_);
    // The smallest kept vector that holds n bytes, if it does not waste more than half.
    auto it = free_.lower_bound(n);
    if (it != free_.end() && it->first / 2 <= n) {
      std::vector<uint8_t> v = std::move(it->second);
      bytes_ -= it->first;
      free_.erase(it);
      budget_.report(this, bytes_);
      // Shrinking keeps the capacity and writes nothing; growing within it zeroes only
      // the part beyond the old size.
      v.resize(n);
      return v;
    }
  }
  return std::vector<uint8_t>(n);
}

void BlobMemory::give(std::vector<uint8_t>&& v) {
  const size_t cap = v.capacity();
  std::lock_guard<std::mutex> g(mu_);
  if (cap < (64 << 10) || bytes_ + cap > budget_.limit() / 4) return;  // freed with v
  bytes_ += cap;
  free_.emplace(cap, std::move(v));
  budget_.report(this, bytes_);
}

uint64_t BlobMemory::kept() const {
  std::lock_guard<std::mutex> g(mu_);
  return bytes_;
}

void BlobMemory::flush_in_background() noexcept {
  std::multimap<size_t, std::vector<uint8_t>> gone;
  {
    std::lock_guard<std::mutex> g(mu_);
    gone.swap(free_);
    bytes_ = 0;
    budget_.report(this, 0);
  }
}  // freed here, outside the lock

}  // namespace tessera
