// merge_records.h — the catalog records of automatic consolidation (docs/format.md,
// "Automatic consolidation"), beside an array's file records (file_records.h):
//
//   "<prefix>retire/<fragment id>"  a fragment file a merge replaced, kept for reads as
//                                   of earlier commits: u64 ns, when the merge was made.
//                                   Put by the merge's catalog batch; deleted, with the
//                                   file's record, by the batch that retires the file.
//   "<prefix>merges"                what the array's automatic merges did: six u64
//                                   (merges, bytes read, bytes written, the last one's
//                                   time in ns, inputs and bytes written).
//
// Written by the array's writer (engine/array/auto_merge.cc), read by it after a
// restart (what waits to retire, and since when) and by `tessera info`.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "engine/catalog/catalog.h"
#include "engine/fragment/fragment_id.h"

namespace tessera {

std::string retire_record_key(const std::string& prefix, const FragmentId& id);
void put_retire_record(CatalogBatch& b, const std::string& prefix, const FragmentId& id, uint64_t merged_ns);
// Every retire record under prefix; throws kCorrupt naming the catalog for a bad record.
std::map<FragmentId, uint64_t> scan_retire_records(const Catalog& c, const std::string& prefix);

struct MergeTotals {
  uint64_t merges = 0, bytes_in = 0, bytes_out = 0;
  uint64_t last_ns = 0, last_inputs = 0, last_bytes = 0;
};
std::string merge_totals_key(const std::string& prefix);
void put_merge_totals(CatalogBatch& b, const std::string& prefix, const MergeTotals& t);
// None recorded: zeros.  Throws kCorrupt for a bad record.
MergeTotals read_merge_totals(const Catalog& c, const std::string& prefix);

}  // namespace tessera
