#include "engine/array/array.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "engine/array/array_files.h"
#include "engine/util/bytes.h"
#include "engine/util/checksum.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_writer.h"
#include "engine/context/options.h"
#include "engine/publish/publish_log.h"
#include "engine/read/read_planner.h"
#include "engine/tile/row_spans.h"
#include "engine/geometry/strided_copy.h"

namespace tessera {

using namespace array_files;

namespace {

// Many fragments mean many open files: lift the soft limit to the hard one once.
void raise_fd_limit() {
  static bool done = [] {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    return true;
  }();
  (void)done;
}

}  // namespace

ArrayOptions ArrayOptions::from_env() {
  EngineOptions o;
  Status st = EngineOptions::from_env(&o);  // options.h: validated, an error names the variable
  if (!st.ok()) throw_error(st.code(), st.message());
  return o.array_options();
}

Status Array::create(const std::string& dir, const Schema& schema, bool durable, Env& env) {
  return guard([&] {
    schema.validate();
    if (path_exists(env, dir)) throw_errno("create array", dir, EEXIST);
    make_dir(env, dir);  // the parent exists (a container's arrays/ directory, or the caller's)
    make_dir(env, join_path(dir, kFragDir));
    if (schema.var) make_dir(env, join_path(dir, kHeapDir));
    write_schema(env, dir, schema, FragmentId{}, durable, /*fresh=*/!durable);
    if (durable) {
      sync_dir(env, dir);
      sync_dir(env, parent_dir(dir));
    }
  });
}

Status Array::open(const std::string& dir, bool writable, const ArrayOptions& opts, std::unique_ptr<Array>* out,
                   std::shared_ptr<Catalog> records, const std::string& records_prefix) {
  std::unique_ptr<Array> a(new Array());
  a->dir_ = dir;
  a->frag_dir_ = join_path(dir, kFragDir);
  a->opts_ = opts;
  a->ctx_ = Context::or_process(opts.context);
  a->store_ = make_dir_store(a->env(), dir, std::move(records), records_prefix);
  Status st = guard([&] { a->open_impl(writable); });
  if (st.ok()) *out = std::move(a);
  return st;
}

void Array::open_impl(bool writable, const Schema* known) {
  raise_fd_limit();
  writable_ = writable;
  schema_ = store_->open(writable_, known, &extent_id_);
  if (schema_.compact) {
    // No fragments, journals or directory: the cells are one catalog record.  Nor a
    // write buffer, blob buffer or heap reader: every operation goes to compact_ (a
    // file of 10,000 small datasets opens 10,000 of these; issue 20).
    // `known`: created just now (open_bound), so there is no cells record to look up.
    compact_ = std::make_unique<CompactArray>(schema_, *store_, opts_.durable_writes, opts_.collective,
                                              /*fresh=*/known != nullptr);
    return;
  }
  buffer_ = std::make_unique<WriteBuffer>(schema_);
  blobs_ = std::make_unique<BlobBuffer>(schema_.tile_extent, &ctx_->blob_memory());
  heap_dir_ = join_path(dir_, kHeapDir);
  heaps_ = std::make_unique<HeapReader>(env(), heap_dir_);
  // A shadow rank never recovers: rank 0 recovered every array at file open.  A view as
  // of a past commit has no unfinished publish to see.
  if (store_->dir_exists() && !opts_.shadow && !opts_.as_of_ts) {
    recover_journal();
    // A reader takes the stored schema again after the journals, as a refresh does: the
    // one read above may be older than an epoch whose member removed its journal (after
    // it wrote the new schema) meanwhile — that epoch's files with the previous extent
    // (PublishVisibility.AReaderOpeningDuringAnEpochsRenamesTakesItsExtent).
    if (!writable_) take_stored_schema();
  }
  load_fragments();
  if (apply_extent_commits() && writable_ && !opts_.shadow) store_->store_schema(schema_, extent_id_, true);  // repair
  if (share_logging()) pick_up_shared(false);  // what other ranks' share logs hold
}

bool Array::apply_extent_commits() {
  // A crash between publishing an extent change's fill fragment and rewriting the schema
  // leaves the fragment newer than the schema's record: the fragment is the commit.
  const Fragment* newest = nullptr;
  for (auto& f : frags_)
    if (f->meta().sets_extent && extent_id_ < f->meta().id) newest = f.get();
  if (!newest) return false;
  schema_.extent = newest->meta().extent;
  extent_id_ = newest->meta().id;
  buffer_->reset_layout(schema_);
  return true;
}

Array::~Array() {
  if (ctx_) ctx_->budget().forget(this);  // no background flush runs or starts after this
  if (writable_) {
    if (opts_.collective) discard_unpublished();  // only an epoch commit may publish
    else (void)flush();
  }
  close_share_logs();
}

bool Array::list_present(std::vector<std::shared_ptr<Fragment>>* all, std::string* problem,
                         std::optional<FragmentId>* unrecorded) {
  all->clear();
  for (auto& u : unpublished_) all->push_back(u.first);  // not in the listing yet
  for (auto& f : unpublished_inline_) all->push_back(f);
  for (auto& f : recovered_) all->push_back(f);          // a read-only view of a journal
  for (auto& p : peers_)                                  // other ranks' share logs (in memory)
    for (auto& f : p.frags) all->push_back(f);
  store_->list_inline(frags_, unpublished_inline_, schema_, ctx_, all);
  const std::map<FragmentId, uint64_t> recorded = store_->recorded_files();
  // The records name every committed file (array_store.h, files_complete): one without a
  // record was never committed and is not read (`tessera verify` notes it).
  const bool complete = complete_records();
  // Every committed file is recorded or named in a publish log (publish_log.h): one that
  // is neither was not published here.  (As of a past commit: the older rule below.)
  const bool logged = !complete && !opts_.as_of_ts && store_->files_logged();
  std::set<FragmentId> listed;
  // Present, but not under a final name: another rank's shared fragment (its epoch record
  // may already record it, the rename follows) and a journal's batch a read-only view
  // reads through.  They satisfy a record; they are never recorded from here.
  std::set<FragmentId> shared;
  for (auto& f : recovered_) shared.insert(f->meta().id);
  std::vector<std::string> names;
  if (store_->dir_exists()) names = list_dir(env(), frag_dir_);
  // Read after the listing: an entry is durable before its file's rename.
  std::map<FragmentId, uint64_t> log_entries;
  if (logged) log_entries = read_publish_logs(env(), frag_dir_, names);
  const auto known_paths = frags_.by_path();
  auto known_at = [&](const std::string& path) -> std::shared_ptr<Fragment> {
    auto it = known_paths.find(path);
    return it == known_paths.end() ? nullptr : it->second;
  };
  for (const std::string& name : names) {
    FragmentId id;
    // Another rank's fragment shared before its epoch (MPI, array_files.h): read like any
    // other, never recorded (the epoch publishes it, or a crash drops it).
    if (opts_.collective && parse_shared_name(name, &id)) {
      if (id.rank == opts_.writer_rank) continue;  // our own: in unpublished_
      // Read-only: no rank of this job shares (a job of readers); the file is another
      // job's write no epoch committed (a crashed job's until recovery removes it).  A
      // committed epoch's file not renamed yet is read through its journal (recovered_).
      if (!writable_) continue;
      std::shared_ptr<Fragment> f;
      const std::string path = join_path(frag_dir_, name);
      if (!(f = known_at(path))) {
        try {
          f = Fragment::open(path, ctx_);
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
    if (opts_.as_of_ts && !recorded.count(id) && id.ts > opts_.as_of_ts) continue;
    std::string path = join_path(frag_dir_, name);
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
      if (writable_ && opts_.sole_writer && !opts_.shadow) remove_file(env(), path);
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
      f = Fragment::open(path, ctx_);
    } catch (const Error& e) {
      // A vacuum (or a consolidation) removed it between listing and opening: only
      // once its replacement was durable, so a fresh listing sees that instead.
      if (e.code() != Errc::kNotFound) throw;
      *problem = "fragment '" + path + "' vanished while the array was listed";
      return false;
    }
    if (f->meta().id != id)
      throw_error(Errc::kCorrupt, "fragment '" + path + "': id in footer differs from file name");
    if (f->meta().rank != static_cast<uint32_t>(schema_.rank()) || f->meta().elem_size != schema_.elem_size)
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
  for (auto& u : unpublished_) listed.insert(u.first->meta().id);
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
      *problem = "fragment '" + join_path(frag_dir_, FragmentWriter::file_name(id)) +
                 "' is missing: the catalog records it as published (" + std::to_string(size) +
                 " bytes) and no newer fragment replaces it" +
                 (opts_.as_of_ts ? " (a vacuum removed what this past commit needs)" : "");
      return false;
    }
  if (writable_ && !opts_.shadow) {
    // Files published without a record (a crash between the renames and the catalog's
    // sync, a journal rolled forward, a container written before the records) are
    // recorded now; records of removed replaced files are dropped.
    std::vector<std::pair<FragmentId, uint64_t>> add;
    std::vector<FragmentId> drop;
    for (auto& f : *all)
      if (!f->is_inline() && listed.count(f->meta().id) && !recorded.count(f->meta().id) &&
          std::none_of(unpublished_.begin(), unpublished_.end(), [&](auto& u) { return u.first == f; }))
        add.emplace_back(f->meta().id, f->file_size());
    for (auto& [id, size] : recorded)
      if (!listed.count(id) && !shared.count(id)) drop.push_back(id);
    // An older array's files are all recorded by this batch: from here its records are
    // complete.  Ranks of a parallel file publish files the catalog records only later.
    // The mark is synced at once when this batch sets it: this writer publishes without
    // a journal from now on (its renames first, the catalog batch recording them after),
    // and a reader whose catalog lacked the mark would read those renamed files before
    // their batch commits — half a flush (a connector's catalog syncs only at flush).
    CatalogBatch b;
    const bool marking = !opts_.collective && !store_->files_complete();
    store_->record_files(add, drop, &b, /*sync=*/false);
    store_->mark_files_complete(!opts_.collective, &b);
    // Arrays whose records cannot be complete: every file present is recorded by this
    // batch, and every later one is logged before its rename (publish_log.h).
    if (opts_.collective || !store_->publishes_with_catalog()) store_->mark_files_logged(b);
    store_->commit(std::move(b), /*sync=*/marking);
  }
  return true;
}

void Array::load_fragments() {
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
  bool ahead_checked = writable_;
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
      if (ahead_checked || !store_->schema_ahead_of_records(extent_id_)) break;
      ahead_checked = true;
    } else if (lasting >= 4) {
      throw_error(Errc::kCorrupt, problem);
    } else if (overtaken >= kMaxOvertaken) {
      throw_error(Errc::kBusy, "array '" + dir_ + "': its files were listed " + std::to_string(overtaken + 1) +
                                   " times, each time overtaken by a newer commit (a writer committing faster "
                                   "than this reader lists them); the last listing: " + problem);
    }
    store_->refresh(/*records=*/true);
    if (!consistent) {
      if (unrecorded && store_->recorded_files().count(*unrecorded)) ++overtaken;
      else ++lasting;
    }
    // The reload may have brought an epoch whose members are still renaming its files
    // (an outside reader of a parallel file): its journals are read again, so the
    // files not renamed yet are read under their temporary names — the epoch whole,
    // never the files of some members without the others'.
    reread_journals();
    // A reader's schema comes from the same catalog state as the fragments it lists:
    // the reload may have brought a commit that changed the extent, and its data with the
    // extent read before would be half of two commits (a catalog-bound array's schema is
    // a record of that catalog; a parallel file's, the schema file rank 0 writes before
    // it removes its journal; a writer's catalog never moves under it).
    if (!writable_ && !schema_dirty_) take_stored_schema();
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
      replaced_.push_back(FragmentInfo::of(*f, schema_));
      continue;
    }
    live.push_back(f);
  }
  for (auto& f : live) last_ts_ = std::max(last_ts_, f->meta().id.ts);
  frags_.assign(std::move(live));
}

