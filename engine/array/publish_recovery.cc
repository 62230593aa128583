// publish_recovery.cc — Publisher (publisher.h): what a crash or an abandoned epoch left
// behind — publish journals rolled forward or back when an array opens or a reader
// refreshes, and a collective array's uncommitted fragments dropped when it closes.
#include <algorithm>

#include "engine/array/array.h"
#include "engine/array/array_files.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_writer.h"
#include "engine/publish/publish_log.h"
#include "engine/publish/publish_journal.h"

namespace tessera {

using namespace array_files;

// Collective mode, array destroyed outside an epoch commit: what was not committed is
// dropped as a crash would drop it (temporary files removed, nothing published).
void Publisher::discard_unpublished() {
  (void)guard([&] {
    a_.write_.direct_.reset();  // a writer's destructor removes its temporary file
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
      remove_file(a_.env(), u.first->path());
      a_.remove_index_of(u.first->meta().id);  // built by build_index before the epoch, if any
    }
    unpublished_.clear();
  });
}

void Publisher::recover_journal() {
  std::vector<std::string> rank_journals;
  const std::string stem = std::string(kJournalFile) + ".tmp.";
  for (const std::string& name : list_dir(a_.env(), a_.frag_dir_)) {
    // A journal's own temporary file, left by a crash while it was being written.
    bool tmp = name.compare(0, stem.size(), stem) == 0 ||
               (name.compare(0, sizeof kRankJournalPrefix - 1, kRankJournalPrefix) == 0 &&
                name.find(".journal.tmp.") != std::string::npos);
    if (tmp && a_.writable_) remove_file(a_.env(), join_path(a_.frag_dir_, name));
    if (is_rank_journal(name)) rank_journals.push_back(join_path(a_.frag_dir_, name));
  }
  recover_one_journal(join_path(a_.frag_dir_, kJournalFile));
  for (const std::string& p : rank_journals) recover_one_journal(p);
  if (a_.writable_ && a_.opts_.sole_writer) {
    // Fragments a crashed writer never staged (".<id>.<pid>.<n>.tmp"): never published.
    // And a publish log's rewrite a crash cut short before its rename: the log it was
    // to replace is still in place, whole.
    for (const std::string& name : list_dir(a_.env(), a_.frag_dir_))
      if ((name.size() > 5 && name[0] == '.' && name.compare(name.size() - 4, 4, ".tmp") == 0) ||
          is_publish_log_temp(name))
        remove_file(a_.env(), join_path(a_.frag_dir_, name));
  }
}

// Rolls one journal forward (serial journals always; per-rank journals when their epoch
// is committed) or back (per-rank journals of an uncommitted epoch: their temporary
// fragments are removed).  Read-only: the same decision, applied to the view only.
void Publisher::recover_one_journal(const std::string& path) {
  if (!path_exists(a_.env(), path)) return;
  std::vector<uint8_t> bytes;
  try {
    bytes = read_file(a_.env(), path);
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
    if (a_.writable_) remove_file(a_.env(), path);
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
  // (An array whose catalog records name every committed file writes no serial journal:
  // its catalog batch commits a flush, and the listing drops what a crash renamed before it.)
  const bool forward = j.forward(a_.opts_.committed_epoch);
  const std::vector<uint8_t>& schema_bytes = j.schema;
  std::vector<std::string> read_through;
  j.roll(a_.env(), a_.frag_dir_, forward, a_.writable_, &read_through);
  // Readers see the batch whole too.  A file the writer renamed since roll() looked is
  // no longer under its temporary name: the listing that follows finds it under its final one.
  for (auto& p : read_through) {
    try {
      recovered_.push_back(Fragment::open(p, a_.ctx_));
    } catch (const Error& e) {
      if (e.code() != Errc::kNotFound || path_exists(a_.env(), p)) throw;
    }
  }
  if (forward && !schema_bytes.empty()) {
    FragmentId jid;
    Schema js = parse_schema_file(schema_bytes, "publish journal '" + path + "' schema", &jid);
    // A journal's schema counts only when its change is newer than the stored one's (a
    // catalog-bound array keeps its last extent journal after publishing; a file schema
    // may have been written just before the crash).
    if (a_.extent_id_ < jid) {
      a_.schema_ = js;
      a_.extent_id_ = jid;
      if (a_.write_.buffer_) a_.write_.buffer_->reset_layout(a_.schema_);
      if (a_.writable_) a_.store_->store_schema(a_.schema_, a_.extent_id_, /*durable=*/true);
    }
  }
  if (a_.writable_) {
    sync_dir(a_.env(), a_.frag_dir_);
    remove_file(a_.env(), path);
  }
}

}  // namespace tessera
