// cmd_vacuum.cc — `tessera vacuum CONTAINER [DATASET]`: removes the fragments that a
// consolidation replaced (kept by `tessera consolidate`, or left by a crash between a
// merge's publish and its removals).
//
// Safe while other processes read the container: a fragment is replaced only once its
// replacement is durable; the catalog records of what goes are deleted (synced) before
// any file is unlinked; a reader that has a fragment open keeps reading it; a reader that
// lists a fragment the vacuum then removes lists again and finds its replacement.  A
// writer must not have the container open (the writer lock is taken, as by any writer).
// Without DATASET it also removes the files of deleted datasets (kept for reads of the
// past); --history removes the catalog's archived logs.  What it gives up: reads as of a
// commit that needed what it removed (they fail naming the missing file).
#include <cstdio>

#include "tools/tessera/command.h"
#include "tools/tessera/container_view.h"
#include "tools/tessera/output.h"
#include "tools/tessera/progress.h"

namespace tool {

namespace {

struct Args {
  std::string container, dataset;
  bool history = false;
};

int run(const Args& args) {
  auto v = ContainerView::open(args.container, true);
  tessera::Status st = v->container().recover_arrays();
  if (!st.ok()) fail("recovering unfinished publishes: " + st.message());
  auto sets = v->datasets(args.dataset);
  Progress bar("vacuuming", sets.size(), /*bytes=*/false);
  uint64_t fragments = 0, bytes = 0;
  size_t done = 0;
  for (const ObjectView* d : sets) {
    auto a = v->open_array(*d, true);
    tessera::VacuumResult r;
    st = a->vacuum(&r);
    if (!st.ok()) fail("vacuuming '" + d->path + "': " + st.message());
    if (r.fragments) {
      bar.finish();
      std::printf("%s: removed %llu fragment(s), %s\n", d->path.c_str(), static_cast<unsigned long long>(r.fragments),
                  human_bytes(r.bytes).c_str());
    }
    fragments += r.fragments;
    bytes += r.bytes;
    bar.update(++done);
  }
  bar.finish();
  std::printf("removed %llu replaced fragment(s), %s\n", static_cast<unsigned long long>(fragments),
              human_bytes(bytes).c_str());
  if (args.dataset.empty()) {  // the files of deleted datasets, kept for reads of the past
    uint64_t arrays = 0, removed = 0;
    st = v->container().vacuum_removed(&arrays, &removed);
    if (!st.ok()) fail("removing deleted datasets' files: " + st.message());
    if (arrays)
      std::printf("removed the files of %llu deleted dataset(s), %s\n", static_cast<unsigned long long>(arrays),
                  human_bytes(removed).c_str());
  }
  if (args.history) {
    const uint64_t n = v->container().catalog().drop_history();
    std::printf("removed the catalog's archived logs, %s: reads as of commits before its last compaction are "
                "no longer possible\n",
                human_bytes(n).c_str());
  }
  return kOk;
}

}  // namespace

Runner setup_vacuum(CLI::App& sub) {
  auto args = std::make_shared<Args>();
  container_arg(sub, args->container, "The container (readers may have it open; writers may not)");
  sub.add_option("DATASET", args->dataset, "Only this dataset (default: every dataset, and deleted datasets' files)");
  sub.add_flag("--history", args->history,
               "Also remove the catalog's archived logs (reads as of commits before its last compaction end)");
  return [args] { return run(*args); };
}

}  // namespace tool