FragmentId Array::next_id() {
  uint64_t now = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count());
  last_ts_ = std::max(now, last_ts_ + 1);
  return FragmentId{last_ts_, opts_.writer_rank, seq_++, 0};
}

void Array::check_selection(const Selection& sel) const {
  if (sel.rank() != schema_.rank())
    throw_error(Errc::kInvalidArgument, "selection has rank " + std::to_string(sel.rank()) +
                                            ", the array has rank " + std::to_string(schema_.rank()));
  if (sel.empty()) return;
  for (int d = 0; d < schema_.rank(); ++d)
    if (sel.bbox().hi[d] >= schema_.extent[d])
      throw_error(Errc::kInvalidArgument, "selection " + sel.bbox().to_string() +
                                              " extends beyond the array extent in dimension " +
                                              std::to_string(d));
}

Status Array::write(const Selection& sel, const void* src, const uint64_t* src_strides) {
  std::unique_lock<std::mutex> g(mu_);
  return throttle(guard([&] {
    check_writable();  // the run goes on only if this write is logged (below)
    require_var(false);
    check_selection(sel);
    if (sel.empty()) return;
    const int r = schema_.rank();
    uint64_t sstride[kMaxRank];
    if (src_strides) std::copy(src_strides, src_strides + r, sstride);
    else sel.dense_strides(sstride);
    const auto* p = static_cast<const uint8_t*>(src);
    if (compact_) return compact_->write(sel, p, sstride);
    const uint64_t bytes = sel.cells() * schema_.elem_size;
    const bool blob_size = sel.is_box() && !opts_.durable_writes && sel.cells() >= opts_.blob_min_cells &&
                           bytes <= opts_.blob_bytes;
    const bool large = sel.is_box() && sel.cells() >= std::min(opts_.direct_cells, schema_.tile_cells());
    // A large box of a filtered array, out of tile order, is a blob too: its filtering
    // then runs in a background flush instead of inside this call, and rewrites of its
    // tiles before the flush are merged before they are compressed.  Unfiltered, writing
    // it at once costs no more than copying it into memory (docs/benchmarks.md).
    const bool filtered_blob = large && blob_size && !schema_.filters.empty() && !appends_after_direct(sel.bbox());
    // MPI: a small box is shared through the share log; anything else through files.
    if (large && !filtered_blob) note_unlogged_write();
    else if (!note_logged_write(sel, p, sstride)) note_unlogged_write();
    if (large && !filtered_blob) {
      // Large boxes go to a dense fragment, appended to the open one while they come in
      // tile order (frames, rows written in order: one fragment, written as it goes).
      spill_blobs_over(sel.bbox());
      write_dense(sel, p, sstride);
      return;
    }
    close_direct();  // everything else is newer than the open dense fragment
    if (blob_size) {
      buffer_blob(sel, p, sstride);
    } else {
      buffer_cells(sel, p, sstride);
    }
  }), &g);
}

