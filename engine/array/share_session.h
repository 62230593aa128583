// share_session.h — Array's MPI share session (share_session.cc, docs/parallel.md
// "Visibility"): this rank's share log and its current run of small box writes, and the
// other ranks' logs it reads.  A run is this rank's consecutive small box writes, each
// shared as a share-log record, buffered together and spilled as one fragment; every
// record and that fragment carry the run's first timestamp, so the fragment sorts where
// the run's first write did.  A run ends (is spilled) before any other kind of write, and
// when another rank's newly seen fragment meets its cells (fence_: those seen during the
// run, which later writes of the run must not meet either) — a write ordered after
// another rank's must sort after it.
//
// Part of Array (array.h): every method runs with the array's mutex held by the caller,
// and reaches the rest of the array (schema, fragment set, spill) through it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/fragment/fragment.h"
#include "engine/geometry/box.h"
#include "engine/publish/share_log.h"

namespace tessera {

class Array;

class ShareSession {
 public:
  explicit ShareSession(Array& a) : a_(a) {}
  ShareSession(const ShareSession&) = delete;
  ShareSession& operator=(const ShareSession&) = delete;

 private:
  friend class Array;      // the facade starts and ends runs around its writes and spills
  friend class ArrayFragments;  // a listing takes the other ranks' shared fragments
  friend class Publisher;  // a publish announces its files to the other ranks
  friend class WritePath;  // a small box write joins the run; a spill ends it
  Array& a_;

  // A buffered box write: queued for the share log (true), or not loggable (false: the
  // run ends and the next share_own shares through files).
  bool note_logged_write(const Selection& sel, const uint8_t* src, const uint64_t* sstride);
  void note_unlogged_write();
  void end_share_run();
  FragmentId spill_id();  // the id of a spill: the run's, ending it; else next_id()
  void open_share_log();
  void log_pending_shares();
  void announce_files();  // a kList record: other ranks list the directory
  void announce_shared(const std::vector<std::string>& names);  // a kShared record
  // Reads the other ranks' new share-log records; true when one asks for a listing.
  // retired: fragments the logs showed before that files hold now.
  bool poll_share_logs(std::vector<std::shared_ptr<Fragment>>* fresh, std::vector<std::shared_ptr<Fragment>>* retired);
  // Picks up what other ranks shared: their new records, and a listing when asked (or
  // `list`); ends the run if something new meets it.
  void pick_up_shared(bool list);
  void note_foreign(const std::vector<std::shared_ptr<Fragment>>& fresh);
  void close_share_logs() noexcept;

  struct PendingShare {
    Box box;
    std::vector<uint8_t> cells;  // row-major
  };
  std::vector<PendingShare> share_pending_;  // box writes since the last share_own
  bool share_broken_ = false;  // a write since the last share_own was not logged
  uint64_t run_ts_ = 0;        // the current run's timestamp (0: none)
  BoundingBox run_bounds_;
  std::vector<Box> fence_;
  std::unique_ptr<ShareLogWriter> share_log_;
  struct PeerLog {
    ShareLogReader log;
    std::vector<std::shared_ptr<Fragment>> frags;  // shown by the log, not yet in files
  };
  std::vector<PeerLog> peers_;  // by rank
};

}  // namespace tessera
