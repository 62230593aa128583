// one_file.h — a container stored in one file (docs/format.md, "The one-file container"):
// the pack's Env (engine/pack/pack_env.h) opened or created over the caller's Env, and the
// Context the container and its arrays use — the caller's (or the process's) pools,
// caches and settings, with every file-system call through the pack.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/context/context.h"

namespace tessera {

// A regular file at `path` (a one-file container, or a file that is not a container).
bool is_regular_file(Env& env, const std::string& path);

// The context of a pack container over `ctx`'s Env (null: the process's context).  Throw
// tessera::Error: kBusy (another writer), kCorrupt (not a pack), system errors.
std::shared_ptr<Context> create_one_file(const std::shared_ptr<Context>& ctx, const std::string& path,
                                         const std::vector<uint8_t>& wrapper, bool exclusive);
std::shared_ptr<Context> open_one_file(const std::shared_ptr<Context>& ctx, const std::string& path, bool writable);

}  // namespace tessera
