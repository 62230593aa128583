#include "engine/array.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include "engine/bytes.h"
#include "engine/checksum.h"
#include "engine/file_io.h"
#include "engine/fragment_writer.h"
#include "engine/options.h"
#include "engine/read_planner.h"
#include "engine/strided_copy.h"

namespace tessera {

namespace {

const char kSchemaFile[] = "schema";
const char kFragDir[] = "frag";
const char kHeapDir[] = "heap";
const char kJournalFile[] = "publish.journal";
// Parallel commits: one journal per writer rank, "publish-r<rank>.journal" (docs/format.md).
const char kRankJournalPrefix[] = "publish-r";
const char kJournalSuffix[] = ".journal";

bool is_rank_journal(const std::string& name) {
  const size_t p = sizeof kRankJournalPrefix - 1, q = sizeof kJournalSuffix - 1;
  return name.size() > p + q && name.compare(0, p, kRankJournalPrefix) == 0 &&
         name.compare(name.size() - q, q, kJournalSuffix) == 0 &&
         name.find_first_not_of("0123456789", p) == name.size() - q;
}

// The schema file: u32 schema length, the schema, the id of the extent change it
// records (u64 ts, u32 rank, u32 seq, u32 gen), u64 XXH3 of everything before.
std::vector<uint8_t> schema_file_bytes(const Schema& s, const FragmentId& extent_id) {
  std::vector<uint8_t> body = s.serialize();
  ByteWriter w;
  w.u32(static_cast<uint32_t>(body.size()));
  w.bytes(body.data(), body.size());
  w.u64(extent_id.ts);
  w.u32(extent_id.rank);
  w.u32(extent_id.seq);
  w.u32(extent_id.gen);
  w.u64(checksum64(w.buf().data(), w.size()));
  return std::move(w.buf());
}

Schema parse_schema_file(const std::vector<uint8_t>& b, const std::string& what, FragmentId* extent_id) {
  if (b.size() < 8) throw_error(Errc::kCorrupt, what + ": file truncated");
  uint64_t ck;
  std::memcpy(&ck, b.data() + b.size() - 8, 8);
  if (checksum64(b.data(), b.size() - 8) != ck) throw_error(Errc::kCorrupt, what + ": checksum mismatch");
  ByteReader r(b.data(), b.size() - 8, what);
  uint32_t n = r.u32();
  if (n > r.remaining()) r.fail("schema truncated");
  Schema s = Schema::deserialize(b.data() + 4, n, what);
  std::vector<uint8_t> skip(n);
  r.bytes(skip.data(), n);
  extent_id->ts = r.u64();
  extent_id->rank = r.u32();
  extent_id->seq = r.u32();
  extent_id->gen = r.u32();
  if (!r.done()) r.fail("trailing bytes");
  return s;
}

// fresh = true: the array is new and referenced by nothing yet, so the file is written in
// place (no temporary file to allocate) and not synced; the caller syncs later.
void write_schema(const std::string& dir, const Schema& s, const FragmentId& extent_id, bool durable = true,
                  bool fresh = false) {
  std::vector<uint8_t> b = schema_file_bytes(s, extent_id);
  if (fresh) {
    File f = File::open_rw(join_path(dir, kSchemaFile), /*create=*/true, /*exclusive=*/true);
    f.pwrite_all(b.data(), b.size(), 0);
    f.close();
    return;
  }
  write_file_atomic(join_path(dir, kSchemaFile), b.data(), b.size(), durable);
}

Schema read_schema(const std::string& dir, FragmentId* extent_id) {
  std::string path = join_path(dir, kSchemaFile);
  return parse_schema_file(read_file(path), "array schema '" + path + "'", extent_id);
}

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
  a->cat_ = std::move(binding);
  Status st = guard([&] { a->open_impl(writable, known); });
  if (st.ok()) *out = std::move(a);
  return st;
}

Status Array::create(const std::string& dir, const Schema& schema, bool durable) {
  return guard([&] {
    schema.validate();
    if (path_exists(dir)) throw_errno("create array", dir, EEXIST);
    make_dir(dir);  // the parent exists (a container's arrays/ directory, or the caller's)
    make_dir(join_path(dir, kFragDir));
    if (schema.var) make_dir(join_path(dir, kHeapDir));
    write_schema(dir, schema, FragmentId{}, durable, /*fresh=*/!durable);
    if (durable) {
      sync_dir(dir);
      sync_dir(parent_dir(dir));
    }
  });
}

Status Array::open(const std::string& dir, bool writable, const ArrayOptions& opts,
                   std::unique_ptr<Array>* out) {
  std::unique_ptr<Array> a(new Array());
  a->dir_ = dir;
  a->frag_dir_ = join_path(dir, kFragDir);
  a->opts_ = opts;
  Status st = guard([&] { a->open_impl(writable); });
  if (st.ok()) *out = std::move(a);
  return st;
}

void Array::open_impl(bool writable, const Schema* known) {
  raise_fd_limit();
  writable_ = writable;
  if (cat_) {
    if (writable_ && !cat_->catalog->writable())
      throw_error(Errc::kInvalidArgument, "array '" + dir_ + "': its catalog is open read-only");
    schema_ = known ? *known : load_schema();
    // Created on first need (a file fragment or heap).
    dir_exists_ = !cat_->dir_absent && is_directory(frag_dir_);
  } else {
    if (!is_directory(dir_)) throw_errno("open array", dir_, ENOENT);
    schema_ = read_schema(dir_, &extent_id_);
  }
  buffer_ = std::make_unique<WriteBuffer>(schema_);
  heap_dir_ = join_path(dir_, kHeapDir);
  heaps_ = std::make_unique<HeapReader>(heap_dir_);
  if (schema_.compact) {
    // No fragments, journals or directory: the cells are one catalog record.
    if (!cat_) throw_error(Errc::kCorrupt, "array '" + dir_ + "': a compact array outside a catalog");
    compact_ = std::make_unique<CompactCells>(schema_);
    return;
  }
  // A shadow rank never recovers: rank 0 recovered every array at file open.
  if (dir_exists_ && !opts_.shadow) recover_journal();
  load_fragments();
  if (apply_extent_commits() && writable_ && !opts_.shadow) {  // repair
    if (cat_) put_schema(false);
    else write_schema(dir_, schema_, extent_id_);
  }
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
    return std::make_unique<FragmentWriter>(frag_dir_, id, schema_, inline_limit(),
                                            [this] { ensure_dir(opts_.durable_writes); });
  return std::make_unique<FragmentWriter>(frag_dir_, id, schema_, inline_limit());
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
  auto f = Fragment::open_inline("(unpublished inline fragment)", sp);
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
    auto ff = Fragment::open(tmp);
    release_inline(*f);
    for (auto& x : frags_)
      if (x == f) x = ff;
    unpublished_.push_back({ff, final_path});
  }
  unpublished_inline_.clear();
}

