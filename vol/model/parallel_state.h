// parallel_state.h — what a parallel file (an MPI-IO fapl; parallel.h, docs/parallel.md)
// keeps beyond a serial one: the communicator, the last committed epoch, and what this
// rank published on its own since.  One part of SharedFile (object_model.h);
// parallel_state.cc.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "engine/container/container.h"

namespace tessera_vol {

class Parallel;  // parallel.h

struct ParallelState {
  std::unique_ptr<Parallel> comm;  // null for serial access
  uint64_t epoch = 0;  // the last committed epoch
  std::map<uint64_t, size_t> own_published;  // publish_own count per array since the epoch

  ParallelState();
  ~ParallelState();
  // Parallel create/open: rank 0 does the disk work, then the others open shadows.
  void open_container(const std::string& name, unsigned flags, bool create,
                      std::unique_ptr<tessera::Container>* out);
};

}  // namespace tessera_vol
