// array_store.cc — the two ArrayStores (array_store.h).
#include "engine/array/array_store.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "engine/array/array.h"
#include "engine/array/array_files.h"
#include "engine/util/file_io.h"
#include "engine/catalog/file_records.h"
#include "engine/catalog/history.h"

namespace tessera {

using namespace array_files;

namespace {

uint64_t epoch_of(const Catalog& c) {
  auto v = c.get(Catalog::kEpochKey);
  return v ? std::strtoull(v->c_str(), nullptr, 10) : 0;
}

// ---------------------------------------------------------------- DirStore

class DirStore final : public ArrayStore {
 public:
  // records: the container's catalog, which holds the array's file records (an array of
  // a parallel file); null for a standalone array.
  DirStore(Env& env, std::string dir, std::shared_ptr<Catalog> records, std::string prefix)
      : env_(env), dir_(std::move(dir)), records_(std::move(records)), prefix_(std::move(prefix)) {}

  Schema open(bool, const Schema*, FragmentId* extent_id) override {
    if (!is_directory(env_, dir_)) throw_errno("open array", dir_, ENOENT);
    Schema s = read_schema(env_, dir_, extent_id);
    if (s.compact) throw_error(Errc::kCorrupt, "array '" + dir_ + "': a compact array outside a catalog");
    return s;
  }
  Schema load_schema(FragmentId* extent_id) override { return read_schema(env_, dir_, extent_id); }
  void store_schema(const Schema& s, const FragmentId& extent_id, bool durable) override {
    write_schema(env_, dir_, s, extent_id, durable);
  }
  bool publishes_with_catalog() const override { return false; }
  // The files are recorded after their renames (into the caller's batch, or committed
  // now): here the records are not the commit point (the journal or the rename is), so a
  // crash before they are durable leaves published files without records, which are
  // read (files_complete is never true) and recorded by the next writer.
  void publish(const std::vector<std::shared_ptr<Fragment>>&, const Schema* schema, const FragmentId& extent_id,
               const std::vector<std::pair<FragmentId, uint64_t>>& files, bool synced, CatalogBatch* into) override {
    if (schema) write_schema(env_, dir_, *schema, extent_id, !synced);
    record_files(files, {}, into, /*sync=*/false);
  }

  bool dir_exists() const override { return true; }
  void ensure_dir(bool, bool) override {}
  void refresh(bool records) override {
    if (records && records_ && !records_->writable()) records_->reload();
  }

  uint64_t inline_limit(bool, const ArrayOptions&) const override { return 0; }
  void list_inline(const FragmentSet&, const std::vector<std::shared_ptr<Fragment>>&, const Schema&,
                   const std::shared_ptr<Context>&, std::vector<std::shared_ptr<Fragment>>*) override {}
  std::string inline_key(const FragmentId&) const override { return none("inline fragments"); }
  std::string inline_label(const std::string&) const override { return none("inline fragments"); }
  bool reserve_inline(uint64_t, const ArrayOptions&) override { return false; }
  void count_inline(int64_t) override {}
  void commit(CatalogBatch b, bool sync) override {
    if (b.empty()) return;
    if (!records_) none("catalog records");
    records_->commit(std::move(b));
    if (sync) records_->sync();
  }
  std::map<FragmentId, uint64_t> recorded_files() const override {
    return records_ ? scan_file_records(*records_, prefix_) : std::map<FragmentId, uint64_t>{};
  }
  // Nothing once the array was removed (remove_array deleted its records and directory).
  void record_files(const std::vector<std::pair<FragmentId, uint64_t>>& add, const std::vector<FragmentId>& drop,
                    CatalogBatch* into, bool sync) override {
    if ((add.empty() && drop.empty()) || !records_ || !records_->writable() || records_->shadow()) return;
    if (!path_exists(env_, join_path(dir_, kSchemaFile))) return;
    CatalogBatch b;
    CatalogBatch& to = into ? *into : b;
    for (auto& [id, size] : add) put_file_record(to, prefix_, id, size);
    for (auto& id : drop) to.del(file_record_key(prefix_, id));
    if (!into) commit(std::move(b), sync);
  }
  // Never: the schema lives in a file that a flush may rewrite before its records are
  // durable, so the records cannot be a flush's commit point (array_store.h).
  bool files_complete() const override { return false; }
  void mark_files_complete(bool, CatalogBatch*) override {}
  bool has_records() const override { return records_ != nullptr; }
  bool files_logged() const override { return records_ && records_->contains(prefix_ + kFilesLoggedKey); }
  void mark_files_logged(CatalogBatch& into) override {
    if (!records_ || files_logged() || !records_->writable() || records_->shadow()) return;
    if (!path_exists(env_, join_path(dir_, kSchemaFile))) return;  // removed meanwhile
    into.put(prefix_ + kFilesLoggedKey, "1");
  }
  std::optional<uint64_t> committed_epoch() const override {
    if (!records_) return std::nullopt;
    return epoch_of(*records_);
  }
  // An extent change's id is never newer than the commit that publishes it (its time is
  // the members' latest clock: commit.cc).
  bool schema_ahead_of_records(const FragmentId& extent_id) const override {
    return records_ && extent_id.ts > last_commit(*records_).ts_ns;
  }
  std::optional<std::string> compact_record(std::string*) override { return std::nullopt; }
  void publish_compact(const std::string&, uint64_t, bool, CatalogBatch*) override { none("compact cells"); }

