// sparse.cc — see sparse.h.
#include "vol/features/sparse.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "vol/io/dataset_io.h"
#include "vol/base/error.h"
#include "vol/model/objects.h"
#include "vol/base/opt_ops.h"
#include "vol/types/selection.h"
#include "vol/model/value_filters.h"

namespace tessera_vol {

namespace {

int g_defined = -1, g_erase = -1;

// The engine array behind d, or an error saying why there is none.
tessera::Array& stored_array(DatasetObj& d, const char* what) {
  if (d.vds) fail_unsupported(std::string(what) + " is not possible on a virtual dataset (its data lives in its sources)");
  if (d.external) fail_unsupported(std::string(what) + " is not possible on a dataset with external raw data files");
  if (!d.array) fail_unsupported(std::string(what) + ": the dataset has no stored array");
  return *d.array;
}

FileSelection file_selection(DatasetObj& d, hid_t file_space) {
  dataset_sync_space(d);
  if (file_space == H5S_BLOCK || file_space == H5S_PLIST) fail_arg("the file dataspace must be a dataspace or H5S_ALL");
  const hid_t fspace = file_space == H5S_ALL ? d.space : file_space;
  // Everything, as boxes: not counted, so a dataset of 2^63 elements or more works too.
  if (H5Sget_select_type(fspace) == H5S_SEL_ALL && d.space_class() == H5S_SIMPLE)
    return whole_boxes(d.array->schema().extent);
  return resolve_file_selection(fspace, d.space);
}

// Pending chunks of value-changing filters are older than what follows: write them first.
void settle(DatasetObj& d, tessera::Array& a) {
  if (d.value_filters) d.value_filters->flush(a, d.space);
}

void defined(DatasetObj& d, tessera_defined_args_t& a) {
  std::lock_guard<std::recursive_mutex> g(d.file->mu());
  tessera::Array& arr = stored_array(d, "listing defined elements");
  FileSelection fs = file_selection(d, a.file_space);
  settle(d, arr);
  hid_t out = H5Scopy(d.space);
  if (out < 0) fail_arg("cannot copy the dataset's dataspace");
  try {
    if (fs.kind == FileSelection::kPoints) {
      std::vector<uint8_t> flags;
      check(arr.defined_points(fs.points.data(), fs.n, &flags));
      std::vector<hsize_t> keep;
      const size_t r = static_cast<size_t>(arr.schema().rank());
      for (size_t i = 0; i < fs.n; ++i)
        if (flags[i]) keep.insert(keep.end(), fs.points.begin() + i * r, fs.points.begin() + (i + 1) * r);
      herr_t rc = keep.empty() ? H5Sselect_none(out) : H5Sselect_elements(out, H5S_SELECT_SET, keep.size() / r, keep.data());
      if (rc < 0) fail_arg("cannot build the point selection of defined elements");
    } else {
      std::vector<tessera::Box> boxes, found;
      if (fs.kind != FileSelection::kNone) boxes = selection_boxes(fs);
      if (!boxes.empty()) check(arr.defined(boxes, &found));
      if (found.empty() && H5Sselect_none(out) < 0) fail_arg("cannot build an empty selection");
      const int r = arr.schema().rank();
      std::vector<hsize_t> start(r), count(r, 1), block(r);
      for (size_t i = 0; i < found.size(); ++i) {
        for (int k = 0; k < r; ++k) {
          start[k] = found[i].lo[k];
          block[k] = found[i].hi[k] - found[i].lo[k] + 1;
        }
        if (H5Sselect_hyperslab(out, i == 0 ? H5S_SELECT_SET : H5S_SELECT_OR, start.data(), nullptr, count.data(),
                                block.data()) < 0)
          fail_arg("cannot build the hyperslab selection of defined elements");
      }
    }
  } catch (...) {
    H5Sclose(out);
    throw;
  }
  a.defined_space = out;
}

void erase(DatasetObj& d, tessera_erase_args_t& a) {
  std::lock_guard<std::recursive_mutex> g(d.file->mu());
  tessera::Array& arr = stored_array(d, "erasing elements");
  require_write_intent(*d.file);
  FileSelection fs = file_selection(d, a.file_space);
  settle(d, arr);
  if (fs.kind == FileSelection::kNone) return;
  if (fs.kind == FileSelection::kPoints) check(arr.erase_points(fs.points.data(), fs.n));
  else check(arr.erase(selection_boxes(fs)));
}

}  // namespace

void register_sparse_ops() {
  g_defined = register_opt_op(H5VL_SUBCLS_DATASET, TESSERA_OP_DEFINED);
  g_erase = register_opt_op(H5VL_SUBCLS_DATASET, TESSERA_OP_ERASE);
}

void unregister_sparse_ops() {
  unregister_opt_op(H5VL_SUBCLS_DATASET, TESSERA_OP_DEFINED, &g_defined);
  unregister_opt_op(H5VL_SUBCLS_DATASET, TESSERA_OP_ERASE, &g_erase);
}

bool sparse_op(DatasetObj& d, int op_type, void* args) {
  if (op_type <= 0 || (op_type != g_defined && op_type != g_erase)) return false;
  if (!args) fail_arg("NULL arguments");
  if (op_type == g_defined) defined(d, *static_cast<tessera_defined_args_t*>(args));
  else erase(d, *static_cast<tessera_erase_args_t*>(args));
  return true;
}

}  // namespace tessera_vol
