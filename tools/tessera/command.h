// command.h — how the `tessera` tool's subcommands plug in (docs/tool.md).
//
// A subcommand is one file, tools/tessera/cmd_<name>.cc, defining one function
//
//   Runner setup_<name>(CLI::App& sub);
//
// that adds its arguments and options to `sub` (created by main with the name and summary
// given in the table, commands.cc) and returns the function that runs it once parsed.
// Adding a subcommand: write the file, add one line to kCommands in commands.cc.
#pragma once
#include <CLI/CLI.hpp>

#include "convert/failure.h"

#include <functional>
#include <string>
#include <vector>

namespace tool {

// Exit statuses (docs/tool.md, "Exit status").
enum Exit : int {
  kOk = 0,        // done; `verify`: nothing is damaged
  kDamaged = 1,   // `verify`: something is damaged (listed on stdout)
  kFailed = 2,    // the operation could not be done (the reason on stderr)
  kUsage = 64,    // bad arguments (EX_USAGE)
};

// Failure and fail(): convert/failure.h (thrown by subcommands and the file copy).

using Runner = std::function<int()>;

struct Command {
  const char* name;
  const char* summary;
  Runner (*setup)(CLI::App& sub);
};

// The table of subcommands, in the order `tessera --help` lists them (commands.cc).
const std::vector<Command>& commands();

// The arguments most subcommands share.
inline void container_arg(CLI::App& sub, std::string& v, const char* help = "The container") {
  sub.add_option("CONTAINER", v, help)->required();
}
inline void json_flag(CLI::App& sub, bool& v) {
  sub.add_flag("--json", v, "One JSON document on stdout instead of text");
}

inline void as_of_option(CLI::App& sub, std::string& v) {
  sub.add_option("--as-of", v,
                 "Read the container as it was at a past commit: its number (tessera commits), @<ns> or a UTC "
                 "time like 2026-11-26T10:41:09Z");
}

// Options every subcommand has (main.cc sets them before running it).
struct Global {
  bool quiet = false;  // no progress bars
};
Global& global();

}  // namespace tool
