// auto_merge.h — Array's automatic consolidation: the merges a writer's commits make due
// (merge_policy.h: size-tiered), run in the background of the writing process by the
// context's merge thread (context/merge_queue.h), and the retirement of the fragment
// files they replace once no read of the past needs them (ArrayOptions::AutoMerge;
// docs/engine.md, "Automatic consolidation").
//
// A merge has three steps.  Under the array's mutex it picks a due run among the
// *committed* fragments (those whose publishing catalog batch is committed: a merge never
// gets ahead of the commit that published its inputs, or a crash could keep half of a
// flush inside the merge) and takes their handles.  Without the mutex it merges them
// (consolidator.h) into a fragment of its own, synced — the writer goes on writing,
// flushing and reading meanwhile; fragments are immutable, and everything the writer adds
// sorts after the inputs.  Under the mutex again it checks that the inputs are still live
// and adjacent (an explicit consolidation, a layout conversion or a refresh may have
// changed them: then the merge is dropped) and publishes it as Consolidation does
// (publish_merge), in one catalog batch that also records the merge (merge_records.h).
//
// The file inputs stay, hidden by the result, `retain_ns` after the merge (a read as of a
// commit before it still lists them), recorded by a retire record each; then a batch
// drops their records, and once it is durable (the writer's next flush syncs the catalog:
// housekeeping never syncs it by itself, which would make the writer's unflushed
// metadata durable early) they are unlinked.  Readers that have them open keep
// reading (POSIX); one that lists them and finds them gone lists again.  Inline inputs go
// at once: the catalog's history holds them for reads of the past.
//
// Part of Array (array.h): every method but run() runs with the array's mutex held.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/array/array_info.h"
#include "engine/array/merge_policy.h"
#include "engine/catalog/catalog.h"
#include "engine/fragment/fragment.h"

namespace tessera {

class Array;

class AutoMerge {
 public:
  explicit AutoMerge(Array& a) : a_(a) {}
  AutoMerge(const AutoMerge&) = delete;
  AutoMerge& operator=(const AutoMerge&) = delete;

 private:
  friend class Array;
  friend class Consolidation;  // publish_merge records what a merge did here
  friend class Publisher;      // a durable write commits itself
  Array& a_;

  // Merges run for this array: asked for, writable, and not an MPI rank's, a compact
  // array, an array read as of the past, nor one whose file records are kept apart from
  // its commits (a parallel file's: its ranks publish files the records name only later).
  bool enabled() const;
  TieredPolicy policy() const;
  // After the open's listing: every fragment listed is committed; the retained files
  // (their retire records) are taken up; work due is queued.
  void opened();
  // Everything this array published so far is in a committed catalog batch (a flush):
  // those fragments may be merged now; work due is queued.
  void committed();
  // The merge due now among the committed fragments, as live positions [first, last].
  std::optional<std::pair<size_t, size_t>> due() const;
  // Queues a background run when a merge or a retirement is due.
  void request_if_due();
  // Waits, releasing the mutex meanwhile, until no merge is between its two locked
  // steps (explicit consolidation and vacuum, which would race it for the same inputs).
  void wait_quiet(std::unique_lock<std::mutex>& lk);
  ConsolidationInfo info() const;

  // publish_merge's part (the mutex held): the retire records of the kept file inputs
  // and the totals into the merge's batch, then, once published, its bookkeeping.
  void record_merge(const std::vector<std::shared_ptr<Fragment>>& in, const Fragment& result,
                    const std::vector<std::shared_ptr<Fragment>>& kept, CatalogBatch& b);
  void merged(const Fragment& result, const std::vector<std::shared_ptr<Fragment>>& kept);
  // vacuum(): every retire record goes into its batch; once it is committed, nothing is
  // retained any more.
  void drop_retire_records(CatalogBatch* b) const;
  void forget_retained() { retained_.clear(); }

  // The background run (Array::merge_in_background; takes the mutex itself): due
  // retirements, then one due merge; queued again while more is due.
  void run() noexcept;
  bool merge_once(std::unique_lock<std::mutex>& lk);
  // Retires the retained files whose time is up (all of them with `all`): their records
  // dropped by a housekeeping batch, the files unlinked once it is durable.
  void retire_due(bool all);
  void unlink_durable();
  bool unlink_due() const;
  uint64_t next_retire_ns() const;
  void failed(const std::string& what, const std::exception& e);

  // The newest committed fragment: live fragments up to it (and published) may merge.
  FragmentId committed_{};
  bool any_committed_ = false;
  // A merge is between its locked steps; quiet_ is told when it is not.
  bool busy_ = false;
  // No merge starts while an index build runs (Array::build_index).
  int paused_ = 0;
  std::condition_variable quiet_;
  // The array is going away: a merge under way gives up at its next tile.
  std::atomic<bool> cancel_{false};
  // Replaced files kept for reads of the past: when the merge that replaced them was
  // made (ns since the epoch), their bytes and path.
  struct Retained {
    uint64_t merged_ns = 0, bytes = 0;
    std::string path;
  };
  std::map<FragmentId, Retained> retained_;
  // Retired: their records' removal is committed as `ticket`; unlinked once it is durable.
  struct Unlinking {
    FragmentId id;
    std::string path;
    uint64_t ticket = 0;
  };
  std::vector<Unlinking> unlinking_;
  // Retire records naming no replaced file present (its file removed by other means):
  // dropped by the next batch.
  std::vector<FragmentId> stale_;
  // This open: bytes committed by flushes and written by merges, retired files, failures.
  uint64_t flushed_bytes_ = 0, session_out_ = 0, retired_ = 0, failures_ = 0;
  std::string last_error_;
  // After a failure no merge is tried before this time (ns): a full disk is not hammered.
  uint64_t retry_after_ns_ = 0;
  uint64_t backoff_ns_ = 0;
};

}  // namespace tessera
