// bench_h5_mpi.h — what the MPI benchmarks (bench_h5_parallel.cc, bench_h5_kernels.cc)
// share on top of bench_h5_common.h: the rank and size, steps that fail on every rank
// together, the maximum over ranks, and the mpio file-access and transfer plists.
#pragma once

#include <hdf5.h>
#include <mpi.h>

#include <string>

#include "bench_h5_common.h"

namespace bench {

inline int g_rank = 0, g_size = 1;

// The innermost message of a failure text (h5_error_text joins the stack with " | ",
// outermost first; HDF5's own messages may span lines): what a reader needs to see.
inline std::string innermost(const std::string& text) {
  size_t bar = text.rfind(" | ");
  std::string m = bar == std::string::npos ? text : text.substr(bar + 3);
  return m.substr(0, m.find('\n'));
}

inline const char* mode_name(H5FD_mpio_xfer_t m) { return m == H5FD_MPIO_COLLECTIVE ? "collective" : "independent"; }

// Every rank runs a step; if any rank failed, every rank throws the first failing rank's
// message, so all ranks unwind together (the unwinding closes files, which is collective
// for PHDF5) instead of some waiting in a collective the others never reach.
inline void agree(const std::string& local_error) {
  int bad = local_error.empty() ? g_size : g_rank, first = g_size;
  MPI_Allreduce(&bad, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == g_size) return;
  int len = first == g_rank ? (int)local_error.size() : 0;
  MPI_Bcast(&len, 1, MPI_INT, first, MPI_COMM_WORLD);
  std::string msg(local_error);
  msg.resize(len);
  MPI_Bcast(msg.data(), len, MPI_CHAR, first, MPI_COMM_WORLD);
  throw Failure((first == g_rank ? "" : "rank " + std::to_string(first) + ": ") + msg);
}

template <class F>
void step(F&& fn) {
  std::string err;
  try {
    fn();
  } catch (const std::exception& e) {
    err = e.what();
    if (err.empty()) err = "unknown error";
  }
  agree(err);
}

inline double max_over_ranks(double v) {
  double out = v;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

// The side's connector with the mpio driver: both sides open one shared file per job.
inline hid_t parallel_fapl(Side s) {
  hid_t fapl = fapl_for(s);
  if (H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL) < 0) {
    H5Pclose(fapl);
    throw Failure("H5Pset_fapl_mpio failed: " + h5_error_text());
  }
  return fapl;
}

inline hid_t xfer_plist(H5FD_mpio_xfer_t mode) {
  hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
  if (dxpl < 0 || H5Pset_dxpl_mpio(dxpl, mode) < 0) throw Failure("H5Pset_dxpl_mpio failed: " + h5_error_text());
  return dxpl;
}

}  // namespace bench
