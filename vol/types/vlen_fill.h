// vlen_fill.h — storing the dcpl of a dataset whose fill value has variable-length parts.
//
// A dcpl's fill value is kept in memory form, and for a vlen string or sequence that form
// holds pointers.  H5Pencode2 writes those pointer bytes as they are, so a dcpl decoded
// later (another process, or this one after the original plist was closed and its
// strings freed) points at freed memory: H5Pcopy/H5Pget_fill_value then read it (a
// use-after-free found by h5py's test_dataset.py under ASan).  So such a dcpl is stored
// as two parts: the encoding with the fill value cleared, and the value as vlen.h's
// stream (ObjectRecord::vlen_fill, docs/format.md).
#pragma once

#include <hdf5.h>

#include <string>

namespace tessera_vol {

struct StoredDcpl {
  std::string cpl;        // H5Pencode2 of the dcpl (fill value cleared if vlen_fill is set)
  std::string vlen_fill;  // empty: the fill value is inside cpl (or there is none)
};

// A copy of `dcpl` (owned by the caller) whose user-defined fill value is converted to
// the dataset's datatype `type`, as native H5Dcreate converts it (H5O_fill_convert).  The
// fill value may come in any convertible type — h5py sets a fixed-length string
// dataset's fill value as a variable-length string — and only once converted does its
// encoding hold no pointer unless `type` itself has variable-length parts.
hid_t dataset_dcpl(hid_t dcpl, hid_t type);

// Splits `dcpl` (from dataset_dcpl) of a dataset of datatype `type` for storage.
StoredDcpl store_dcpl(hid_t dcpl, hid_t type);

// A new dcpl (owned by the caller): `decoded` (from StoredDcpl::cpl) with the fill value
// rebuilt from `vlen_fill`.
hid_t restore_dcpl(hid_t decoded, hid_t type, const std::string& vlen_fill);

}  // namespace tessera_vol
