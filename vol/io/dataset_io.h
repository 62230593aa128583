// dataset_io.h — one dataset transfer through the connector's ordinary read/write path
// (dataset.cc), for code that reads or writes datasets on HDF5's behalf (virtual datasets).
#pragma once

#include <hdf5.h>

namespace tessera_vol {

struct DatasetObj;

// H5Dread / H5Dwrite of one dataset: spaces may be H5S_ALL / H5S_BLOCK, as HDF5 passes them.
void dataset_read_one(DatasetObj& d, hid_t mem_type, hid_t mem_space, hid_t file_space, hid_t dxpl, void* buf);
void dataset_write_one(DatasetObj& d, hid_t mem_type, hid_t mem_space, hid_t file_space, hid_t dxpl,
                       const void* buf);
// Brings the handle's dataspace up to date (the stored array's extent, or a virtual
// dataset's sources).
void dataset_sync_space(DatasetObj& d);

}  // namespace tessera_vol