Status Array::write_boxes(const std::vector<Box>& boxes, const void* src) {
  std::unique_lock<std::mutex> g(mu_);
  return throttle(guard([&] {
    require_writable();
    require_var(false);
    for (const Box& b : boxes) check_selection(Selection::from_box(b));
    const size_t es = schema_.elem_size;
    const auto* p = static_cast<const uint8_t*>(src);
    if (compact_) {
      for (const Box& b : boxes) {
        uint64_t st[kMaxRank];
        Selection sel = Selection::from_box(b);
        sel.dense_strides(st);
        compact_->write(sel, p, st);
        p += b.cells() * es;
      }
      return;
    }
    const Layout layout(schema_);
    const int r = schema_.rank();
    const uint64_t direct = std::min(opts_.direct_cells, schema_.tile_cells());
    // The large boxes' pieces, all in one fragment in tile order (the boxes are disjoint).
    struct Piece {
      Coords tile;
      Box piece;
      const Box* box;
      const uint8_t* src;
    };
    std::vector<Piece> pieces;
    std::vector<std::pair<const Box*, const uint8_t*>> small;
    for (const Box& b : boxes) {
      if (b.cells() >= direct) {
        spill_blobs_over(b);
        buffer_->erase_inside(b);  // older buffered cells there are overwritten
        layout.for_each_tile(b, [&](const Coords& t) {
          Box piece;
          if (intersect(layout.tile_box(t.data()), b, &piece)) pieces.push_back({t, std::move(piece), &b, p});
        });
      } else {
        small.push_back({&b, p});
      }
      p += b.cells() * es;
    }
    close_direct();
    if (!pieces.empty()) {
      std::stable_sort(pieces.begin(), pieces.end(),
                       [&](const Piece& x, const Piece& y) { return layout.compare_tiles(x.tile.data(), y.tile.data()) < 0; });
      // A fragment holds one data piece per tile: the k-th piece of a tile goes to the
      // k-th fragment (as many fragments as the most boxes sharing one tile; the boxes
      // are disjoint, so the fragments' order does not matter).
      std::vector<std::unique_ptr<FragmentWriter>> layers;
      const Coords* last_tile = nullptr;
      size_t k = 0;
      for (const Piece& pc : pieces) {
        k = last_tile && *last_tile == pc.tile ? k + 1 : 0;
        last_tile = &pc.tile;
        if (k == layers.size()) layers.push_back(make_writer(next_id()));
        FragmentWriter* w = layers[k].get();
        uint64_t shape[kMaxRank], sstride[kMaxRank], dstride[kMaxRank], soff = 0;
        Selection::from_box(*pc.box).dense_strides(sstride);
        for (int d = 0; d < r; ++d) {
          shape[d] = pc.piece.hi[d] - pc.piece.lo[d] + 1;
          soff += (pc.piece.lo[d] - pc.box->lo[d]) * sstride[d];
        }
        layout.cell_strides(pc.piece, dstride);
        std::vector<uint8_t> data(pc.piece.cells() * es);
        strided_copy(r, shape, pc.src + soff * es, sstride, data.data(), dstride, es);
        w->add_dense_tile(pc.tile.data(), pc.piece, std::move(data));
      }
      if (opts_.durable_writes && layers.size() > 1) {
        // One call, one commit: published one by one, a crash between two renames would
        // keep some of this write's boxes and lose the others.  The publish journal makes
        // the layers visible together (stage_publish).
        for (auto& w : layers) complete(std::move(w), /*batch=*/true);
        materialize_inline();  // a batch of files and records commits through the journal
        stage_publish(false);
        finish_publish(false);
      } else {
        for (auto& w : layers) park(std::move(w));
      }
    }
    for (const auto& [b, sp] : small) {
      Selection sel = Selection::from_box(*b);
      uint64_t st[kMaxRank];
      sel.dense_strides(st);
      const bool blob = !opts_.durable_writes && b->cells() >= opts_.blob_min_cells && b->cells() * es <= opts_.blob_bytes;
      if (blob) buffer_blob(sel, sp, st);
      else buffer_cells(sel, sp, st);
    }
  }), &g);
}

