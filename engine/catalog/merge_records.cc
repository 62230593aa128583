// merge_records.cc — see merge_records.h.
#include "engine/catalog/merge_records.h"

#include <cstring>

#include "engine/util/error.h"

namespace tessera {

std::string retire_record_key(const std::string& prefix, const FragmentId& id) { return prefix + "retire/" + id.name(); }

void put_retire_record(CatalogBatch& b, const std::string& prefix, const FragmentId& id, uint64_t merged_ns) {
  char v[8];
  std::memcpy(v, &merged_ns, 8);
  b.put(retire_record_key(prefix, id), std::string(v, 8));
}

std::map<FragmentId, uint64_t> scan_retire_records(const Catalog& c, const std::string& prefix) {
  std::map<FragmentId, uint64_t> out;
  const std::string p = prefix + "retire/";
  for (auto& [key, value] : c.scan(p)) {
    FragmentId id;
    if (!FragmentId::parse(key.substr(p.size()), &id) || value.size() != 8)
      throw_error(Errc::kCorrupt, "catalog record '" + key + "' in '" + c.log_path() + "': not a retire record");
    uint64_t ns;
    std::memcpy(&ns, value.data(), 8);
    out[id] = ns;
  }
  return out;
}

std::string merge_totals_key(const std::string& prefix) { return prefix + "merges"; }

void put_merge_totals(CatalogBatch& b, const std::string& prefix, const MergeTotals& t) {
  const uint64_t v[6] = {t.merges, t.bytes_in, t.bytes_out, t.last_ns, t.last_inputs, t.last_bytes};
  b.put(merge_totals_key(prefix), std::string(reinterpret_cast<const char*>(v), sizeof v));
}

MergeTotals read_merge_totals(const Catalog& c, const std::string& prefix) {
  MergeTotals t;
  const auto rec = c.get(merge_totals_key(prefix));
  if (!rec) return t;
  if (rec->size() != 48)
    throw_error(Errc::kCorrupt, "catalog record '" + merge_totals_key(prefix) + "' in '" + c.log_path() +
                                    "': not a merge totals record (" + std::to_string(rec->size()) + " bytes, want 48)");
  uint64_t v[6];
  std::memcpy(v, rec->data(), sizeof v);
  t = {v[0], v[1], v[2], v[3], v[4], v[5]};
  return t;
}

}  // namespace tessera
