// auto_merge.cc — AutoMerge (auto_merge.h): automatic consolidation of a writer's
// committed fragments in the background, and the retirement of the files it replaced.
#include "engine/array/auto_merge.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "engine/array/array.h"
#include "engine/catalog/merge_records.h"
#include "engine/consolidate/consolidator.h"
#include "engine/util/file_io.h"

namespace tessera {

namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

constexpr uint64_t kSecond = 1000000000ull;

}  // namespace

bool AutoMerge::enabled() const {
  const Array& a = a_;
  return a.opts_.auto_merge.on && a.writable_ && !a.compact_ && !a.opts_.collective && !a.opts_.shadow &&
         !a.opts_.as_of_ts && (a.frags_.complete_records() || !a.store_->has_records());
}

TieredPolicy AutoMerge::policy() const {
  TieredPolicy p;
  p.fanin = std::max<uint32_t>(a_.opts_.auto_merge.fanin, 2);
  p.ratio = std::max<double>(a_.opts_.auto_merge.ratio, 1.0);
  return p;
}

void AutoMerge::opened() {
  for (auto& f : a_.frags_.live())
    if (!any_committed_ || committed_ < f->meta().id) {
      committed_ = f->meta().id;
      any_committed_ = true;
    }
  if (!enabled()) return;
  // Files a merge of an earlier session kept: retired on their schedule.  Without
  // records (a standalone array: no history, no reads of the past) they go at once —
  // unless the opener keeps replaced fragments on purpose.
  const Catalog* cat = a_.store_->records();
  std::map<FragmentId, uint64_t> recs;
  if (cat) recs = scan_retire_records(*cat, a_.store_->records_prefix());
  for (const FragmentInfo& r : a_.frags_.replaced_listed()) {
    if (r.is_inline) continue;
    auto it = recs.find(r.id);
    if (it != recs.end()) retained_[r.id] = {it->second, r.file_size, r.path};
    else if (!cat && !a_.opts_.keep_replaced) retained_[r.id] = {0, r.file_size, r.path};
  }
  for (auto& [id, ns] : recs)
    if (!retained_.count(id)) stale_.push_back(id);
  request_if_due();
}

void AutoMerge::committed() {
  if (!enabled()) return;
  std::set<const Fragment*> unpublished;
  for (auto& u : a_.pub_.unpublished_) unpublished.insert(u.first.get());
  for (auto& f : a_.pub_.unpublished_inline_) unpublished.insert(f.get());
  FragmentId newest = committed_;
  bool any = any_committed_;
  for (auto& f : a_.frags_.live()) {
    if (unpublished.count(f.get())) continue;
    const FragmentId& id = f->meta().id;
    if (any_committed_ && !(committed_ < id)) continue;
    flushed_bytes_ += f->file_size();  // published by a commit since the last one
    if (!any || newest < id) newest = id;
    any = true;
  }
  committed_ = newest;
  any_committed_ = any;
  request_if_due();
}

std::optional<std::pair<size_t, size_t>> AutoMerge::due() const {
  if (!any_committed_) return std::nullopt;
  std::set<const Fragment*> unpublished;
  for (auto& u : a_.pub_.unpublished_) unpublished.insert(u.first.get());
  for (auto& f : a_.pub_.unpublished_inline_) unpublished.insert(f.get());
  // The committed fragments are the oldest ones: what is newer is still unpublished or
  // published into a batch not yet committed.
  std::vector<uint64_t> sizes;
  for (auto& f : a_.frags_.live()) {
    if (committed_ < f->meta().id || unpublished.count(f.get())) break;
    sizes.push_back(f->file_size());
  }
  return pick_tiered_merge(sizes, policy());
}