void Array::write_dense(const Selection& sel, const uint8_t* src, const uint64_t* sstride) {
  const Box& box = sel.bbox();
  // Buffered cells inside the box are older than this write and now overwritten.
  buffer_->erase_inside(box);
  Layout layout(schema_);
  const int r = schema_.rank();
  const size_t es = schema_.elem_size;
  // A box whose tiles all come after the open dense fragment's last one (frames, rows or
  // chunks written in order) is appended to it: a series of writes becomes one fragment
  // file, written as it goes, instead of a file each.  Anything else written, read or
  // spilled in between closes it (close_direct), so fragment order stays write order.
  const bool append = !opts_.durable_writes && appends_after_direct(box);
  if (!append) {
    close_direct();
    direct_ = make_writer(next_id());
    direct_skip_ = 0;
    direct_whole_ = false;
  }
  FragmentWriter* w = direct_.get();
  // The box's last tile in tile order, where the next append must start after: the last
  // one for_each_tile visits (not the hi corner's, under a Hilbert order).
  Coords last;
  layout.for_each_tile(box, [&](const Coords& t) {
    last = t;
    Box piece;
    intersect(layout.tile_box(t.data()), box, &piece);
    uint64_t shape[kMaxRank], dstride[kMaxRank];
    uint64_t soff = 0;
    for (int d = 0; d < r; ++d) {
      shape[d] = piece.hi[d] - piece.lo[d] + 1;
      soff += (piece.lo[d] - box.lo[d]) * sstride[d];
    }
    layout.cell_strides(piece, dstride);
    // The piece's cells already lie in the source in the tile's cell order (a chunk-
    // sized write from a chunk-shaped buffer): written from there, unfiltered.
    bool in_place = schema_.filters.empty();
    for (int d = 0; d < r && in_place; ++d) in_place = shape[d] == 1 || sstride[d] == dstride[d];
    if (in_place) {
      w->add_dense_tile_from(t.data(), piece, src + soff * es);
      return;
    }
    if (schema_.filters.empty() && row_spans(r, shape, src + soff * es, sstride, dstride, es, &spans_)) {
      // Unfiltered, in rows of the source long enough to write from: written straight
      // from them (pwritev), the tile never gathered (issue 20, the h5py demo's chunk-
      // row blocks).
      w->add_dense_tile_spans(t.data(), piece, spans_.data(), spans_.size());
      return;
    }
    if (schema_.filters.empty()) {
      // Unfiltered, short rows: gathered into a scratch buffer kept across writes and
      // written from there (add_dense_tile_from copies it into the page cache before
      // returning).  A fresh buffer per piece cost a page fault per 4 KiB (1.5-5 us each
      // here): random 16 MiB blob writes ran at a third of native's speed.
      scratch_.resize(std::max<size_t>(scratch_.size(), piece.cells() * es));
      strided_copy(r, shape, src + soff * es, sstride, scratch_.data(), dstride, es);
      w->add_dense_tile_from(t.data(), piece, scratch_.data());
      return;
    }
    std::vector<uint8_t> data(piece.cells() * es);
    strided_copy(r, shape, src + soff * es, sstride, data.data(), dstride, es);
    w->add_dense_tile(t.data(), piece, std::move(data));
  });
  if (scratch_.size() > (uint64_t{64} << 20)) std::vector<uint8_t>().swap(scratch_);  // bounded
  direct_last_ = last;
  if (opts_.durable_writes) close_direct();  // durable when the call returns
}