 private:
  [[noreturn]] std::string none(const char* what) const {
    throw_error(Errc::kInternal, "array '" + dir_ + "' keeps no " + what + " (it is not in a catalog)");
  }
  Env& env_;
  std::string dir_;
  std::shared_ptr<Catalog> records_;
  std::string prefix_;
};

// ---------------------------------------------------------------- CatalogStore

class CatalogStore final : public ArrayStore {
 public:
  CatalogStore(Env& env, std::string dir, std::string frag_dir, CatalogBinding b)
      : env_(env), dir_(std::move(dir)), frag_dir_(std::move(frag_dir)), cat_(std::move(b)) {}

  Schema open(bool writable, const Schema* known, FragmentId* extent_id) override {
    if (writable && !cat_.catalog->writable())
      throw_error(Errc::kInvalidArgument, "array '" + dir_ + "': its catalog is open read-only");
    // Created on first need (a file fragment or heap).
    dir_exists_ = !cat_.dir_absent && is_directory(env_, frag_dir_);
    return known ? *known : load_schema(extent_id);
  }
  Schema load_schema(FragmentId* extent_id) override {
    const std::string key = cat_.prefix + "schema";
    auto v = cat_.catalog->get(key);
    if (!v) throw_error(Errc::kNotFound, "array '" + dir_ + "': no schema record '" + key + "' in the catalog");
    std::vector<uint8_t> b(v->begin(), v->end());
    return parse_schema_file(b, "array schema record '" + key + "'", extent_id);
  }
  // The schema record goes with a batch of its own.
  void store_schema(const Schema& s, const FragmentId& extent_id, bool durable) override {
    std::vector<uint8_t> b = schema_file_bytes(s, extent_id);
    CatalogBatch batch;
    batch.put(cat_.prefix + "schema", std::string(b.begin(), b.end()));
    cat_.catalog->commit(batch);
    if (durable) cat_.catalog->sync();
  }
  bool publishes_with_catalog() const override { return true; }
  // One catalog batch publishes the inline fragments and the schema together.  A dataset
  // deleted meanwhile has no schema record: its records must not come back.
  void publish(const std::vector<std::shared_ptr<Fragment>>& inline_frags, const Schema* schema,
               const FragmentId& extent_id, const std::vector<std::pair<FragmentId, uint64_t>>& files, bool synced,
               CatalogBatch* into) override {
    CatalogBatch b;
    if (cat_.catalog->writable() && !cat_.catalog->shadow()) record_files(files, {}, &b, false);
    for (auto& f : inline_frags) {
      auto bytes = f->inline_bytes();
      b.put(inline_key(f->meta().id), std::string(bytes->begin(), bytes->end()));
    }
    if (schema) {
      std::vector<uint8_t> sb = schema_file_bytes(*schema, extent_id);
      b.put(cat_.prefix + "schema", std::string(sb.begin(), sb.end()));
    }
    if (b.empty() || !alive()) return;
    if (into) {  // the caller commits (and syncs) it with other arrays' records
      for (const auto& op : b.ops()) into->put(op.key, op.value);
      return;
    }
    cat_.catalog->commit(std::move(b));
    if (!synced) cat_.catalog->sync();
  }

