// blob_memory.h — memory of spilled blobs kept for the next ones (blob_buffer.h).  A 16
// MiB blob in fresh memory costs 4,096 page faults, which made copying a write into the
// buffer as slow as writing it to a file; reusing a spilled blob's memory costs none.
// What is kept counts against the write budget like a write buffer (write_budget.h): it
// is an owner the budget can ask to flush, which here means giving the memory back — so
// the budget bounds buffered writes and kept memory together.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "engine/write/write_budget.h"

namespace tessera {

class BlobMemory final : public BufferOwner {
 public:
  explicit BlobMemory(WriteBudget& budget);
  ~BlobMemory();
  BlobMemory(const BlobMemory&) = delete;
  BlobMemory& operator=(const BlobMemory&) = delete;

  // n bytes for a blob, from kept memory of a fitting size when there is some (its
  // contents are garbage: the caller overwrites all n bytes).
  std::vector<uint8_t> take(size_t n);
  // A spilled blob's memory: kept while the total kept stays within a quarter of the
  // budget's limit (and vectors of at least 64 KiB), else freed.
  void give(std::vector<uint8_t>&& v);
  uint64_t kept() const;
  // The budget needs room: everything kept is freed.
  void flush_in_background() noexcept override;
  // Around a fork (context.cc's handlers): taken before it, released after it in both
  // processes, so the child's copy is consistent.
  void lock_for_fork() { mu_.lock(); }
  void unlock_after_fork() { mu_.unlock(); }

 private:
  WriteBudget& budget_;
  mutable std::mutex mu_;
  std::multimap<size_t, std::vector<uint8_t>> free_;  // by capacity
  uint64_t bytes_ = 0;
};

}  // namespace tessera