void Array::buffer_blob(const Selection& sel, const uint8_t* src, const uint64_t* sstride) {
  const Box& box = sel.bbox();
  buffer_->erase_inside(box);  // buffered cells there are older than this write
  const Layout layout(schema_);
  const int r = schema_.rank();
  uint64_t shape[kMaxRank], dstride[kMaxRank];
  for (int d = 0; d < r; ++d) shape[d] = box.hi[d] - box.lo[d] + 1;
  layout.cell_strides(box, dstride);
  std::vector<uint8_t> cells = ctx_->blob_memory().take(box.cells() * schema_.elem_size);
  strided_copy(r, shape, src, sstride, cells.data(), dstride, schema_.elem_size);
  blobs_->add(box, std::move(cells));
  maybe_spill();
}

bool Array::appends_after_direct(const Box& box) const {
  if (!direct_ || direct_skip_ != 0 || direct_whole_ || direct_->failed()) return false;
  const Layout layout(schema_);
  Coords first(box.lo.size());
  layout.first_tile(box, first.data());
  return layout.compare_tiles(direct_last_.data(), first.data()) < 0;
}

void Array::spill_blobs_over(const Box& b) {
  if (blobs_->intersects(b)) spill();
}

void Array::buffer_cells(const Selection& sel, const uint8_t* src, const uint64_t* sstride) {
  const int r = schema_.rank();
  const size_t es = schema_.elem_size;
  constexpr size_t kChunk = 65536;
  std::vector<uint64_t> coords;
  std::vector<uint8_t> values;
  coords.reserve(std::min<uint64_t>(sel.cells(), kChunk) * r);
  values.reserve(std::min<uint64_t>(sel.cells(), kChunk) * es);
  // Odometer over (interval index, offset) per dimension, in row-major selection order.
  std::vector<size_t> iv(r, 0);
  std::vector<uint64_t> off(r, 0);
  for (;;) {
    uint64_t so = 0;
    for (int d = 0; d < r; ++d) {
      const DimSelection& ds = sel.dim(d);
      coords.push_back(ds.ivs[iv[d]].lo + off[d]);
      so += (ds.rank0[iv[d]] + off[d]) * sstride[d];
    }
    values.insert(values.end(), src + so * es, src + (so + 1) * es);
    if (values.size() >= kChunk * es) {
      buffer_->add(coords.data(), values.data(), values.size() / es);
      coords.clear();
      values.clear();
      maybe_spill();
    }
    int d = r - 1;
    for (; d >= 0; --d) {
      if (++off[d] < sel.dim(d).ivs[iv[d]].len()) break;
      off[d] = 0;
      if (++iv[d] < sel.dim(d).ivs.size()) break;
      iv[d] = 0;
    }
    if (d < 0) break;
  }
  buffer_->add(coords.data(), values.data(), values.size() / es);
  maybe_spill();
}

void Array::check_points(const uint64_t* coords, size_t n) const {
  const int r = schema_.rank();
  for (size_t i = 0; i < n; ++i)
    for (int d = 0; d < r; ++d)
      if (coords[i * r + d] >= schema_.extent[d])
        throw_error(Errc::kInvalidArgument, "point " + std::to_string(i) +
                                                " lies beyond the array extent in dimension " +
                                                std::to_string(d));
}

void Array::check_writable() const {
  if (!writable_) throw_error(Errc::kInvalidArgument, "array '" + dir_ + "' is open read-only");
}

void Array::require_writable() {
  check_writable();
  note_unlogged_write();
}

void Array::require_var(bool var) const {
  if (schema_.var != var)
    throw_error(Errc::kInvalidArgument, var ? "array holds fixed-size cells: use write/read"
                                            : "array holds variable-length cells: use write_var/read_var");
}

Status Array::write_points(const uint64_t* coords, size_t n, const void* values) {
  std::unique_lock<std::mutex> g(mu_);
  return throttle(guard([&] {
    require_writable();
    require_var(false);
    check_points(coords, n);
    if (compact_) return compact_->write_points(coords, n, static_cast<const uint8_t*>(values));
    close_direct();
    buffer_->add(coords, static_cast<const uint8_t*>(values), n, /*scattered=*/true);
    maybe_spill();
  }), &g);
}

Status Array::write_points(std::vector<uint64_t>&& coords, const void* values) {
  std::unique_lock<std::mutex> g(mu_);
  return throttle(guard([&] {
    require_writable();
    require_var(false);
    const size_t n = coords.size() / static_cast<size_t>(std::max(1, schema_.rank()));
    check_points(coords.data(), n);
    if (compact_) return compact_->write_points(coords.data(), n, static_cast<const uint8_t*>(values));
    close_direct();
    buffer_->add(std::move(coords), static_cast<const uint8_t*>(values), n);
    maybe_spill();
  }), &g);
}

