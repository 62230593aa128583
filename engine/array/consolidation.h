// consolidation.h — Array's consolidation (TileDB §4.3, consolidation.cc): which
// fragments merge (a range, all, size-tiered runs, a converted layout, an MPI tool's
// part), the merge run by the Consolidator (consolidator.h), and publishing the result
// before its inputs go; vacuum() removes the fragments a merge replaced but kept.
//
// Part of Array (array.h): every method runs with the array's mutex held by the caller
// (Array's public consolidate* and vacuum calls take it), and reaches the fragment set,
// store, publisher and write path through the Array it belongs to.  It has no state of
// its own: what it changes is the array's (fragments, replaced fragments, schema).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/array/array_info.h"
#include "engine/fragment/fragment.h"
#include "engine/schema/schema.h"

namespace tessera {

class Array;

class Consolidation {
 public:
  explicit Consolidation(Array& a) : a_(a) {}
  Consolidation(const Consolidation&) = delete;
  Consolidation& operator=(const Consolidation&) = delete;

 private:
  friend class Array;     // the facade's consolidate* and vacuum calls forward here
  friend class AutoMerge;  // automatic merges are published the same way
  Array& a_;

  // The bodies of Array's public calls of the same names (array.h says what each does).
  void consolidate(size_t first, size_t last);
  void consolidate_all();
  void consolidate_auto(size_t min_run, double ratio);
  void consolidate_layout(Order tile, Order cell, size_t first, size_t last);
  void consolidate_part(uint32_t part, uint32_t parts);
  void vacuum(VacuumResult* out);
  // part/parts: see Array::consolidate_part; parts == 1 publishes at once (serial).
  // target: the schema to merge into (a converted order, consolidate_layout), published
  // with the result; null: the array's schema.
  void consolidate_range(size_t first, size_t last, uint32_t part = 0, uint32_t parts = 1,
                         const Schema* target = nullptr);
  // What a merge of `in` replaces: the inputs, and the fragments they replaced that are
  // still kept (so those stay hidden when an input is removed before them).
  std::vector<FragmentId> replaces_of(const std::vector<std::shared_ptr<Fragment>>& in) const;
  // Publishes a finished merge of the live fragments `in` (adjacent): the file `tmp`, or
  // the inline `bytes` when tmp is empty.  automatic: a background merge (auto_merge.h),
  // whose file inputs stay until they retire and whose batch records what it did.
  void publish_merge(std::vector<std::shared_ptr<Fragment>> in, const FragmentId& id, std::string tmp,
                     std::shared_ptr<const std::vector<uint8_t>> bytes, const std::string& final_path,
                     const Schema* target, bool automatic);
};

}  // namespace tessera