uint64_t AutoMerge::next_retire_ns() const {
  // Without records there is no history to read: retained files go at once.
  const uint64_t keep = a_.store_->records() ? a_.opts_.auto_merge.retain_ns : 0;
  uint64_t next = 0;
  for (auto& [id, r] : retained_) {
    const uint64_t at = r.merged_ns + keep;
    if (!next || at < next) next = std::max<uint64_t>(at, 1);
  }
  return next;
}

void AutoMerge::request_if_due() {
  if (!enabled() || cancel_) return;
  const uint64_t now = now_ns();
  const uint64_t retire = next_retire_ns();
  bool work = (retire && retire <= now) || unlink_due();
  if (!work && now >= retry_after_ns_) work = due().has_value();
  if (work) a_.ctx_->merges().request(&a_);
}

void AutoMerge::wait_quiet(std::unique_lock<std::mutex>& lk) {
  quiet_.wait(lk, [&] { return !busy_; });
}

void AutoMerge::record_merge(const std::vector<std::shared_ptr<Fragment>>& in, const Fragment& result,
                             const std::vector<std::shared_ptr<Fragment>>& kept, CatalogBatch& b) {
  if (!a_.store_->records_writable()) return;  // a standalone array: nothing to record
  const std::string& prefix = a_.store_->records_prefix();
  const uint64_t now = now_ns();
  for (auto& f : kept)
    if (!f->is_inline()) put_retire_record(b, prefix, f->meta().id, now);
  for (auto& id : stale_) b.del(retire_record_key(prefix, id));
  MergeTotals t = read_merge_totals(*a_.store_->records(), prefix);
  ++t.merges;
  for (auto& f : in) t.bytes_in += f->file_size();
  t.bytes_out += result.file_size();
  t.last_ns = now;
  t.last_inputs = in.size();
  t.last_bytes = result.file_size();
  put_merge_totals(b, prefix, t);
}

void AutoMerge::merged(const Fragment& result, const std::vector<std::shared_ptr<Fragment>>& kept) {
  const uint64_t now = now_ns();
  for (auto& f : kept)
    if (!f->is_inline()) retained_[f->meta().id] = {now, f->file_size(), f->path()};
  if (a_.store_->records_writable()) stale_.clear();
  session_out_ += result.file_size();
  // The result takes its newest input's id with a higher generation: it is committed
  // like its inputs (no unpublished fragment sorts between them).
  if (committed_ < result.meta().id) committed_ = result.meta().id;
  backoff_ns_ = 0;
}

void AutoMerge::drop_retire_records(CatalogBatch* b) const {
  if (!a_.store_->records_writable()) return;
  const std::string& prefix = a_.store_->records_prefix();
  for (auto& [id, ns] : scan_retire_records(*a_.store_->records(), prefix)) b->del(retire_record_key(prefix, id));
}

void AutoMerge::retire_due(bool all) {
  if (retained_.empty() && stale_.empty()) return;
  const uint64_t keep = a_.store_->records() ? a_.opts_.auto_merge.retain_ns : 0;
  const uint64_t now = now_ns();
  std::vector<FragmentId> ids;
  for (auto& [id, r] : retained_)
    if (all || r.merged_ns + keep <= now) ids.push_back(id);
  if (ids.empty() && stale_.empty()) return;
  // The records first; the files once that batch is durable (unlink_durable): a crash
  // between leaves unrecorded files, which the next writer removes, never a record of a
  // file that is gone.  The batch is housekeeping, durable with the writer's next flush
  // (or at once where every commit is: a catalog in kEachCommit mode).
  CatalogBatch b;
  a_.store_->record_files({}, ids, &b, false);
  if (a_.store_->records_writable()) {
    const std::string& prefix = a_.store_->records_prefix();
    for (auto& id : ids) b.del(retire_record_key(prefix, id));
    for (auto& id : stale_) b.del(retire_record_key(prefix, id));
  }
  const uint64_t ticket = a_.store_->commit_maintenance(std::move(b));
  stale_.clear();
  for (auto& id : ids) {
    unlinking_.push_back({id, retained_[id].path, ticket});
    retained_.erase(id);
  }
  a_.frags_.forget_replaced(ids);
  unlink_durable();
}

