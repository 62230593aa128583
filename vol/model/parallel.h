// parallel.h — the MPI side of a parallel file (H5Pset_fapl_mpio): the communicator and
// the few collectives the connector needs (docs/parallel.md).
//
// PHDF5's contract holds: every rank makes the same metadata calls in the same order.
// A collective step in the connector runs its local part on every rank and then calls
// agree(), so a failure on any rank fails the step on every rank with the same message —
// no rank goes on to a later collective that a failed rank will never reach.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/container/commit.h"

namespace tessera_vol {

// Native PHDF5 refuses every object flush (H5Oflush, H5Dflush, H5Gflush, H5Tflush) in a
// parallel file with this message; H5Fflush is the collective commit point.
inline constexpr char kNoObjectFlushInParallel[] =
    "H5Oflush isn't supported for parallel (as in native PHDF5; H5Fflush is the collective commit point)";

class Parallel {
 public:
  // The fapl's communicator (duplicated, freed by the destructor) when the fapl uses the
  // MPI-IO driver; nullptr for any other fapl (serial access).
  static std::unique_ptr<Parallel> from_fapl(hid_t fapl);
  // Fails, as native PHDF5 does, for fapl settings a parallel file cannot have: evict on
  // close (with more than one rank) and page buffering.  Every rank has the same fapl, so
  // all fail together.
  void check_fapl(hid_t fapl) const;
  ~Parallel();
  Parallel(const Parallel&) = delete;
  Parallel& operator=(const Parallel&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }

  // The collectives below are engine/mpi/'s (tessera::MpiGroup): they run on it.
  // Runs f here; then, if f threw on any rank, every rank throws the failure of the
  // lowest failing rank (as a VolError, naming that rank on the others).
  void agree(const std::function<void()>& f);
  // Element-wise maximum / sum over all ranks, in place.
  void max(std::vector<uint64_t>& v);
  void sum(std::vector<uint64_t>& v);
  // The sorted union of every rank's values.
  std::vector<uint64_t> union_of(const std::vector<uint64_t>& mine);
  // Every rank's values, concatenated in rank order.
  std::vector<uint64_t> gather(const std::vector<uint64_t>& mine);
  // The ranks sharing this node (MPI_COMM_TYPE_SHARED) share its page cache, so one
  // syncfs(2) by one of them makes all their writes durable.  node_any is collective over
  // the node's ranks (a barrier among them) and tells whether any of them passed true.
  bool node_leader() const;
  bool node_any(bool mine);
  // The ranks as the engine's CommitGroup (engine/container/commit.h), for an epoch
  // commit: its agree() reports a failure as a tessera::Error with the failing rank's code.
  tessera::CommitGroup& group();

 private:
  Parallel() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, size_ = 1;
};

}  // namespace tessera_vol
