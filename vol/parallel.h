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

namespace tessera_vol {

class Parallel {
 public:
  // The fapl's communicator (duplicated, freed by the destructor) when the fapl uses the
  // MPI-IO driver; nullptr for any other fapl (serial access).
  static std::unique_ptr<Parallel> from_fapl(hid_t fapl);
  ~Parallel();
  Parallel(const Parallel&) = delete;
  Parallel& operator=(const Parallel&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }

  // Runs f here; then, if f threw on any rank, every rank throws the failure of the
  // lowest failing rank (as a VolError, naming that rank on the others).
  void agree(const std::function<void()>& f);
  // Element-wise maximum / sum over all ranks, in place.
  void max(std::vector<uint64_t>& v);
  void sum(std::vector<uint64_t>& v);
  // The sorted union of every rank's values.
  std::vector<uint64_t> union_of(const std::vector<uint64_t>& mine);
  // The ranks sharing this node (MPI_COMM_TYPE_SHARED) share its page cache, so one
  // syncfs(2) by one of them makes all their writes durable.  node_any is collective over
  // the node's ranks (a barrier among them) and tells whether any of them passed true.
  bool node_leader() const { return node_rank_ == 0; }
  bool node_any(bool mine);

 private:
  Parallel() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, size_ = 1, node_rank_ = 0;
};

}  // namespace tessera_vol