bool AutoMerge::unlink_due() const {
  for (auto& u : unlinking_)
    if (a_.store_->durable(u.ticket)) return true;
  return false;
}

void AutoMerge::unlink_durable() {
  bool any = false;
  for (auto it = unlinking_.begin(); it != unlinking_.end();) {
    if (!a_.store_->durable(it->ticket)) {
      ++it;
      continue;
    }
    remove_file(a_.env(), it->path);
    a_.remove_index_of(it->id);
    ++retired_;
    it = unlinking_.erase(it);
    any = true;
  }
  if (any) sync_dir(a_.env(), a_.frag_dir_);
}

void AutoMerge::failed(const std::string& what, const std::exception& e) {
  ++failures_;
  last_error_ = what + ": " + e.what();
  // Nothing is lost (the inputs stay); the next try waits, longer after each failure.
  backoff_ns_ = backoff_ns_ ? std::min(backoff_ns_ * 2, 60 * kSecond) : kSecond;
  retry_after_ns_ = now_ns() + backoff_ns_;
}

void AutoMerge::run() noexcept {
  std::unique_lock<std::mutex> lk(a_.mu_);
  if (!enabled() || cancel_) return;
  bool again = false;
  try {
    unlink_durable();
    const size_t before = retained_.size();
    retire_due(false);
    again = retained_.size() != before;
  } catch (const std::exception& e) {
    failed("retiring the files a merge replaced", e);
  }
  if (now_ns() >= retry_after_ns_) {
    try {
      again = merge_once(lk) || again;
    } catch (const std::exception& e) {
      failed("merging fragments", e);
      again = false;
    }
  }
  // More may be due (a merge's result completes the next tier): queued again.  A merge
  // dropped because its inputs changed waits for the next commit instead.
  if (again) request_if_due();
}

bool AutoMerge::merge_once(std::unique_lock<std::mutex>& lk) {
  if (paused_) return false;  // the build's end queues it again
  const auto run = due();
  if (!run) return false;
  Array& a = a_;
  const auto [first, last] = *run;
  std::vector<std::shared_ptr<Fragment>> in(a.frags_.live().begin() + static_cast<ptrdiff_t>(first),
                                            a.frags_.live().begin() + static_cast<ptrdiff_t>(last) + 1);
  const Schema schema = a.schema_;
  const bool keep_erased = first > 0;  // something older remains to be hidden
  const std::vector<FragmentId> replaces = a.consolidation_.replaces_of(in);
  const uint64_t limit = a.store_->inline_limit(a.writable_, a.opts_);
  std::shared_ptr<Context> ctx = a.ctx_;
  std::string tmp, final_path;
  std::shared_ptr<const std::vector<uint8_t>> bytes;
  FragmentId id;
  busy_ = true;
  lk.unlock();
  // The merge itself, without the mutex: the inputs are immutable and only this thread
  // writes the result.  The result's directory (a catalog-bound array's first file) is
  // made under the mutex, as every other change of the store.
  std::exception_ptr err;
  try {
    Consolidator merge(schema, in, keep_erased);
    id = merge.result_id();
    FragmentWriter w(*ctx, a.frag_dir_, id, schema, limit, [this] {
      std::lock_guard<std::mutex> g(a_.mu_);
      if (!a_.store_->dir_exists()) a_.store_->ensure_dir(a_.opts_.durable_writes, a_.schema_.var);
    });
    w.set_replaces(replaces);
    merge.write(w, &cancel_);
    final_path = w.final_path();
    tmp = w.finish();
    if (tmp.empty()) bytes = std::make_shared<const std::vector<uint8_t>>(w.take_inline());
    else File::open_rw(ctx->env(), tmp, /*create=*/false).sync();  // durable before the mutex is taken again
  } catch (...) {
    err = std::current_exception();
  }
  lk.lock();
  busy_ = false;
  quiet_.notify_all();
  auto drop = [&] {
    if (!tmp.empty()) remove_file(a.env(), tmp);
  };
  if (err) {
    drop();
    std::rethrow_exception(err);
  }
  // Still what was merged: the same fragments, adjacent, in the same order, the oldest
  // still oldest if the merge dropped erased cells, and the schema's order unchanged.
  const auto& live = a.frags_.live();
  size_t pos = live.size();
  for (size_t i = 0; i < live.size(); ++i)
    if (live[i] == in.front()) pos = i;
  bool same = !cancel_ && pos + in.size() <= live.size() && (keep_erased || pos == 0) &&
              a.schema_.order() == schema.order();
  for (size_t i = 0; same && i < in.size(); ++i) same = live[pos + i] == in[i];
  if (!same) {
    drop();
    return false;
  }
  try {
    a.consolidation_.publish_merge(std::move(in), id, tmp, bytes, final_path, nullptr, /*automatic=*/true);
  } catch (...) {
    if (!tmp.empty() && path_exists(a.env(), tmp)) drop();  // not renamed: the merge is lost, nothing else
    throw;
  }
  return true;
}