  bool dir_exists() const override { return dir_exists_; }
  // Deferred mode leaves the new entries to the flush's file-system sync; a durable
  // write (or a heap, published at once) syncs the chain now.
  void ensure_dir(bool durable, bool heap) override {
    if (dir_exists_) return;
    make_dir(env_, dir_);  // the container's arrays/ directory exists
    make_dir(env_, frag_dir_);
    if (heap) make_dir(env_, join_path(dir_, kHeapDir));
    if (durable) {
      sync_dir(env_, dir_);
      sync_dir(env_, parent_dir(dir_));
    }
    dir_exists_ = true;
    if (cat_.dir_created) cat_.dir_created(durable);
  }
  void refresh(bool records) override {
    if (records && !cat_.catalog->writable()) cat_.catalog->reload();
    // A rank may have created the directory when it first wrote a file.
    dir_exists_ = dir_exists_ || is_directory(env_, frag_dir_);
  }

  uint64_t inline_limit(bool writable, const ArrayOptions& opts) const override {
    if (!writable || opts.inline_fragment_bytes == 0) return 0;
    uint64_t room = opts.inline_array_bytes > inline_bytes_ ? opts.inline_array_bytes - inline_bytes_ : 0;
    uint64_t used = cat_.budget ? cat_.budget->used.load() : 0;
    uint64_t cap = cat_.budget ? cat_.budget->cap : UINT64_MAX;
    room = std::min(room, cap > used ? cap - used : 0);
    return std::min(room, opts.inline_fragment_bytes);
  }
  void list_inline(const FragmentSet& known, const std::vector<std::shared_ptr<Fragment>>& pending,
                   const Schema& schema, const std::shared_ptr<Context>& ctx,
                   std::vector<std::shared_ptr<Fragment>>* out) override {
    const std::string prefix = cat_.prefix + "frag/";
    uint64_t inline_bytes = 0;
    for (auto& [key, value] : cat_.catalog->scan(prefix)) {
      const std::string label = inline_label(key);
      FragmentId id;
      if (!FragmentId::parse(key.substr(prefix.size()), &id))
        throw_error(Errc::kCorrupt, "catalog record '" + key + "': not a fragment id");
      inline_bytes += value.size();
      if (auto f = known.find(label)) {
        if (std::find(out->begin(), out->end(), f) == out->end()) out->push_back(f);
        continue;
      }
      auto f = Fragment::open_inline(label, std::make_shared<const std::vector<uint8_t>>(value.begin(), value.end()),
                                     ctx);
      if (f->meta().id != id) throw_error(Errc::kCorrupt, "fragment '" + label + "': id in footer differs from its key");
      if (f->meta().rank != static_cast<uint32_t>(schema.rank()) || f->meta().elem_size != schema.elem_size)
        throw_error(Errc::kCorrupt, "fragment '" + label + "': shape does not match the array schema");
      out->push_back(f);
    }
    for (auto& f : pending) inline_bytes += f->file_size();
    inline_bytes_ = inline_bytes;
  }
  std::string inline_key(const FragmentId& id) const override { return cat_.prefix + "frag/" + id.name(); }
  std::string inline_label(const std::string& key) const override {
    return cat_.catalog->log_path() + " record " + key;
  }
  // inline_bytes_ is this array's (its callers hold the array's lock); the container's
  // budget is shared by every array, so its room is taken atomically.
  bool reserve_inline(uint64_t bytes, const ArrayOptions& opts) override {
    if (opts.inline_fragment_bytes == 0 || bytes > opts.inline_array_bytes ||
        inline_bytes_ > opts.inline_array_bytes - bytes)
      return false;
    if (cat_.budget && !cat_.budget->try_take(bytes)) return false;
    inline_bytes_ += bytes;
    return true;
  }
  void count_inline(int64_t bytes) override {
    if (bytes >= 0) {
      inline_bytes_ += static_cast<uint64_t>(bytes);
      if (cat_.budget) cat_.budget->take(static_cast<uint64_t>(bytes));
      return;
    }
    const uint64_t n = static_cast<uint64_t>(-bytes);
    inline_bytes_ -= std::min(inline_bytes_, n);
    if (cat_.budget) cat_.budget->give_back(n);
  }
  void commit(CatalogBatch b, bool sync) override {
    if (b.empty()) return;
    cat_.catalog->commit(std::move(b));
    if (sync) cat_.catalog->sync();
  }

