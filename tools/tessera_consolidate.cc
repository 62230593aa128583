// tessera_consolidate: merges each dataset's fragments (TileDB §4.3) in a container that
// no one has open.  Serial:  tessera_consolidate CONTAINER
// Parallel: mpirun -n N tessera_consolidate CONTAINER — rank k merges the k-th of N
// contiguous tile ranges of every array, and the N parts are published as one epoch of
// the parallel commit protocol (docs/parallel.md): staged per-rank journals, rank 0's
// catalog record `sys/epoch`, renames.  A crash leaves the old fragments or all parts.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/container.h"
#include "engine/file_io.h"

#ifdef TESSERA_HAVE_MPI
#include <mpi.h>
#endif

using namespace tessera;

namespace {

int g_rank = 0, g_size = 1;

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "tessera_consolidate (rank %d): %s\n", g_rank, msg.c_str());
#ifdef TESSERA_HAVE_MPI
  if (g_size > 1) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  std::exit(1);
}

void check(const Status& st, const char* what) {
  if (!st.ok()) die(std::string(what) + ": " + st.message());
}

// Every rank learns whether all succeeded so far (a failed rank has already aborted the
// job, so this is the barrier between protocol steps).
void barrier() {
#ifdef TESSERA_HAVE_MPI
  if (g_size > 1) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

std::vector<uint64_t> array_ids(const std::string& root) {
  std::vector<uint64_t> ids;
  for (const std::string& name : list_dir(join_path(root, "arrays")))
    if (name.size() == 16 && name.find_first_not_of("0123456789abcdef") == std::string::npos)
      ids.push_back(std::strtoull(name.c_str(), nullptr, 16));
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef TESSERA_HAVE_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
#endif
  if (argc != 2) die("usage: tessera_consolidate CONTAINER (under mpirun for a parallel merge)");
  const std::string path = argv[1];
  std::unique_ptr<Container> c;
  if (g_rank == 0) {
    check(Container::open(path, true, &c), "open");
    check(c->recover_arrays(), "recover");
  }
  barrier();
  if (g_rank != 0) check(Container::open_shadow(path, &c), "open");
  std::vector<uint64_t> ids;
  try {
    ids = array_ids(path);  // after rank 0's recovery: the same list on every rank
  } catch (const std::exception& e) {
    die(e.what());
  }

  if (g_size == 1) {  // serial: each merge is published by itself
    for (uint64_t id : ids) {
      std::unique_ptr<Array> a;
      check(c->open_array(id, true, ArrayOptions{}, &a), "open array");
      size_t before = a->fragments().size();
      check(a->consolidate_all(), "consolidate");
      std::printf("array %016llx: %zu fragments -> %zu\n", static_cast<unsigned long long>(id), before,
                  a->fragments().size());
    }
  } else {
    ArrayOptions o;
    o.durable_writes = false;
    o.collective = true;
    o.writer_rank = static_cast<uint32_t>(g_rank);
    std::vector<std::unique_ptr<Array>> arrays(ids.size());
    std::vector<size_t> before(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      check(c->open_array(ids[i], true, o, &arrays[i]), "open array");
      before[i] = arrays[i]->fragments().size();
      check(arrays[i]->consolidate_part(static_cast<uint32_t>(g_rank), static_cast<uint32_t>(g_size)),
            "consolidate");
    }
    check(c->sync(), "sync");
    barrier();
    const uint64_t epoch = c->committed_epoch() + 1;
    for (auto& a : arrays) check(a->stage_prepared(true, epoch), "stage");
    check(c->sync(), "sync");
    barrier();
    if (g_rank == 0) {  // the commit point
      CatalogBatch b;
      b.put(Container::kEpochKey, std::to_string(epoch));
      check(guard([&] { c->catalog().commit(b); c->catalog().sync(); }), "commit epoch");
    }
    barrier();
    for (auto& a : arrays) check(a->publish_prepared(true), "publish");
    check(c->sync(), "sync");
    barrier();
    if (g_rank == 0) {  // sees every part; removes the replaced inputs
      for (size_t i = 0; i < ids.size(); ++i) {
        check(arrays[i]->refresh(), "refresh");
        std::printf("array %016llx: %zu fragments -> %zu (%d parts)\n", static_cast<unsigned long long>(ids[i]),
                    before[i], arrays[i]->fragments().size(), g_size);
      }
    }
    barrier();
  }
  c.reset();
#ifdef TESSERA_HAVE_MPI
  MPI_Finalize();
#endif
  return 0;
}
