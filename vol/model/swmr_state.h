// swmr_state.h — how a file is open: its access intent with the SWMR bits (swmr.h) and
// the file locking flags a second open of it must match.  One part of SharedFile
// (object_model.h).
#pragma once

#include <hdf5.h>

#include "vol/base/file_settings.h"

namespace tessera_vol {

struct SwmrState {
  unsigned intent = 0;  // H5F_ACC_RDWR / H5F_ACC_RDONLY | H5F_ACC_SWMR_*
  LockingFlags locking;

  bool writable() const { return (intent & H5F_ACC_RDWR) != 0; }
};

}  // namespace tessera_vol
