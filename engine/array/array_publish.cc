// array_publish.cc — Array's publishing: deferred fragments finished, staged in a
// publish journal and renamed into place at flush, the journal's recovery after a crash,
// MPI epochs and rank-local publishing, and refresh (picking up what other processes
// published).  The protocol and its crash guarantees: docs/format.md ("Publish journal").
#include "engine/array/array.h"

#include <algorithm>
#include <set>

#include "engine/array/array_files.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_writer.h"
#include "engine/publish/publish_log.h"
#include "engine/publish/publish_journal.h"

namespace tessera {

using namespace array_files;

bool Array::has_unsynced_files() const {
  std::lock_guard<std::mutex> g(mu_);
  return !unpublished_.empty() || (schema_dirty_ && !store_->publishes_with_catalog());
}

// Collective mode, array destroyed outside an epoch commit: what was not committed is
// dropped as a crash would drop it (temporary files removed, nothing published).
void Array::discard_unpublished() {
  std::lock_guard<std::mutex> g(mu_);
  (void)guard([&] {
    direct_.reset();  // a writer's destructor removes its temporary file
    parked_.clear();
    // A journal staged for an epoch whose commit then failed (a sync or rename after
    // the agreement): the epoch record may be durable, or become durable with the
    // catalog's next sync, so whether these files are committed is the catalog's to say.
    // They stay for recovery, which rolls the journal forward or back by the epoch.
    if (journal_staged_ && staged_epoch_ != 0 && !single_) {
      unpublished_.clear();
      return;
    }
    for (auto& u : unpublished_) {
      remove_file(env(), u.first->path());
      remove_index_of(u.first->meta().id);  // built by build_index before the epoch, if any
    }
    unpublished_.clear();
  });
}

void Array::complete(std::unique_ptr<FragmentWriter> w, bool batch) {
  std::string tmp = w->finish();
  if (tmp.empty()) {
    std::vector<uint8_t> bytes = w->take_inline();
    if (store_->reserve_inline(bytes.size(), opts_)) {
      add_inline(std::move(bytes), batch);
      return;
    }
    // The room this writer was promised went to another writer meanwhile.
    tmp = inline_to_file(bytes, w->final_path());
  }
  auto f = Fragment::open(tmp, ctx_);
  if (opts_.durable_writes && !batch) {
    log_publish({{f->meta().id, f->file_size()}});
    FragmentWriter::publish_finished(f->file(), tmp, w->final_path());
    sync_dir(env(), frag_dir_);
    f->set_path(w->final_path());
    // Recorded and synced before the write returns: an array whose records are complete
    // reads only recorded files (a crash before this: the write never returned).
    store_->record_files({{f->meta().id, f->file_size()}}, {}, nullptr, /*sync=*/true);
    trim_log();
    add_fragment(f, {});
    index_published({f});
    return;
  }
  unpublished_.push_back({f, w->final_path()});
  add_fragment(f, {});
}

void Array::park(std::unique_ptr<FragmentWriter> w) {
  if (opts_.durable_writes) {
    complete(std::move(w));
    return;
  }
  parked_.push_back(std::move(w));
  while (parked_.size() > opts_.max_open_writers) {
    auto front = std::move(parked_.front());
    parked_.pop_front();
    complete_parked(std::move(front));
  }
}

// A parked writer's cells exist only in its file: if finishing it fails, they are lost,
// and the next flush must say so rather than report success.
void Array::complete_parked(std::unique_ptr<FragmentWriter> w) {
  const std::string path = w->final_path();
  try {
    complete(std::move(w));
  } catch (const std::exception& e) {
    note_lost("finishing fragment '" + path + "' failed: " + e.what());
    throw;
  }
}

void Array::note_lost(const std::string& why) {
  if (lost_.empty()) lost_ = why;
}

void Array::report_lost() {
  if (lost_.empty()) return;
  std::string why;
  why.swap(lost_);
  throw_error(Errc::kIo, "array '" + dir_ + "': writes made since the last flush were lost (" + why +
                             "); the array holds what was flushed before and what was written after");
}

void Array::finish_parked() {
  // An empty region means everything: the flush in flight is waited for (its fragment is
  // older than what follows, and not listed yet).
  finish_parked_for(Box());
}

Box Array::points_bounds(const uint64_t* coords, size_t n) const {
  BoundingBox b;
  for (size_t i = 0; i < n; ++i) b.add(coords + i * static_cast<size_t>(schema_.rank()), schema_.rank());
  return b.any ? b.box : Box();
}

void Array::finish_parked_for(const Box& region) {
  // A read elsewhere does not wait for a flush in flight: what the flush holds is in no
  // listed fragment yet, but none of it lies in the region, and fragments are listed by
  // id (fragment_set.h), so the flushed one still lands below newer ones later.
  while (inflight_ && (!inflight_bounds_.any || region.lo.empty() || inflight_bounds_.box.intersects(region)))
    wait_inflight();
  close_direct();
  while (!parked_.empty()) {
    auto front = std::move(parked_.front());
    parked_.pop_front();
    complete_parked(std::move(front));
  }
}

// Publishing a flush's fragments must be atomic: with several fragments, a crash between
// two renames would expose some writes of the batch without earlier ones.  So the batch
// is written as a redo journal (synced) before the first rename; whoever opens the array
// next finishes the renames (recover_journal), and the journal goes once all are done.
// True when stage_publish(.., epoch, ..) writes a file of its own (a journal, a publish
// log) that must not become durable before the fragments: the cases it returns early
// without one are exactly these.
bool Array::stage_writes_locked(uint64_t epoch) const {
  if (store_->publishes_with_catalog() && unpublished_.empty()) return false;
  if (unpublished_.empty() && !schema_dirty_) return false;
  return !(epoch == 0 && store_->publishes_with_catalog() && complete_records());
}

bool Array::stage_writes(uint64_t epoch) const {
  std::lock_guard<std::mutex> g(mu_);
  return writable_ && stage_writes_locked(epoch);
}

void Array::stage_publish(bool synced, uint64_t epoch, bool fragments_synced) {
  // The epoch record will record the files publish_own renamed: their names must be
  // durable before it is (a publish_own whose directory sync failed left them unsynced).
  if (epoch != 0 && alone_unsynced_) {
    sync_dir(env(), frag_dir_);
    alone_unsynced_ = false;
  }
  // A batch that committed first and then failed to rename: its journal names an epoch
  // the catalog holds, so it is finished before a new journal replaces it (a new one
  // with a later epoch would roll back, after a crash, files that epoch records).
  if (epoch == 0 && first_ && journal_staged_ && first_committed_) finish_publish(false, nullptr);
  // Inline records and a schema record go with the catalog batch (finish_publish).
  if (store_->publishes_with_catalog() && unpublished_.empty()) {
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
    epoch = store_->committed_epoch().value_or(0) + 1;
    staged_n_ = unpublished_.size();
    staged_schema_.reset();
    if (schema_dirty_) staged_schema_.emplace(schema_, extent_id_);
  }
  staged_epoch_ = epoch;
  // A serial flush's files are recorded by a catalog batch after their renames (an
  // epoch's: by the epoch record, before them): logged first, before the journal too,
  // which a crash may roll forward.
  if (epoch == 0) log_unpublished();
  // Files whose records the catalog batch puts, in an array whose records name every
  // committed file: that batch commits them, so no journal (a crash before it leaves
  // renamed files without records, which are never read; array_store.h).
  if (epoch == 0 && store_->publishes_with_catalog() && complete_records()) {
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
  if (schema_dirty_) j.schema = schema_file_bytes(schema_, extent_id_);
  j.write(env(), journal_path(), /*durable=*/!synced);
  journal_staged_ = true;
}

// A sync that fails may have dropped the file's bytes for good: Linux marks the pages
// clean without writing them, and a later fsync returns 0 (docs/reliability.md, "Power
// loss").  Such a fragment can never be published: it is dropped and its writes are
// reported lost by the next flush (report_lost), like a fragment whose write failed, so
// the caller writes them again instead of publishing a file a power loss would empty.
void Array::sync_unpublished() {
  for (size_t i = 0; i < unpublished_.size(); ++i) {
    try {
      unpublished_[i].first->file().sync();
    } catch (const Error& e) {
      std::shared_ptr<Fragment> f = unpublished_[i].first;
      unpublished_.erase(unpublished_.begin() + static_cast<ptrdiff_t>(i));
      FragmentList keep;
      for (auto& x : frags_)
        if (x != f) keep.push_back(x);
      frags_.assign(std::move(keep));
      (void)guard([&] { remove_file(env(), f->path()); });
      note_lost("syncing fragment '" + f->path() + "' failed: " + e.what());
      throw;
    }
  }
}

// Journals are needed by a batch of several files or an extent change; one file alone is
// renamed into place atomically before its batch (logged first), as before.
bool Array::commits_first_locked() const {
  return writable_ && !opts_.collective && store_->has_records() && !store_->publishes_with_catalog() &&
         !complete_records() && (unpublished_.size() > 1 || schema_dirty_);
}

void Array::record_first(CatalogBatch& into) const {
  std::vector<std::pair<FragmentId, uint64_t>> files;
  for (size_t i = 0; i < staged_n_ && i < unpublished_.size(); ++i)
    files.emplace_back(unpublished_[i].first->meta().id, unpublished_[i].first->file_size());
  store_->record_files(files, {}, &into, /*sync=*/false);
}

Status Array::record_staged(CatalogBatch* into, uint64_t* epoch) {
  std::lock_guard<std::mutex> g(mu_);
  *epoch = 0;
  return guard([&] {
    if (!writable_ || !journal_staged_ || !first_) return;
    record_first(*into);
    *epoch = staged_epoch_;
  });
}

std::string Array::journal_path() const {
  if (staged_epoch_ == 0) return join_path(frag_dir_, kJournalFile);
  return join_path(frag_dir_, kRankJournalPrefix + std::to_string(opts_.writer_rank) + kJournalSuffix);
}

void Array::finish_publish(bool synced, CatalogBatch* into) {
  if (compact_) return compact_->publish(synced, into);
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
  if (files && !synced) sync_dir(env(), frag_dir_);
  // Other ranks drop the records of this log the published files now hold (they list
  // the directory after an epoch anyway).
  if (files && share_log_) announce_files();
  // Inline fragments and the schema change: catalog records (into the caller's batch) or
  // the schema file — written before the journal goes: until then a crash replays both.
  // A batch that committed first publishes the schema it staged; a later extent change
  // stays for the next flush.
  const bool had_schema = first_ ? staged_schema_.has_value() : schema_dirty_;
  const Schema* schema = first_ ? (staged_schema_ ? &staged_schema_->first : nullptr) : (had_schema ? &schema_ : nullptr);
  const FragmentId extent_id = first_ && staged_schema_ ? staged_schema_->second : extent_id_;
  // An epoch's files are recorded by the epoch record's batch (commit_epoch), which
  // names every member's files; a member records none of its own here.  (So are those of
  // a batch that committed first: record_staged.)
  if (staged_epoch_ != 0) published.clear();
  store_->publish(unpublished_inline_, schema, extent_id, published, synced, into);
  unpublished_inline_.clear();
  if (!first_ || (staged_schema_ && staged_schema_->second == extent_id_)) schema_dirty_ = false;
  staged_schema_.reset();
  // A journal that carried an extent change to a catalog record stays until a later
  // flush replaces it: the record is durable only once the caller syncs the catalog, and
  // a crash before that replays the change from the journal (recover_one_journal takes
  // it only if newer).
  if (!single_ && !(had_schema && store_->publishes_with_catalog())) remove_file(env(), journal_path());
  journal_staged_ = false;
  first_ = false;
  index_published(to_index);  // index_on_write: once the fragments are in place
}

void Array::recover_journal() {
  std::vector<std::string> rank_journals;
  const std::string stem = std::string(kJournalFile) + ".tmp.";
  for (const std::string& name : list_dir(env(), frag_dir_)) {
    // A journal's own temporary file, left by a crash while it was being written.
    bool tmp = name.compare(0, stem.size(), stem) == 0 ||
               (name.compare(0, sizeof kRankJournalPrefix - 1, kRankJournalPrefix) == 0 &&
                name.find(".journal.tmp.") != std::string::npos);
    if (tmp && writable_) remove_file(env(), join_path(frag_dir_, name));
    if (is_rank_journal(name)) rank_journals.push_back(join_path(frag_dir_, name));
  }
  recover_one_journal(join_path(frag_dir_, kJournalFile));
  for (const std::string& p : rank_journals) recover_one_journal(p);
  if (writable_ && opts_.sole_writer) {
    // Fragments a crashed writer never staged (".<id>.<pid>.<n>.tmp"): never published.
    // And a publish log's rewrite a crash cut short before its rename: the log it was
    // to replace is still in place, whole.
    for (const std::string& name : list_dir(env(), frag_dir_))
      if ((name.size() > 5 && name[0] == '.' && name.compare(name.size() - 4, 4, ".tmp") == 0) ||
          is_publish_log_temp(name))
        remove_file(env(), join_path(frag_dir_, name));
  }
}

// Rolls one journal forward (serial journals always; per-rank journals when their epoch
// is committed) or back (per-rank journals of an uncommitted epoch: their temporary
// fragments are removed).  Read-only: the same decision, applied to the view only.
void Array::recover_one_journal(const std::string& path) {
  if (!path_exists(env(), path)) return;
  std::vector<uint8_t> bytes;
  try {
    bytes = read_file(env(), path);
  } catch (const Error& e) {
    if (e.code() == Errc::kNotFound) return;  // another writer finished it meanwhile
    throw;
  }
  // A journal is durable before its first rename, so only a journal a crash cut short
  // before it was synced is torn (no bytes, zero bytes): no rename began, and the batch's
  // temporary fragments were never published.  Any other damage is the disk's: some
  // renames may be done and others not, so the array would show half a flush — refused,
  // naming the journal, never dropped in silence.
  if (PublishJournal::torn(bytes)) {
    if (writable_) remove_file(env(), path);
    return;
  }
  PublishJournal j;
  try {
    j = PublishJournal::decode(bytes, "publish journal '" + path + "'");
    FragmentId id;
    if (!j.schema.empty()) parse_schema_file(j.schema, "publish journal '" + path + "' schema", &id);  // validate
  } catch (const Error& e) {
    throw_error(Errc::kCorrupt, std::string(e.what()) +
                                    ": the flush it publishes may be half done, so the array's fragments are not a "
                                    "committed state (move the journal away to accept the fragments present)");
  }
  // An array whose catalog records name every committed file commits a flush with the
  // catalog batch that records its files: a journal left behind means that batch never
  // became durable (the renames are undone: whatever was renamed has no record and is not
  // read), or that it did and the journal is a leftover whose renames are all done.
  // Either way nothing rolls forward, and the journal's schema is not taken.  (An epoch
  // journal is committed by its epoch record: its rule stands.)
  const bool serial_back = j.epoch == 0 && complete_records();
  const bool forward = j.forward(opts_.committed_epoch) && !serial_back;
  const std::vector<uint8_t>& schema_bytes = j.schema;
  std::vector<std::string> read_through;
  j.roll(env(), frag_dir_, forward, writable_, &read_through);
  if (serial_back && writable_ && opts_.sole_writer) {
    // What the cut-short batch renamed has no record and is never read: removed.
    const std::map<FragmentId, uint64_t> recorded = store_->recorded_files();
    for (auto& [from, to] : j.moves) {
      const std::string name = to.substr(to.rfind('/') + 1);
      FragmentId id;
      if (parent_dir(to) == frag_dir_ && name.size() == 47 && FragmentId::parse(name.substr(0, 43), &id) &&
          !recorded.count(id) && path_exists(env(), to))
        remove_file(env(), to);
    }
  }
  // Readers see the batch whole too.  A file the writer renamed since roll() looked is
  // no longer under its temporary name: the listing that follows finds it under its final one.
  for (auto& p : read_through) {
    try {
      recovered_.push_back(Fragment::open(p, ctx_));
    } catch (const Error& e) {
      if (e.code() != Errc::kNotFound || path_exists(env(), p)) throw;
    }
  }
  if (forward && !schema_bytes.empty()) {
    FragmentId jid;
    Schema js = parse_schema_file(schema_bytes, "publish journal '" + path + "' schema", &jid);
    // A journal's schema counts only when its change is newer than the stored one's (a
    // catalog-bound array keeps its last extent journal after publishing; a file schema
    // may have been written just before the crash).
    if (extent_id_ < jid) {
      schema_ = js;
      extent_id_ = jid;
      if (buffer_) buffer_->reset_layout(schema_);
      if (writable_) store_->store_schema(schema_, extent_id_, /*durable=*/true);
    }
  }
  if (writable_) {
    sync_dir(env(), frag_dir_);
    remove_file(env(), path);
  }
}

void Array::flush_impl() {
  check_background();
  finish_parked();
  report_lost();
  spill();
  materialize_inline();
  stage_publish(false);
  if (first_ && journal_staged_) {
    // The commit point, before the renames (record_staged): the files' records and the
    // epoch, synced.  No commit record (cm/): a flush of one array is not a container
    // commit (commit_arrays).
    CatalogBatch b;
    record_first(b);
    b.put(Catalog::kEpochKey, std::to_string(staged_epoch_));
    store_->commit(std::move(b), /*sync=*/true);
  }
  finish_publish(false);
}

Status Array::flush() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    if (writable_) flush_impl();
  });
}

