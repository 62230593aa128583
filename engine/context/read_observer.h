// read_observer.h — which way a read ran (ReadPlanner::run_jobs), told to an observer
// the context carries.  The engine keeps no count of its own: tests attach one
// (engine/testing/read_counts.h) to check that a read took the path it should.
#pragma once

namespace tessera {

enum class ReadPath {
  kParallelCold,      // cold tile reads split over the I/O pool, with exact prefetch
  kParallelWarm,      // a re-read of verified blocks split over the cores
  kParallelResident,  // a first read of blocks all in the page cache split over the cores
  kParallelCached,    // copies out of the tile cache split over the cores
  kHintedSerial,      // a short serial cold read that handed its blocks to the kernel first
};

class ReadObserver {
 public:
  virtual ~ReadObserver() = default;
  virtual void took(ReadPath path) = 0;  // called from the reading thread
};

}  // namespace tessera
