// array_files.h — the files inside an array's directory (docs/format.md, "Arrays"):
// their names and the schema file's format, shared by the parts of Array (array.cc,
// array_publish.cc, publisher.cc, array_bound.cc).  Internal to the engine.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/util/env.h"
#include "engine/fragment/fragment_id.h"
#include "engine/schema/schema.h"

namespace tessera {
namespace array_files {

inline constexpr char kSchemaFile[] = "schema";
inline constexpr char kFragDir[] = "frag";
inline constexpr char kHeapDir[] = "heap";
inline constexpr char kJournalFile[] = "publish.journal";
// Parallel commits: one journal per writer rank, "publish-r<rank>.journal" (docs/format.md).
inline constexpr char kRankJournalPrefix[] = "publish-r";
inline constexpr char kJournalSuffix[] = ".journal";

bool is_rank_journal(const std::string& name);

// MPI: a finished fragment a writer rank shares with the other ranks of its job before an
// epoch commits it (Array::share_own): "." + id + ".tfr.shared.tmp".  A dot and ".tmp"
// like every temporary file, so crash recovery removes it (it was never committed) and
// other processes never list it; ranks of a collective array list other ranks' ones.
std::string shared_name(const FragmentId& id);
bool parse_shared_name(const std::string& name, FragmentId* id);

// Catalog key (after the array's "arr/<id>/" prefix) marking that the array's file records
// name every committed fragment file (ArrayStore::files_complete, docs/format.md).
inline constexpr char kFilesCompleteKey[] = "files";
// Catalog key marking that every committed fragment file of the array is recorded or
// named in a publish log (ArrayStore::files_logged, publish_log.h).
inline constexpr char kFilesLoggedKey[] = "logged";

// The schema file: u32 schema length, the schema, the id of the extent change it
// records (u64 ts, u32 rank, u32 seq, u32 gen), u64 XXH3 of everything before.
std::vector<uint8_t> schema_file_bytes(const Schema& s, const FragmentId& extent_id);
Schema parse_schema_file(const std::vector<uint8_t>& b, const std::string& what, FragmentId* extent_id);
// fresh = true: the array is new and referenced by nothing yet, so the file is written in
// place (no temporary file to allocate) and not synced; the caller syncs later.
void write_schema(Env& env, const std::string& dir, const Schema& s, const FragmentId& extent_id, bool durable = true,
                  bool fresh = false);
Schema read_schema(Env& env, const std::string& dir, FragmentId* extent_id);

}  // namespace array_files
}  // namespace tessera
