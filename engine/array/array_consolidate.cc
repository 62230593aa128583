// array_consolidate.cc — Array's public consolidation calls: each takes the array's mutex
// and runs the consolidation component (consolidation.h) under it, once no automatic
// merge is between its steps (auto_merge.h); and automatic consolidation's calls.
#include "engine/array/array.h"

namespace tessera {

Status Array::consolidate(size_t first, size_t last) {
  std::unique_lock<std::mutex> g(mu_);
  auto_.wait_quiet(g);
  return guard([&] { consolidation_.consolidate(first, last); });
}

Status Array::consolidate_all() {
  std::unique_lock<std::mutex> g(mu_);
  auto_.wait_quiet(g);
  return guard([&] { consolidation_.consolidate_all(); });
}

Status Array::consolidate_auto(size_t min_run, double ratio) {
  std::unique_lock<std::mutex> g(mu_);
  auto_.wait_quiet(g);
  return guard([&] { consolidation_.consolidate_auto(min_run, ratio); });
}

Status Array::consolidate_layout(Order tile, Order cell, size_t first, size_t last) {
  std::unique_lock<std::mutex> g(mu_);
  auto_.wait_quiet(g);
  return guard([&] { consolidation_.consolidate_layout(tile, cell, first, last); });
}

Status Array::consolidate_part(uint32_t part, uint32_t parts) {
  std::unique_lock<std::mutex> g(mu_);
  auto_.wait_quiet(g);
  return guard([&] { consolidation_.consolidate_part(part, parts); });
}

Status Array::vacuum(VacuumResult* out) {
  std::unique_lock<std::mutex> g(mu_);
  auto_.wait_quiet(g);
  *out = VacuumResult{};
  return guard([&] { consolidation_.vacuum(out); });
}

void Array::merge_in_background() noexcept { auto_.run(); }

void Array::note_committed() {
  std::lock_guard<std::mutex> g(mu_);
  (void)guard([&] { auto_.committed(); });
}

ConsolidationInfo Array::consolidation_info() {
  std::lock_guard<std::mutex> g(mu_);
  ConsolidationInfo i;
  (void)guard([&] { i = auto_.info(); });
  return i;
}

void Array::settle_merges() { ctx_->merges().wait_idle(this); }

}  // namespace tessera
