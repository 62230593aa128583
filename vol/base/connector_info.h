// connector_info.h — the connector's info: the settings after the name in
// HDF5_VOL_CONNECTOR ("tessera threads=4 write_buffer_mb=128"), or given to H5Pset_vol.
//
// HDF5 hands the text to from_str once, when it reads the environment; the info travels
// in every fapl that selects tessera.  It is kept as text and validated when a file is
// created or opened (file_options), so a mistyped setting is an HDF5 error at that open,
// naming the setting — not a library that fails to start.  The settings themselves, their
// ranges and their TESSERA_* environment variables: engine/context/options.h.
#pragma once

#include <hdf5.h>

#include "engine/context/options.h"

namespace tessera_vol {

// The H5VL info class callbacks (connector.cc puts them in the class).
void* info_copy_cb(const void* info);
herr_t info_cmp_cb(int* cmp, const void* a, const void* b);
herr_t info_free_cb(void* info);
herr_t info_to_str_cb(const void* info, char** str);
herr_t info_from_str_cb(const char* str, void** info);

// The options a file opened with `fapl` uses: the defaults, the environment, then the
// fapl's connector settings.  Throws VolError naming a bad setting.
tessera::EngineOptions file_options(hid_t fapl);

}  // namespace tessera_vol
