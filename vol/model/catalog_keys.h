// catalog_keys.h — keys of the connector's catalog records (records.h; the keys: object_model.h) and reading a
// record a pending batch may already have changed.  Internal to the connector.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/catalog/catalog.h"
#include "vol/model/records.h"

namespace tessera_vol {

inline std::string link_key(uint64_t group, const std::string& name) { return id_key("l/", group, "/", name); }
inline std::string attr_key(uint64_t owner, const std::string& name) { return id_key("a/", owner, "/", name); }

// Reads a record from the batch if it was put there (newest wins), else nullopt.
inline std::optional<std::string> from_batch(const tessera::CatalogBatch& b, const std::string& key, bool* deleted) {
  *deleted = false;
  for (auto it = b.ops().rbegin(); it != b.ops().rend(); ++it) {
    if (it->key != key) continue;
    if (!it->put) {
      *deleted = true;
      return std::nullopt;
    }
    return it->value;
  }
  return std::nullopt;
}

}  // namespace tessera_vol
