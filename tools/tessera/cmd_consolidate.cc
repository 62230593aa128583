// cmd_consolidate.cc — `tessera consolidate CONTAINER [DATASET] [--size-tiered]`:
// merges each dataset's fragments (TileDB §4.3) in a container no other process writes.
//
// Serial: every dataset's fragments become one (or, --size-tiered, runs of fragments of
// similar size are merged, as an LSM tree does), each merge published atomically.  Under
// mpirun (`mpirun -n N tessera consolidate CONTAINER`) rank k merges the k-th of N
// contiguous tile ranges of every dataset, and the N parts are published as one epoch of
// the parallel commit protocol (docs/parallel.md): staged per-rank journals, rank 0's
// catalog record `sys/epoch`, renames — a crash leaves the old fragments or all parts.
//
// --layout X (serial only): every dataset's fragments become one in layout X (tile and
// cell order, docs/layouts.md), and X becomes the dataset's order for new fragments
// (Array::consolidate_layout).  Without it a merge keeps the dataset's layout.
//
// The merged fragments stay on disk, hidden by the result, until `tessera vacuum`
// removes them: readers that have them open, and reads as of an earlier time, keep them.
#include <cstdio>
#include <cstdlib>

#include "engine/container/commit.h"
#include "engine/util/file_io.h"
#include "tools/tessera/command.h"
#include "tools/tessera/container_view.h"
#include "tools/tessera/output.h"
#include "tools/tessera/progress.h"

#ifdef TESSERA_HAVE_MPI
#include <mpi.h>

#include "engine/mpi/mpi_group.h"
#endif