bool Array::has_unsynced_files() const {
  std::lock_guard<std::mutex> g(mu_);
  return !unpublished_.empty() || (schema_dirty_ && !cat_);
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
  if (!writable_) return;
  if (opts_.collective) discard_unpublished();  // only an epoch commit may publish
  else (void)flush();
}

// Collective mode, array destroyed outside an epoch commit: what was not committed is
// dropped as a crash would drop it (temporary files removed, nothing published).
void Array::discard_unpublished() {
  std::lock_guard<std::mutex> g(mu_);
  (void)guard([&] {
    direct_.reset();  // a writer's destructor removes its temporary file
    parked_.clear();
    for (auto& u : unpublished_) remove_file(u.first->path());
    unpublished_.clear();
  });
}

void Array::load_fragments() {
  std::vector<std::shared_ptr<Fragment>> all;
  for (auto& u : unpublished_) all.push_back(u.first);  // not in the listing yet
  for (auto& f : unpublished_inline_) all.push_back(f);
  for (auto& f : recovered_) all.push_back(f);          // a read-only view of a journal
  if (cat_) {
    const std::string prefix = cat_->prefix + "frag/";
    uint64_t inline_bytes = 0;
    for (auto& [key, value] : cat_->catalog->scan(prefix)) {
      const std::string label = inline_label(key);
      FragmentId id;
      if (!FragmentId::parse(key.substr(prefix.size()), &id))
        throw_error(Errc::kCorrupt, "catalog record '" + key + "': not a fragment id");
      inline_bytes += value.size();
      auto it = std::find_if(frags_.begin(), frags_.end(), [&](auto& f) { return f->path() == label; });
      if (it != frags_.end()) {
        if (std::find(all.begin(), all.end(), *it) == all.end()) all.push_back(*it);
        continue;
      }
      auto f = Fragment::open_inline(label, std::make_shared<const std::vector<uint8_t>>(value.begin(), value.end()));
      if (f->meta().id != id) throw_error(Errc::kCorrupt, "fragment '" + label + "': id in footer differs from its key");
      if (f->meta().rank != static_cast<uint32_t>(schema_.rank()) || f->meta().elem_size != schema_.elem_size)
        throw_error(Errc::kCorrupt, "fragment '" + label + "': shape does not match the array schema");
      all.push_back(f);
    }
    for (auto& f : unpublished_inline_) inline_bytes += f->file_size();
    inline_bytes_ = inline_bytes;
  }
  std::vector<std::string> names;
  if (dir_exists_) names = list_dir(frag_dir_);
  for (const std::string& name : names) {
    if (name.size() != 47 || name.compare(43, 4, ".tfr") != 0) continue;  // temp files etc.
    FragmentId id;
    if (!FragmentId::parse(name.substr(0, 43), &id)) continue;
    std::string path = join_path(frag_dir_, name);
    auto it = std::find_if(frags_.begin(), frags_.end(), [&](auto& f) { return f->path() == path; });
    if (it != frags_.end()) {
      all.push_back(*it);
      continue;
    }
    std::shared_ptr<Fragment> f;
    try {
      f = Fragment::open(path);
    } catch (const Error& e) {
      // Consolidation may have removed it between listing and opening.
      if (e.code() == Errc::kNotFound) continue;
      throw;
    }
    if (f->meta().id != id)
      throw_error(Errc::kCorrupt, "fragment '" + path + "': id in footer differs from file name");
    if (f->meta().rank != static_cast<uint32_t>(schema_.rank()) || f->meta().elem_size != schema_.elem_size)
      throw_error(Errc::kCorrupt, "fragment '" + path + "': shape does not match the array schema");
    all.push_back(f);
  }
  // A fragment whose consolidated replacement was published is redundant (a crash can
  // leave it behind): ignore it, and remove it if we may write.
  std::set<FragmentId> replaced;
  for (auto& f : all)
    for (auto& r : f->meta().replaces) replaced.insert(r);
  std::vector<std::shared_ptr<Fragment>> live;
  CatalogBatch drop;
  for (auto& f : all) {
    if (replaced.count(f->meta().id)) {
      if (writable_ && !opts_.shadow && f->is_inline()) {
        drop.del(frag_key(f->meta().id));
        release_inline(*f);
      } else if (writable_ && !opts_.shadow) {
        remove_file(f->path());
      }
      continue;
    }
    live.push_back(f);
  }
  if (!drop.empty()) cat_->catalog->commit(drop);
  std::sort(live.begin(), live.end(), [](auto& a, auto& b) { return a->meta().id < b->meta().id; });
  for (auto& f : live) last_ts_ = std::max(last_ts_, f->meta().id.ts);
  frags_ = std::move(live);
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
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_writable();
    require_var(false);
    check_selection(sel);
    if (sel.empty()) return;
    close_direct();
    const int r = schema_.rank();
    uint64_t sstride[kMaxRank];
    if (src_strides) std::copy(src_strides, src_strides + r, sstride);
    else sel.dense_strides(sstride);
    const auto* p = static_cast<const uint8_t*>(src);
    if (compact_) {
      require_compact_writable();
      compact_cells().write(sel, p, sstride);
      compact_dirty_ = true;
      if (opts_.durable_writes) publish_compact(false, nullptr);
      return;
    }
    if (sel.is_box() && sel.cells() >= std::min(opts_.direct_cells, schema_.tile_cells())) {
      write_dense(sel, p, sstride);
    } else {
      buffer_cells(sel, p, sstride);
    }
  });
}