Status Array::prepare_flush() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    if (!writable_) return;
    finish_parked();
    report_lost();
    spill();
    materialize_inline();
  });
}

size_t Array::pending_publish() const {
  std::lock_guard<std::mutex> g(mu_);
  return unpublished_.size() + (schema_dirty_ ? 1 : 0);
}

Status Array::stage_prepared(bool synced, uint64_t epoch, bool fragments_synced) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    if (writable_) stage_publish(synced, epoch, fragments_synced);
  });
}

Status Array::publish_prepared(bool synced, CatalogBatch* into) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    if (writable_) finish_publish(synced, into);
  });
}

Status Array::refresh() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    finish_parked();
    store_->refresh(/*records=*/true);
    if (compact_) return compact_->refresh();
    reread_journals();
    if (!schema_dirty_) take_stored_schema();
    if (share_logging()) pick_up_shared(/*list=*/true);  // the logs' retirements first
    else load_fragments();
    apply_extent_commits();
  });
}

void Array::reread_journals() {
  if (writable_ || opts_.shadow || opts_.as_of_ts || !store_->dir_exists()) return;
  if (auto e = store_->committed_epoch()) opts_.committed_epoch = *e;
  // Read through again from scratch: a batch read through before may be renamed by now
  // (the listing finds it under its final name) and its journal gone.
  recovered_.clear();
  recover_journal();
}

