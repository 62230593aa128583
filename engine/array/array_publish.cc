// array_publish.cc — Array's publishing calls: flush and its three steps, MPI epochs'
// files and rank-local publishing (publish_own, share_own), and refresh (picking up what
// other processes published).  Each takes the array's mutex and drives the Publisher
// (publisher.h), which holds the pending fragments and the journal; docs/format.md
// ("Publish journal") gives the protocol and its crash guarantees.
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
  return !pub_.unpublished_.empty() || (pub_.schema_dirty_ && !store_->publishes_with_catalog());
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
  while (write_.inflight_ &&
         (!write_.inflight_bounds_.any || region.lo.empty() || write_.inflight_bounds_.box.intersects(region)))
    write_.wait_inflight();
  write_.close_direct();
  pub_.complete_all_parked();
}

bool Array::stage_writes(uint64_t epoch) const {
  std::lock_guard<std::mutex> g(mu_);
  return writable_ && pub_.stage_writes_locked(epoch);
}

Status Array::record_staged(CatalogBatch* into, uint64_t* epoch) {
  std::lock_guard<std::mutex> g(mu_);
  *epoch = 0;
  return guard([&] {
    if (!writable_ || !pub_.journal_staged_ || !pub_.first_) return;
    pub_.record_first(*into);
    *epoch = pub_.staged_epoch_;
  });
}

void Array::flush_impl() {
  write_.check_background();
  finish_parked();
  pub_.report_lost();
  write_.spill();
  materialize_inline();
  pub_.stage_publish(false);
  if (pub_.first_ && pub_.journal_staged_) {
    // The commit point, before the renames (record_staged): the files' records and the
    // epoch, synced.  No commit record (cm/): a flush of one array is not a container
    // commit (commit_arrays).
    CatalogBatch b;
    pub_.record_first(b);
    b.put(Catalog::kEpochKey, std::to_string(pub_.staged_epoch_));
    store_->commit(std::move(b), /*sync=*/true);
  }
  pub_.finish_publish(false);
}

Status Array::flush() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    if (!writable_) return;
    flush_impl();
    auto_.committed();  // its own commit: what it published may be merged now
  });
}

Status Array::prepare_flush() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    if (!writable_) return;
    finish_parked();
    pub_.report_lost();
    write_.spill();
    materialize_inline();
  });
}

size_t Array::pending_publish() const {
  std::lock_guard<std::mutex> g(mu_);
  return pub_.unpublished_.size() + (pub_.schema_dirty_ ? 1 : 0);
}

Status Array::stage_prepared(bool synced, uint64_t epoch, bool fragments_synced) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    if (writable_) pub_.stage_publish(synced, epoch, fragments_synced);
  });
}

Status Array::publish_prepared(bool synced, CatalogBatch* into) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    if (writable_) pub_.finish_publish(synced, into);
  });
}

Status Array::refresh() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { refresh_locked(); });
}

void Array::refresh_locked() {
  finish_parked();
  store_->refresh(/*records=*/true);
  if (compact_) return compact_->refresh();
  reread_journals();
  if (!pub_.schema_dirty_) take_stored_schema();
  if (share_logging()) share_.pick_up_shared(/*list=*/true);  // the logs' retirements first
  else frags_.load();
  apply_extent_commits();
}

void Array::reread_journals() {
  if (writable_ || opts_.shadow || opts_.as_of_ts || !store_->dir_exists()) return;
  if (auto e = store_->committed_epoch()) opts_.committed_epoch = *e;
  // Read through again from scratch: a batch read through before may be renamed by now
  // (the listing finds it under its final name) and its journal gone.
  pub_.recovered_.clear();
  pub_.recover_journal();
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
  if (write_.buffer_) write_.buffer_->reset_layout(schema_);  // a compact array has none
}

Status Array::refresh_fragments() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    finish_parked();
    // Share logs: a listing only when another rank shared or published files.
    if (share_logging()) return share_.pick_up_shared(/*list=*/false);
    // A catalog-bound array (created by a serial writer) gets a fragment directory when
    // a rank first writes a file into it.
    store_->refresh(/*records=*/false);
    frags_.load();
  });
}

