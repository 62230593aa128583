// parallel.cc — see parallel.h.  Built against parallel HDF5 (H5_HAVE_PARALLEL); with a
// serial HDF5 no fapl can ask for MPI-IO, so from_fapl always answers nullptr.
#include "vol/model/parallel.h"

#include <exception>
#include <optional>
#include <string>

#include "vol/base/error.h"

#ifdef H5_HAVE_PARALLEL
#include "engine/mpi/mpi_group.h"
#endif

namespace tessera_vol {

#ifdef H5_HAVE_PARALLEL

struct Parallel::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  std::unique_ptr<tessera::MpiGroup> group;  // on comm; freed before it
};

namespace {
// The group's failed MPI calls as the connector reports them (a VolError).
template <class F>
auto on_group(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const tessera::Error& e) {
    fail_engine(tessera::Status(e.code(), e.what()));
  }
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
  p->impl_->group = on_group([&] { return std::make_unique<tessera::MpiGroup>(comm); });
  p->rank_ = p->impl_->group->rank();
  p->size_ = p->impl_->group->size();
  return p;
}

Parallel::~Parallel() {
  if (impl_) impl_->group.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (impl_ && impl_->comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&impl_->comm);
}

bool Parallel::node_leader() const { return impl_->group->node_leader(); }

bool Parallel::node_any(bool mine) {
  return on_group([&] { return impl_->group->node_any(mine); });
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
  const tessera::MemberFailure mine{rank_, kind, msg};
  std::optional<tessera::MemberFailure> first =
      on_group([&] { return impl_->group->lowest_failure(kind >= 0 ? &mine : nullptr); });
  if (first) throw VolError{first->code, first->message};
}

void Parallel::max(std::vector<uint64_t>& v) {
  on_group([&] { impl_->group->max(v); });
}

void Parallel::sum(std::vector<uint64_t>& v) {
  on_group([&] { impl_->group->sum(v); });
}

std::vector<uint64_t> Parallel::union_of(const std::vector<uint64_t>& mine) {
  return on_group([&] { return impl_->group->union_of(mine); });
}

std::vector<uint64_t> Parallel::gather(const std::vector<uint64_t>& mine) {
  return on_group([&] { return impl_->group->gather(mine); });
}

tessera::CommitGroup& Parallel::group() { return *impl_->group; }

#else  // serial HDF5

struct Parallel::Impl {
  tessera::SoloGroup group;
};
std::unique_ptr<Parallel> Parallel::from_fapl(hid_t) { return nullptr; }
void Parallel::check_fapl(hid_t) const {}
Parallel::~Parallel() = default;
void Parallel::agree(const std::function<void()>& f) { f(); }
void Parallel::max(std::vector<uint64_t>&) {}
void Parallel::sum(std::vector<uint64_t>&) {}
std::vector<uint64_t> Parallel::union_of(const std::vector<uint64_t>& mine) { return mine; }
std::vector<uint64_t> Parallel::gather(const std::vector<uint64_t>& mine) { return mine; }
bool Parallel::node_leader() const { return true; }
bool Parallel::node_any(bool mine) { return mine; }
tessera::CommitGroup& Parallel::group() { return impl_->group; }

#endif

}  // namespace tessera_vol