// The journals are read before the stored schema: a member removes its journal only
// after it wrote the schema (rank 0) and renamed its files, so a journal found gone
// means the schema read after it is the epoch's; one found present carries that schema.
void Array::take_stored_schema() {
  FragmentId id;
  Schema s = store_->load_schema(&id);
  if (id < extent_id_) return;  // a committed journal's schema, not written to the store yet
  schema_ = std::move(s);
  extent_id_ = id;
  if (buffer_) buffer_->reset_layout(schema_);  // a compact array has none
}

Status Array::refresh_fragments() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    finish_parked();
    // Share logs: a listing only when another rank shared or published files.
    if (share_logging()) return pick_up_shared(/*list=*/false);
    // A catalog-bound array (created by a serial writer) gets a fragment directory when
    // a rank first writes a file into it.
    store_->refresh(/*records=*/false);
    load_fragments();
  });
}

Status Array::publish_own(size_t* published) {
  std::lock_guard<std::mutex> g(mu_);
  *published = 0;
  return guard([&] {
    if (!writable_ || journal_staged_) return;  // mid-epoch: the epoch publishes them
    finish_parked();
    report_lost();
    spill();
    // Collective arrays hold no inline fragments (those go through the catalog, which
    // only rank 0 writes at an epoch): only fragment files are published here.
    if (unpublished_.empty()) return;
    // Oldest first (writers finish out of order): a crash mid-way keeps a prefix of the
    // writes, never a newer write without the older ones it overwrote.
    std::stable_sort(unpublished_.begin(), unpublished_.end(),
                     [](auto& a, auto& b) { return a.first->meta().id < b.first->meta().id; });
    // Synced first, as a flush syncs, never renamed with bytes a power loss would take
    // back.  Many files (a parallel load's H5Dclose: a fragment per H5Dwrite): one syncfs
    // makes them durable instead of an fdatasync (a journal commit) each — 64 of those
    // were most of an np-2 load's close (docs/benchmarks.md).  Few files, or a failed
    // syncfs: each on its own (sync_unpublished), a fragment whose sync fails dropped
    // and its writes reported lost.
    const bool synced_all = unpublished_.size() > 4 && guard([&] { sync_filesystem(env(), frag_dir_); }).ok();
    if (!synced_all) sync_unpublished();
    // Recorded only by the next epoch: logged before the first rename (publish_log.h).
    log_unpublished();
    // Until the directory is synced these renames may be undone by a power loss, and the
    // next epoch records the files: it syncs the directory first (stage_publish).
    alone_unsynced_ = true;
    while (!unpublished_.empty()) {
      auto& [f, final_path] = unpublished_.front();
      FragmentWriter::publish_finished(f->file(), f->path(), final_path, /*already_synced=*/true);
      f->set_path(final_path);
      alone_files_.emplace_back(f->meta().id, f->file_size());
      unpublished_.erase(unpublished_.begin());  // a failed rename later leaves the rest
      ++*published;
    }
    sync_dir(env(), frag_dir_);
    alone_unsynced_ = false;
    if (share_logging()) announce_files();
  });
}