void Array::write_dense(const Selection& sel, const uint8_t* src, const uint64_t* sstride) {
  const Box& box = sel.bbox();
  // Buffered cells inside the box are older than this write and now overwritten.
  buffer_->erase_inside(box);
  Layout layout(schema_);
  const int r = schema_.rank();
  const size_t es = schema_.elem_size;
  auto w = make_writer(next_id());
  layout.for_each_tile(box, [&](const Coords& t) {
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
    std::vector<uint8_t> data(piece.cells() * es);
    strided_copy(r, shape, src + soff * es, sstride, data.data(), dstride, es);
    w->add_dense_tile(t.data(), piece, std::move(data));
  });
  park(std::move(w));
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

void Array::require_writable() const {
  if (!writable_) throw_error(Errc::kInvalidArgument, "array '" + dir_ + "' is open read-only");
}

void Array::require_var(bool var) const {
  if (schema_.var != var)
    throw_error(Errc::kInvalidArgument, var ? "array holds fixed-size cells: use write/read"
                                            : "array holds variable-length cells: use write_var/read_var");
}

Status Array::write_points(const uint64_t* coords, size_t n, const void* values) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_writable();
    require_var(false);
    check_points(coords, n);
    if (compact_) {
      write_compact_points(coords, n, values);
      return;
    }
    close_direct();
    buffer_->add(coords, static_cast<const uint8_t*>(values), n, /*scattered=*/true);
    maybe_spill();
  });
}

