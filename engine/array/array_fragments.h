// array_fragments.h — Array's fragment set: the fragments the array reads, the replaced
// ones it keeps, and how both are listed.  A FragmentSet (engine/fragment/fragment_set.h)
// is only the versioned list a read plans against; this is the array's own, which knows
// where its fragments come from: published files, inline records, this writer's
// unpublished fragments, journals read through, other ranks' shared files and share-log
// records, checked against the catalog's file records and publish logs, and listed again
// when a writer overtakes the listing (array_listing.cc).
//
// Part of Array (array.h), not a unit of its own: its state is guarded by the array's
// mutex (Array::mu_), which the caller holds for every call (Array's public methods take
// it); a read keeps live().snapshot() after the mutex is let go.  It reaches the rest of
// the array (store, publisher, share session, schema) through the Array it belongs to.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/array/array_info.h"
#include "engine/fragment/fragment.h"
#include "engine/fragment/fragment_set.h"

namespace tessera {

class Array;

class ArrayFragments {
 public:
  explicit ArrayFragments(Array& a) : a_(a) {}
  ArrayFragments(const ArrayFragments&) = delete;
  ArrayFragments& operator=(const ArrayFragments&) = delete;

  // The fragments reads see, oldest first (published or not).
  const FragmentSet& live() const { return live_; }
  // Lists the array again (open, refresh) and takes what is present: the replaced
  // fragments apart, the others live.
  void load();
  // The catalog's file records name every committed fragment file of this array
  // (ArrayStore::files_complete; never for a parallel file's collective arrays).
  bool complete_records() const;
  // Every fragment present (published files, inline records, this writer's unpublished
  // and journal-recovered ones), replaced or not; true when the listing was consistent
  // (no listed file vanished, every recorded file found or replaced).  unrecorded: set
  // when the problem is a file neither recorded nor logged (the listing may be newer than
  // the catalog: load checks it against the reloaded one).
  bool list_present(std::vector<std::shared_ptr<Fragment>>* all, std::string* problem,
                    std::optional<FragmentId>* unrecorded = nullptr);

  // Changes of the live set (FragmentSet's): a new fragment and those it replaces, a
  // fragment moved from an inline record to a file, a whole new list.
  void add(std::shared_ptr<Fragment> f, const std::vector<FragmentId>& replaced);
  void swap(const std::shared_ptr<Fragment>& old, std::shared_ptr<Fragment> now) { live_.swap(old, std::move(now)); }
  void assign(FragmentList all) { live_.assign(std::move(all)); }

  // Present but replaced (Array::replaced_fragments): as listed at open or refresh, plus
  // what a consolidation keeping its inputs replaced since; a vacuum removes them all.
  const std::vector<FragmentInfo>& replaced() const { return replaced_; }
  void keep_replaced(const Fragment& f);
  void forget_replaced() { replaced_.clear(); }

  // What Array::fragments and Array::storage_bytes report of the live fragments.
  std::vector<FragmentInfo> infos() const;
  uint64_t bytes() const;

 private:
  Array& a_;
  FragmentSet live_;  // oldest first (published or not)
  std::vector<FragmentInfo> replaced_;  // present but replaced (replaced_fragments())
};

}  // namespace tessera