void Array::maybe_spill() {
  check_background();
  const uint64_t heap = pending_heap_ ? pending_heap_->bytes().size() : 0;
  if (schema_.var) {  // heap bytes must be durable before the fragment: spilled here
    if (buffer_->bytes() + heap >= opts_.buffer_budget) spill();
    report_bytes();
    return;
  }
  // Past the array's own cap, its buffer goes to the flusher; past the context's limit,
  // the largest buffer of the context does (write_budget.h).
  WriteBudget& b = ctx_->budget();
  if (buffer_->bytes() + blobs_->bytes() >= opts_.buffer_budget) b.request(this);
  if (report_bytes()) b.request(b.largest());
}

bool Array::report_bytes() {
  if (compact_) return false;  // holds no buffers (open_impl)
  const uint64_t heap = pending_heap_ ? pending_heap_->bytes().size() : 0;
  return ctx_->budget().report(this, buffer_->bytes() + blobs_->bytes() + heap + inflight_bytes_);
}

void Array::check_background() const {
  if (!bg_error_.ok())
    throw_error(bg_error_.code(), "a background flush of buffered writes failed (they are lost): " + bg_error_.message());
}

Status Array::throttle(Status st, std::unique_lock<std::mutex>* held) {
  held->unlock();
  if (st.ok()) ctx_->budget().wait_for_room();
  return st;
}

void Array::settle() { ctx_->budget().wait_idle(this); }

void Array::wait_inflight() {
  std::unique_lock<std::mutex> held(mu_, std::adopt_lock);  // the caller's lock, kept
  inflight_cv_.wait(held);
  held.release();
}

void Array::finish_inflight() {
  while (inflight_) wait_inflight();
}

void Array::flush_in_background() noexcept {
  // Small buffers, and variable-length arrays (their heap must be durable first), are
  // spilled at once; a large one is swapped out under the lock and written without it.
  constexpr uint64_t kBackgroundMinBytes = 1 << 20;
  std::unique_ptr<WriteBuffer> buf;
  std::unique_ptr<BlobBuffer> blobs;
  std::unique_ptr<FragmentWriter> w;
  {
    std::lock_guard<std::mutex> g(mu_);
    Status st = guard([&] {
      if (!writable_ || compact_ || (buffer_->empty() && blobs_->empty()) || inflight_) return;
      if (schema_.var || buffer_->bytes() + blobs_->bytes() < kBackgroundMinBytes) {
        spill();
        return;
      }
      // A file is coming: the directory first, under the lock (make_writer's before_file
      // would create it from this thread without it).
      if (!store_->dir_exists()) store_->ensure_dir(opts_.durable_writes, schema_.var);
      close_direct();  // nothing may be appended to an older fragment after this swap
      auto fresh = std::make_unique<WriteBuffer>(schema_);
      w = make_writer(spill_id());  // older than anything written after the swap
      if (buffer_->scattered() && blobs_->empty()) w->set_values_pipeline(fast_variant(schema_.filters));
      w->expect_sparse_cells(buffer_->cells());
      buf = std::move(buffer_);
      buffer_ = std::move(fresh);
      blobs = std::move(blobs_);
      blobs_ = std::make_unique<BlobBuffer>(schema_.tile_extent, &ctx_->blob_memory());
      inflight_ = true;
      inflight_bytes_ = buf->bytes() + blobs->bytes();
    });
    if (!st.ok() && bg_error_.ok()) bg_error_ = st;
    report_bytes();
    if (!buf) return;
  }
  {
    // Where the flush's writes lie: reads elsewhere need not wait for it (finish_parked_for).
    BoundingBox bounds;
    for (const Blob& b : blobs->blobs()) bounds.add(b.box);
    const int r = schema_.rank();
    const uint64_t* cs = buf->coords().data();
    for (size_t k = 0; k < buf->cells(); ++k) bounds.add(cs + k * static_cast<size_t>(r), r);
    std::lock_guard<std::mutex> g(mu_);
    inflight_bounds_ = std::move(bounds);
    inflight_cv_.notify_all();
  }
  Status st = guard([&] { fill_spill(*buf, *blobs, *w); });
  std::lock_guard<std::mutex> g(mu_);
  if (st.ok()) st = guard([&] { complete(std::move(w)); });
  if (!st.ok() && bg_error_.ok()) bg_error_ = st;
  w.reset();  // a failed writer removes its temporary file
  buf.reset();
  blobs.reset();
  inflight_ = false;
  inflight_bytes_ = 0;
  inflight_bounds_ = BoundingBox();
  report_bytes();
  inflight_cv_.notify_all();
}

void Array::spill() {
  // Heap bytes first: a fragment must never refer to bytes that are not durable.
  if (pending_heap_) {
    if (!pending_heap_->empty()) {
      store_->ensure_dir(true, schema_.var);
      pending_heap_->publish(env(), heap_dir_);
    }
    pending_heap_.reset();
  }
  if (compact_) return;  // a compact array has no buffers
  if (buffer_->empty() && blobs_->empty()) {
    run_ts_ = 0;  // a run with nothing buffered has nothing to keep
    run_bounds_ = BoundingBox();
    fence_.clear();
    return;
  }
  close_direct();  // the open dense fragment is older than this spill: no appends after it
  auto w = make_writer(spill_id());
  // Scattered points: an LSM-style delta, values under a fast codec until consolidation
  // (docs/engine.md "Sparse deltas").
  if (buffer_->scattered() && blobs_->empty()) w->set_values_pipeline(fast_variant(schema_.filters));
  w->expect_sparse_cells(buffer_->cells());
  fill_spill(*buffer_, *blobs_, *w);
  complete(std::move(w));
  buffer_->clear();
  blobs_->clear();
  report_bytes();
}


