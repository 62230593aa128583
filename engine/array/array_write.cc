// array_write.cc — Array's public write calls: each takes the array's mutex, runs the
// write path (write_path.h) under it, and throttles with it released; the write budget's
// background flush of this array's buffer (flush_in_background) and settle.
#include "engine/array/array.h"

#include "engine/fragment/fragment_writer.h"

namespace tessera {

Status Array::write(const Selection& sel, const void* src, const uint64_t* src_strides) {
  std::unique_lock<std::mutex> g(mu_);
  return write_.throttle(guard([&] { write_.write(sel, src, src_strides); }), &g);
}

Status Array::write_boxes(const std::vector<Box>& boxes, const void* src) {
  std::unique_lock<std::mutex> g(mu_);
  return write_.throttle(guard([&] { write_.write_boxes(boxes, src); }), &g);
}

Status Array::write_points(const uint64_t* coords, size_t n, const void* values) {
  std::unique_lock<std::mutex> g(mu_);
  return write_.throttle(guard([&] { write_.write_points(coords, n, values); }), &g);
}

Status Array::write_points(std::vector<uint64_t>&& coords, const void* values) {
  std::unique_lock<std::mutex> g(mu_);
  return write_.throttle(guard([&] { write_.write_points(std::move(coords), values); }), &g);
}

void Array::settle() { ctx_->budget().wait_idle(this); }

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
      if (!writable_ || compact_ || (write_.buffer_->empty() && write_.blobs_->empty()) || write_.inflight_) return;
      if (schema_.var || write_.buffer_->bytes() + write_.blobs_->bytes() < kBackgroundMinBytes) {
        write_.spill();
        return;
      }
      // A file is coming: the directory first, under the lock (make_writer's before_file
      // would create it from this thread without it).
      if (!store_->dir_exists()) store_->ensure_dir(opts_.durable_writes, schema_.var);
      write_.close_direct();  // nothing may be appended to an older fragment after this swap
      auto fresh = std::make_unique<WriteBuffer>(schema_);
      w = make_writer(share_.spill_id());  // older than anything written after the swap
      if (write_.buffer_->scattered() && write_.blobs_->empty()) w->set_values_pipeline(fast_variant(schema_.filters));
      w->expect_sparse_cells(write_.buffer_->cells());
      buf = std::move(write_.buffer_);
      write_.buffer_ = std::move(fresh);
      blobs = std::move(write_.blobs_);
      write_.blobs_ = std::make_unique<BlobBuffer>(schema_.tile_extent, &ctx_->blob_memory());
      write_.inflight_ = true;
      write_.inflight_bytes_ = buf->bytes() + blobs->bytes();
    });
    if (!st.ok() && write_.bg_error_.ok()) write_.bg_error_ = st;
    write_.report_bytes();
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
    write_.inflight_bounds_ = std::move(bounds);
    write_.inflight_cv_.notify_all();
  }
  Status st = guard([&] { write_.fill_spill(*buf, *blobs, *w); });
  std::lock_guard<std::mutex> g(mu_);
  if (st.ok()) st = guard([&] { pub_.complete(std::move(w)); });
  if (!st.ok() && write_.bg_error_.ok()) write_.bg_error_ = st;
  w.reset();  // a failed writer removes its temporary file
  buf.reset();
  blobs.reset();
  write_.inflight_ = false;
  write_.inflight_bytes_ = 0;
  write_.inflight_bounds_ = BoundingBox();
  write_.report_bytes();
  write_.inflight_cv_.notify_all();
}

}  // namespace tessera

