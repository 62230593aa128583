// mpi_group.h — the engine's CommitGroup (engine/container/commit.h) over an MPI
// communicator: the one MPI implementation of the collectives an epoch commit needs,
// used by the connector's parallel files (vol/model/parallel.h) and by `tessera
// consolidate` under mpirun.  Built only where MPI is installed (engine/CMakeLists.txt);
// its users link tessera_engine_mpi.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/container/commit.h"

namespace tessera {

// One member's failure in a collective step: the failing member's rank, a code the
// caller chose (an Errc, or a connector's own error kind) and the message.
struct MemberFailure {
  int rank = 0;
  int code = 0;
  std::string message;
};

class MpiGroup final : public CommitGroup {
 public:
  // comm is borrowed: the caller keeps it alive while the group lives.  Collective over
  // comm (it splits off the ranks of each node).  A failed MPI call throws tessera::Error.
  explicit MpiGroup(MPI_Comm comm);
  ~MpiGroup() override;
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // If f threw on any member, every member throws the lowest failing member's failure
  // (its Errc; the message prefixed "on MPI rank N: " on the others).
  void agree(const std::function<void()>& f) override;
  void max(std::vector<uint64_t>& v) override;
  void sum(std::vector<uint64_t>& v) override;
  std::vector<uint64_t> union_of(const std::vector<uint64_t>& mine) override;
  std::vector<uint64_t> gather(const std::vector<uint64_t>& mine) override;
  // The ranks sharing a node (MPI_COMM_TYPE_SHARED) share its page cache: its lowest
  // rank leads them.
  bool node_leader() const override { return node_rank_ == 0; }
  bool node_any(bool mine) override;

  // The agreement under agree(), for callers whose failures carry codes of their own:
  // collective; each member passes its failure (rank ignored) or nullptr, and every
  // member gets the lowest failing member's, its message prefixed "on MPI rank N: " on
  // the other members — or nothing when no member failed.
  std::optional<MemberFailure> lowest_failure(const MemberFailure* mine);

 private:
  MPI_Comm comm_;
  MPI_Comm node_ = MPI_COMM_NULL;  // the ranks of comm_ on this node
  int rank_ = 0, size_ = 1, node_rank_ = 0;
};

}  // namespace tessera
