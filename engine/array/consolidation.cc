// consolidation.cc — Consolidation (consolidation.h, TileDB §4.3): merge adjacent
// fragments into one, tile by tile, and publish the result.  The merge itself is the Consolidator (consolidator.h).
//
// The merged fragments must be adjacent in fragment order: the result takes the id of the
// newest one with gen + 1, so it sorts exactly where they were.  The result is published
// atomically and lists the ids it replaces; only then are the inputs unlinked (readers
// holding them open keep reading).
#include <algorithm>
#include <set>

#include "engine/array/array.h"
#include "engine/consolidate/consolidator.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_writer.h"
#include "engine/index/index_format.h"

namespace tessera {

void Consolidation::consolidate(size_t first, size_t last) {
  a_.require_writable();
  a_.flush_impl();
  if (first > last || last >= a_.frags_.live().size())
    throw_error(Errc::kInvalidArgument, "consolidate: fragment range out of bounds");
  if (first == last) return;
  consolidate_range(first, last);
}

void Consolidation::consolidate_all() {
  a_.require_writable();
  a_.flush_impl();
  if (a_.frags_.live().size() > 1) consolidate_range(0, a_.frags_.live().size() - 1);
}

void Consolidation::consolidate_auto(size_t min_run, double ratio) {
  a_.require_writable();
  a_.flush_impl();
  if (min_run < 2) min_run = 2;
  for (;;) {
    // Find the longest run of adjacent fragments of similar size.
    size_t best_first = 0, best_len = 0;
    for (size_t i = 0; i < a_.frags_.live().size();) {
      uint64_t lo = a_.frags_.live()[i]->file_size(), hi = lo;
      size_t j = i + 1;
      for (; j < a_.frags_.live().size(); ++j) {
        uint64_t s = a_.frags_.live()[j]->file_size();
        uint64_t nlo = std::min(lo, s), nhi = std::max(hi, s);
        if (static_cast<double>(nhi) > ratio * static_cast<double>(nlo)) break;
        lo = nlo;
        hi = nhi;
      }
      if (j - i > best_len) {
        best_len = j - i;
        best_first = i;
      }
      i = j;
    }
    if (best_len < min_run) return;
    consolidate_range(best_first, best_first + best_len - 1);
  }
}

void Consolidation::consolidate_layout(Order tile, Order cell, size_t first, size_t last) {
  a_.require_writable();
  if (a_.compact_)
    throw_error(Errc::kUnsupported,
                "a compact array (one catalog record, no tiles) has no layout to convert: docs/layouts.md");
  a_.flush_impl();
  Schema probe = a_.schema_;  // the cube for this schema in the new cell order (multimap.h)
  probe.set_layout(tile, cell);
  probe.validate();
  const StorageOrder to = probe.order();
  if (!a_.frags_.live().empty()) {
    last = std::min(last, a_.frags_.live().size() - 1);
    if (first > last) throw_error(Errc::kInvalidArgument, "consolidate_layout: fragment range out of bounds");
  }
  bool done = to == a_.schema_.order();
  for (size_t i = first; i <= last && i < a_.frags_.live().size(); ++i)
    done = done && a_.frags_.live()[i]->order() == to;
  if (done) {  // nothing to convert: an ordinary consolidation
    if (first < last && last < a_.frags_.live().size()) consolidate_range(first, last);
    return;
  }
  const Schema& target = probe;  // the array's schema in the new order
  if (!a_.frags_.live().empty()) {
    consolidate_range(first, last, 0, 1, &target);
    return;
  }
  // No fragment: only the order of new ones changes.
  CatalogBatch b;
  a_.store_->publish({}, &target, a_.extent_id_, {}, /*synced=*/false, &b);
  a_.store_->commit(std::move(b), /*sync=*/true);
  a_.adopt_schema(target);
}

void Consolidation::consolidate_part(uint32_t part, uint32_t parts) {
  a_.require_writable();
  if (parts == 0 || part >= parts) throw_error(Errc::kInvalidArgument, "consolidate_part: part out of range");
  if (a_.opts_.durable_writes) throw_error(Errc::kInvalidArgument, "consolidate_part: needs deferred publishing");
  a_.finish_parked();
  a_.write_.spill();
  if (!a_.pub_.unpublished_.empty())
    throw_error(Errc::kInvalidArgument, "consolidate_part: publish pending writes first (an epoch commit)");
  if (a_.frags_.live().size() > 1) consolidate_range(0, a_.frags_.live().size() - 1, part, parts);
}

void Consolidation::consolidate_range(size_t first, size_t last, uint32_t part, uint32_t parts, const Schema* target) {
  std::vector<std::shared_ptr<Fragment>> in(a_.frags_.live().begin() + first, a_.frags_.live().begin() + last + 1);
  const Schema& out = target ? *target : a_.schema_;
  // Erased cells are dropped when nothing older than the inputs remains to be hidden.
  // Dropped before the inputs' files go (below), with `in`: the file cache keeps a
  // removed file's descriptor open for whoever still holds its Fragment (file_cache.h).
  auto merge = std::make_unique<Consolidator>(out, in, /*keep_erased=*/first > 0);
  if (parts > 1 && !merge->select_part(part, parts)) return;  // the other parts replace the inputs
  const FragmentId id = merge->result_id(part);
  // Parts are published together by an epoch commit, through files (parallel tools).
  if (parts > 1) a_.store_->ensure_dir(false, a_.schema_.var);
  if (target && parts > 1) throw_error(Errc::kInternal, "a conversion is serial");
  std::unique_ptr<FragmentWriter> wp =
      parts > 1 ? std::make_unique<FragmentWriter>(*a_.ctx_, a_.frag_dir_, id, a_.schema_) : a_.make_writer(id, target);
  FragmentWriter& w = *wp;
  w.set_replaces(replaces_of(in));
  merge->write(w);
  if (parts > 1) {
    // Published with the other parts by an epoch commit; until then not even this
    // rank's reads use it (it would hide the inputs of the other parts' tiles).
    std::string tmp = w.finish();
    a_.pub_.unpublished_.push_back({Fragment::open(tmp, a_.ctx_), w.final_path()});
    return;
  }
  std::string tmp = w.finish();
  std::shared_ptr<const std::vector<uint8_t>> bytes;
  if (tmp.empty()) bytes = std::make_shared<const std::vector<uint8_t>>(w.take_inline());
  merge.reset();
  publish_merge(std::move(in), id, tmp, bytes, w.final_path(), target, /*automatic=*/false);
}

std::vector<FragmentId> Consolidation::replaces_of(const std::vector<std::shared_ptr<Fragment>>& in) const {
  std::vector<FragmentId> out;
  for (auto& f : in) out.push_back(f->meta().id);
  // Fragments an input replaced that are still kept (reads as of earlier commits): the
  // result hides them too, so they stay hidden once the input itself is removed.
  std::set<FragmentId> kept;
  for (auto& r : a_.frags_.replaced_listed()) kept.insert(r.id);
  for (auto& f : in)
    for (auto& r : f->meta().replaces)
      if (kept.count(r) && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  return out;
}

void Consolidation::publish_merge(std::vector<std::shared_ptr<Fragment>> in, const FragmentId& id,
                                  std::string tmp, std::shared_ptr<const std::vector<uint8_t>> bytes,
                                  const std::string& final_path, const Schema* target, bool automatic) {
  // The result is durable before any input goes: an inline result and the removal of
  // inline inputs are one catalog batch; a file result is synced and renamed first (its
  // footer's `replaces` hides the inputs until their records or files are deleted).
  // An automatic merge's batch is housekeeping, durable with the catalog's next sync (the
  // writer's next flush): it removes no file (the file inputs retire later, once a batch
  // dropping their records is durable), and a crash that loses it loses only the merge.
  std::shared_ptr<Fragment> nf;
  CatalogBatch b;
  // No room left in the inline budgets (another writer took it meanwhile): a file.
  if (tmp.empty() && !a_.store_->reserve_inline(bytes->size(), a_.opts_)) tmp = a_.inline_to_file(*bytes, final_path);
  if (tmp.empty()) {
    const std::string key = a_.store_->inline_key(id);
    nf = Fragment::open_inline(a_.store_->inline_label(key), bytes, a_.ctx_);
    b.put(key, std::string(bytes->begin(), bytes->end()));
  } else {
    nf = Fragment::open(tmp, a_.ctx_);
    a_.pub_.log_publish({{id, nf->file_size()}});  // recorded by the batch below, after the rename
    FragmentWriter::publish_finished(nf->file(), tmp, final_path);  // synced first (a no-op if it was)
    sync_dir(a_.env(), a_.frag_dir_);
    nf->set_path(final_path);
    a_.store_->record_files({{id, nf->file_size()}}, {}, &b, false);
  }
  // keep_replaced: the inputs stay (hidden by the result) until vacuum() removes them.
  // An automatic merge keeps its file inputs until they retire (auto_merge.h); inline
  // inputs go at once (the catalog's history keeps them for reads of the past).
  std::vector<FragmentId> dropped_files;
  std::vector<std::shared_ptr<Fragment>> kept;
  for (auto& f : in) {
    if (a_.opts_.keep_replaced || (automatic && !f->is_inline())) {
      kept.push_back(f);
    } else if (f->is_inline()) {
      b.del(a_.store_->inline_key(f->meta().id));
      a_.store_->count_inline(-static_cast<int64_t>(f->file_size()));
    } else {
      dropped_files.push_back(f->meta().id);
    }
  }
  a_.store_->record_files({}, dropped_files, &b, false);
  if (automatic) a_.auto_.record_merge(in, *nf, kept, b);
  // A conversion's new order: in the same batch (catalog-bound), or the schema file now,
  // after the result's rename (a crash between leaves the result, which records its own
  // order, and the old schema: both read right).
  if (target) a_.store_->publish({}, target, a_.extent_id_, {}, /*synced=*/false, &b);
  if (automatic) a_.store_->commit_maintenance(std::move(b));
  else a_.store_->commit(std::move(b), /*sync=*/true);
  if (target) a_.adopt_schema(*target);
  if (!automatic) a_.pub_.trim_log();
  a_.frags_.add(nf, nf->meta().replaces);
  // The merged fragment gets its own index when its inputs had some (or index_on_write):
  // rebuilt from the merged values, whose range decides its bins.
  bool indexed = false;
  for (auto& f : in) indexed = indexed || (!f->is_inline() && path_exists(a_.env(), index_path(a_.dir_, f->meta().id)));
  a_.index_published({nf}, indexed);
  // Kept inputs' files and indexes go at vacuum() or when they retire.
  for (auto& f : kept) a_.frags_.keep_replaced(*f);
  if (automatic) a_.auto_.merged(*nf, kept);
  // The others now, once this merge holds none of them: the file cache keeps a removed
  // file's descriptor open for whoever still holds its Fragment (file_cache.h).
  std::vector<std::pair<std::string, FragmentId>> files;
  for (auto& f : in)
    if (!f->is_inline() && std::find(kept.begin(), kept.end(), f) == kept.end())
      files.emplace_back(f->path(), f->meta().id);
  in.clear();
  kept.clear();
  for (auto& [path, fid] : files) {
    remove_file(a_.env(), path);
    a_.remove_index_of(fid);
  }
  if (!dropped_files.empty()) sync_dir(a_.env(), a_.frag_dir_);
}

void Consolidation::vacuum(VacuumResult* out) {
  a_.require_writable();
  if (a_.compact_) return;  // no fragments
  a_.finish_parked();
  std::vector<std::shared_ptr<Fragment>> all;
  std::string problem;
  if (!a_.frags_.list_present(&all, &problem)) throw_error(Errc::kCorrupt, problem);
  std::set<FragmentId> replaced;
  for (auto& f : all)
    for (auto& r : f->meta().replaces) replaced.insert(r);
  // Only published fragments go (an unpublished one is never replaced: consolidation
  // flushes first).  The records first, synced; then the files.
  CatalogBatch b;
  std::vector<FragmentId> dropped_files;
  std::vector<std::string> paths;
  // Kept for reads of the past by automatic consolidation or not: a vacuum removes every
  // replaced fragment, and their retire records with them.
  a_.auto_.drop_retire_records(&b);
  for (auto& f : all) {
    if (!replaced.count(f->meta().id)) continue;
    out->fragments++;
    out->bytes += f->file_size();
    if (f->is_inline()) {
      b.del(a_.store_->inline_key(f->meta().id));
      a_.store_->count_inline(-static_cast<int64_t>(f->file_size()));
    } else {
      dropped_files.push_back(f->meta().id);
      paths.push_back(f->path());
    }
  }
  a_.store_->record_files({}, dropped_files, &b, false);
  a_.store_->commit(std::move(b), /*sync=*/true);
  all.clear();  // the listing's Fragments of them, before their files go (file_cache.h)
  for (auto& p : paths) remove_file(a_.env(), p);
  for (FragmentId id : dropped_files) a_.remove_index_of(id);
  if (!paths.empty()) sync_dir(a_.env(), a_.frag_dir_);
  a_.frags_.forget_replaced();
  a_.auto_.forget_retained();
  a_.auto_.unlink_durable();  // files an earlier retirement dropped, now that this batch is durable
}

}  // namespace tessera
