// array_bound.cc — Array's catalog-bound side: opening an array kept in a container's
// catalog (its store is a CatalogStore, array_store.h), fragment writers that may keep a
// small fragment inline, and inline fragments.  Compact arrays: compact_array.h.
#include "engine/array/array.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "engine/array/array_files.h"
#include "engine/util/bytes.h"
#include "engine/util/checksum.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_writer.h"

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
  a->ctx_ = Context::or_process(opts.context);
  a->store_ = make_catalog_store(a->env(), dir, a->frag_dir_, std::move(binding));
  Status st = guard([&] { a->open_impl(writable, known); });
  if (st.ok()) *out = std::move(a);
  return st;
}

std::unique_ptr<FragmentWriter> Array::make_writer(FragmentId id, const Schema* s) {
  std::function<void()> before_file;  // a catalog-bound array's directory comes with its first file
  if (!store_->dir_exists()) before_file = [this] { store_->ensure_dir(opts_.durable_writes, schema_.var); };
  return std::make_unique<FragmentWriter>(*ctx_, frag_dir_, id, s ? *s : schema_,
                                          store_->inline_limit(writable_, opts_),
                                          std::move(before_file));
}

// A finished in-memory fragment: durable mode commits its record (and syncs the catalog)
// now; deferred mode publishes it with the flush's catalog batch.
void Array::add_inline(std::vector<uint8_t> bytes, bool batch) {
  auto sp = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  auto f = Fragment::open_inline("(unpublished inline fragment)", sp, ctx_);
  const std::string key = store_->inline_key(f->meta().id);
  f->set_path(store_->inline_label(key));
  if (opts_.durable_writes && !batch) {
    CatalogBatch b;
    b.put(key, std::string(sp->begin(), sp->end()));
    store_->commit(std::move(b), /*sync=*/true);
  } else {
    pub_.unpublished_inline_.push_back(f);
  }
  frags_.add(f, {});
}

std::string Array::inline_to_file(const std::vector<uint8_t>& bytes, const std::string& final_path) {
  store_->ensure_dir(opts_.durable_writes, schema_.var);
  std::string name = final_path.substr(final_path.rfind('/') + 1);  // <id>.tfr
  const std::string tmp = join_path(frag_dir_, "." + name.substr(0, name.size() - 4) + ".inline.tmp");
  File out = File::open_rw(env(), tmp, /*create=*/true);
  out.truncate(0);
  out.pwrite_all(bytes.data(), bytes.size(), 0);
  out.close();
  return tmp;
}

// One flush batch is published atomically either by the catalog batch (inline records)
// or by the file journal; a batch holding both kinds would need the two to commit as one,
// so its inline fragments are written out as files and join the journal (rare: an array
// that got both a large and a small fragment since the last flush).
void Array::materialize_inline() {
  if (pub_.unpublished_inline_.empty() || pub_.unpublished_.empty()) return;
  store_->ensure_dir(false, schema_.var);
  for (auto& f : pub_.unpublished_inline_) {
    auto bytes = f->inline_bytes();
    const std::string final_path = join_path(frag_dir_, FragmentWriter::file_name(f->meta().id));
    const std::string tmp = inline_to_file(*bytes, final_path);
    auto ff = Fragment::open(tmp, ctx_);
    store_->count_inline(-static_cast<int64_t>(f->file_size()));
    frags_.swap(f, ff);
    pub_.unpublished_.push_back({ff, final_path});
  }
  pub_.unpublished_inline_.clear();
}

}  // namespace tessera
