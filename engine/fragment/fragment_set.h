// fragment_set.h — an array's fragments in their total order (oldest first, by
// FragmentId: newest wins), the set every read plans against.  Versioned: a change makes
// a new list and leaves the old one whole, so a read holds a snapshot — one pointer, not
// a copy of every fragment's handle — that no publish or consolidation disturbs.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/fragment/fragment.h"

namespace tessera {

using FragmentList = std::vector<std::shared_ptr<Fragment>>;

class FragmentSet {
 public:
  FragmentSet() : cur_(std::make_shared<const FragmentList>()) {}

  // The current version, for a read to keep while it runs.
  std::shared_ptr<const FragmentList> snapshot() const { return cur_; }
  const FragmentList& list() const { return *cur_; }
  size_t size() const { return cur_->size(); }
  bool empty() const { return cur_->empty(); }
  const std::shared_ptr<Fragment>& operator[](size_t i) const { return (*cur_)[i]; }
  FragmentList::const_iterator begin() const { return cur_->begin(); }
  FragmentList::const_iterator end() const { return cur_->end(); }
  FragmentList::const_reverse_iterator rbegin() const { return cur_->rbegin(); }
  FragmentList::const_reverse_iterator rend() const { return cur_->rend(); }
  // Changes so far (each add or assign is one).
  uint64_t version() const { return version_; }

  // The fragment opened from `path` (a file path, or an inline fragment's label), if any.
  std::shared_ptr<Fragment> find(const std::string& path) const {
    for (auto& f : *cur_)
      if (f->path() == path) return f;
    return nullptr;
  }
  // Every file fragment by path: a listing looks up each name it finds, and a scan of
  // the set per name made a listing quadratic in the fragments (a parallel H5Dwrite lists).
  std::unordered_map<std::string, std::shared_ptr<Fragment>> by_path() const {
    std::unordered_map<std::string, std::shared_ptr<Fragment>> m;
    m.reserve(cur_->size());
    for (auto& f : *cur_) m.emplace(f->path(), f);
    return m;
  }
  // Adds `f` and drops the fragments it replaces (consolidation).
  void add(std::shared_ptr<Fragment> f, const std::vector<FragmentId>& replaced) {
    FragmentList next;
    next.reserve(cur_->size() + 1);
    for (auto& old : *cur_)
      if (std::find(replaced.begin(), replaced.end(), old->meta().id) == replaced.end()) next.push_back(old);
    next.push_back(std::move(f));
    assign(std::move(next));
  }
  // Puts `now` where `old` was (the same fragment moved from an inline record to a file).
  void swap(const std::shared_ptr<Fragment>& old, std::shared_ptr<Fragment> now) {
    FragmentList next = *cur_;
    for (auto& x : next)
      if (x == old) x = now;
    assign(std::move(next));
  }
  // Replaces the whole set (a fresh listing).
  void assign(FragmentList all) {
    std::stable_sort(all.begin(), all.end(), [](auto& a, auto& b) { return a->meta().id < b->meta().id; });
    cur_ = std::make_shared<const FragmentList>(std::move(all));
    ++version_;
  }

 private:
  std::shared_ptr<const FragmentList> cur_;
  uint64_t version_ = 0;
};

}  // namespace tessera
