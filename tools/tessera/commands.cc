// commands.cc — the table of the `tessera` tool's subcommands (command.h).
#include "tools/tessera/command.h"

namespace tool {

Runner setup_info(CLI::App&);
Runner setup_fragments(CLI::App&);
Runner setup_consolidate(CLI::App&);
Runner setup_vacuum(CLI::App&);
Runner setup_verify(CLI::App&);
Runner setup_export(CLI::App&);
Runner setup_import(CLI::App&);
Runner setup_commits(CLI::App&);
Runner setup_index(CLI::App&);
Runner setup_query(CLI::App&);

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"info", "What a container holds: objects, datasets (shape, type, tiling, filters, fragments, bytes)",
       setup_info},
      {"fragments", "A dataset's fragments: id, time, kind, domain, cells, bytes", setup_fragments},
      {"consolidate", "Merge each dataset's fragments into one (or size-tiered); inputs kept until vacuum",
       setup_consolidate},
      {"vacuum", "Remove the fragments consolidation replaced (safe while readers are at work)", setup_vacuum},
      {"verify", "Check every checksum and that every committed piece is present", setup_verify},
      {"export", "Write a container's contents to a native HDF5 file", setup_export},
      {"import", "Make a container from a native HDF5 file", setup_import},
      {"commits", "The container's commits (flushes), oldest first: what --as-of can read", setup_commits},
      {"index", "Build (or --drop) a dataset's value indexes (binned bitmaps, docs/queries.md)", setup_index},
      {"query", "Count or list the elements satisfying a value query, e.g. \"T > 270 && P < 1e5\"", setup_query},
  };
  return kCommands;
}

}  // namespace tool
