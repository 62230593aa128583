// mpi_group.cc — see mpi_group.h.
#include "engine/mpi/mpi_group.h"

#include <algorithm>

#include "engine/util/error.h"

namespace tessera {

namespace {
void mpi_check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw_error(Errc::kIo, std::string("MPI: ") + what + " failed");
}
}  // namespace

MpiGroup::MpiGroup(MPI_Comm comm) : comm_(comm) {
  mpi_check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  mpi_check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_), "MPI_Comm_split_type");
  mpi_check(MPI_Comm_rank(node_, &node_rank_), "MPI_Comm_rank");
}

MpiGroup::~MpiGroup() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (node_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&node_);
}

std::optional<MemberFailure> MpiGroup::lowest_failure(const MemberFailure* mine) {
  int me = mine ? rank_ : size_, first = size_;
  mpi_check(MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, comm_), "MPI_Allreduce");
  if (first == size_) return std::nullopt;
  MemberFailure f;
  if (mine) f = *mine;
  f.rank = first;
  int hdr[2] = {f.code, static_cast<int>(f.message.size())};
  mpi_check(MPI_Bcast(hdr, 2, MPI_INT, first, comm_), "MPI_Bcast");
  f.code = hdr[0];
  f.message.resize(static_cast<size_t>(hdr[1]));
  if (hdr[1] > 0) mpi_check(MPI_Bcast(f.message.data(), hdr[1], MPI_CHAR, first, comm_), "MPI_Bcast");
  if (rank_ != first) f.message = "on MPI rank " + std::to_string(first) + ": " + f.message;
  return f;
}

void MpiGroup::agree(const std::function<void()>& f) {
  const Status st = guard(f);
  const MemberFailure mine{rank_, static_cast<int>(st.code()), st.message()};
  std::optional<MemberFailure> first = lowest_failure(st.ok() ? nullptr : &mine);
  if (first) throw_error(static_cast<Errc>(first->code), first->message);
}

void MpiGroup::max(std::vector<uint64_t>& v) {
  if (v.empty()) return;
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_UINT64_T, MPI_MAX, comm_),
            "MPI_Allreduce");
}

void MpiGroup::sum(std::vector<uint64_t>& v) {
  if (v.empty()) return;
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_UINT64_T, MPI_SUM, comm_),
            "MPI_Allreduce");
}

std::vector<uint64_t> MpiGroup::union_of(const std::vector<uint64_t>& mine) {
  std::vector<uint64_t> all = gather(mine);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

std::vector<uint64_t> MpiGroup::gather(const std::vector<uint64_t>& mine) {
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
  mpi_check(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_), "MPI_Allgather");
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[static_cast<size_t>(r)] = total;
    total += counts[static_cast<size_t>(r)];
  }
  std::vector<uint64_t> all(static_cast<size_t>(total));
  mpi_check(MPI_Allgatherv(mine.data(), n, MPI_UINT64_T, all.data(), counts.data(), displs.data(), MPI_UINT64_T,
                           comm_),
            "MPI_Allgatherv");
  return all;
}

bool MpiGroup::node_any(bool mine) {
  int in = mine ? 1 : 0, out = 0;
  mpi_check(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, node_), "MPI_Allreduce");
  return out != 0;
}

}  // namespace tessera
