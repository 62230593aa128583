// file_setting_ops.h — the native file "optional" operations that read or change a
// file's settings (metadata cache, page buffer, VFD handle): answered from the fapl kept
// by the SharedFile, since tessera has no metadata cache of HDF5's to tune.
#pragma once

namespace tessera_vol {

class SharedFile;
// H5Fget_mdc_config, H5Fset_mdc_config, H5Fget_mdc_hit_rate, H5Freset_mdc_hit_rate_stats,
// H5Fget_mdc_size, H5Fget_vfd_handle, H5Fget_page_buffering_stats and friends; true if
// `op` is one of them (and it was carried out).
bool file_setting_op(SharedFile& f, int op, void* args);

}  // namespace tessera_vol
