// file_setting_ops.cc — see file_setting_ops.h.
#include "vol/model/file_setting_ops.h"

#include <hdf5.h>
#include <H5FDcore.h>
#include <H5FDmulti.h>
#include <H5VLnative.h>

#include "vol/model/object_model.h"

namespace tessera_vol {

bool file_setting_op(SharedFile& f, int op, void* p) {
  auto* a = static_cast<H5VL_native_file_optional_args_t*>(p);
  switch (op) {
    case H5VL_NATIVE_FILE_GET_MDC_CONF:  // as configured: there is no metadata cache to tune
      if (H5Pget_mdc_config(f.fapl(), a->get_mdc_config.config) < 0) fail_arg("cannot read the cache config");
      return true;
    case H5VL_NATIVE_FILE_SET_MDC_CONFIG:  // HDF5 validates it; kept to be reported back
      if (H5Pset_mdc_config(f.fapl(), const_cast<H5AC_cache_config_t*>(a->set_mdc_config.config)) < 0)
        fail_arg("invalid metadata cache configuration");
      return true;
    case H5VL_NATIVE_FILE_GET_MDC_HR:  // no metadata cache: no hits counted
      *a->get_mdc_hit_rate.hit_rate = 0.0;
      return true;
    case H5VL_NATIVE_FILE_RESET_MDC_HIT_RATE: return true;
    case H5VL_NATIVE_FILE_GET_MDC_SIZE: {
      H5AC_cache_config_t c;
      c.version = H5AC__CURR_CACHE_CONFIG_VERSION;
      if (H5Pget_mdc_config(f.fapl(), &c) < 0) fail_arg("cannot read the cache config");
      auto& s = a->get_mdc_size;
      if (s.max_size) *s.max_size = c.initial_size;
      if (s.min_clean_size) *s.min_clean_size = static_cast<size_t>(c.initial_size * c.min_clean_fraction);
      if (s.cur_size) *s.cur_size = 0;
      if (s.cur_num_entries) *s.cur_num_entries = 0;
      return true;
    }
    case H5VL_NATIVE_FILE_GET_VFD_HANDLE:  // a descriptor of the container's directory
      *a->get_vfd_handle.file_handle = f.directory_handle();
      return true;
    case H5VL_NATIVE_FILE_GET_PAGE_BUFFERING_STATS:
    case H5VL_NATIVE_FILE_RESET_PAGE_BUFFERING_STATS: {
      size_t pbs = 0;
      unsigned mm = 0, mr = 0;
      H5Pget_page_buffer_size(f.fapl(), &pbs, &mm, &mr);
      if (pbs == 0) fail_arg("page buffering not enabled on file");
      if (op == H5VL_NATIVE_FILE_GET_PAGE_BUFFERING_STATS) {
        auto& s = a->get_page_buffering_stats;
        for (int i = 0; i < 2; ++i) {
          s.accesses[i] = s.hits[i] = s.misses[i] = s.evictions[i] = s.bypasses[i] = 0;
        }
      }
      return true;
    }
    case H5VL_NATIVE_FILE_SET_LIBVER_BOUNDS: {
      const auto& b = a->set_libver_bounds;
      if (H5Pset_libver_bounds(f.fapl(), b.low, b.high) < 0) fail_arg("invalid library version bounds");
      return true;
    }
    default: return false;
  }
}

}  // namespace tessera_vol