void Array::add_fragment(std::shared_ptr<Fragment> f, const std::vector<FragmentId>& replaced) {
  frags_.add(std::move(f), replaced);
}

Status Array::read(const Selection& sel, void* dst, const uint64_t* dst_strides) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_var(false);
    check_selection(sel);
    if (compact_) {
      uint64_t dstride[kMaxRank];
      if (dst_strides) std::copy(dst_strides, dst_strides + schema_.rank(), dstride);
      else sel.dense_strides(dstride);
      return compact_->read(sel, static_cast<uint8_t*>(dst), dstride);
    }
    finish_parked_for(sel.empty() ? Box() : sel.bbox());
    buffer_->normalize();
    ReadView view{frags_.snapshot(), buffer_.get(), ctx_.get(), blobs_.get()};
    ReadPlanner(schema_, view).read(sel, static_cast<uint8_t*>(dst), dst_strides);
  });
}

Status Array::read_points(const uint64_t* coords, size_t n, void* dst) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_var(false);
    check_points(coords, n);
    if (compact_) return compact_->read_points(coords, n, static_cast<uint8_t*>(dst));
    finish_parked_for(points_bounds(coords, n));
    buffer_->normalize();
    ReadView view{frags_.snapshot(), buffer_.get(), ctx_.get(), blobs_.get()};
    ReadPlanner(schema_, view).read_points(coords, n, static_cast<uint8_t*>(dst));
  });
}

std::vector<uint8_t> Array::make_descriptors(HeapBuilder* heap, size_t n, const uint64_t* lengths,
                                             const void* data) {
  std::vector<uint8_t> desc(n * kVarDescriptorSize);
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    VarDescriptor d = heap->append(p, lengths[i]);
    std::memcpy(&desc[i * kVarDescriptorSize], &d, sizeof d);
    p += lengths[i];
  }
  return desc;
}

HeapBuilder* Array::pending_heap() {
  if (!pending_heap_) pending_heap_ = std::make_unique<HeapBuilder>(next_id());
  return pending_heap_.get();
}

Status Array::write_var(const Selection& sel, const uint64_t* lengths, const void* data) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_writable();
    require_var(true);
    check_selection(sel);
    if (sel.empty()) return;
    const uint64_t n = sel.cells();
    uint64_t sstride[kMaxRank];
    sel.dense_strides(sstride);
    if (sel.is_box() && n >= std::min(opts_.direct_cells, schema_.tile_cells())) {
      HeapBuilder heap(next_id());
      std::vector<uint8_t> desc = make_descriptors(&heap, n, lengths, data);
      if (!heap.empty()) {
        store_->ensure_dir(true, schema_.var);
        heap.publish(env(), heap_dir_);
      }
      write_dense(sel, desc.data(), sstride);
    } else {
      std::vector<uint8_t> desc = make_descriptors(pending_heap(), n, lengths, data);
      buffer_cells(sel, desc.data(), sstride);
    }
  });
}

Status Array::write_points_var(const uint64_t* coords, size_t n, const uint64_t* lengths, const void* data) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_writable();
    require_var(true);
    check_points(coords, n);
    std::vector<uint8_t> desc = make_descriptors(pending_heap(), n, lengths, data);
    buffer_->add(coords, desc.data(), n, /*scattered=*/true);
    maybe_spill();
  });
}

void Array::resolve_descriptors(const std::vector<uint8_t>& desc, std::vector<uint64_t>* lengths,
                                std::vector<uint8_t>* data) {
  const size_t n = desc.size() / kVarDescriptorSize;
  lengths->resize(n);
  data->clear();
  for (size_t i = 0; i < n; ++i) {
    VarDescriptor d;
    std::memcpy(&d, &desc[i * kVarDescriptorSize], sizeof d);
    size_t before = data->size();
    heaps_->read(d, pending_heap_.get(), data);
    (*lengths)[i] = data->size() - before;
  }
}

Status Array::read_var(const Selection& sel, std::vector<uint64_t>* lengths, std::vector<uint8_t>* data) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_var(true);
    check_selection(sel);
    std::vector<uint8_t> desc(sel.empty() ? 0 : sel.cells() * kVarDescriptorSize);
    finish_parked();
    buffer_->normalize();
    ReadView view{frags_.snapshot(), buffer_.get(), ctx_.get(), blobs_.get()};
    if (!desc.empty()) ReadPlanner(schema_, view).read(sel, desc.data(), nullptr);
    resolve_descriptors(desc, lengths, data);
  });
}

Status Array::read_points_var(const uint64_t* coords, size_t n, std::vector<uint64_t>* lengths,
                              std::vector<uint8_t>* data) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_var(true);
    check_points(coords, n);
    std::vector<uint8_t> desc(n * kVarDescriptorSize);
    finish_parked();
    buffer_->normalize();
    ReadView view{frags_.snapshot(), buffer_.get(), ctx_.get(), blobs_.get()};
    ReadPlanner(schema_, view).read_points(coords, n, desc.data());
    resolve_descriptors(desc, lengths, data);
  });
}

