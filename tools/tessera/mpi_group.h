// mpi_group.h — the engine's CommitGroup (engine/container/commit.h) over MPI_COMM_WORLD,
// for `tessera consolidate` under mpirun: the engine runs the epoch commit, the tool
// supplies the collectives.
#pragma once
#ifdef TESSERA_HAVE_MPI
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/container/commit.h"

namespace tool {

class MpiGroup final : public tessera::CommitGroup {
 public:
  MpiGroup();
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // If f threw on any rank, every rank throws the lowest failing rank's failure.
  void agree(const std::function<void()>& f) override;
  void max(std::vector<uint64_t>& v) override;
  void sum(std::vector<uint64_t>& v) override;
  std::vector<uint64_t> union_of(const std::vector<uint64_t>& mine) override;
  std::vector<uint64_t> gather(const std::vector<uint64_t>& mine) override;
  // The tool does not know the node layout: rank 0 leads one group of every rank.
  bool node_leader() const override { return rank_ == 0; }
  bool node_any(bool mine) override;

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace tool
#endif