Status Array::write_points(std::vector<uint64_t>&& coords, const void* values) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_writable();
    require_var(false);
    const size_t n = coords.size() / static_cast<size_t>(std::max(1, schema_.rank()));
    check_points(coords.data(), n);
    if (compact_) {
      write_compact_points(coords.data(), n, values);
      return;
    }
    close_direct();
    buffer_->add(std::move(coords), static_cast<const uint8_t*>(values), n);
    maybe_spill();
  });
}

void Array::maybe_spill() {
  uint64_t heap = pending_heap_ ? pending_heap_->bytes().size() : 0;
  if (buffer_->bytes() + heap >= opts_.buffer_budget) spill();
}

void Array::spill() {
  // Heap bytes first: a fragment must never refer to bytes that are not durable.
  if (pending_heap_) {
    if (!pending_heap_->empty()) {
      ensure_dir(true);
      pending_heap_->publish(heap_dir_);
    }
    pending_heap_.reset();
  }
  if (buffer_->empty()) return;
  const size_t es = schema_.elem_size;
  auto w = make_writer(next_id());
  // Scattered points: an LSM-style delta, values under a fast codec until consolidation
  // (docs/engine.md "Sparse deltas").
  if (buffer_->scattered()) w->set_values_pipeline(fast_variant(schema_.filters));
  w->expect_sparse_cells(buffer_->cells());
  // Tile by tile in global order.  A tile's cells that fill their bounding box exactly
  // are stored as a dense piece; the rest stays sparse.
  buffer_->for_each_tile([&](const uint64_t* tile, const uint64_t* cs, const uint8_t* vs, size_t m, const Box& bb) {
    if (m > 1 && bb.cells() == m) w->add_dense_tile(tile, bb, std::vector<uint8_t>(vs, vs + m * es));
    else w->add_sparse_cells(cs, vs, m);
  });
  complete(std::move(w));
  buffer_->clear();
}

void Array::publish(const std::string& path, const std::vector<FragmentId>& replaced) {
  add_fragment(Fragment::open(path), replaced);
}

void Array::complete(std::unique_ptr<FragmentWriter> w) {
  if (opts_.durable_writes && !cat_) {
    publish(w->commit(), {});
    return;
  }
  std::string tmp = w->finish();
  if (tmp.empty()) {
    add_inline(w->take_inline());
    return;
  }
  auto f = Fragment::open(tmp);
  if (opts_.durable_writes) {
    FragmentWriter::publish_finished(f->file(), tmp, w->final_path());
    sync_dir(frag_dir_);
    f->set_path(w->final_path());
    add_fragment(f, {});
    return;
  }
  unpublished_.push_back({f, w->final_path()});
  add_fragment(f, {});
}