ConsolidationInfo AutoMerge::info() const {
  ConsolidationInfo i;
  const ArrayOptions::AutoMerge& o = a_.opts_.auto_merge;
  i.enabled = enabled();
  i.fanin = o.fanin;
  i.ratio = o.ratio;
  i.retain_s = o.retain_ns / kSecond;
  i.fragments = a_.frags_.live().size();
  uint64_t lo = 0, hi = 0;
  for (auto& f : a_.frags_.live()) {
    lo = lo ? std::min(lo, f->file_size()) : f->file_size();
    hi = std::max(hi, f->file_size());
  }
  i.bound = lo ? tiered_bound(lo, hi, policy()) : 0;
  // Read-only openers (the tool) see every listed fragment as committed.
  std::vector<uint64_t> sizes;
  for (auto& f : a_.frags_.live()) {
    if (any_committed_ && committed_ < f->meta().id) break;
    sizes.push_back(f->file_size());
  }
  if (auto run = pick_tiered_merge(sizes, policy())) {
    i.due_inputs = run->second - run->first + 1;
    for (size_t k = run->first; k <= run->second; ++k) i.due_bytes += sizes[k];
  }
  i.running = busy_;
  if (const Catalog* cat = a_.store_->records()) {
    const MergeTotals t = read_merge_totals(*cat, a_.store_->records_prefix());
    i.merges = t.merges;
    i.bytes_in = t.bytes_in;
    i.bytes_out = t.bytes_out;
    i.last_ns = t.last_ns;
    i.last_inputs = t.last_inputs;
    i.last_bytes = t.last_bytes;
    if (!enabled()) {  // a reader: what the records say is kept
      const std::map<FragmentId, uint64_t> recs = scan_retire_records(*cat, a_.store_->records_prefix());
      for (const FragmentInfo& r : a_.frags_.replaced_listed()) {
        auto it = recs.find(r.id);
        if (it == recs.end()) continue;
        ++i.retained;
        i.retained_bytes += r.file_size;
        const uint64_t at = it->second + o.retain_ns;
        if (!i.next_retire_ns || at < i.next_retire_ns) i.next_retire_ns = at;
      }
    }
  }
  if (enabled()) {
    for (auto& [id, r] : retained_) {
      ++i.retained;
      i.retained_bytes += r.bytes;
    }
    i.next_retire_ns = next_retire_ns();
  }
  i.flushed_bytes = flushed_bytes_;
  i.session_bytes_out = session_out_;
  i.retired = retired_;
  i.failures = failures_;
  i.last_error = last_error_;
  return i;
}

}  // namespace tessera