namespace tool {

namespace {

struct Args {
  std::string container, dataset;
  bool size_tiered = false;
  size_t min_run = 4;
  double ratio = 4.0;
  std::string layout;  // --layout: convert to this layout
};

// Under mpirun (the launcher's variables are set), the merge is parallel.
bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

void check(const tessera::Status& st, const std::string& what) {
  if (!st.ok()) fail(what + ": " + st.message());
}

int run_serial(const Args& args) {
  tessera::Order tile = tessera::Order::kRowMajor, cell = tessera::Order::kRowMajor;
  if (!args.layout.empty()) {
    std::string why;
    if (!tessera::parse_layout(args.layout, &tile, &cell, &why)) fail("--layout: " + why);
    if (args.size_tiered) fail("--layout rewrites every fragment: it cannot be combined with --size-tiered");
  }
  auto v = ContainerView::open(args.container, true);
  check(v->container().recover_arrays(), "recovering unfinished publishes");
  auto sets = v->datasets(args.dataset);
  Progress bar("consolidating", sets.size(), /*bytes=*/false);
  tessera::ArrayOptions o;
  o.keep_replaced = true;
  uint64_t replaced_total = 0;
  size_t done = 0;
  for (const ObjectView* d : sets) {
    auto a = v->open_array(*d, true, o);
    if (a->schema().compact) {
      bar.update(++done);
      continue;  // one record, nothing to merge
    }
    const size_t before = a->fragments().size();
    const size_t kept_before = a->replaced_fragments().size();
    const std::string from = a->schema().order().name();
    check(!args.layout.empty()  ? a->consolidate_layout(tile, cell)
          : args.size_tiered    ? a->consolidate_auto(args.min_run, args.ratio)
                                : a->consolidate_all(),
          "consolidating '" + d->path + "'");
    const size_t after = a->fragments().size();
    const size_t kept = a->replaced_fragments().size() - kept_before;
    replaced_total += kept;
    bar.finish();
    if (args.layout.empty())
      std::printf("%s: %zu fragment(s) -> %zu\n", d->path.c_str(), before, after);
    else
      std::printf("%s: %zu fragment(s) -> %zu, layout %s -> %s\n", d->path.c_str(), before, after, from.c_str(),
                  a->schema().order().name().c_str());
    bar.update(++done);
  }
  bar.finish();
  if (replaced_total)
    std::printf("%llu replaced fragment(s) kept until `tessera vacuum %s` removes them\n",
                static_cast<unsigned long long>(replaced_total), args.container.c_str());
  return kOk;
}

#ifdef TESSERA_HAVE_MPI
int g_rank = 0, g_size = 1;

// Any failure on any rank ends the job: the others would wait in a barrier forever.
void check_mpi(const tessera::Status& st, const std::string& what) {
  if (st.ok()) return;
  std::fprintf(stderr, "tessera consolidate (rank %d): %s: %s\n", g_rank, what.c_str(), st.message().c_str());
  MPI_Abort(MPI_COMM_WORLD, kFailed);
}

int run_parallel(const Args& args) {
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (args.size_tiered) fail("--size-tiered merges runs of fragments one after the other: run it without mpirun");
  if (!args.layout.empty()) fail("--layout converts one dataset at a time: run it without mpirun");
  std::unique_ptr<ContainerView> v;
  std::unique_ptr<tessera::Container> shadow;
  try {
    if (g_rank == 0) {
      v = ContainerView::open(args.container, true);
      check(v->container().recover_arrays(), "recovering unfinished publishes");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    // Other ranks: a shadow of rank 0's container (nothing they do touches the catalog)
    // and their own read-only view of the objects, to find the same datasets.
    if (g_rank != 0) {
      check(tessera::Container::open_shadow(args.container, &shadow), "opening the container");
      v = ContainerView::open(args.container, false);
    }
  } catch (const Failure& f) {
    std::fprintf(stderr, "tessera consolidate (rank %d): %s\n", g_rank, f.message.c_str());
    MPI_Abort(MPI_COMM_WORLD, f.status);
  }
  tessera::Container& c = g_rank == 0 ? v->container() : *shadow;
  std::vector<uint64_t> ids;
  std::vector<std::string> paths;
  try {
    for (const ObjectView* d : v->datasets(args.dataset)) {
      ids.push_back(d->rec.array_id);
      paths.push_back(d->path);
    }
  } catch (const Failure& f) {
    std::fprintf(stderr, "tessera consolidate (rank %d): %s\n", g_rank, f.message.c_str());
    MPI_Abort(MPI_COMM_WORLD, f.status);
  }
  tessera::ArrayOptions o;
  o.durable_writes = false;
  o.collective = true;
  o.keep_replaced = true;
  o.writer_rank = static_cast<uint32_t>(g_rank);
  std::vector<std::unique_ptr<tessera::Array>> arrays(ids.size());
  std::vector<size_t> before(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    check_mpi(c.open_array(ids[i], true, o, &arrays[i]), "opening '" + paths[i] + "'");
    before[i] = arrays[i]->fragments().size();
    if (arrays[i]->schema().compact) continue;
    check_mpi(arrays[i]->consolidate_part(static_cast<uint32_t>(g_rank), static_cast<uint32_t>(g_size)),
              "consolidating '" + paths[i] + "'");
  }
  // The parts become one epoch (engine/container/commit.h owns the order and the syncs).
  std::vector<std::pair<uint64_t, tessera::Array*>> parts;
  for (size_t i = 0; i < ids.size(); ++i) parts.emplace_back(ids[i], arrays[i].get());
  tessera::MpiGroup group(MPI_COMM_WORLD);
  check_mpi(tessera::commit_prepared_epoch(c, group, parts), "committing the epoch");
  if (g_rank == 0)
    for (size_t i = 0; i < ids.size(); ++i) {
      check_mpi(arrays[i]->refresh(), "refresh");
      std::printf("%s: %zu fragment(s) -> %zu (%d parts)\n", paths[i].c_str(), before[i],
                  arrays[i]->fragments().size(), g_size);
    }
  MPI_Barrier(MPI_COMM_WORLD);
  return kOk;
}
#endif

int run(const Args& args) {
#ifdef TESSERA_HAVE_MPI
  if (launched_by_mpirun()) {
    MPI_Init(nullptr, nullptr);
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rc = kOk;
    try {
      rc = size > 1 ? run_parallel(args) : run_serial(args);
    } catch (const Failure& f) {
      std::fprintf(stderr, "tessera: %s\n", f.message.c_str());
      if (size > 1) MPI_Abort(MPI_COMM_WORLD, f.status);
      rc = f.status;
    }
    MPI_Finalize();
    return rc;
  }
#endif
  return run_serial(args);
}

}  // namespace

Runner setup_consolidate(CLI::App& sub) {
  auto args = std::make_shared<Args>();
  container_arg(sub, args->container, "The container (no other process may have it open for writing)");
  sub.add_option("DATASET", args->dataset, "Only this dataset (default: every dataset)");
  sub.add_flag("--size-tiered", args->size_tiered,
               "Merge only runs of fragments of similar size (LSM style) instead of all into one");
  sub.add_option("--min-run", args->min_run, "--size-tiered: fragments in a run to merge (default 4)")
      ->check(CLI::Range(2, 1 << 20));
  sub.add_option("--ratio", args->ratio, "--size-tiered: the most a run's sizes may differ by (default 4)")
      ->check(CLI::Range(1.0, 1e9));
  sub.add_option("--layout", args->layout,
                 "Rewrite the fragments in this layout and make it the dataset's order for new fragments "
                 "(row-major, column-major, z-order, hilbert, multimap, optionally :row-major or :column-major "
                 "cells; docs/layouts.md)");
  return [args] { return run(*args); };
}

}  // namespace tool
