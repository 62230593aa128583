// tessera — the command line tool for tessera containers (docs/tool.md).
//
//   tessera info CONTAINER [OBJECT] [--json]
//   tessera fragments CONTAINER DATASET [--json]
//   tessera consolidate CONTAINER [DATASET] [--size-tiered | --layout X] (also under mpirun)
//   tessera vacuum CONTAINER [DATASET]
//   tessera verify CONTAINER [--json]
//
// Every subcommand is one file (command.h); this file only parses and dispatches.
#include <cstdio>
#include <cstring>
#include <string>

#include <hdf5.h>

#include "tools/tessera/command.h"

namespace tool {
Global& global() {
  static Global g;
  return g;
}
}  // namespace tool

int main(int argc, char** argv) {
  CLI::App app{"tessera: inspect, check, consolidate and convert tessera containers (docs/tool.md)", "tessera"};
  app.require_subcommand(1);
  app.add_flag("-q,--quiet", tool::global().quiet, "No progress bars (they are off anyway when stdout is not a terminal)");
  app.set_version_flag("--version", std::string("tessera ") + TESSERA_VERSION_STRING);
  std::vector<std::pair<CLI::App*, tool::Runner>> subs;
  for (const tool::Command& c : tool::commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    subs.emplace_back(sub, c.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return tool::kUsage;
  }
  // Errors are reported by the tool, with HDF5's innermost message (h5util.h): no stacks
  // printed by the library on the way.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  try {
    for (auto& [sub, run] : subs)
      if (sub->parsed()) return run();
  } catch (const tool::Failure& f) {
    std::fflush(stdout);
    std::fprintf(stderr, "tessera: %s\n", f.message.c_str());
    return f.status;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tessera: %s\n", e.what());
    return tool::kFailed;
  }
  return tool::kUsage;
}
