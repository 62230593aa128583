// mpio_cause.cc — see mpio_cause.h.  The rules are native's (H5D__mpio_opt_possible).
#include "vol/model/mpio_cause.h"

#include <cstdint>

#include "vol/model/objects.h"
#include "vol/types/stored_type.h"
#include "vol/types/transform.h"

namespace tessera_vol {

namespace {
bool simple_or_scalar(hid_t space) {
  H5S_class_t c = H5Sget_simple_extent_type(space);
  return c == H5S_SIMPLE || c == H5S_SCALAR;
}
}  // namespace

void report_no_collective_cause(DatasetObj& d, hid_t mem_type, hid_t mem_space, hid_t file_space, hid_t dxpl) {
  // The default dxpl is read-only; H5S_ALL / H5S_BLOCK stand for the dataset's space.
  if (dxpl == H5P_DEFAULT || dxpl == H5P_DATASET_XFER_DEFAULT) return;
  uint32_t cause = H5D_MPIO_COLLECTIVE;
  H5FD_mpio_xfer_t mode = H5FD_MPIO_INDEPENDENT;
  if (H5Pget_dxpl_mpio(dxpl, &mode) < 0 || mode != H5FD_MPIO_COLLECTIVE) cause |= H5D_MPIO_SET_INDEPENDENT;
  const hid_t fs = file_space == H5S_ALL ? d.space : file_space;
  const hid_t ms = mem_space == H5S_ALL || mem_space == H5S_BLOCK ? fs : mem_space;
  if (!simple_or_scalar(fs) || !simple_or_scalar(ms)) cause |= H5D_MPIO_NOT_SIMPLE_OR_SCALAR_DATASPACES;
  const H5D_layout_t layout = d.layout();
  if ((layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED) || d.uses_external())
    cause |= H5D_MPIO_NOT_CONTIGUOUS_OR_CHUNKED_DATASET;
  // HDF5 1.14 transfers collectively through type conversions and data transforms with
  // selection I/O; only with selection I/O turned off are they causes, and then the lack
  // of selection I/O is one too (for storage that could otherwise go collectively).
  H5D_selection_io_mode_t sel = H5D_SELECTION_IO_MODE_DEFAULT;
  if (H5Pget_selection_io(dxpl, &sel) < 0) sel = H5D_SELECTION_IO_MODE_DEFAULT;
  if (sel == H5D_SELECTION_IO_MODE_OFF) {
    TypeId ftype(d.ftype);
    const uint32_t before = cause;
    if (H5Tequal(mem_type, ftype) <= 0) cause |= H5D_MPIO_DATATYPE_CONVERSION;
    if (DataTransform::from_dxpl(dxpl)) cause |= H5D_MPIO_DATA_TRANSFORMS;
    if (cause != before && !(cause & H5D_MPIO_NOT_CONTIGUOUS_OR_CHUNKED_DATASET)) cause |= H5D_MPIO_NO_SELECTION_IO;
  }
  // Why native's MPI-IO path did no selection I/O, which HDF5 1.14 reports beside the
  // collective cause: turned off by the dxpl, storage neither contiguous nor chunked, or
  // (an independent transfer) no vector or selection callback in the MPI-IO driver.
  uint32_t no_sel = 0;
  if (sel == H5D_SELECTION_IO_MODE_OFF) no_sel |= H5D_SEL_IO_DISABLE_BY_API;
  if (cause & H5D_MPIO_NOT_CONTIGUOUS_OR_CHUNKED_DATASET) no_sel |= H5D_SEL_IO_NOT_CONTIGUOUS_OR_CHUNKED_DATASET;
  if ((cause & H5D_MPIO_SET_INDEPENDENT) && no_sel == 0) no_sel |= H5D_SEL_IO_NO_VECTOR_OR_SELECTION_IO_CB;
  // The property names native's getters read (H5Dprivate.h).
  H5Pset(dxpl, "local_no_collective_cause", &cause);
  H5Pset(dxpl, "global_no_collective_cause", &cause);
  H5Pset(dxpl, "no_selection_io_cause", &no_sel);
}

}  // namespace tessera_vol
