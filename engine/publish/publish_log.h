// publish_log.h — publish logs (docs/format.md, "Publish logs"): in an array whose schema
// lives in a file (a parallel file's array), fragment files are renamed into place before
// a catalog batch records them — a rank's H5Dclose (Array::publish_own) is recorded only
// by the next epoch, a serial flush's files at the catalog's next sync.  So that a file
// nobody committed (a fragment copied in from another container) is told from those, a
// writer appends each file's id and size to its own log, "frag/published-r<rank>.log",
// and syncs it *before* the rename.  A file that is neither recorded nor logged was never
// published here: reading the array fails naming it (ArrayStore::files_logged).
//
// An entry is only a permission: a crash between the append and the rename leaves an
// entry without a file, which is no loss.  Entries the catalog records durably are
// dropped by the log's writer (trim), so a log holds only what awaits its record.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/util/env.h"
#include "engine/fragment/fragment_id.h"

namespace tessera {

// "published-r<rank>.log"
std::string publish_log_name(uint32_t rank);
bool is_publish_log(const std::string& name);
// "published-r<rank>.log.tmp.<pid>.<n>": a trim's (or rewrite's) new log before its
// rename (write_file_atomic).  A crash between the two leaves it; only the array's sole
// writer may remove it (another rank may be in its own trim).
bool is_publish_log_temp(const std::string& name);

// Appends one entry per file and makes them durable (fdatasync; the directory fsync'ed
// when the log is new) — call before the first rename of these files.  rewrite: the
// log's entries and these are written to a new file, synced and renamed over the log
// (durably) instead — after a failed append or trim, when what is on disk may not be
// what a read returns.
void append_publish_log(Env& env, const std::string& frag_dir, uint32_t rank,
                        const std::vector<std::pair<FragmentId, uint64_t>>& files, bool rewrite = false);

// Every entry of the logs among `names` (a listing of frag_dir), id -> size.  A log is read
// up to its first entry that is short or fails its checksum (a crash cut an append short;
// that entry's rename never began).  A log that vanished meanwhile (trimmed) is skipped.
std::map<FragmentId, uint64_t> read_publish_logs(Env& env, const std::string& frag_dir,
                                                 const std::vector<std::string>& names);

// Rank's log without the entries `recorded` names (the caller's catalog, durable): removed
// when nothing is left.  Only the log's own writer trims it (others may append to theirs).
void trim_publish_log(Env& env, const std::string& frag_dir, uint32_t rank,
                      const std::map<FragmentId, uint64_t>& recorded);

}  // namespace tessera