Status Array::set_extent(const Coords& extent) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_writable();
    Schema next = schema_;
    if (extent.size() != next.extent.size()) throw_error(Errc::kInvalidArgument, "set_extent: rank differs");
    if (compact_) return compact_->set_extent(schema_.extent, extent);
    finish_parked();  // the fill fragments must be newer than every write before them
    if (!blobs_->empty()) spill();  // blobs the change cuts must be in fragments the fill hides
    next.extent = extent;
    next.validate();
    const Box old_dom = schema_.domain(), new_dom = next.domain();
    FragmentId extent_id = next_id();  // newer than every fragment so far
    bool shrink = false;
    for (int d = 0; d < next.rank(); ++d) shrink |= extent[d] < schema_.extent[d];
    // Shadow ranks: rank 0 writes the fill fragment (the connector makes the change a
    // commit point, so every rank sees it afterwards) and persists the schema.
    if (shrink && old_dom.cells() > 0) {
      // Cells beyond the new extent must read as fill if the extent grows back: erase
      // them with a fill fragment (only where some fragment holds data).
      if (new_dom.cells() > 0) buffer_->erase_outside(new_dom);
      else buffer_->clear();
      std::vector<Box> cut;
      if (new_dom.cells() > 0) subtract(old_dom, new_dom, &cut);
      else cut.push_back(old_dom);
      // One fill fragment over just the tiles where some fragment holds data inside the
      // cut (the cost follows the data, not its bounding box).  It also records the new
      // extent: publishing it is the commit point of the whole change (see
      // apply_extent_commits), so a crash leaves the old state or the new one.
      Layout layout(schema_);
      const int r = schema_.rank();
      std::vector<std::pair<Coords, Box>> pieces;
      for (const Box& c : cut) {
        std::set<Coords> tiles;
        for (auto& f : frags_) {
          const FragmentMeta& m = f->meta();
          if (!m.has_domain || !m.domain.intersects(c)) continue;
          for (const DenseEntry& e : m.dense)
            if (e.box.intersects(c)) tiles.insert(e.tile);
          for (size_t ti = 0; ti < m.sparse.size(); ++ti) {
            if (!m.sparse[ti].mbr.intersects(c)) continue;
            auto t = f->sparse_tile(ti, f->layout(schema_));
            Coords tc(r);
            for (uint64_t k = 0; k < m.sparse[ti].cells; ++k) {
              if (!c.contains(&t->coords[k * r])) continue;
              layout.tile_of(&t->coords[k * r], tc.data());
              tiles.insert(tc);
            }
          }
        }
        for (const Coords& t : tiles) {
          Box p;
          if (intersect(layout.tile_box(t.data()), c, &p)) pieces.push_back({t, p});
        }
      }
      if (!pieces.empty() && !opts_.shadow) {
        std::stable_sort(pieces.begin(), pieces.end(), [&](auto& x, auto& y) {
          return layout.compare_tiles(x.first.data(), y.first.data()) < 0;
        });
        FragmentId id = next_id();
        auto w = make_writer(id);
        for (auto& [t, p] : pieces) w->add_fill_tile(t.data(), p);
        w->set_extent(extent);
        // A catalog-bound array in durable mode publishes the fill fragment with the
        // schema record, in one catalog batch (below).
        complete(std::move(w), /*batch=*/opts_.durable_writes && store_->publishes_with_catalog());
        extent_id = id;
      }
    }
    schema_ = next;
    extent_id_ = extent_id;
    buffer_->reset_layout(schema_);
    // Durable mode: the schema follows its fill fragment at once.  Deferred mode: at
    // flush, after the fragments are published.
    if (opts_.shadow) return;
    if (opts_.durable_writes && store_->publishes_with_catalog() &&
        (!unpublished_.empty() || !unpublished_inline_.empty())) {
      schema_dirty_ = true;
      materialize_inline();
      stage_publish(false);
      finish_publish(false);
    } else if (opts_.durable_writes) {
      store_->store_schema(schema_, extent_id_, true);
    } else {
      schema_dirty_ = true;
    }
  });
}

FragmentInfo FragmentInfo::of(const Fragment& f, const Schema& s) {
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
  i.order = f.order(s);
  return i;
}

std::vector<FragmentInfo> Array::fragments() {
  std::lock_guard<std::mutex> g(mu_);
  (void)guard([&] { finish_parked(); });
  std::vector<FragmentInfo> out;
  for (auto& f : frags_) out.push_back(FragmentInfo::of(*f, schema_));
  return out;
}

std::vector<FragmentInfo> Array::replaced_fragments() const {
  std::lock_guard<std::mutex> g(mu_);
  return replaced_;
}

uint64_t Array::storage_bytes() {
  std::lock_guard<std::mutex> g(mu_);
  (void)guard([&] { finish_parked(); });
  if (compact_) {
    uint64_t n = 0;
    (void)guard([&] { n = compact_->storage_bytes(); });
    return n;
  }
  uint64_t n = 0;
  for (auto& f : frags_) n += f->file_size();
  return n;
}

size_t Array::buffered_cells() const {
  std::lock_guard<std::mutex> g(mu_);
  if (compact_) return 0;  // writes go straight into its cells
  return buffer_->cells() + blobs_->cells();
}

}  // namespace tessera