void Array::park(std::unique_ptr<FragmentWriter> w) {
  if (opts_.durable_writes) {
    complete(std::move(w));
    return;
  }
  parked_.push_back(std::move(w));
  while (parked_.size() > opts_.max_open_writers) {
    auto front = std::move(parked_.front());
    parked_.pop_front();
    complete(std::move(front));
  }
}

void Array::finish_parked() {
  close_direct();
  while (!parked_.empty()) {
    auto front = std::move(parked_.front());
    parked_.pop_front();
    complete(std::move(front));
  }
}

// Publishing a flush's fragments must be atomic: with several fragments, a crash between
// two renames would expose some writes of the batch without earlier ones.  So the batch
// is written as a redo journal (synced) before the first rename; whoever opens the array
// next finishes the renames (recover_journal), and the journal goes once all are done.
void Array::stage_publish(bool synced, uint64_t epoch, bool fragments_synced) {
  // Catalog-bound: inline records and the schema go with the catalog batch (finish_publish).
  if (cat_ && unpublished_.empty()) {
    staged_epoch_ = epoch;
    journal_staged_ = !unpublished_inline_.empty() || schema_dirty_;
    single_ = true;
    return;
  }
  if (unpublished_.empty() && !schema_dirty_) return;
  if (!synced && !fragments_synced)
    for (auto& u : unpublished_) u.first->file().sync();
  staged_epoch_ = epoch;
  // One fragment and no extent change need no journal: a rename is atomic by itself (and
  // every new file costs: inode allocation dominates flushing many small datasets).
  // Not in an epoch: the rename must wait for the epoch record, so a crash in between
  // needs the journal to finish it.
  if (unpublished_.size() == 1 && !schema_dirty_ && epoch == 0) {
    journal_staged_ = true;
    single_ = true;
    return;
  }
  single_ = false;
  ByteWriter w;
  w.bytes("TSRAJRNL", 8);
  w.u32(epoch ? 2 : 1);
  if (epoch) w.u64(epoch);  // version 2: published only once this epoch is committed
  w.u64(unpublished_.size());
  for (auto& [f, final_path] : unpublished_) {
    w.str(f->path());
    w.str(final_path);
  }
  // An extent change belongs to the batch: the schema it ends with is replayed with it.
  w.u8(schema_dirty_ ? 1 : 0);
  if (schema_dirty_) w.blob(schema_file_bytes(schema_, extent_id_));
  w.u64(checksum64(w.buf().data(), w.size()));
  write_file_atomic(journal_path(), w.buf().data(), w.size(), !synced);
  journal_staged_ = true;
}

std::string Array::journal_path() const {
  if (staged_epoch_ == 0) return join_path(frag_dir_, kJournalFile);
  return join_path(frag_dir_, kRankJournalPrefix + std::to_string(opts_.writer_rank) + kJournalSuffix);
}

void Array::finish_publish(bool synced, CatalogBatch* into) {
  if (compact_) {
    publish_compact(synced, into);
    return;
  }
  if (!journal_staged_) return;
  const bool files = !unpublished_.empty();
  for (auto& [f, final_path] : unpublished_) {
    FragmentWriter::publish_finished(f->file(), f->path(), final_path, /*already_synced=*/true);
    f->set_path(final_path);
  }
  unpublished_.clear();
  if (files && !synced) sync_dir(frag_dir_);
  if (cat_) {
    // One catalog batch publishes the inline fragments and the schema together.  A
    // dataset deleted meanwhile has no schema record: its records must not come back.
    CatalogBatch b;
    for (auto& f : unpublished_inline_) {
      auto bytes = f->inline_bytes();
      b.put(frag_key(f->meta().id), std::string(bytes->begin(), bytes->end()));
    }
    unpublished_inline_.clear();
    const bool had_schema = schema_dirty_;
    if (schema_dirty_) {
      std::vector<uint8_t> sb = schema_file_bytes(schema_, extent_id_);
      b.put(cat_->prefix + "schema", std::string(sb.begin(), sb.end()));
      schema_dirty_ = false;
    }
    if (!b.empty() && cat_->catalog->contains(cat_->prefix + "schema")) {
      if (into) {  // the caller commits (and syncs) it with other arrays' records
        for (const auto& op : b.ops()) into->put(op.key, op.value);
      } else {
        cat_->catalog->commit(std::move(b));
        if (!synced) cat_->catalog->sync();
      }
    }
    // A journal that carried an extent change stays until a later flush replaces it: the
    // schema record is durable only once the caller syncs the catalog, and a crash before
    // that replays the change from the journal (recover_journal takes it only if newer).
    if (files && !single_ && !had_schema) remove_file(journal_path());
    journal_staged_ = false;
    return;
  }
  // The schema before the journal goes: until then a crash replays both.
  if (schema_dirty_) {
    write_schema(dir_, schema_, extent_id_, !synced);
    schema_dirty_ = false;
  }
  if (!single_) remove_file(journal_path());
  journal_staged_ = false;
}

