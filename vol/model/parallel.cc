// parallel.cc — see parallel.h.  Built against parallel HDF5 (H5_HAVE_PARALLEL); with a
// serial HDF5 no fapl can ask for MPI-IO, so from_fapl always answers nullptr.
#include "vol/model/parallel.h"

#include <algorithm>
#include <exception>
#include <string>

#include "vol/base/error.h"

namespace tessera_vol {

#ifdef H5_HAVE_PARALLEL

struct Parallel::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm node = MPI_COMM_NULL;  // the ranks of comm on this node
};

namespace {
void mpi_check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) fail_engine(tessera::Status(tessera::Errc::kIo, std::string("MPI: ") + what + " failed"));
}
}  // namespace

void Parallel::check_fapl(hid_t fapl) const {
  hbool_t evict = false;  // native allows it on a communicator of one rank
  if (size_ > 1 && H5Pget_evict_on_close(fapl, &evict) >= 0 && evict)
    fail_unsupported("evict on close is currently not supported in parallel HDF5");
  size_t page_buf = 0;  // refused with the MPI-IO driver whatever the communicator
  if (H5Pget_page_buffer_size(fapl, &page_buf, nullptr, nullptr) >= 0 && page_buf > 0)
    fail_unsupported("page buffering is disabled for parallel");
}

std::unique_ptr<Parallel> Parallel::from_fapl(hid_t fapl) {
  if (fapl == H5P_DEFAULT || fapl < 0 || H5Pget_driver(fapl) != H5FD_MPIO) return nullptr;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Info info = MPI_INFO_NULL;
  if (H5Pget_fapl_mpio(fapl, &comm, &info) < 0) fail_arg("cannot read the communicator from the MPI-IO fapl");
  // H5Pget_fapl_mpio hands out duplicates: keep the communicator, free the info (tessera
  // passes no hints to MPI-IO; the fapl itself keeps its info for H5Fget_access_plist).
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  std::unique_ptr<Parallel> p(new Parallel());
  p->impl_ = std::make_unique<Impl>();
  p->impl_->comm = comm;
  mpi_check(MPI_Comm_rank(comm, &p->rank_), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &p->size_), "MPI_Comm_size");
  mpi_check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, p->rank_, MPI_INFO_NULL, &p->impl_->node),
            "MPI_Comm_split_type");
  mpi_check(MPI_Comm_rank(p->impl_->node, &p->node_rank_), "MPI_Comm_rank");
  return p;
}

Parallel::~Parallel() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (impl_ && impl_->node != MPI_COMM_NULL && !finalized) MPI_Comm_free(&impl_->node);
  if (impl_ && impl_->comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&impl_->comm);
}

bool Parallel::node_any(bool mine) {
  int in = mine ? 1 : 0, out = 0;
  mpi_check(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, impl_->node), "MPI_Allreduce");
  return out != 0;
}

void Parallel::agree(const std::function<void()>& f) {
  int kind = -1;
  std::string msg;
  try {
    f();
  } catch (const VolError& e) {
    kind = e.kind;
    msg = e.msg;
  } catch (const std::exception& e) {
    kind = static_cast<int>(ErrorKind::kEngine);
    msg = e.what();
  } catch (...) {
    kind = static_cast<int>(ErrorKind::kEngine);
    msg = "unknown failure";
  }
  const MPI_Comm c = impl_->comm;
  int mine = kind >= 0 ? rank_ : size_, first = size_;
  mpi_check(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, c), "MPI_Allreduce");
  if (first == size_) return;
  int hdr[2] = {kind, static_cast<int>(msg.size())};
  mpi_check(MPI_Bcast(hdr, 2, MPI_INT, first, c), "MPI_Bcast");
  msg.resize(static_cast<size_t>(hdr[1]));
  if (hdr[1] > 0) mpi_check(MPI_Bcast(msg.data(), hdr[1], MPI_CHAR, first, c), "MPI_Bcast");
  if (rank_ != first) msg = "on MPI rank " + std::to_string(first) + ": " + msg;
  throw VolError{hdr[0], msg};
}

void Parallel::max(std::vector<uint64_t>& v) {
  if (v.empty()) return;
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_UINT64_T, MPI_MAX, impl_->comm),
            "MPI_Allreduce");
}

void Parallel::sum(std::vector<uint64_t>& v) {
  if (v.empty()) return;
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_UINT64_T, MPI_SUM, impl_->comm),
            "MPI_Allreduce");
}

std::vector<uint64_t> Parallel::union_of(const std::vector<uint64_t>& mine) {
  std::vector<uint64_t> all = gather(mine);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

std::vector<uint64_t> Parallel::gather(const std::vector<uint64_t>& mine) {
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
  mpi_check(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, impl_->comm), "MPI_Allgather");
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[static_cast<size_t>(r)] = total;
    total += counts[static_cast<size_t>(r)];
  }
  std::vector<uint64_t> all(static_cast<size_t>(total));
  mpi_check(MPI_Allgatherv(mine.data(), n, MPI_UINT64_T, all.data(), counts.data(), displs.data(), MPI_UINT64_T,
                           impl_->comm),
            "MPI_Allgatherv");
  return all;
}

#else  // serial HDF5

struct Parallel::Impl {};
std::unique_ptr<Parallel> Parallel::from_fapl(hid_t) { return nullptr; }
void Parallel::check_fapl(hid_t) const {}
Parallel::~Parallel() = default;
void Parallel::agree(const std::function<void()>& f) { f(); }
void Parallel::max(std::vector<uint64_t>&) {}
void Parallel::sum(std::vector<uint64_t>&) {}
std::vector<uint64_t> Parallel::union_of(const std::vector<uint64_t>& mine) { return mine; }
std::vector<uint64_t> Parallel::gather(const std::vector<uint64_t>& mine) { return mine; }
bool Parallel::node_any(bool mine) { return mine; }

#endif

namespace {
tessera::Errc errc_of(ErrorKind k) {
  switch (k) {
    case ErrorKind::kUnsupported: return tessera::Errc::kUnsupported;
    case ErrorKind::kBadArgument: return tessera::Errc::kInvalidArgument;
    case ErrorKind::kNotFound: return tessera::Errc::kNotFound;
    case ErrorKind::kAlreadyExists: return tessera::Errc::kAlreadyExists;
    case ErrorKind::kCorrupt: return tessera::Errc::kCorrupt;
    case ErrorKind::kIo: return tessera::Errc::kIo;
    case ErrorKind::kNoSpace: return tessera::Errc::kNoSpace;
    case ErrorKind::kBusy: return tessera::Errc::kBusy;
    default: return tessera::Errc::kInternal;
  }
}
}  // namespace

void RankGroup::agree(const std::function<void()>& f) {
  try {
    p_.agree(f);
  } catch (const VolError& e) {
    throw tessera::Error(errc_of(static_cast<ErrorKind>(e.kind)), e.msg);
  }
}

}  // namespace tessera_vol
