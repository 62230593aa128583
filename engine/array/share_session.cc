// share_session.cc — ShareSession (share_session.h), MPI: how a rank shows its small
// writes to the other ranks of its job before an epoch commits them (share logs, share_log.h), and how it picks up theirs.
// docs/parallel.md ("Visibility") states the guarantee; this is the mechanism.
//
// Each small box write of a collective array is, before H5Dwrite returns, one record in
// the writer's share log: the bytes of an in-memory fragment holding just that write.
// The writer keeps the cells in its write buffer as well; consecutive such writes form a
// *run*, spilled as one fragment file at the next epoch, H5Dclose, or when the run must
// end — instead of a fragment file (create, rename, fsync at publish) per write.
//
// Order.  Every record of a run and the run's fragment take the run's first timestamp
// (sequence numbers order them among themselves), so the fragment sorts where the run's
// first write did: below every other rank's write that was ordered after any write of
// the run (that rank saw the record, and its clock was raised past it).  For that to be
// right, no write of the run may be ordered after another rank's write it overlaps: so
// the run ends (is spilled) when this rank first sees another rank's fragment that meets
// the run's cells, and before a write of the run that would meet one seen during the run
// (the fence).  Any other kind of write (large boxes, points, erases, unions...) ends the
// run too, and is shared through files as before (share_own), with a kList record so the
// other ranks list the directory.
#include <algorithm>
#include <set>

#include "engine/array/array.h"
#include "engine/array/array_files.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_writer.h"
#include "engine/schema/layout.h"
#include "engine/geometry/strided_copy.h"