Status Array::share_own() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    if (!writable_ || !opts_.collective || journal_staged_) return;
    // Only small box writes since the last share: appended to the share log, and kept
    // in the write buffer (the run) until an epoch, H5Dclose or the run's end spills them.
    if (share_logging() && !share_broken_) {
      if (share_pending_.empty()) return;
      if (!share_log_ || share_log_->size() < opts_.share_log_bytes) return log_pending_shares();
      // The log is full: this write and the run before it go to a file, whose kShared
      // record retires the log's records so the log can restart (announce_shared).
    }
    share_broken_ = false;
    share_pending_.clear();
    finish_parked();
    end_share_run();
    spill();  // every record the log showed is in a file after the renames
    std::vector<std::string> renamed;
    for (auto& [f, final_path] : unpublished_) {
      const std::string shared = join_path(frag_dir_, shared_name(f->meta().id));
      if (f->path() == shared) continue;
      // Finished (footer written): the rename shows other ranks the whole file or nothing.
      FragmentWriter::publish_finished(f->file(), f->path(), shared, /*already_synced=*/true);
      f->set_path(shared);
      renamed.push_back(shared_name(f->meta().id));
    }
    if (!renamed.empty() && share_logging()) announce_shared(renamed);
  });
}

uint64_t Array::last_timestamp() const {
  std::lock_guard<std::mutex> g(mu_);
  return last_ts_;
}

