// query.cc — see query.h.
#include "vol/features/query.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <regex>
#include <set>
#include <vector>

#include "engine/query/query.h"
#include "vol/io/dataset_io.h"
#include "vol/base/error.h"
#include "vol/model/objects.h"
#include "vol/base/opt_ops.h"
#include "vol/model/parallel.h"
#include "vol/base/tessera_vol.h"
#include "vol/model/value_filters.h"

namespace tessera_vol {

namespace {

int g_build = -1, g_drop = -1, g_info = -1, g_query = -1;

// The engine array behind d, or an error saying why there is none.
tessera::Array& indexed_array(DatasetObj& d, const char* what) {
  if (d.vds) fail_unsupported(std::string(what) + " is not possible on a virtual dataset (its data lives in its sources)");
  if (d.external) fail_unsupported(std::string(what) + " is not possible on a dataset with external raw data files");
  if (!d.array) fail_unsupported(std::string(what) + ": the dataset has no stored array");
  return *d.array;
}

// The chunks of value-changing filters still pending hold what reads return: write them
// through first (as a flush would), so indexes see the values reads see.
void settle(DatasetObj& d, tessera::Array& a) {
  if (d.value_filters) d.value_filters->flush(a, d.space);
}

void build(DatasetObj& d, tessera_build_index_args_t& a) {
  std::lock_guard<std::recursive_mutex> g(d.file->mu());
  tessera::Array& arr = indexed_array(d, "building a value index");
  settle(d, arr);
  const tessera::ArrayOptions fo = d.file->engine_options().array_options();
  tessera::IndexOptions o = fo.index;
  tessera::IndexBuild b;
  if (const tessera_index_config_t* c = a.config) {
    if (c->precision) o.precision = c->precision;
    if (c->max_bins) o.max_bins = c->max_bins;
    b.rebuild = c->rebuild != 0;
    if (c->progress)
      b.progress = [c](uint64_t done, uint64_t total) {
        if (c->progress(done, total, c->udata) != 0)
          tessera::throw_error(tessera::Errc::kInvalidArgument, "the index build was stopped by its progress callback");
      };
  }
  Parallel* par = d.file->parallel();
  if (!par) {
    check(arr.build_index(o, &b));
  } else {
    // Collective: every rank sees the same published fragments and builds its share.
    b.part = static_cast<uint32_t>(par->rank());
    b.parts = static_cast<uint32_t>(par->size());
    b.published_only = true;
    par->agree([&] {
      check(arr.refresh_fragments());
      check(arr.build_index(o, &b));
    });
    std::vector<uint64_t> sums = {b.built, b.cells, b.bytes};
    par->sum(sums);
    b.built = sums[0];
    b.cells = sums[1];
    b.bytes = sums[2];
  }
  a.built = b.built;
  a.cells = b.cells;
  a.bytes = b.bytes;
}

void drop(DatasetObj& d) {
  std::lock_guard<std::recursive_mutex> g(d.file->mu());
  tessera::Array& arr = indexed_array(d, "dropping value indexes");
  Parallel* par = d.file->parallel();
  if (!par) return check(arr.drop_index());
  // One rank removes the files (they are shared); the others wait for it.
  par->agree([&] {
    if (par->root()) check(arr.drop_index());
  });
}

void info(DatasetObj& d, tessera_index_info_args_t& a) {
  std::lock_guard<std::recursive_mutex> g(d.file->mu());
  if (!a.info) fail_arg("NULL tessera_index_info_t");
  tessera::Array& arr = indexed_array(d, "reading index information");
  tessera::IndexInfo i;
  check(arr.index_info(&i));
  *a.info = tessera_index_info_t{i.fragments, i.indexed,         i.inline_fragments, i.data_bytes,
                                 i.indexed_data_bytes, i.index_bytes, i.unindexed_cells};
}

// ------------------------------------------------------------------ queries

// The datasets a query names, looked up from group `base` (path `base_path`) of f.
class Datasets {
 public:
  Datasets(std::shared_ptr<SharedFile> f, uint64_t base, std::string base_path)
      : f_(std::move(f)), base_(base), base_path_(std::move(base_path)) {}

  // Connector errors (VolError) become engine errors: run_query reports those.
  std::vector<tessera::QueryDataset> find(const std::string& name, bool regex) {
    try {
      return find_impl(name, regex);
    } catch (const VolError& e) {
      tessera::throw_error(e.kind == static_cast<int>(ErrorKind::kUnsupported) ? tessera::Errc::kUnsupported
                                                                               : tessera::Errc::kInvalidArgument,
                           e.msg);
    }
  }
  DatasetObj& first() { return *opened_.at(0); }

