// array_index.cc — Array's value indexes and query terms (docs/queries.md).
//
// An index belongs to one file fragment and lives beside it (index_format.h): a new
// fragment adds its own index and never touches another's, a consolidation indexes its
// result (when its inputs had indexes, or index_on_write) and removes its inputs'
// indexes with their files, and a query answers every fragment that has an index from
// it and scans the rest.  Inline fragments (at most 64 KiB, in the catalog) are always
// scanned: their index would cost more than reading them.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "engine/array/array.h"
#include "engine/array/array_files.h"
#include "engine/util/file_io.h"
#include "engine/index/index_format.h"

namespace tessera {

namespace {

// Whether `f` needs (re)building: no index file, or one that does not open cleanly.
bool needs_index(const std::string& dir, const Fragment& f, NumType type, bool big_endian) {
  try {
    return IndexFile::open(dir, f, type, big_endian) == nullptr;
  } catch (const Error& e) {
    if (e.code() == Errc::kCorrupt) return true;  // replaced by a fresh build
    throw;
  }
}

}  // namespace

Status Array::build_index(const IndexOptions& o, IndexBuild* b) {
  std::vector<std::shared_ptr<Fragment>> todo;
  Schema schema;
  Status st;
  {
    std::lock_guard<std::mutex> g(mu_);
    st = guard([&] {
      o.validate();
      const NumType type = num_type(schema_, "array '" + dir_ + "'");
      if (compact_) return;  // one record of at most 64 KiB: always scanned
      write_.close_direct();
      finish_parked();
      if (writable_ && !b->published_only) {
        write_.spill();  // what the buffer and the blobs hold goes into a fragment first
        finish_parked();
      }
      schema = schema_;
      size_t i = 0;
      for (const auto& f : frags_.live()) {
        if (f->is_inline()) continue;
        if (b->published_only && std::any_of(pub_.unpublished_.begin(), pub_.unpublished_.end(),
                                             [&](const auto& u) { return u.first == f; }))
          continue;
        if (i++ % b->parts != b->part) continue;
        if (b->rebuild || needs_index(dir_, *f, type, schema_.big_endian)) todo.push_back(f);
      }
    });
  }
  if (!st.ok()) return st;
  // Without the lock: fragments are immutable and kept open by `todo`, so writers and
  // readers go on while indexes are built (a fragment consolidated away meanwhile leaves
  // an orphan index file, removed by the next consolidation or drop_index).
  // Two fragments are built at once by driver threads sharing the filter pool, so one's
  // serial steps (sampling, writing its file) overlap the other's binning; each index is
  // then synced and renamed on the I/O pool.  Progress is reported on this thread.
  const size_t drivers = std::min<size_t>(todo.size(), ctx_->filters().size() > 1 ? 2 : 1);
  uint64_t total = 0;
  for (const auto& f : todo) total += index_positions(f->meta());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint64_t> done_of(todo.size(), 0);
  size_t next = 0, running = drivers;
  bool stop = false;
  Status first_error;
  std::deque<std::future<void>> publishing;
  auto drive = [&] {
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> g(mu);
        if (stop || next == todo.size()) break;
        i = next++;
      }
      Status st = guard([&] {
        const WrittenIndex w = write_fragment_index(schema, *todo[i], dir_, o, &ctx_->filters(), [&](uint64_t cells) {
          std::lock_guard<std::mutex> g(mu);
          if (stop) throw_error(Errc::kInvalidArgument, "index build stopped");
          done_of[i] = cells;
          cv.notify_all();
        });
        auto pub = ctx_->io().submit([w] { publish_index(w); });
        std::lock_guard<std::mutex> g(mu);
        publishing.push_back(std::move(pub));
        done_of[i] = index_positions(todo[i]->meta());
        b->bytes += w.bytes;
        ++b->built;
        b->cells += done_of[i];
      });
      std::lock_guard<std::mutex> g(mu);
      if (!st.ok() && first_error.ok()) first_error = st;
      if (!st.ok()) stop = true;
      cv.notify_all();
    }
    std::lock_guard<std::mutex> g(mu);
    --running;
    cv.notify_all();
  };
  if (b->progress) {  // before any work: a caller may stop the build at once
    Status st = guard([&] { b->progress(0, total); });
    if (!st.ok()) return st;
  }
  std::vector<std::thread> threads;
  for (size_t k = 0; k < drivers; ++k) threads.emplace_back(drive);
  Status reported = guard([&] {
    std::unique_lock<std::mutex> g(mu);
    uint64_t shown = UINT64_MAX;
    for (;;) {
      cv.wait_for(g, std::chrono::milliseconds(100));
      uint64_t done = 0;
      for (uint64_t d : done_of) done += d;
      if (b->progress && done != shown && !stop) {
        shown = done;
        g.unlock();
        try {
          b->progress(done, total);  // may throw: the caller stops the build
        } catch (...) {
          g.lock();
          stop = true;
          throw;
        }
        g.lock();
      }
      if (running == 0) break;
    }
  });
  for (auto& t : threads) t.join();
  if (reported.ok() && first_error.ok() && b->progress) reported = guard([&] { b->progress(total, total); });
  Status published = guard([&] {
    for (auto& p : publishing) p.wait();
    for (auto& p : publishing) p.get();  // the first failure, if any
  });
  if (!reported.ok()) return reported;
  if (!first_error.ok()) return first_error;
  return published;
}

