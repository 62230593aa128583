// cmd_commits.cc — `tessera commits CONTAINER [--json]`: the container's commits (every
// HDF5 flush or close that changed something; engine/catalog/history.h), oldest first, and how
// far back it can be read (`--as-of` of info, fragments and export;
// `tessera.open_as_of` in Python; tessera_Pset_as_of in C).
#include <cstdio>

#include "engine/catalog/history.h"
#include "tools/tessera/command.h"
#include "tools/tessera/container_view.h"
#include "tools/tessera/output.h"

namespace tool {

namespace {

struct Args {
  std::string container;
  bool json = false;
};

int run(const Args& args) {
  auto v = ContainerView::open(args.container, false);
  const auto commits = tessera::list_commits(v->container().catalog());
  if (args.json) {
    Json j;
    j.begin_object();
    j.field("container", args.container);
    j.key("commits");
    j.begin_array();
    for (const auto& c : commits) {
      j.begin_object();
      j.field("commit", c.seq);
      j.field("time_ns", c.ts_ns);
      j.field("time", utc_time(c.ts_ns));
      j.field("fragments", static_cast<uint64_t>(c.fragments));
      j.field("arrays", static_cast<uint64_t>(c.arrays));
      j.end_object();
    }
    j.end_array();
    j.end_object();
    std::printf("%s\n", j.str().c_str());
    return kOk;
  }
  if (commits.empty()) {
    std::printf("%s records no commits (written before commits were recorded, or never flushed)\n",
                args.container.c_str());
    return kOk;
  }
  std::printf("%8s  %-27s  %9s  %6s\n", "commit", "time (UTC)", "fragments", "arrays");
  for (const auto& c : commits)
    std::printf("%8llu  %-27s  %9u  %6u\n", static_cast<unsigned long long>(c.seq), utc_time(c.ts_ns).c_str(),
                c.fragments, c.arrays);
  std::printf("%zu commit(s); read one with --as-of N (info, fragments, export)\n", commits.size());
  return kOk;
}

}  // namespace

Runner setup_commits(CLI::App& sub) {
  auto args = std::make_shared<Args>();
  container_arg(sub, args->container);
  json_flag(sub, args->json);
  return [args] { return run(*args); };
}

}  // namespace tool
