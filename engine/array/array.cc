// array.cc — Array: create and open, extent changes, reads (fixed and variable-length
// cells), variable-length writes.  The rest of the facade: array_write.cc (write calls,
// background flush), array_listing.cc (fragment set), array_publish.cc (flush, refresh,
// MPI), array_consolidate.cc, with the WritePath, Publisher, ShareSession and
// Consolidation components.
#include "engine/array/array.h"

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
  write_.buffer_ = std::make_unique<WriteBuffer>(schema_);
  write_.blobs_ = std::make_unique<BlobBuffer>(schema_.tile_extent, &ctx_->blob_memory());
  heap_dir_ = join_path(dir_, kHeapDir);
  heaps_ = std::make_unique<HeapReader>(env(), heap_dir_);
  // A shadow rank never recovers: rank 0 recovered every array at file open.  A view as
  // of a past commit has no unfinished publish to see.
  if (store_->dir_exists() && !opts_.shadow && !opts_.as_of_ts) {
    pub_.recover_journal();
    // A reader takes the stored schema again after the journals, as a refresh does: the
    // one read above may be older than an epoch whose member removed its journal (after
    // it wrote the new schema) meanwhile — that epoch's files with the previous extent
    // (PublishVisibility.AReaderOpeningDuringAnEpochsRenamesTakesItsExtent).
    if (!writable_) take_stored_schema();
  }
  frags_.load();
  if (apply_extent_commits() && writable_ && !opts_.shadow) store_->store_schema(schema_, extent_id_, true);  // repair
  if (share_logging()) share_.pick_up_shared(false);  // what other ranks' share logs hold
  auto_.opened();
}

bool Array::apply_extent_commits() {
  // A crash between publishing an extent change's fill fragment and rewriting the schema
  // leaves the fragment newer than the schema's record: the fragment is the commit.
  const Fragment* newest = nullptr;
  for (auto& f : frags_.live())
    if (f->meta().sets_extent && extent_id_ < f->meta().id) newest = f.get();
  if (!newest) return false;
  schema_.extent = newest->meta().extent;
  extent_id_ = newest->meta().id;
  write_.buffer_->reset_layout(schema_);
  return true;
}

Array::~Array() {
  if (ctx_) ctx_->budget().forget(this);  // no background flush runs or starts after this
  if (ctx_) {
    // A merge under way gives up (the next writer does it again); none starts after this.
    auto_.cancel_ = true;
    ctx_->merges().forget(this);
  }
  if (writable_) {
    if (opts_.collective) {  // only an epoch commit may publish
      std::lock_guard<std::mutex> g(mu_);
      pub_.discard_unpublished();
    } else {
      (void)flush();
      // Retired files whose records' removal this flush made durable go now rather than
      // at the next writer's open.
      std::lock_guard<std::mutex> g(mu_);
      if (auto_.enabled()) (void)guard([&] { auto_.unlink_durable(); });
    }
  }
  share_.close_share_logs();
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
  share_.note_unlogged_write();
}

template <class F>
void Array::read_listing_again(F&& read) {
  for (int attempt = 0;; ++attempt) {
    try {
      read();
      return;
    } catch (const FileGone&) {
      // Another process's consolidation or vacuum removed a fragment file of this
      // reader's listing after the file cache closed its descriptor: its replacement
      // is published, so a new listing reads the same cells (and any newer commit).
      if (writable_ || attempt >= kMaxRelistings) throw;
      refresh_locked();
    }
  }
}

void Array::require_var(bool var) const {
  if (schema_.var != var)
    throw_error(Errc::kInvalidArgument, var ? "array holds fixed-size cells: use write/read"
                                            : "array holds variable-length cells: use write_var/read_var");
}

Status Array::read(const Selection& sel, void* dst, const uint64_t* dst_strides) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { read_listing_again([&] {
    require_var(false);
    check_selection(sel);
    if (compact_) {
      uint64_t dstride[kMaxRank];
      if (dst_strides) std::copy(dst_strides, dst_strides + schema_.rank(), dstride);
      else sel.dense_strides(dstride);
      return compact_->read(sel, static_cast<uint8_t*>(dst), dstride);
    }
    finish_parked_for(sel.empty() ? Box() : sel.bbox());
    write_.buffer_->normalize();
    ReadView view{frags_.live().snapshot(), write_.buffer_.get(), ctx_.get(), write_.blobs_.get()};
    ReadPlanner(schema_, view).read(sel, static_cast<uint8_t*>(dst), dst_strides);
  }); });
}

