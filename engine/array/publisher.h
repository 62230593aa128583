// publisher.h — Array's publishing component: the fragments a writer finished but has
// not published (deferred mode), the dense writers still filtering, the publish journal
// staged for a flush or an MPI epoch, this writer's publish log, and the recovery of
// journals a crash left behind.  The protocol and its crash guarantees: docs/format.md
// ("Publish journal", "Publish logs", "Epoch journals").
//
// Part of Array (array.h), not a unit of its own: every method runs with the array's
// mutex held by the caller (Array's public methods take it), and reaches the rest of the
// array (its store, schema, fragment set, share session) through the Array it belongs to.
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/catalog/catalog.h"
#include "engine/fragment/fragment.h"
#include "engine/fragment/fragment_writer.h"
#include "engine/schema/schema.h"

namespace tessera {

class Array;

class Publisher {
 public:
  explicit Publisher(Array& a) : a_(a) {}
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

 private:
  friend class Array;  // the facade reads the pending state (flush steps, MPI)
  friend class ArrayFragments;  // a listing takes the unpublished and recovered fragments
  friend class WritePath;      // finished and open writers are completed or parked here
  friend class Consolidation;  // a merge is logged and published, or left unpublished (MPI parts)
  Array& a_;

  // Completes a writer: durable publish (durable_writes) or finish into unpublished_.
  // batch: into unpublished_ even in durable mode (the caller publishes them together).
  void complete(std::unique_ptr<FragmentWriter> w, bool batch = false);
  // Deferred mode: lets a dense writer keep filtering in the background.
  void park(std::unique_ptr<FragmentWriter> w);
  void complete_parked(std::unique_ptr<FragmentWriter> w);
  // Completes every parked writer, oldest first (Array::finish_parked_for).
  void complete_all_parked();
  void note_lost(const std::string& why);
  void report_lost();
  // Syncs every unpublished fragment; one whose sync fails is dropped and noted lost.
  void sync_unpublished();
  void stage_publish(bool synced, uint64_t epoch = 0, bool fragments_synced = false);
  bool stage_writes_locked(uint64_t epoch) const;
  std::string journal_path() const;
  void finish_publish(bool synced, CatalogBatch* into = nullptr);
  bool commits_first_locked() const;
  void record_first(CatalogBatch& into) const;
  // Collective mode, array destroyed outside an epoch commit (publish_recovery.cc).
  void discard_unpublished();
  void recover_journal();
  void recover_one_journal(const std::string& path);
  // Files about to be renamed into place before a durable catalog batch records them:
  // appended to this writer's publish log first (publish_log.h).
  void log_publish(const std::vector<std::pair<FragmentId, uint64_t>>& files);
  void log_unpublished();
  void trim_log();  // publish_log_recorded, the caller holding the array's mutex

  std::list<std::unique_ptr<FragmentWriter>> parked_;  // dense writers still filtering
  // Finished but unpublished fragments (deferred mode): (fragment, final path).
  std::vector<std::pair<std::shared_ptr<Fragment>, std::string>> unpublished_;
  std::vector<std::shared_ptr<Fragment>> unpublished_inline_;  // deferred mode
  // Why unflushed writes were lost (a fragment file whose write failed), until the next
  // flush reports it (report_lost throws kIo): a flush never succeeds over lost writes.
  std::string lost_;
  bool schema_dirty_ = false;  // deferred mode: schema to write at flush
  bool journal_staged_ = false;
  bool single_ = false;  // the staged batch is one fragment: no journal file
  uint64_t staged_epoch_ = 0;  // the staged journal's epoch (0: serial journal)
  // The staged batch commits with the caller's catalog batch before its renames
  // (record_staged); first_committed_: that batch is durable, so a batch whose renames
  // failed is finished from here before a new journal replaces its journal.  The batch
  // is the first staged_n_ of unpublished_ (a retry's new fragments follow it), and the
  // schema it publishes is staged_schema_ (a later extent change is not its).
  bool first_ = false;
  bool first_committed_ = false;
  size_t staged_n_ = 0;
  std::optional<std::pair<Schema, FragmentId>> staged_schema_;
  std::vector<std::shared_ptr<Fragment>> recovered_;  // read-only: fragments named by a journal
  // Published by publish_own since the last epoch, not yet recorded (files_to_record).
  std::vector<std::pair<FragmentId, uint64_t>> alone_files_;
  // This writer appended to its publish log since its last trim (log_publish).
  bool logged_ = false;
  // An append to or trim of the log failed: the next append rewrites it whole.
  bool log_suspect_ = false;
  // publish_own renamed files and the directory sync making the names durable has not
  // returned yet: the next epoch syncs it before its record names them.
  bool alone_unsynced_ = false;
};

}  // namespace tessera