void Array::recover_journal() {
  std::vector<std::string> rank_journals;
  const std::string stem = std::string(kJournalFile) + ".tmp.";
  for (const std::string& name : list_dir(frag_dir_)) {
    // A journal's own temporary file, left by a crash while it was being written.
    bool tmp = name.compare(0, stem.size(), stem) == 0 ||
               (name.compare(0, sizeof kRankJournalPrefix - 1, kRankJournalPrefix) == 0 &&
                name.find(".journal.tmp.") != std::string::npos);
    if (tmp && writable_) remove_file(join_path(frag_dir_, name));
    if (is_rank_journal(name)) rank_journals.push_back(join_path(frag_dir_, name));
  }
  recover_one_journal(join_path(frag_dir_, kJournalFile));
  for (const std::string& p : rank_journals) recover_one_journal(p);
  if (writable_ && opts_.sole_writer) {
    // Fragments a crashed writer never staged (".<id>.<pid>.<n>.tmp"): never published.
    for (const std::string& name : list_dir(frag_dir_))
      if (name.size() > 5 && name[0] == '.' && name.compare(name.size() - 4, 4, ".tmp") == 0)
        remove_file(join_path(frag_dir_, name));
  }
}

// Rolls one journal forward (serial journals always; per-rank journals when their epoch
// is committed) or back (per-rank journals of an uncommitted epoch: their temporary
// fragments are removed).  Read-only: the same decision, applied to the view only.
void Array::recover_one_journal(const std::string& path) {
  if (!path_exists(path)) return;
  bool forward = true;
  std::vector<std::pair<std::string, std::string>> moves;
  std::vector<uint8_t> schema_bytes;
  try {
    std::vector<uint8_t> b = read_file(path);
    if (b.size() < 8) throw_error(Errc::kCorrupt, "short");
    uint64_t ck;
    std::memcpy(&ck, b.data() + b.size() - 8, 8);
    if (checksum64(b.data(), b.size() - 8) != ck) throw_error(Errc::kCorrupt, "checksum");
    ByteReader r(b.data(), b.size() - 8, "publish journal '" + path + "'");
    char magic[8];
    r.bytes(magic, 8);
    if (std::memcmp(magic, "TSRAJRNL", 8) != 0) r.fail("bad magic");
    uint32_t version = r.u32();
    if (version != 1 && version != 2) r.fail("unknown version " + std::to_string(version));
    if (version == 2) forward = r.u64() <= opts_.committed_epoch;
    uint64_t n = r.count(8);
    for (uint64_t i = 0; i < n; ++i) {
      std::string from = r.str(), to = r.str();
      moves.emplace_back(std::move(from), std::move(to));
    }
    if (r.u8() == 1) {
      schema_bytes = r.blob();
      FragmentId id;
      parse_schema_file(schema_bytes, "publish journal '" + path + "' schema", &id);  // validate
    }
  } catch (const Error&) {
    // A journal is synced before its first rename: a damaged one means no rename began.
    if (writable_) remove_file(path);
    return;
  }
  for (auto& [from, to] : moves) {
    if (parent_dir(from) != frag_dir_ || parent_dir(to) != frag_dir_) continue;  // never leave the array
    if (!forward) {  // an epoch that never committed: its fragments never existed
      if (writable_ && path_exists(from)) remove_file(from);
      continue;
    }
    if (path_exists(from)) {
      if (writable_) {
        if (::rename(from.c_str(), to.c_str()) != 0) throw_errno("finish publishing", to, errno);
      } else {
        recovered_.push_back(Fragment::open(from));  // readers see the batch whole too
      }
    }
  }
  if (forward && !schema_bytes.empty()) {
    FragmentId jid;
    Schema js = parse_schema_file(schema_bytes, "publish journal '" + path + "' schema", &jid);
    // A catalog-bound array keeps its last extent journal after publishing: it counts
    // only when its change is newer than the schema record's.
    if (!cat_ || extent_id_ < jid) {
      schema_ = js;
      extent_id_ = jid;
      buffer_->reset_layout(schema_);
      if (writable_ && cat_) put_schema(true);
      else if (writable_) write_file_atomic(join_path(dir_, kSchemaFile), schema_bytes.data(), schema_bytes.size());
    }
  }
  if (writable_) {
    sync_dir(frag_dir_);
    remove_file(path);
  }
}