  std::map<FragmentId, uint64_t> recorded_files() const override {
    return scan_file_records(*cat_.catalog, cat_.prefix);
  }
  void record_files(const std::vector<std::pair<FragmentId, uint64_t>>& add, const std::vector<FragmentId>& drop,
                    CatalogBatch* into, bool sync) override {
    if (add.empty() && drop.empty()) return;
    if (!alive() || !cat_.catalog->writable() || cat_.catalog->shadow()) return;
    CatalogBatch b;
    CatalogBatch& to = into ? *into : b;
    for (auto& [id, size] : add) put_file_record(to, cat_.prefix, id, size);
    for (auto& id : drop) to.del(file_record_key(cat_.prefix, id));
    if (!into) commit(std::move(b), sync);
  }

  bool files_complete() const override { return cat_.catalog->contains(cat_.prefix + kFilesCompleteKey); }
  void mark_files_complete(bool on, CatalogBatch* into) override {
    if (on == files_complete() || !alive() || !cat_.catalog->writable() || cat_.catalog->shadow()) return;
    CatalogBatch b;
    CatalogBatch& to = into ? *into : b;
    if (on) to.put(cat_.prefix + kFilesCompleteKey, "1");
    else to.del(cat_.prefix + kFilesCompleteKey);
    if (!into) commit(std::move(b), false);
  }
  bool has_records() const override { return true; }
  bool files_logged() const override { return cat_.catalog->contains(cat_.prefix + kFilesLoggedKey); }
  std::optional<uint64_t> committed_epoch() const override { return epoch_of(*cat_.catalog); }
  bool schema_ahead_of_records(const FragmentId&) const override { return false; }  // a record itself
  void mark_files_logged(CatalogBatch& into) override {
    if (files_logged() || !alive() || !cat_.catalog->writable() || cat_.catalog->shadow()) return;
    into.put(cat_.prefix + kFilesLoggedKey, "1");
  }

  std::optional<std::string> compact_record(std::string* label) override {
    const std::string key = cat_.prefix + "cells";
    *label = inline_label(key);
    return cat_.catalog->get(key);
  }
  // The first record of an array counts against the container's inline budget
  // (Container::create_array checked the room).
  void publish_compact(const std::string& record, uint64_t bytes, bool synced, CatalogBatch* into) override {
    if (!alive()) return;
    const std::string key = cat_.prefix + "cells";
    // Taken at creation when this process created the array compact (Container::
    // create_array); an array created compact by an earlier process takes it now.
    if (cat_.budget && !cat_.catalog->contains(key) && cat_.budget->claim_compact(cat_.prefix) == 0)
      cat_.budget->take(bytes);
    if (into) {
      into->put(key, record);
      return;
    }
    CatalogBatch b;
    b.put(key, record);
    cat_.catalog->commit(std::move(b));
    if (!synced) cat_.catalog->sync();
  }

 private:
  bool alive() const { return cat_.catalog->contains(cat_.prefix + "schema"); }
  Env& env_;
  std::string dir_, frag_dir_;
  CatalogBinding cat_;
  bool dir_exists_ = false;
  uint64_t inline_bytes_ = 0;  // this array's published and pending inline fragments
};

}  // namespace

std::unique_ptr<ArrayStore> make_dir_store(Env& env, const std::string& dir, std::shared_ptr<Catalog> records,
                                           const std::string& prefix) {
  return std::make_unique<DirStore>(env, dir, std::move(records), prefix);
}

std::unique_ptr<ArrayStore> make_catalog_store(Env& env, const std::string& dir, const std::string& frag_dir,
                                               CatalogBinding binding) {
  return std::make_unique<CatalogStore>(env, dir, frag_dir, std::move(binding));
}

}  // namespace tessera