void Array::raise_timestamp(uint64_t ts) {
  std::lock_guard<std::mutex> g(mu_);
  last_ts_ = std::max(last_ts_, ts);
}

std::vector<std::pair<FragmentId, uint64_t>> Array::files_to_record(size_t* alone) const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<std::pair<FragmentId, uint64_t>> out = alone_files_;
  *alone = out.size();
  for (auto& u : unpublished_) out.emplace_back(u.first->meta().id, u.first->file_size());
  return out;
}

void Array::files_recorded(size_t alone) {
  std::lock_guard<std::mutex> g(mu_);
  alone_files_.erase(alone_files_.begin(), alone_files_.begin() + static_cast<ptrdiff_t>(std::min(alone, alone_files_.size())));
}

void Array::log_publish(const std::vector<std::pair<FragmentId, uint64_t>>& files) {
  // An array whose records are complete commits its files with the catalog batch (an
  // unrecorded file is not read); a standalone array keeps no records.
  if (files.empty() || complete_records() || !store_->has_records()) return;
  // After a failed append or trim the log's bytes on disk may differ from what this
  // process reads back (a failed fdatasync drops the pages it was to write, a failed
  // directory sync may undo a trim's rename): the next append rewrites it whole, synced
  // under a new name, instead of appending after bytes a power loss may turn to zeros.
  try {
    append_publish_log(env(), frag_dir_, opts_.writer_rank, files, /*rewrite=*/log_suspect_);
  } catch (...) {
    log_suspect_ = true;
    throw;
  }
  log_suspect_ = false;
  logged_ = true;
}

void Array::log_unpublished() {
  std::vector<std::pair<FragmentId, uint64_t>> files;
  for (auto& u : unpublished_) files.emplace_back(u.first->meta().id, u.first->file_size());
  log_publish(files);
}

void Array::publish_log_recorded() {
  std::lock_guard<std::mutex> g(mu_);
  trim_log();
}

void Array::trim_log() {
  if (!logged_) return;
  Status st = guard([&] { trim_publish_log(env(), frag_dir_, opts_.writer_rank, store_->recorded_files()); });
  if (st.ok()) logged_ = false;
  else log_suspect_ = true;  // the entries stay (a permission): trimmed next time
}

size_t Array::unpublished_count() const {
  std::lock_guard<std::mutex> g(mu_);
  return unpublished_.size() + parked_.size();
}

}  // namespace tessera