void Array::flush_impl() {
  finish_parked();
  spill();
  materialize_inline();
  stage_publish(false);
  finish_publish(false);
}

void Array::add_fragment(std::shared_ptr<Fragment> f, const std::vector<FragmentId>& replaced) {
  std::vector<std::shared_ptr<Fragment>> next;
  for (auto& old : frags_)
    if (std::find(replaced.begin(), replaced.end(), old->meta().id) == replaced.end()) next.push_back(old);
  next.push_back(std::move(f));
  std::sort(next.begin(), next.end(), [](auto& a, auto& b) { return a->meta().id < b->meta().id; });
  frags_ = std::move(next);
}

Status Array::read(const Selection& sel, void* dst, const uint64_t* dst_strides) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_var(false);
    check_selection(sel);
    if (compact_) {
      if (sel.empty()) return;
      uint64_t dstride[kMaxRank];
      if (dst_strides) std::copy(dst_strides, dst_strides + schema_.rank(), dstride);
      else sel.dense_strides(dstride);
      compact_cells().read(sel, static_cast<uint8_t*>(dst), dstride);
      return;
    }
    finish_parked();
    buffer_->normalize();
    ReadView view{frags_, buffer_.get()};
    ReadPlanner(schema_, view).read(sel, static_cast<uint8_t*>(dst), dst_strides);
  });
}

Status Array::read_points(const uint64_t* coords, size_t n, void* dst) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_var(false);
    check_points(coords, n);
    if (compact_) {
      compact_cells().read_points(coords, n, static_cast<uint8_t*>(dst));
      return;
    }
    finish_parked();
    buffer_->normalize();
    ReadView view{frags_, buffer_.get()};
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
        ensure_dir(true);
        heap.publish(heap_dir_);
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
    ReadView view{frags_, buffer_.get()};
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
    ReadView view{frags_, buffer_.get()};
    ReadPlanner(schema_, view).read_points(coords, n, desc.data());
    resolve_descriptors(desc, lengths, data);
  });
}

Status Array::flush() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    if (writable_) flush_impl();
  });
}

Status Array::prepare_flush() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    if (!writable_) return;
    finish_parked();
    spill();
    materialize_inline();
  });
}

size_t Array::pending_publish() const {
  std::lock_guard<std::mutex> g(mu_);
  return unpublished_.size() + (schema_dirty_ ? 1 : 0);
}

Status Array::stage_prepared(bool synced, uint64_t epoch, bool fragments_synced) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    if (writable_) stage_publish(synced, epoch, fragments_synced);
  });
}

Status Array::publish_prepared(bool synced, CatalogBatch* into) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    if (writable_) finish_publish(synced, into);
  });
}

