// read_counts.h — a ReadObserver (engine/context/read_observer.h) that counts the reads
// of each path, for tests: attach it to every context whose reads a test checks.
#pragma once
#include <atomic>
#include <cstdint>

#include "engine/context/read_observer.h"

namespace tessera {

class ReadCounts final : public ReadObserver {
 public:
  void took(ReadPath p) override { ++n_[static_cast<int>(p)]; }
  uint64_t parallel_reads() const { return n_[static_cast<int>(ReadPath::kParallelCold)].load(); }
  uint64_t warm_parallel_reads() const { return n_[static_cast<int>(ReadPath::kParallelWarm)].load(); }
  uint64_t resident_parallel_reads() const { return n_[static_cast<int>(ReadPath::kParallelResident)].load(); }
  uint64_t cached_parallel_reads() const { return n_[static_cast<int>(ReadPath::kParallelCached)].load(); }
  uint64_t hinted_serial_reads() const { return n_[static_cast<int>(ReadPath::kHintedSerial)].load(); }

 private:
  std::atomic<uint64_t> n_[5] = {};
};

}  // namespace tessera
