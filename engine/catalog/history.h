// history.h — a container's commits, and reading it as of one of them (time travel).
//
// Every commit of a container (an HDF5 flush or close: engine/container/commit.h) that changes
// anything puts, in its own catalog batch, a record `cm/<hex16 seq>` — its number (1, 2,
// ...), its time (ns since the epoch, at least every fragment timestamp it publishes; a
// later fragment sorts after it) and how many fragments and arrays it published — and
// sets `sys/commit` to its number.  A read as of commit N sees:
//   - the catalog as it was right after that batch (Catalog::open_as_of replays the logs
//     compaction archived in catalog.history/ and the live log up to it): the objects,
//     links, attributes, schemas (extents) and inline fragments of that moment;
//   - of the fragment files, those the catalog then recorded as published (arr/<id>/
//     file/...), and files it never recorded whose timestamp is at most the commit's.
// Consolidation keeps what it merges until a vacuum (ArrayOptions::keep_replaced), and
// automatic consolidation its file inputs for consolidate_retain_s (its inline inputs
// stay in the archived logs); a result holds exactly its inputs' cells, so a read as of a
// commit before or after a consolidation returns what was committed; a vacuum or a
// retirement gives up the reads that need the fragments it removed (they fail, naming the
// missing file).  Byte layout:
// docs/format.md, "Commits".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/catalog/catalog.h"
#include "engine/util/error.h"

namespace tessera {

struct CommitInfo {
  uint64_t seq = 0;      // 1, 2, ...
  uint64_t ts_ns = 0;    // when (ns since the epoch, UTC)
  uint32_t fragments = 0;  // fragments it published
  uint32_t arrays = 0;     // arrays it published fragments or extents of
};

// Every commit the catalog records, oldest first.
std::vector<CommitInfo> list_commits(const Catalog& cat);
// The last commit (seq 0 when there is none).
CommitInfo last_commit(const Catalog& cat);
// Adds the next commit's records to `b` (seq: the catalog's last + 1) and returns it.
CommitInfo add_commit(const Catalog& cat, CatalogBatch& b, uint64_t ts_ns, uint32_t fragments, uint32_t arrays);

// The commit `when` names: "12" or "#12" (commit 12), "@<ns>" (the last commit at or
// before that many ns since the epoch), or a UTC time "YYYY-MM-DD[ T]HH:MM[:SS[.fff]][Z]"
// (the last commit at or before it).  kNotFound when there is none; kInvalidArgument
// for text that is none of these.
Status find_commit(const Catalog& cat, const std::string& when, CommitInfo* out);

}  // namespace tessera