Status Array::publish_own(size_t* published) {
  std::lock_guard<std::mutex> g(mu_);
  *published = 0;
  return guard([&] {
    if (!writable_ || pub_.journal_staged_) return;  // mid-epoch: the epoch publishes them
    finish_parked();
    pub_.report_lost();
    write_.spill();
    // Collective arrays hold no inline fragments (those go through the catalog, which
    // only rank 0 writes at an epoch): only fragment files are published here.
    if (pub_.unpublished_.empty()) return;
    // Oldest first (writers finish out of order): a crash mid-way keeps a prefix of the
    // writes, never a newer write without the older ones it overwrote.
    std::stable_sort(pub_.unpublished_.begin(), pub_.unpublished_.end(),
                     [](auto& a, auto& b) { return a.first->meta().id < b.first->meta().id; });
    // Synced first, as a flush syncs, never renamed with bytes a power loss would take
    // back.  Many files (a parallel load's H5Dclose: a fragment per H5Dwrite): one syncfs
    // makes them durable instead of an fdatasync (a journal commit) each — 64 of those
    // were most of an np-2 load's close (docs/benchmarks.md).  Few files, or a failed
    // syncfs: each on its own (sync_unpublished), a fragment whose sync fails dropped
    // and its writes reported lost.
    const bool synced_all = pub_.unpublished_.size() > 4 && guard([&] { sync_filesystem(env(), frag_dir_); }).ok();
    if (!synced_all) pub_.sync_unpublished();
    // Recorded only by the next epoch: logged before the first rename (publish_log.h).
    pub_.log_unpublished();
    // Until the directory is synced these renames may be undone by a power loss, and the
    // next epoch records the files: it syncs the directory first (stage_publish).
    pub_.alone_unsynced_ = true;
    while (!pub_.unpublished_.empty()) {
      auto& [f, final_path] = pub_.unpublished_.front();
      FragmentWriter::publish_finished(f->file(), f->path(), final_path, /*already_synced=*/true);
      f->set_path(final_path);
      pub_.alone_files_.emplace_back(f->meta().id, f->file_size());
      pub_.unpublished_.erase(pub_.unpublished_.begin());  // a failed rename later leaves the rest
      ++*published;
    }
    sync_dir(env(), frag_dir_);
    pub_.alone_unsynced_ = false;
    if (share_logging()) share_.announce_files();
  });
}

Status Array::share_own() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    if (!writable_ || !opts_.collective || pub_.journal_staged_) return;
    // Only small box writes since the last share: appended to the share log, and kept
    // in the write buffer (the run) until an epoch, H5Dclose or the run's end spills them.
    if (share_logging() && !share_.share_broken_) {
      if (share_.share_pending_.empty()) return;
      if (!share_.share_log_ || share_.share_log_->size() < opts_.share_log_bytes) return share_.log_pending_shares();
      // The log is full: this write and the run before it go to a file, whose kShared
      // record retires the log's records so the log can restart (announce_shared).
    }
    share_.share_broken_ = false;
    share_.share_pending_.clear();
    finish_parked();
    share_.end_share_run();
    write_.spill();  // every record the log showed is in a file after the renames
    std::vector<std::string> renamed;
    for (auto& [f, final_path] : pub_.unpublished_) {
      const std::string shared = join_path(frag_dir_, shared_name(f->meta().id));
      if (f->path() == shared) continue;
      // Finished (footer written): the rename shows other ranks the whole file or nothing.
      FragmentWriter::publish_finished(f->file(), f->path(), shared, /*already_synced=*/true);
      f->set_path(shared);
      renamed.push_back(shared_name(f->meta().id));
    }
    if (!renamed.empty() && share_logging()) share_.announce_shared(renamed);
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
  std::vector<std::pair<FragmentId, uint64_t>> out = pub_.alone_files_;
  *alone = out.size();
  for (auto& u : pub_.unpublished_) out.emplace_back(u.first->meta().id, u.first->file_size());
  return out;
}

void Array::files_recorded(size_t alone) {
  std::lock_guard<std::mutex> g(mu_);
  pub_.alone_files_.erase(pub_.alone_files_.begin(), pub_.alone_files_.begin() + static_cast<ptrdiff_t>(std::min(alone, pub_.alone_files_.size())));
}

void Array::publish_log_recorded() {
  std::lock_guard<std::mutex> g(mu_);
  pub_.trim_log();
}

size_t Array::unpublished_count() const {
  std::lock_guard<std::mutex> g(mu_);
  return pub_.unpublished_.size() + pub_.parked_.size();
}

}  // namespace tessera
