// array_listing.cc — Array's fragment set (ArrayFragments, array_fragments.h): listing
// what is present (published files, inline records, this writer's unpublished fragments,
// journals read through, other ranks' shared files and share-log records), checked
// against the catalog's records and publish logs, and listed again when a writer
// overtakes the listing; what callers see of it (fragments, replaced_fragments,
// storage_bytes).
#include "engine/array/array.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "engine/array/array_files.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_writer.h"
#include "engine/publish/publish_log.h"
#include "engine/read/read_planner.h"
#include "engine/tile/row_spans.h"
#include "engine/geometry/strided_copy.h"

namespace tessera {

using namespace array_files;

bool ArrayFragments::list_present(std::vector<std::shared_ptr<Fragment>>* all, std::string* problem,
                                  std::optional<FragmentId>* unrecorded) {
  all->clear();
  for (auto& u : a_.pub_.unpublished_) all->push_back(u.first);  // not in the listing yet
  for (auto& f : a_.pub_.unpublished_inline_) all->push_back(f);
  for (auto& f : a_.pub_.recovered_) all->push_back(f);          // a read-only view of a journal
  for (auto& p : a_.share_.peers_)                                  // other ranks' share logs (in memory)
    for (auto& f : p.frags) all->push_back(f);
  a_.store_->list_inline(live_, a_.pub_.unpublished_inline_, a_.schema_, a_.ctx_, all);
  const std::map<FragmentId, uint64_t> recorded = a_.store_->recorded_files();
  // The records name every committed file (array_store.h, files_complete): one without a
  // record was never committed and is not read (`tessera verify` notes it).
  const bool complete = complete_records();
  // Every committed file is recorded or named in a publish log (publish_log.h): one that
  // is neither was not published here.  (As of a past commit: the older rule below.)
  const bool logged = !complete && !a_.opts_.as_of_ts && a_.store_->files_logged();
  std::set<FragmentId> listed;
  // Present, but not under a final name: another rank's shared fragment (its epoch record
  // may already record it, the rename follows) and a journal's batch a read-only view
  // reads through.  They satisfy a record; they are never recorded from here.
  std::set<FragmentId> shared;
  for (auto& f : a_.pub_.recovered_) shared.insert(f->meta().id);
  std::vector<std::string> names;
  if (a_.store_->dir_exists()) names = list_dir(a_.env(), a_.frag_dir_);
  // Read after the listing: an entry is durable before its file's rename.
  std::map<FragmentId, uint64_t> log_entries;
  if (logged) log_entries = read_publish_logs(a_.env(), a_.frag_dir_, names);
  const auto known_paths = live_.by_path();
  auto known_at = [&](const std::string& path) -> std::shared_ptr<Fragment> {
    auto it = known_paths.find(path);
    return it == known_paths.end() ? nullptr : it->second;
  };
  for (const std::string& name : names) {
    FragmentId id;
    // Another rank's fragment shared before its epoch (MPI, array_files.h): read like any
    // other, never recorded (the epoch publishes it, or a crash drops it).
    if (a_.opts_.collective && parse_shared_name(name, &id)) {
      if (id.rank == a_.opts_.writer_rank) continue;  // our own: in pub_.unpublished_
      // Read-only: no rank of this job shares (a job of readers); the file is another
      // job's write no epoch committed (a crashed job's until recovery removes it).  A
      // committed epoch's file not renamed yet is read through its journal (pub_.recovered_).
      if (!a_.writable_) continue;
      std::shared_ptr<Fragment> f;
      const std::string path = join_path(a_.frag_dir_, name);
      if (!(f = known_at(path))) {
        try {
          f = Fragment::open(path, a_.ctx_);
        } catch (const Error& e) {
          if (e.code() != Errc::kNotFound) throw;
          *problem = "shared fragment '" + path + "' was published while the array was listed";
          return false;  // renamed by its epoch: listed again under its final name
        }
        if (f->meta().id != id)
          throw_error(Errc::kCorrupt, "fragment '" + path + "': id in footer differs from file name");
      }
      all->push_back(f);
      shared.insert(id);
      continue;
    }
    if (name.size() != 47 || name.compare(43, 4, ".tfr") != 0) continue;  // temp files etc.
    if (!FragmentId::parse(name.substr(0, 43), &id)) continue;
    // Read through its journal already (a read-only view), renamed since: the same file.
    if (shared.count(id)) continue;
    // As of a past commit: what that commit's catalog records, or (never recorded) what
    // its time covers.  A consolidation's later result holds exactly its inputs' cells.
    if (a_.opts_.as_of_ts && !recorded.count(id) && id.ts > a_.opts_.as_of_ts) continue;
    std::string path = join_path(a_.frag_dir_, name);
    if (auto known = known_at(path)) {
      all->push_back(known);
      listed.insert(id);
      continue;
    }
    const auto rec = recorded.find(id);
    if (complete && rec == recorded.end()) {
      // No commit published it: the sole writer removes it, as it removes a crashed
      // writer's temporary files (a flush or consolidation cut short between its renames
      // and its catalog batch leaves such files).
      if (a_.writable_ && a_.opts_.sole_writer && !a_.opts_.shadow) remove_file(a_.env(), path);
      continue;
    }
    uint64_t logged_size = 0;
    if (logged && rec == recorded.end()) {
      const auto ent = log_entries.find(id);
      if (ent == log_entries.end()) {
        // Or renamed into place by an epoch whose record this reader's catalog lacks:
        // reloaded and listed again before this is an error.
        *problem = "fragment '" + path +
                   "' was not published in this container: no catalog record and no publish log names it "
                   "(a file copied in from elsewhere?); move it away to read the array";
        if (unrecorded) *unrecorded = id;
        return false;
      }
      logged_size = ent->second;
    }
    std::shared_ptr<Fragment> f;
    try {
      f = Fragment::open(path, a_.ctx_);
    } catch (const Error& e) {
      // A vacuum (or a consolidation) removed it between listing and opening: only
      // once its replacement was durable, so a fresh listing sees that instead.
      if (e.code() != Errc::kNotFound) throw;
      *problem = "fragment '" + path + "' vanished while the array was listed";
      return false;
    }
    if (f->meta().id != id)
      throw_error(Errc::kCorrupt, "fragment '" + path + "': id in footer differs from file name");
    if (f->meta().rank != static_cast<uint32_t>(a_.schema_.rank()) || f->meta().elem_size != a_.schema_.elem_size)
      throw_error(Errc::kCorrupt, "fragment '" + path + "': shape does not match the array schema");
    // Truncated, extended or replaced by another file of the same name since it was
    // published: not the committed fragment.
    if (rec != recorded.end() && rec->second != f->file_size())
      throw_error(Errc::kCorrupt, "fragment '" + path + "' is " + std::to_string(f->file_size()) +
                                      " bytes, but the catalog records it as published with " +
                                      std::to_string(rec->second) + " (truncated or replaced)");
    if (logged_size && logged_size != f->file_size())
      throw_error(Errc::kCorrupt, "fragment '" + path + "' is " + std::to_string(f->file_size()) +
                                      " bytes, but its publish log records it as published with " +
                                      std::to_string(logged_size) + " (truncated or replaced)");
    all->push_back(f);
    listed.insert(id);
  }
  for (auto& u : a_.pub_.unpublished_) listed.insert(u.first->meta().id);
  for (auto& f : *all) {
    const auto rec = recorded.find(f->meta().id);
    if (!f->is_inline() && shared.count(f->meta().id) && rec != recorded.end() && rec->second != f->file_size())
      throw_error(Errc::kCorrupt, "fragment '" + f->path() + "' is " + std::to_string(f->file_size()) +
                                      " bytes, but the catalog records it as published with " +
                                      std::to_string(rec->second) + " (truncated or replaced)");
  }
  // A recorded file must be present unless a present fragment replaces it (a vacuum
  // removes its file after its record; a reader's catalog may be older than that).
  std::set<FragmentId> replaced;
  for (auto& f : *all)
    for (auto& r : f->meta().replaces) replaced.insert(r);
  for (auto& [id, size] : recorded)
    if (!listed.count(id) && !shared.count(id) && !replaced.count(id)) {
      *problem = "fragment '" + join_path(a_.frag_dir_, FragmentWriter::file_name(id)) +
                 "' is missing: the catalog records it as published (" + std::to_string(size) +
                 " bytes) and no newer fragment replaces it" +
                 (a_.opts_.as_of_ts ? " (a vacuum removed what this past commit needs)" : "");
      return false;
    }
  if (a_.writable_ && !a_.opts_.shadow) {
    // Files published without a record (a crash between the renames and the catalog's
    // sync, a journal rolled forward, a rank's H5Dclose since the last epoch) are
    // recorded now; records of removed replaced files are dropped.
    std::vector<std::pair<FragmentId, uint64_t>> add;
    std::vector<FragmentId> drop;
    for (auto& f : *all)
      if (!f->is_inline() && listed.count(f->meta().id) && !recorded.count(f->meta().id) &&
          std::none_of(a_.pub_.unpublished_.begin(), a_.pub_.unpublished_.end(), [&](auto& u) { return u.first == f; }))
        add.emplace_back(f->meta().id, f->file_size());
    for (auto& [id, size] : recorded)
      if (!listed.count(id) && !shared.count(id)) drop.push_back(id);
    // A catalog-bound array a parallel job wrote (rank 0 cleared its complete-records
    // mark) has all its files recorded by this batch: from here its records are complete
    // again.  Ranks of a parallel file publish files the catalog records only later.
    // The mark is synced at once when this batch sets it: this writer publishes without
    // a journal from now on (its renames first, the catalog batch recording them after),
    // and a reader whose catalog lacked the mark would meet those renamed files before
    // their batch commits, neither recorded nor logged (a connector's catalog syncs only
    // at flush).
    CatalogBatch b;
    const bool marking = !a_.opts_.collective && !a_.store_->files_complete();
    a_.store_->record_files(add, drop, &b, /*sync=*/false);
    a_.store_->mark_files_complete(!a_.opts_.collective, &b);
    // A catalog-bound array opened by a parallel job: its records cannot be complete now;
    // every file present is recorded by this batch, and every later one is logged before
    // its rename (publish_log.h).  (A parallel file's arrays are marked when created.)
    if (a_.opts_.collective) a_.store_->mark_files_logged(b);
    a_.store_->commit(std::move(b), /*sync=*/marking);
  }
  return true;
}

void ArrayFragments::load() {
  // An inconsistent listing (a file removed while we listed it, a record of a file a
  // vacuum removed after this reader's catalog was read) is listed again, the catalog
  // reloaded first; a lasting inconsistency is a lost file.
  std::vector<std::shared_ptr<Fragment>> all;
  std::string problem;
  // A reader's schema file newer than its catalog's last commit is from a commit the
  // catalog lacks (an epoch whose members have not all renamed their files yet, which
  // the listing may not show: rank 0 may publish no file of the array): the catalog is
  // reloaded once, so the epoch's journals give its files.  Still newer after that: a
  // serial writer's flush, committed by its journal, whose records come after.
  bool ahead_checked = a_.writable_;
  // Listings that failed for a cause the reload did not explain (at most four), and
  // listings overtaken by a writer: a file neither recorded nor logged that the reloaded
  // catalog records was renamed by a commit made between the previous reload and the
  // listing (an MPI job committing epochs back to back renames files at any moment; a
  // listing of thousands of files is long).  Nothing is lost then, the writer moved on:
  // that does not count as a lasting inconsistency, only toward kMaxOvertaken, which
  // stops a reader a writer overtakes every time (PublishVisibility.AReaderOvertaken*).
  int lasting = 0, overtaken = 0;
  for (;;) {
    std::optional<FragmentId> unrecorded;
    const bool consistent = list_present(&all, &problem, &unrecorded);
    if (consistent) {
      if (ahead_checked || !a_.store_->schema_ahead_of_records(a_.extent_id_)) break;
      ahead_checked = true;
    } else if (lasting >= 4) {
      throw_error(Errc::kCorrupt, problem);
    } else if (overtaken >= Array::kMaxOvertaken) {
      throw_error(Errc::kBusy, "array '" + a_.dir_ + "': its files were listed " + std::to_string(overtaken + 1) +
                                   " times, each time overtaken by a newer commit (a writer committing faster "
                                   "than this reader lists them); the last listing: " + problem);
    }
    a_.store_->refresh(/*records=*/true);
    if (!consistent) {
      if (unrecorded && a_.store_->recorded_files().count(*unrecorded)) ++overtaken;
      else ++lasting;
    }
    // The reload may have brought an epoch whose members are still renaming its files
    // (an outside reader of a parallel file): its journals are read again, so the
    // files not renamed yet are read under their temporary names — the epoch whole,
    // never the files of some members without the others'.
    a_.reread_journals();
    // A reader's schema comes from the same catalog state as the fragments it lists:
    // the reload may have brought a commit that changed the extent, and its data with the
    // extent read before would be half of two commits (a catalog-bound array's schema is
    // a record of that catalog; a parallel file's, the schema file rank 0 writes before
    // it removes its journal; a writer's catalog never moves under it).
    if (!a_.writable_ && !a_.pub_.schema_dirty_) a_.take_stored_schema();
  }
  // A fragment whose consolidated replacement was published is ignored; vacuum()
  // removes it (consolidation kept it, or a crash left it behind).
  std::set<FragmentId> replaced;
  for (auto& f : all)
    for (auto& r : f->meta().replaces) replaced.insert(r);
  std::vector<std::shared_ptr<Fragment>> live;
  replaced_.clear();
  for (auto& f : all) {
    if (replaced.count(f->meta().id)) {
      replaced_.push_back(FragmentInfo::of(*f));
      continue;
    }
    live.push_back(f);
  }
  for (auto& f : live) a_.last_ts_ = std::max(a_.last_ts_, f->meta().id.ts);
  live_.assign(std::move(live));
}

bool ArrayFragments::complete_records() const { return !a_.opts_.collective && a_.store_->files_complete(); }

void ArrayFragments::add(std::shared_ptr<Fragment> f, const std::vector<FragmentId>& replaced) {
  live_.add(std::move(f), replaced);
}

void ArrayFragments::keep_replaced(const Fragment& f) { replaced_.push_back(FragmentInfo::of(f)); }

FragmentInfo FragmentInfo::of(const Fragment& f) {
  const FragmentMeta& m = f.meta();
  FragmentInfo i;
  i.id = m.id;
  i.path = f.path();
  i.file_size = f.file_size();
  i.cells = m.cells;
  i.dense_tiles = m.dense.size();
  for (auto& e : m.dense) i.fill_boxes += e.kind == DenseEntry::kFill;
  i.sparse_tiles = m.sparse.size();
  i.erased_tiles = m.erased.size();
  i.has_domain = m.has_domain;
  i.domain = m.domain;
  i.is_inline = f.is_inline();
  i.sets_extent = m.sets_extent;
  i.replaces = m.replaces;
  i.order = f.order();
  return i;
}

std::vector<FragmentInfo> ArrayFragments::infos() const {
  std::vector<FragmentInfo> out;
  for (auto& f : live_) out.push_back(FragmentInfo::of(*f));
  return out;
}

uint64_t ArrayFragments::bytes() const {
  uint64_t n = 0;
  for (auto& f : live_) n += f->file_size();
  return n;
}

std::vector<FragmentInfo> Array::fragments() {
  std::lock_guard<std::mutex> g(mu_);
  (void)guard([&] { finish_parked(); });
  return frags_.infos();
}

std::vector<FragmentInfo> Array::replaced_fragments() const {
  std::lock_guard<std::mutex> g(mu_);
  return frags_.replaced();
}

uint64_t Array::storage_bytes() {
  std::lock_guard<std::mutex> g(mu_);
  (void)guard([&] { finish_parked(); });
  if (compact_) {
    uint64_t n = 0;
    (void)guard([&] { n = compact_->storage_bytes(); });
    return n;
  }
  return frags_.bytes();
}

}  // namespace tessera
