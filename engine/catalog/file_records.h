// file_records.h — the catalog records that name an array's published fragment files
// (docs/format.md, "Fragment file records"): "<prefix>file/<fragment id>" = the file's
// u64 size, little-endian.  A recorded file that is missing, or of another size, is a
// committed fragment lost or damaged (Array::open fails naming it, `tessera verify`
// reports it), never the fill value in its place.
//
// Every kind of array of a container has them in the container's catalog, whoever
// publishes its files: a serial flush or consolidation (in the catalog batch that commits
// it), or an epoch commit of a parallel file's ranks (in the batch of the epoch record,
// which every rank builds from the files all ranks publish; commit.cc).  Shared by the
// two ArrayStores and the epoch commit, so the key and the value are written in one place.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "engine/catalog/catalog.h"
#include "engine/fragment/fragment_id.h"

namespace tessera {

// "<prefix>file/<id>" (prefix: "arr/<hex16 id>/").
std::string file_record_key(const std::string& prefix, const FragmentId& id);
void put_file_record(CatalogBatch& b, const std::string& prefix, const FragmentId& id, uint64_t size);
// Every file record under prefix; throws kCorrupt naming the catalog for a bad record.
std::map<FragmentId, uint64_t> scan_file_records(const Catalog& c, const std::string& prefix);

}  // namespace tessera
