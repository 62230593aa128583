// array_bound.cc — Array's storage inside a container's catalog (CatalogBinding, array.h):
// the schema and small fragments as catalog records, the array directory created only
// when a file is first needed, and compact arrays (all cells in one record).
#include "engine/array.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "engine/array_files.h"
#include "engine/bytes.h"
#include "engine/checksum.h"
#include "engine/file_io.h"
#include "engine/fragment_writer.h"

namespace tessera {

using namespace array_files;

std::string Array::schema_record(const Schema& schema) {
  schema.validate();
  std::vector<uint8_t> b = schema_file_bytes(schema, FragmentId{});
  return std::string(b.begin(), b.end());
}

Status Array::open_bound(const std::string& dir, CatalogBinding binding, bool writable, const ArrayOptions& opts,
                         std::unique_ptr<Array>* out, const Schema* known) {
  std::unique_ptr<Array> a(new Array());
  a->dir_ = dir;
  a->frag_dir_ = join_path(dir, kFragDir);
  a->opts_ = opts;
  a->ctx_ = opts.context ? opts.context : Context::process();
  a->cat_ = std::move(binding);
  Status st = guard([&] { a->open_impl(writable, known); });
  if (st.ok()) *out = std::move(a);
  return st;
}

Schema Array::load_schema() {
  const std::string key = cat_->prefix + "schema";
  auto v = cat_->catalog->get(key);
  if (!v) throw_error(Errc::kNotFound, "array '" + dir_ + "': no schema record '" + key + "' in the catalog");
  std::vector<uint8_t> b(v->begin(), v->end());
  return parse_schema_file(b, "array schema record '" + key + "'", &extent_id_);
}

// The schema record goes with a batch of its own; durable = also sync the catalog.
void Array::put_schema(bool durable) {
  std::vector<uint8_t> b = schema_file_bytes(schema_, extent_id_);
  CatalogBatch batch;
  batch.put(cat_->prefix + "schema", std::string(b.begin(), b.end()));
  cat_->catalog->commit(batch);
  if (durable) cat_->catalog->sync();
}

std::string Array::frag_key(const FragmentId& id) const { return cat_->prefix + "frag/" + id.name(); }

std::string Array::inline_label(const std::string& key) const {
  return cat_->catalog->log_path() + " record " + key;
}

uint64_t Array::inline_limit() const {
  if (!cat_ || !writable_ || opts_.inline_fragment_bytes == 0) return 0;
  uint64_t room = opts_.inline_array_bytes > inline_bytes_ ? opts_.inline_array_bytes - inline_bytes_ : 0;
  uint64_t used = cat_->budget ? cat_->budget->used.load() : 0;
  uint64_t cap = cat_->budget ? cat_->budget->cap : UINT64_MAX;
  room = std::min(room, cap > used ? cap - used : 0);
  return std::min(room, opts_.inline_fragment_bytes);
}

std::unique_ptr<FragmentWriter> Array::make_writer(FragmentId id) {
  if (cat_ && !dir_exists_)
    return std::make_unique<FragmentWriter>(*ctx_, frag_dir_, id, schema_, inline_limit(),
                                            [this] { ensure_dir(opts_.durable_writes); });
  return std::make_unique<FragmentWriter>(*ctx_, frag_dir_, id, schema_, inline_limit());
}

// Creates <dir>/frag (and heap/).  Deferred mode leaves the new entries to the flush's
// file-system sync; a durable write (or a heap, published at once) syncs the chain now.
void Array::ensure_dir(bool durable) {
  if (dir_exists_) return;
  make_dir(dir_);  // the container's arrays/ directory exists
  make_dir(frag_dir_);
  if (schema_.var) make_dir(heap_dir_);
  if (durable) {
    sync_dir(dir_);
    sync_dir(parent_dir(dir_));
  }
  dir_exists_ = true;
  if (cat_->dir_created) cat_->dir_created();
}

void Array::release_inline(const Fragment& f) {
  uint64_t n = f.file_size();
  inline_bytes_ -= std::min(inline_bytes_, n);
  if (cat_->budget) cat_->budget->used -= std::min<uint64_t>(cat_->budget->used.load(), n);
}

// Each MPI rank would hold its own copy of the cells and only rank 0's catalog persists:
// writes from other ranks would be lost, so a compact array is read-only in a parallel
// file (it can only come from a serial writer: parallel files never create one).
void Array::require_compact_writable() const {
  if (opts_.collective)
    throw_error(Errc::kUnsupported, "array '" + dir_ + "' is a compact array written serially: it cannot be written "
                                    "in a parallel (MPI-IO) file");
}

void Array::write_compact_points(const uint64_t* coords, size_t n, const void* values) {
  require_compact_writable();
  compact_cells().write_points(coords, n, static_cast<const uint8_t*>(values));
  compact_dirty_ = compact_dirty_ || n > 0;
  if (opts_.durable_writes && n > 0) publish_compact(false, nullptr);
}

CompactCells& Array::compact_cells() {
  if (!compact_loaded_) {
    const std::string key = cat_->prefix + "cells";
    if (auto v = cat_->catalog->get(key)) compact_->decode(*v, inline_label(key));
    compact_loaded_ = true;
  }
  return *compact_;
}

// The cells record goes into the caller's batch (the flush's one catalog batch) or is
// committed now (and synced unless the caller syncs).  A dataset deleted meanwhile has no
// schema record: its cells must not come back.  The first record of an array counts
// against the container's inline budget (Container::create_array checked the room).
void Array::publish_compact(bool synced, CatalogBatch* into) {
  if (!compact_dirty_) return;
  const std::string key = cat_->prefix + "cells";
  if (!cat_->catalog->contains(cat_->prefix + "schema")) {
    compact_dirty_ = false;
    return;
  }
  if (cat_->budget && !cat_->catalog->contains(key)) cat_->budget->used += compact_->bytes();
  if (into) {
    into->put(key, compact_->encode());
  } else {
    CatalogBatch b;
    b.put(key, compact_->encode());
    cat_->catalog->commit(std::move(b));
    if (!synced) cat_->catalog->sync();
  }
  compact_dirty_ = false;
}

// A finished in-memory fragment: durable mode commits its record (and syncs the catalog)
// now; deferred mode publishes it with the flush's catalog batch.
void Array::add_inline(std::vector<uint8_t> bytes) {
  auto sp = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  auto f = Fragment::open_inline("(unpublished inline fragment)", sp, ctx_);
  const std::string key = frag_key(f->meta().id);
  f->set_path(inline_label(key));
  inline_bytes_ += sp->size();
  if (cat_->budget) cat_->budget->used += sp->size();
  if (opts_.durable_writes) {
    CatalogBatch b;
    b.put(key, std::string(sp->begin(), sp->end()));
    cat_->catalog->commit(b);
    cat_->catalog->sync();
  } else {
    unpublished_inline_.push_back(f);
  }
  add_fragment(f, {});
}

// One flush batch is published atomically either by the catalog batch (inline records)
// or by the file journal; a batch holding both kinds would need the two to commit as one,
// so its inline fragments are written out as files and join the journal (rare: an array
// that got both a large and a small fragment since the last flush).
void Array::materialize_inline() {
  if (unpublished_inline_.empty() || unpublished_.empty()) return;
  ensure_dir(false);
  for (auto& f : unpublished_inline_) {
    auto bytes = f->inline_bytes();
    const std::string final_path = join_path(frag_dir_, FragmentWriter::file_name(f->meta().id));
    const std::string tmp = join_path(frag_dir_, "." + f->meta().id.name() + ".inline.tmp");
    File out = File::open_rw(tmp, /*create=*/true);
    out.truncate(0);
    out.pwrite_all(bytes->data(), bytes->size(), 0);
    out.close();
    auto ff = Fragment::open(tmp, ctx_);
    release_inline(*f);
    frags_.swap(f, ff);
    unpublished_.push_back({ff, final_path});
  }
  unpublished_inline_.clear();
}

}  // namespace tessera