Status Array::set_extent(const Coords& extent) {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    require_writable();
    Schema next = schema_;
    if (extent.size() != next.extent.size()) throw_error(Errc::kInvalidArgument, "set_extent: rank differs");
    if (compact_) {
      if (extent != schema_.extent) throw_error(Errc::kInvalidArgument, "set_extent: a compact array's extent is fixed");
      return;
    }
    finish_parked();  // the fill fragments must be newer than every write before them
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
            auto t = f->sparse_tile(ti, layout);
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
        complete(std::move(w));
        extent_id = id;
      }
    }
    schema_ = next;
    extent_id_ = extent_id;
    buffer_->reset_layout(schema_);
    // Durable mode: the schema follows its fill fragment at once.  Deferred mode: at
    // flush, after the fragments are published.
    if (opts_.shadow) return;
    if (opts_.durable_writes && cat_) put_schema(true);
    else if (opts_.durable_writes) write_schema(dir_, schema_, extent_id_);
    else schema_dirty_ = true;
  });
}

Status Array::refresh() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    finish_parked();
    if (cat_ && !cat_->catalog->writable()) cat_->catalog->reload();
    if (cat_) dir_exists_ = dir_exists_ || is_directory(frag_dir_);
    if (compact_) {  // a reader re-reads the record on next use
      if (!compact_dirty_) compact_loaded_ = false;
      return;
    }
    if (!schema_dirty_) {
      schema_ = cat_ ? load_schema() : read_schema(dir_, &extent_id_);
      buffer_->reset_layout(schema_);
    }
    load_fragments();
    apply_extent_commits();
  });
}

Status Array::refresh_fragments() {
  std::lock_guard<std::mutex> g(mu_);
  return guard([&] {
    finish_parked();
    // A catalog-bound array (created by a serial writer) gets a fragment directory when
    // a rank first writes a file into it.
    if (cat_) dir_exists_ = dir_exists_ || is_directory(frag_dir_);
    load_fragments();
  });
}

Status Array::publish_own(size_t* published) {
  std::lock_guard<std::mutex> g(mu_);
  *published = 0;
  return guard([&] {
    if (!writable_ || journal_staged_) return;  // mid-epoch: the epoch publishes them
    finish_parked();
    spill();
    // Collective arrays hold no inline fragments (those go through the catalog, which
    // only rank 0 writes at an epoch): only fragment files are published here.
    if (unpublished_.empty()) return;
    // Oldest first (writers finish out of order): a crash mid-way keeps a prefix of the
    // writes, never a newer write without the older ones it overwrote.
    std::stable_sort(unpublished_.begin(), unpublished_.end(),
                     [](auto& a, auto& b) { return a.first->meta().id < b.first->meta().id; });
    for (auto& [f, final_path] : unpublished_) {
      FragmentWriter::publish_finished(f->file(), f->path(), final_path, /*already_synced=*/false);
      f->set_path(final_path);
      ++*published;
    }
    unpublished_.clear();
    sync_dir(frag_dir_);
  });
}

uint64_t Array::last_timestamp() const {
  std::lock_guard<std::mutex> g(mu_);
  return last_ts_;
}

void Array::raise_timestamp(uint64_t ts) {
  std::lock_guard<std::mutex> g(mu_);
  last_ts_ = std::max(last_ts_, ts);
}

size_t Array::unpublished_count() const {
  std::lock_guard<std::mutex> g(mu_);
  return unpublished_.size() + parked_.size();
}

std::vector<FragmentInfo> Array::fragments() {
  std::lock_guard<std::mutex> g(mu_);
  (void)guard([&] { finish_parked(); });
  std::vector<FragmentInfo> out;
  for (auto& f : frags_) {
    const FragmentMeta& m = f->meta();
    out.push_back({m.id, f->path(), f->file_size(), m.cells, m.dense.size(), m.sparse.size(), m.has_domain,
                   m.domain});
  }
  return out;
}

uint64_t Array::storage_bytes() {
  std::lock_guard<std::mutex> g(mu_);
  (void)guard([&] { finish_parked(); });
  if (compact_) {
    bool written = false;
    (void)guard([&] { written = compact_cells().written(); });
    return written ? compact_->bytes() : 0;
  }
  uint64_t n = 0;
  for (auto& f : frags_) n += f->file_size();
  return n;
}

size_t Array::buffered_cells() const {
  std::lock_guard<std::mutex> g(mu_);
  return buffer_->cells();
}

}  // namespace tessera