Status Array::read_points(const uint64_t* coords, size_t n, void* dst) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { read_listing_again([&] {
    require_var(false);
    check_points(coords, n);
    if (compact_) return compact_->read_points(coords, n, static_cast<uint8_t*>(dst));
    finish_parked_for(points_bounds(coords, n));
    write_.buffer_->normalize();
    ReadView view{frags_.live().snapshot(), write_.buffer_.get(), ctx_.get(), write_.blobs_.get()};
    ReadPlanner(schema_, view).read_points(coords, n, static_cast<uint8_t*>(dst));
  }); });
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
  if (!write_.pending_heap_) write_.pending_heap_ = std::make_unique<HeapBuilder>(next_id());
  return write_.pending_heap_.get();
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
      write_.write_dense(sel, desc.data(), sstride);
    } else {
      std::vector<uint8_t> desc = make_descriptors(pending_heap(), n, lengths, data);
      write_.buffer_cells(sel, desc.data(), sstride);
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
    write_.buffer_->add(coords, desc.data(), n, /*scattered=*/true);
    write_.maybe_spill();
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
    heaps_->read(d, write_.pending_heap_.get(), data);
    (*lengths)[i] = data->size() - before;
  }
}

Status Array::read_var(const Selection& sel, std::vector<uint64_t>* lengths, std::vector<uint8_t>* data) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { read_listing_again([&] {
    require_var(true);
    check_selection(sel);
    std::vector<uint8_t> desc(sel.empty() ? 0 : sel.cells() * kVarDescriptorSize);
    finish_parked();
    write_.buffer_->normalize();
    ReadView view{frags_.live().snapshot(), write_.buffer_.get(), ctx_.get(), write_.blobs_.get()};
    if (!desc.empty()) ReadPlanner(schema_, view).read(sel, desc.data(), nullptr);
    resolve_descriptors(desc, lengths, data);
  }); });
}

Status Array::read_points_var(const uint64_t* coords, size_t n, std::vector<uint64_t>* lengths,
                              std::vector<uint8_t>* data) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] { read_listing_again([&] {
    require_var(true);
    check_points(coords, n);
    std::vector<uint8_t> desc(n * kVarDescriptorSize);
    finish_parked();
    write_.buffer_->normalize();
    ReadView view{frags_.live().snapshot(), write_.buffer_.get(), ctx_.get(), write_.blobs_.get()};
    ReadPlanner(schema_, view).read_points(coords, n, desc.data());
    resolve_descriptors(desc, lengths, data);
  }); });
}

Status Array::set_extent(const Coords& extent) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_writable();
    Schema next = schema_;
    if (extent.size() != next.extent.size()) throw_error(Errc::kInvalidArgument, "set_extent: rank differs");
    if (compact_) return compact_->set_extent(schema_.extent, extent);
    finish_parked();  // the fill fragments must be newer than every write before them
    if (!write_.blobs_->empty()) write_.spill();  // blobs the change cuts must be in fragments the fill hides
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
      if (new_dom.cells() > 0) write_.buffer_->erase_outside(new_dom);
      else write_.buffer_->clear();
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
        for (auto& f : frags_.live()) {
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
        pub_.complete(std::move(w), /*batch=*/opts_.durable_writes && store_->publishes_with_catalog());
        extent_id = id;
      }
    }
    schema_ = next;
    extent_id_ = extent_id;
    write_.buffer_->reset_layout(schema_);
    // Durable mode: the schema follows its fill fragment at once.  Deferred mode: at
    // flush, after the fragments are published.
    if (opts_.shadow) return;
    if (opts_.durable_writes && store_->publishes_with_catalog() &&
        (!pub_.unpublished_.empty() || !pub_.unpublished_inline_.empty())) {
      pub_.schema_dirty_ = true;
      materialize_inline();
      pub_.stage_publish(false);
      pub_.finish_publish(false);
    } else if (opts_.durable_writes) {
      store_->store_schema(schema_, extent_id_, true);
    } else {
      pub_.schema_dirty_ = true;
    }
  });
}

size_t Array::buffered_cells() const {
  std::lock_guard<std::mutex> g(mu_);
  if (compact_) return 0;  // writes go straight into its cells
  return write_.buffer_->cells() + write_.blobs_->cells();
}

}  // namespace tessera
