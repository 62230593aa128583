// publisher.cc — Publisher (publisher.h): deferred fragments finished and parked,
// staged in a publish journal and renamed into place at flush, MPI epochs' journals, and
// this writer's publish log.  docs/format.md ("Publish journal") gives the protocol.
#include <algorithm>

#include "engine/array/array.h"
#include "engine/array/array_files.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_writer.h"
#include "engine/publish/publish_log.h"
#include "engine/publish/publish_journal.h"

namespace tessera {

using namespace array_files;

void Publisher::complete(std::unique_ptr<FragmentWriter> w, bool batch) {
  std::string tmp = w->finish();
  if (tmp.empty()) {
    std::vector<uint8_t> bytes = w->take_inline();
    if (a_.store_->reserve_inline(bytes.size(), a_.opts_)) {
      a_.add_inline(std::move(bytes), batch);
      return;
    }
    // The room this writer was promised went to another writer meanwhile.
    tmp = a_.inline_to_file(bytes, w->final_path());
  }
  auto f = Fragment::open(tmp, a_.ctx_);
  if (a_.opts_.durable_writes && !batch) {
    log_publish({{f->meta().id, f->file_size()}});
    FragmentWriter::publish_finished(f->file(), tmp, w->final_path());
    sync_dir(a_.env(), a_.frag_dir_);
    f->set_path(w->final_path());
    // Recorded and synced before the write returns: an array whose records are complete
    // reads only recorded files (a crash before this: the write never returned).
    a_.store_->record_files({{f->meta().id, f->file_size()}}, {}, nullptr, /*sync=*/true);
    trim_log();
    a_.frags_.add(f, {});
    a_.index_published({f});
    return;
  }
  unpublished_.push_back({f, w->final_path()});
  a_.frags_.add(f, {});
}

void Publisher::park(std::unique_ptr<FragmentWriter> w) {
  if (a_.opts_.durable_writes) {
    complete(std::move(w));
    return;
  }
  parked_.push_back(std::move(w));
  while (parked_.size() > a_.opts_.max_open_writers) {
    auto front = std::move(parked_.front());
    parked_.pop_front();
    complete_parked(std::move(front));
  }
}

// A parked writer's cells exist only in its file: if finishing it fails, they are lost,
// and the next flush must say so rather than report success.
void Publisher::complete_parked(std::unique_ptr<FragmentWriter> w) {
  const std::string path = w->final_path();
  try {
    complete(std::move(w));
  } catch (const std::exception& e) {
    note_lost("finishing fragment '" + path + "' failed: " + e.what());
    throw;
  }
}

void Publisher::complete_all_parked() {
  while (!parked_.empty()) {
    auto front = std::move(parked_.front());
    parked_.pop_front();
    complete_parked(std::move(front));
  }
}

void Publisher::note_lost(const std::string& why) {
  if (lost_.empty()) lost_ = why;
}

void Publisher::report_lost() {
  if (lost_.empty()) return;
  std::string why;
  why.swap(lost_);
  throw_error(Errc::kIo, "array '" + a_.dir_ + "': writes made since the last flush were lost (" + why +
                             "); the array holds what was flushed before and what was written after");
}

// Publishing a flush's fragments must be atomic: with several fragments, a crash between
// two renames would expose some writes of the batch without earlier ones.  So the batch
// is written as a redo journal (synced) before the first rename; whoever opens the array
// next finishes the renames (recover_journal), and the journal goes once all are done.
// True when stage_publish(.., epoch, ..) writes a file of its own (a journal, a publish
// log) that must not become durable before the fragments: the cases it returns early
// without one are exactly these.
bool Publisher::stage_writes_locked(uint64_t epoch) const {
  if (a_.store_->publishes_with_catalog() && unpublished_.empty()) return false;
  if (unpublished_.empty() && !schema_dirty_) return false;
  return !(epoch == 0 && a_.store_->publishes_with_catalog() && a_.frags_.complete_records());
}

void Publisher::stage_publish(bool synced, uint64_t epoch, bool fragments_synced) {
  // The epoch record will record the files publish_own renamed: their names must be
  // durable before it is (a publish_own whose directory sync failed left them unsynced).
  if (epoch != 0 && alone_unsynced_) {
    sync_dir(a_.env(), a_.frag_dir_);
    alone_unsynced_ = false;
  }
  // A batch that committed first and then failed to rename: its journal names an epoch
  // the catalog holds, so it is finished before a new journal replaces it (a new one
  // with a later epoch would roll back, after a crash, files that epoch records).
  if (epoch == 0 && first_ && journal_staged_ && first_committed_) finish_publish(false, nullptr);
  // Inline records and a schema record go with the catalog batch (finish_publish).
  if (a_.store_->publishes_with_catalog() && unpublished_.empty()) {
    staged_epoch_ = epoch;
    journal_staged_ = !unpublished_inline_.empty() || schema_dirty_;
    single_ = true;
    return;
  }
  if (unpublished_.empty() && !schema_dirty_) return;
  if (!synced && !fragments_synced) sync_unpublished();
  // A serial flush of a parallel file's array (record_staged): its journal carries the
  // epoch the caller's catalog batch will set, and its files are recorded by that batch
  // before their renames — not logged, so a reader never reads some of them on the
  // strength of a log entry while the others are still to be renamed.
  first_ = epoch == 0 && commits_first_locked();
  first_committed_ = false;
  if (first_) {
    epoch = a_.store_->committed_epoch().value_or(0) + 1;
    staged_n_ = unpublished_.size();
    staged_schema_.reset();
    if (schema_dirty_) staged_schema_.emplace(a_.schema_, a_.extent_id_);
  }
  staged_epoch_ = epoch;
  // A serial flush's files are recorded by a catalog batch after their renames (an
  // epoch's: by the epoch record, before them): logged first, before the journal too,
  // which a crash may roll forward.
  if (epoch == 0) log_unpublished();
  // Files whose records the catalog batch puts, in an array whose records name every
  // committed file: that batch commits them, so no journal (a crash before it leaves
  // renamed files without records, which are never read; array_store.h).
  if (epoch == 0 && a_.store_->publishes_with_catalog() && a_.frags_.complete_records()) {
    journal_staged_ = true;
    single_ = true;
    return;
  }
  // One fragment and no extent change need no journal: a rename is atomic by itself (and
  // every new file costs: inode allocation dominates flushing many small datasets).
  // Not in an epoch: the rename must wait for the epoch record, so a crash in between
  // needs the journal to finish it.
  if (unpublished_.size() == 1 && !schema_dirty_ && epoch == 0) {
    journal_staged_ = true;
    single_ = true;
    return;
  }
  single_ = false;
  PublishJournal j;
  j.epoch = epoch;
  for (auto& [f, final_path] : unpublished_) j.moves.emplace_back(f->path(), final_path);
  // An extent change belongs to the batch: the schema it ends with is replayed with it.
  if (schema_dirty_) j.schema = schema_file_bytes(a_.schema_, a_.extent_id_);
  j.write(a_.env(), journal_path(), /*durable=*/!synced);
  journal_staged_ = true;
}

// A sync that fails may have dropped the file's bytes for good: Linux marks the pages
// clean without writing them, and a later fsync returns 0 (docs/reliability.md, "Power
// loss").  Such a fragment can never be published: it is dropped and its writes are
// reported lost by the next flush (report_lost), like a fragment whose write failed, so
// the caller writes them again instead of publishing a file a power loss would empty.
void Publisher::sync_unpublished() {
  for (size_t i = 0; i < unpublished_.size(); ++i) {
    try {
      unpublished_[i].first->file().sync();
    } catch (const Error& e) {
      std::shared_ptr<Fragment> f = unpublished_[i].first;
      unpublished_.erase(unpublished_.begin() + static_cast<ptrdiff_t>(i));
      FragmentList keep;
      for (auto& x : a_.frags_.live())
        if (x != f) keep.push_back(x);
      a_.frags_.assign(std::move(keep));
      (void)guard([&] { remove_file(a_.env(), f->path()); });
      note_lost("syncing fragment '" + f->path() + "' failed: " + e.what());
      throw;
    }
  }
}

// Journals are needed by a batch of several files or an extent change; one file alone is
// renamed into place atomically before its batch (logged first), as before.
bool Publisher::commits_first_locked() const {
  return a_.writable_ && !a_.opts_.collective && a_.store_->has_records() && !a_.store_->publishes_with_catalog() &&
         !a_.frags_.complete_records() && (unpublished_.size() > 1 || schema_dirty_);
}

void Publisher::record_first(CatalogBatch& into) const {
  std::vector<std::pair<FragmentId, uint64_t>> files;
  for (size_t i = 0; i < staged_n_ && i < unpublished_.size(); ++i)
    files.emplace_back(unpublished_[i].first->meta().id, unpublished_[i].first->file_size());
  a_.store_->record_files(files, {}, &into, /*sync=*/false);
}

std::string Publisher::journal_path() const {
  if (staged_epoch_ == 0) return join_path(a_.frag_dir_, kJournalFile);
  return join_path(a_.frag_dir_, kRankJournalPrefix + std::to_string(a_.opts_.writer_rank) + kJournalSuffix);
}

void Publisher::finish_publish(bool synced, CatalogBatch* into) {
  if (a_.compact_) return a_.compact_->publish(synced, into);
  if (!journal_staged_) return;
  // A batch that commits first is called here once its catalog batch is durable.
  if (first_) first_committed_ = true;
  // Such a batch is the first staged_n_ fragments (after a failed rename: a retry's new
  // ones follow, and one renamed before the failure is under its final name already).
  const size_t n = first_ ? std::min(staged_n_, unpublished_.size()) : unpublished_.size();
  const bool files = n > 0;
  std::vector<std::pair<FragmentId, uint64_t>> published;
  std::vector<std::shared_ptr<Fragment>> to_index;
  for (size_t i = 0; i < n; ++i) {
    auto& [f, final_path] = unpublished_[i];
    if (f->path() != final_path)
      FragmentWriter::publish_finished(f->file(), f->path(), final_path, /*already_synced=*/true);
    f->set_path(final_path);
    published.emplace_back(f->meta().id, f->file_size());
    to_index.push_back(f);
  }
  unpublished_.erase(unpublished_.begin(), unpublished_.begin() + static_cast<ptrdiff_t>(n));
  staged_n_ = 0;
  if (files && !synced) sync_dir(a_.env(), a_.frag_dir_);
  // Other ranks drop the records of this log the published files now hold (they list
  // the directory after an epoch anyway).
  if (files && a_.share_.share_log_) a_.share_.announce_files();
  // Inline fragments and the schema change: catalog records (into the caller's batch) or
  // the schema file — written before the journal goes: until then a crash replays both.
  // A batch that committed first publishes the schema it staged; a later extent change
  // stays for the next flush.
  const bool had_schema = first_ ? staged_schema_.has_value() : schema_dirty_;
  const Schema* schema = first_ ? (staged_schema_ ? &staged_schema_->first : nullptr) : (had_schema ? &a_.schema_ : nullptr);
  const FragmentId extent_id = first_ && staged_schema_ ? staged_schema_->second : a_.extent_id_;
  // An epoch's files are recorded by the epoch record's batch (commit_epoch), which
  // names every member's files; a member records none of its own here.  (So are those of
  // a batch that committed first: record_staged.)
  if (staged_epoch_ != 0) published.clear();
  a_.store_->publish(unpublished_inline_, schema, extent_id, published, synced, into);
  unpublished_inline_.clear();
  if (!first_ || (staged_schema_ && staged_schema_->second == a_.extent_id_)) schema_dirty_ = false;
  staged_schema_.reset();
  // A journal that carried an extent change to a catalog record stays until a later
  // flush replaces it: the record is durable only once the caller syncs the catalog, and
  // a crash before that replays the change from the journal (recover_one_journal takes
  // it only if newer).
  if (!single_ && !(had_schema && a_.store_->publishes_with_catalog())) remove_file(a_.env(), journal_path());
  journal_staged_ = false;
  first_ = false;
  a_.index_published(to_index);  // index_on_write: once the fragments are in place
}

void Publisher::log_publish(const std::vector<std::pair<FragmentId, uint64_t>>& files) {
  // An array whose records are complete commits its files with the catalog batch (an
  // unrecorded file is not read); a standalone array keeps no records.
  if (files.empty() || a_.frags_.complete_records() || !a_.store_->has_records()) return;
  // After a failed append or trim the log's bytes on disk may differ from what this
  // process reads back (a failed fdatasync drops the pages it was to write, a failed
  // directory sync may undo a trim's rename): the next append rewrites it whole, synced
  // under a new name, instead of appending after bytes a power loss may turn to zeros.
  try {
    append_publish_log(a_.env(), a_.frag_dir_, a_.opts_.writer_rank, files, /*rewrite=*/log_suspect_);
  } catch (...) {
    log_suspect_ = true;
    throw;
  }
  log_suspect_ = false;
  logged_ = true;
}

void Publisher::log_unpublished() {
  std::vector<std::pair<FragmentId, uint64_t>> files;
  for (auto& u : unpublished_) files.emplace_back(u.first->meta().id, u.first->file_size());
  log_publish(files);
}

void Publisher::trim_log() {
  if (!logged_) return;
  Status st = guard([&] { trim_publish_log(a_.env(), a_.frag_dir_, a_.opts_.writer_rank, a_.store_->recorded_files()); });
  if (st.ok()) logged_ = false;
  else log_suspect_ = true;  // the entries stay (a permission): trimmed next time
}

}  // namespace tessera
