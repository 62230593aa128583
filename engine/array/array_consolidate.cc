// array_consolidate.cc — Array's public consolidation calls: each takes the array's mutex
// and runs the consolidation component (consolidation.h) under it.
#include "engine/array/array.h"

namespace tessera {

Status Array::consolidate(size_t first, size_t last) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { consolidation_.consolidate(first, last); });
}

Status Array::consolidate_all() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { consolidation_.consolidate_all(); });
}

Status Array::consolidate_auto(size_t min_run, double ratio) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { consolidation_.consolidate_auto(min_run, ratio); });
}

Status Array::consolidate_layout(Order tile, Order cell, size_t first, size_t last) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { consolidation_.consolidate_layout(tile, cell, first, last); });
}

Status Array::consolidate_part(uint32_t part, uint32_t parts) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { consolidation_.consolidate_part(part, parts); });
}

Status Array::vacuum(VacuumResult* out) {
  std::lock_guard<std::mutex> g(mu_);
  *out = VacuumResult{};
  return guard([&] { consolidation_.vacuum(out); });
}

}  // namespace tessera
