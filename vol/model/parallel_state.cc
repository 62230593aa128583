// parallel_state.cc — a parallel file's communicator and its container's open across
// ranks (parallel_state.h).
#include "vol/model/parallel_state.h"

#include "vol/base/error.h"
#include "vol/model/parallel.h"

namespace tessera_vol {

ParallelState::ParallelState() = default;
ParallelState::~ParallelState() = default;

// Rank 0 creates (or opens and recovers) the container before any other rank reads it;
// the others then open a shadow (read-write intent) or a read-only view.  Both steps are
// agreed, so every rank succeeds or fails together.
void ParallelState::open_container(const std::string& name, unsigned flags, bool create,
                                   std::unique_ptr<tessera::Container>* out) {
  Parallel& p = *comm;
  bool rw = create || (flags & H5F_ACC_RDWR) != 0;
  p.agree([&] {
    if (!p.root()) return;
    if (create) {
      auto mode = (flags & H5F_ACC_EXCL) ? tessera::Container::CreateMode::kExclusive
                                         : tessera::Container::CreateMode::kTruncate;
      // Parallel files stay directories: ranks write their fragments side by side, and a
      // one-file container has one writer process (docs/format.md, "Several processes").
      check(tessera::Container::create(name, mode, out, nullptr, tessera::Container::Form{}));
      (*out)->set_file_arrays(true);  // new arrays: directories + schema files
    } else {
      check(tessera::Container::open(name, rw, out));
      if (rw && (*out)->one_file()) {
        out->reset();
        fail_unsupported("file '" + name + "' is a one-file container: parallel access for writing is not "
                         "supported yet (open it read-only, or create parallel files as directories)");
      }
      (*out)->set_file_arrays(true);
      // Recovery happens here, once, so that later array opens need no ordering.
      if (rw) check((*out)->recover_arrays());
    }
  });
  p.agree([&] {
    if (p.root()) return;
    if (rw) check(tessera::Container::open_shadow(name, out));
    else check(tessera::Container::open(name, false, out));
  });
}

}  // namespace tessera_vol