 private:
  std::vector<tessera::QueryDataset> find_impl(const std::string& name, bool regex) {
    std::vector<tessera::QueryDataset> out;
    if (!regex) {
      std::optional<uint64_t> oid = f_->try_resolve(base_, name);
      if (!oid) return out;
      auto rec = f_->find_object(*oid);
      if (!rec) return out;
      const std::string path = !name.empty() && name[0] == '/' ? name : join(base_path_, name);
      if (rec->type != ObjType::kDataset) fail_arg("'" + path + "' is a group or a named datatype, not a dataset");
      out.push_back(open(*oid, path));
      return out;
    }
    std::regex re;
    try {
      re = std::regex(name, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      fail_arg("bad regular expression \"" + name + "\": " + e.what());
    }
    std::set<uint64_t> descended{base_}, seen;
    walk_links(*f_, base_, H5_INDEX_NAME, H5_ITER_INC, descended,
               [&](const std::string& rel, const LinkRecord& l, bool) -> herr_t {
                 if (l.type != H5L_TYPE_HARD || seen.count(l.target)) return 0;
                 auto rec = f_->find_object(l.target);
                 if (!rec || rec->type != ObjType::kDataset) return 0;
                 const std::string path = join(base_path_, rel);
                 if (!std::regex_search(path, re)) return 0;
                 seen.insert(l.target);
                 out.push_back(open(l.target, path));
                 return 0;
               });
    return out;
  }

  tessera::QueryDataset open(uint64_t oid, const std::string& path) {
    std::unique_ptr<DatasetObj> d(static_cast<DatasetObj*>(dataset_open_oid(f_, oid, path)));
    const std::string what = "querying '" + path + "'";
    indexed_array(*d, what.c_str());
    tessera::QueryDataset q{path, d->array};
    opened_.push_back(std::move(d));
    return q;
  }
  std::shared_ptr<SharedFile> f_;
  uint64_t base_;
  std::string base_path_;
  std::vector<std::unique_ptr<DatasetObj>> opened_;  // in order of lookup: [0] is the first variable's
};

// The hits as a selection of the first dataset: each run of positions along the last
// dimension is one row of a (strided) hyperslab, added in row-major order (HDF5 appends
// those in constant time).
hid_t selection_of(const tessera::QueryResult& r, hid_t space) {
  hid_t out = H5Scopy(space);
  if (out < 0) fail_arg("cannot copy the dataset's dataspace");
  try {
    if (H5Sselect_none(out) < 0) fail_arg("cannot build an empty selection");
    const int rank = static_cast<int>(r.shape.size());
    const uint64_t width = r.shape[rank - 1];
    std::vector<hsize_t> start(rank), stride(rank, 1), count(rank, 1), block(rank, 1);
    stride[rank - 1] = r.region.stride[rank - 1];
    uint64_t cell[tessera::kMaxRank];
    bool first = true;
    r.hits.for_each_run([&](uint64_t p, uint64_t n) {
      while (n > 0) {
        const uint64_t len = std::min(n, width - p % width);  // to the end of the row
        tessera::query_cell(r, p, cell);
        for (int d = 0; d < rank; ++d) start[d] = cell[d];
        count[rank - 1] = len;
        if (H5Sselect_hyperslab(out, first ? H5S_SELECT_SET : H5S_SELECT_OR, start.data(), stride.data(), count.data(),
                                block.data()) < 0)
          fail_arg("cannot build the hyperslab selection of the query's hits");
        first = false;
        p += len;
        n -= len;
      }
    });
  } catch (...) {
    H5Sclose(out);
    throw;
  }
  return out;
}

void query(Obj* o, const H5VL_loc_params_t* lp, tessera_query_args_t& a) {
  SharedFile& f = *o->file;
  std::lock_guard<std::recursive_mutex> g(f.mu());
  if (!a.expr) fail_arg("NULL query expression");
  if (a.what == TESSERA_QUERY_POSITIONS && !a.result) fail_arg("NULL tessera_query_result_t");
  std::string base_path;
  const uint64_t base = locate(o, lp, &base_path);
  if (f.object(base).type != ObjType::kGroup)
    fail_arg("a query runs on a file or a group (its datasets are looked up from there), not on '" + base_path + "'");
  if (base_path.empty()) base_path = "/";
  Datasets ds(o->file, base, base_path);
  tessera::QueryResult r;
  check(tessera::run_query(
      a.expr, [&](const std::string& name, bool regex) { return ds.find(name, regex); }, a.what != TESSERA_QUERY_COUNT,
      &r));
  // hssize_t and an array of hsize_t positions must hold the count (a dataset may have
  // more than 2^64 elements: issue 45).
  if (a.what == TESSERA_QUERY_COUNT && r.count > static_cast<uint64_t>(INT64_MAX))
    fail_arg("the query matches " + std::to_string(r.count) + " elements, more than tessera_Fquery_count returns");
  if (a.what == TESSERA_QUERY_POSITIONS && r.count > SIZE_MAX / sizeof(hsize_t))
    fail_arg("the query matches " + std::to_string(r.count) + " elements, too many positions to return");
  a.count = r.count;
  if (a.what == TESSERA_QUERY_SPACE) {
    DatasetObj& d = ds.first();
    dataset_sync_space(d);
    a.space = selection_of(r, d.space);
  } else if (a.what == TESSERA_QUERY_POSITIONS) {
    tessera_query_result_t& out = *a.result;
    std::memset(&out, 0, sizeof out);
    const int rank = static_cast<int>(r.shape.size());
    if (rank > TESSERA_MAX_RANK) fail_unsupported("more than 32 dimensions");
    out.rank = rank;
    for (int d = 0; d < rank; ++d) {
      out.start[d] = r.region.start[d];
      out.stride[d] = r.region.stride[d];
      out.shape[d] = r.shape[d];
    }
    out.count = r.count;
    out.dataset = static_cast<char*>(H5allocate_memory(r.first.path.size() + 1, false));
    if (!out.dataset) fail_arg("out of memory");
    std::memcpy(out.dataset, r.first.path.c_str(), r.first.path.size() + 1);
    if (r.count > 0) {
      out.positions = static_cast<hsize_t*>(H5allocate_memory(r.count * sizeof(hsize_t), false));
      if (!out.positions) {
        H5free_memory(out.dataset);
        out.dataset = nullptr;
        fail_arg("out of memory for " + std::to_string(r.count) + " positions");
      }
      hsize_t* p = out.positions;
      r.hits.for_each_batch([&](const uint64_t* xs, size_t n) {
        std::copy(xs, xs + n, p);
        p += n;
      });
    }
  }
}

}  // namespace

void register_query_ops() {
  g_build = register_opt_op(H5VL_SUBCLS_DATASET, TESSERA_OP_BUILD_INDEX);
  g_drop = register_opt_op(H5VL_SUBCLS_DATASET, TESSERA_OP_DROP_INDEX);
  g_info = register_opt_op(H5VL_SUBCLS_DATASET, TESSERA_OP_INDEX_INFO);
  g_query = register_opt_op(H5VL_SUBCLS_OBJECT, TESSERA_OP_QUERY);
}

void unregister_query_ops() {
  unregister_opt_op(H5VL_SUBCLS_DATASET, TESSERA_OP_BUILD_INDEX, &g_build);
  unregister_opt_op(H5VL_SUBCLS_DATASET, TESSERA_OP_DROP_INDEX, &g_drop);
  unregister_opt_op(H5VL_SUBCLS_DATASET, TESSERA_OP_INDEX_INFO, &g_info);
  unregister_opt_op(H5VL_SUBCLS_OBJECT, TESSERA_OP_QUERY, &g_query);
}

bool is_query_op(int op_type) { return op_type > 0 && op_type == g_query; }

bool index_op(DatasetObj& d, int op_type, void* args) {
  if (op_type <= 0 || (op_type != g_build && op_type != g_drop && op_type != g_info)) return false;
  if (!args) fail_arg("NULL arguments");
  if (op_type == g_build) build(d, *static_cast<tessera_build_index_args_t*>(args));
  else if (op_type == g_drop) drop(d);
  else info(d, *static_cast<tessera_index_info_args_t*>(args));
  return true;
}

bool query_op(Obj* o, const H5VL_loc_params_t* lp, int op_type, void* args) {
  if (!is_query_op(op_type)) return false;
  if (!args) fail_arg("NULL arguments");
  query(o, lp, *static_cast<tessera_query_args_t*>(args));
  return true;
}

}  // namespace tessera_vol
