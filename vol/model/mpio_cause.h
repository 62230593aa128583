// mpio_cause.h — what H5Pget_mpio_no_collective_cause reports after a transfer in a
// parallel file (docs/parallel.md, "Transfer properties").
#pragma once

#include <hdf5.h>

namespace tessera_vol {

struct DatasetObj;

// Records in the dxpl the reasons native PHDF5 gives for not doing a transfer of this
// dataset collectively (HDF5 1.14's rules: independent mode, a null dataspace, storage
// neither contiguous nor chunked; type conversion and data transforms with selection I/O
// off), so programs that ask get native's
// answer.  Tessera's transfers are rank-local whatever the mode; its ranks do not
// communicate in H5Dwrite/H5Dread, so the global cause is this rank's own.
void report_no_collective_cause(DatasetObj& d, hid_t mem_type, hid_t mem_space, hid_t file_space, hid_t dxpl);

}  // namespace tessera_vol
