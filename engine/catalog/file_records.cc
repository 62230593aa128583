// file_records.cc — see file_records.h.
#include "engine/catalog/file_records.h"

#include <cstring>

#include "engine/util/error.h"

namespace tessera {

std::string file_record_key(const std::string& prefix, const FragmentId& id) { return prefix + "file/" + id.name(); }

void put_file_record(CatalogBatch& b, const std::string& prefix, const FragmentId& id, uint64_t size) {
  char v[8];
  std::memcpy(v, &size, 8);
  b.put(file_record_key(prefix, id), std::string(v, 8));
}

std::map<FragmentId, uint64_t> scan_file_records(const Catalog& c, const std::string& prefix) {
  std::map<FragmentId, uint64_t> out;
  const std::string p = prefix + "file/";
  for (auto& [key, value] : c.scan(p)) {
    FragmentId id;
    if (!FragmentId::parse(key.substr(p.size()), &id) || value.size() != 8)
      throw_error(Errc::kCorrupt, "catalog record '" + key + "' in '" + c.log_path() + "': not a fragment file record");
    uint64_t size;
    std::memcpy(&size, value.data(), 8);
    out[id] = size;
  }
  return out;
}

}  // namespace tessera