Status Array::drop_index() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    const std::string idir = index_dir(dir_);
    if (!store_->dir_exists() || !is_directory(env(), idir)) return;
    for (const std::string& name : list_dir(env(), idir)) remove_file(env(), join_path(idir, name));
    sync_dir(env(), idir);
  });
}

Status Array::index_info(IndexInfo* out) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    *out = IndexInfo();
    if (compact_) return;
    const std::string idir = index_dir(dir_);
    for (const auto& f : frags_.live()) {
      if (f->is_inline()) {
        ++out->inline_fragments;
        continue;
      }
      ++out->fragments;
      out->data_bytes += f->file_size();
      const std::string p = index_path(dir_, f->meta().id);
      if (path_exists(env(), p)) {
        ++out->indexed;
        out->indexed_data_bytes += f->file_size();
        out->index_bytes += File::open_read(env(), p).size();
      } else {
        out->unindexed_cells += index_positions(f->meta());
      }
    }
  });
}

Status Array::evaluate(const TermQuery& q, TermAnswer* out) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    const std::string what = "array '" + dir_ + "'";
    if (compact_) {  // at most 64 KiB: read the region and compare
      check_region(schema_, what, q.region);
      Selection sel = Selection::from_hyperslab(q.region.start, q.region.stride, q.region.count,
                                                Coords(q.region.start.size(), 1));
      std::vector<uint8_t> values(q.region.cells() * schema_.elem_size);
      uint64_t dstride[kMaxRank];
      sel.dense_strides(dstride);
      if (!values.empty()) compact_->read(sel, values.data(), dstride);
      evaluate_values(schema_, what, q, values.data(), out);
      return;
    }
    write_.close_direct();
    finish_parked();
    if (!write_.blobs_->empty()) write_.spill();  // ownership reads fragments and cells, not blobs
    write_.buffer_->normalize();
    ReadView view{frags_.live().snapshot(), write_.buffer_.get(), ctx_.get(), write_.blobs_.get()};
    evaluate_term(schema_, view, dir_, what, q, out);
  });
}

void Array::index_published(const std::vector<std::shared_ptr<Fragment>>& published, bool inputs_indexed) {
  if (!opts_.index_on_write && !inputs_indexed) return;
  try {
    num_type(schema_, dir_);
  } catch (const Error&) {
    return;  // not numbers: nothing to index
  }
  for (const auto& f : published) {
    if (f->is_inline()) continue;
    try {
      build_fragment_index(schema_, *f, dir_, opts_.index, &ctx_->filters());
    } catch (const Error& e) {
      throw_error(e.code(), "fragment '" + f->path() + "' is written, but building its value index failed: " +
                                e.what());
    }
  }
}

void Array::remove_index_of(const FragmentId& id) {
  if (store_->dir_exists()) remove_file(env(), index_path(dir_, id));
}

}  // namespace tessera
