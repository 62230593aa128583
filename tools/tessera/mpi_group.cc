// mpi_group.cc — CommitGroup over MPI_COMM_WORLD (mpi_group.h).
#include "tools/tessera/mpi_group.h"

#ifdef TESSERA_HAVE_MPI
#include <mpi.h>

#include <algorithm>
#include <string>

#include "engine/util/error.h"

namespace tool {

MpiGroup::MpiGroup() {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

void MpiGroup::agree(const std::function<void()>& f) {
  tessera::Status st = tessera::guard(f);
  int failed = st.ok() ? size_ : rank_, first = size_;
  MPI_Allreduce(&failed, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == size_) return;
  // The lowest failing rank's code and message, on every rank.
  int code = static_cast<int>(st.code());
  std::string msg = st.message();
  int len = static_cast<int>(msg.size());
  MPI_Bcast(&code, 1, MPI_INT, first, MPI_COMM_WORLD);
  MPI_Bcast(&len, 1, MPI_INT, first, MPI_COMM_WORLD);
  msg.resize(static_cast<size_t>(len));
  MPI_Bcast(msg.data(), len, MPI_CHAR, first, MPI_COMM_WORLD);
  if (rank_ != first) msg = "rank " + std::to_string(first) + ": " + msg;
  tessera::throw_error(static_cast<tessera::Errc>(code), msg);
}

void MpiGroup::max(std::vector<uint64_t>& v) {
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
}

void MpiGroup::sum(std::vector<uint64_t>& v) {
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
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
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[static_cast<size_t>(r)] = total;
    total += counts[static_cast<size_t>(r)];
  }
  std::vector<uint64_t> all(static_cast<size_t>(total));
  MPI_Allgatherv(mine.data(), n, MPI_UINT64_T, all.data(), counts.data(), displs.data(), MPI_UINT64_T,
                 MPI_COMM_WORLD);
  return all;
}

bool MpiGroup::node_any(bool mine) {
  int in = mine ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  return out != 0;
}

}  // namespace tool
#endif