namespace tessera {

using namespace array_files;

namespace {

// Writes up to this many bytes go through the share log: a record is copied into every
// other rank's memory until the next listing retires it, so large writes go to files.
constexpr uint64_t kShareLogMaxBytes = 256 << 10;
// Foreign fragments a run remembers before it ends on its own (each write is checked
// against them all).
constexpr size_t kMaxFence = 4096;
// A share log larger than this restarts after a kList record (ShareLogWriter::restart).
constexpr uint64_t kRestartAfterList = 64 << 10;

}  // namespace

bool ShareSession::note_logged_write(const Selection& sel, const uint8_t* src, const uint64_t* sstride) {
  if (!a_.share_logging() || !sel.is_box() || sel.cells() * a_.schema_.elem_size > kShareLogMaxBytes) return false;
  const Box& box = sel.bbox();
  if (run_ts_)
    for (const Box& f : fence_)
      if (f.intersects(box)) {
        end_share_run();  // this write is ordered after that rank's: it sorts after it
        break;
      }
  const int r = a_.schema_.rank();
  const size_t es = a_.schema_.elem_size;
  PendingShare ps{box, std::vector<uint8_t>(box.cells() * es)};
  uint64_t shape[kMaxRank], dstride[kMaxRank];
  sel.dense_strides(dstride);
  for (int d = 0; d < r; ++d) shape[d] = box.hi[d] - box.lo[d] + 1;
  strided_copy(r, shape, src, sstride, ps.cells.data(), dstride, es);
  share_pending_.push_back(std::move(ps));
  run_bounds_.add(box);
  return true;
}

void ShareSession::note_unlogged_write() {
  if (!a_.share_logging()) return;
  end_share_run();
  share_broken_ = true;
}

void ShareSession::end_share_run() {
  if (run_ts_ || run_bounds_.any) a_.write_.spill();  // spill_id() gives it the run's timestamp
  run_ts_ = 0;
  run_bounds_ = BoundingBox();
  fence_.clear();
}

FragmentId ShareSession::spill_id() {
  FragmentId id = a_.next_id();
  if (run_ts_) id.ts = run_ts_;
  // Writes queued for the log are in this spill's file, not in any record: the next
  // share_own shares the file instead.
  if (!share_pending_.empty()) share_broken_ = true;
  run_ts_ = 0;
  run_bounds_ = BoundingBox();
  fence_.clear();
  return id;
}

void ShareSession::open_share_log() {
  if (share_log_) return;
  // A catalog-bound array (created by a serial writer) has no directory until it needs a file.
  if (!a_.store_->dir_exists()) a_.store_->ensure_dir(a_.opts_.durable_writes, a_.schema_.var);
  share_log_ = std::make_unique<ShareLogWriter>(a_.env(), join_path(a_.frag_dir_, share_log_name(a_.opts_.writer_rank)));
}

void ShareSession::log_pending_shares() {
  open_share_log();
  const Layout layout(a_.schema_);
  const int r = a_.schema_.rank();
  const size_t es = a_.schema_.elem_size;
  for (const PendingShare& ps : share_pending_) {
    FragmentId id = a_.next_id();
    if (run_ts_) id.ts = run_ts_;
    else run_ts_ = id.ts;
    // In memory whatever its size (the limit is far above kShareLogMaxBytes' encoding).
    FragmentWriter w(*a_.ctx_, a_.frag_dir_, id, a_.schema_, /*inline_limit=*/uint64_t{1} << 40);
    uint64_t bstride[kMaxRank];
    Selection::from_box(ps.box).dense_strides(bstride);
    layout.for_each_tile(ps.box, [&](const Coords& t) {
      Box piece;
      intersect(layout.tile_box(t.data()), ps.box, &piece);
      uint64_t shape[kMaxRank], dstride[kMaxRank], soff = 0;
      for (int d = 0; d < r; ++d) {
        shape[d] = piece.hi[d] - piece.lo[d] + 1;
        soff += (piece.lo[d] - ps.box.lo[d]) * bstride[d];
      }
      layout.cell_strides(piece, dstride);
      std::vector<uint8_t> data(piece.cells() * es);
      strided_copy(r, shape, ps.cells.data() + soff * es, bstride, data.data(), dstride, es);
      w.add_dense_tile(t.data(), piece, std::move(data));
    });
    if (!w.finish().empty()) throw_error(Errc::kInternal, "a share-log fragment did not stay in memory");
    const std::vector<uint8_t> bytes = w.take_inline();
    share_log_->append(ShareRecord::kFragment, bytes.data(), bytes.size());
  }
  share_pending_.clear();
}

void ShareSession::announce_files() {
  open_share_log();
  share_log_->append(ShareRecord::kList, nullptr, 0);
  // The readers list the directory now anyway (an epoch, H5Dclose): past a small size
  // the log restarts, so what epochs committed does not stay in it.
  if (share_log_->size() > kRestartAfterList) share_log_->restart();
}

void ShareSession::announce_shared(const std::vector<std::string>& names) {
  open_share_log();
  std::string payload;
  for (const std::string& n : names) payload += (payload.empty() ? "" : "\n") + n;
  share_log_->append(ShareRecord::kShared, reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
  // Readers open just the named files after a kShared; a restart costs each of them a
  // listing, so only a full log restarts here (share_own sends a write to a file then).
  if (share_log_->size() >= a_.opts_.share_log_bytes) share_log_->restart();
}

bool ShareSession::poll_share_logs(std::vector<std::shared_ptr<Fragment>>* fresh,
                            std::vector<std::shared_ptr<Fragment>>* retired) {
  if (peers_.size() != a_.opts_.share_ranks) peers_.resize(a_.opts_.share_ranks);
  bool list = false;
  std::vector<ShareLogReader::Record> recs;
  for (uint32_t k = 0; k < peers_.size(); ++k) {
    if (k == a_.opts_.writer_rank) continue;
    const std::string path = join_path(a_.frag_dir_, share_log_name(k));
    recs.clear();
    peers_[k].log.poll(a_.env(), path, &recs);
    for (auto& rec : recs) {
      if (rec.kind != ShareRecord::kFragment) {
        // Everything the log showed so far is in files now (or was discarded with a
        // closed array).
        retired->insert(retired->end(), peers_[k].frags.begin(), peers_[k].frags.end());
        peers_[k].frags.clear();
        if (rec.kind != ShareRecord::kShared) {
          list = true;  // the listing finds the published files
          continue;
        }
        // The files just shared: opened by name, no listing.
        const std::string names(rec.payload.begin(), rec.payload.end());
        for (size_t at = 0; at < names.size() && !list;) {
          size_t end = names.find('\n', at);
          if (end == std::string::npos) end = names.size();
          const std::string name = names.substr(at, end - at);
          at = end + 1;
          FragmentId id;
          if (!parse_shared_name(name, &id) || id.rank != k)
            throw_error(Errc::kCorrupt, "share log '" + path + "', record at byte " + std::to_string(rec.offset) +
                                            ": '" + name + "' is not a shared fragment of rank " + std::to_string(k));
          const std::string fpath = join_path(a_.frag_dir_, name);
          if (a_.frags_.live().find(fpath)) continue;
          std::shared_ptr<Fragment> f;
          try {
            f = Fragment::open(fpath, a_.ctx_);
          } catch (const Error& e) {
            if (e.code() != Errc::kNotFound) throw;
            list = true;  // published (renamed) since: the listing finds it
            break;
          }
          if (f->meta().id != id)
            throw_error(Errc::kCorrupt, "fragment '" + fpath + "': id in footer differs from file name");
          fresh->push_back(f);
        }
        continue;
      }
      auto bytes = std::make_shared<const std::vector<uint8_t>>(std::move(rec.payload));
      auto f = Fragment::open_inline("share log '" + path + "', record at byte " + std::to_string(rec.offset), bytes,
                                     a_.ctx_);
      if (f->meta().id.rank != k || f->meta().rank != static_cast<uint32_t>(a_.schema_.rank()) ||
          f->meta().elem_size != a_.schema_.elem_size)
        throw_error(Errc::kCorrupt, f->path() + ": not a fragment of rank " + std::to_string(k) + " for this array");
      peers_[k].frags.push_back(f);
      fresh->push_back(f);
    }
  }
  return list;
}

void ShareSession::pick_up_shared(bool list) {
  std::vector<std::shared_ptr<Fragment>> fresh, retired;
  if (poll_share_logs(&fresh, &retired)) list = true;
  if (list) {
    std::set<FragmentId> before;
    for (auto& f : a_.frags_.live()) before.insert(f->meta().id);
    // A catalog-bound array (created by a serial writer) gets a fragment directory when
    // a rank first writes a file into it.
    a_.store_->refresh(/*records=*/false);
    a_.frags_.load();  // lists the records of peers_ too
    fresh.clear();
    for (auto& f : a_.frags_.live())
      if (f->meta().id.rank != a_.opts_.writer_rank && !before.count(f->meta().id)) fresh.push_back(f);
  } else if (!fresh.empty() || !retired.empty()) {
    FragmentList all;
    all.reserve(a_.frags_.live().size() + fresh.size());
    std::set<const Fragment*> gone;
    for (auto& f : retired) gone.insert(f.get());
    for (auto& f : a_.frags_.live())
      if (!gone.count(f.get())) all.push_back(f);
    all.insert(all.end(), fresh.begin(), fresh.end());
    for (auto& f : fresh) a_.last_ts_ = std::max(a_.last_ts_, f->meta().id.ts);
    a_.frags_.assign(std::move(all));
  }
  note_foreign(fresh);
}

void ShareSession::note_foreign(const std::vector<std::shared_ptr<Fragment>>& fresh) {
  if (!run_ts_ && !run_bounds_.any) return;
  for (auto& f : fresh) {
    const FragmentMeta& m = f->meta();
    if (!m.has_domain || (run_bounds_.any && m.domain.intersects(run_bounds_.box)) || fence_.size() >= kMaxFence) {
      end_share_run();
      return;
    }
    fence_.push_back(m.domain);
  }
}

void ShareSession::close_share_logs() noexcept {
  if (share_log_) (void)guard([&] { share_log_->close_and_remove(); });
  share_log_.reset();
  peers_.clear();
}

}  // namespace tessera
