// h5_shims.cc — HDF5 symbols that 1.14's headers make the connector reference but that
// HDF5 2.x no longer exports, defined here against the running library (h5_runtime.h).
//
// In 1.14, H5FD_SEC2 expands to H5FDperform_init(H5FD_sec2_init) and H5VL_NATIVE to
// H5VL_native_register(); 2.x exports the driver and connector IDs as globals
// (H5FD_SEC2_id_g, H5VL_NATIVE_g) instead, and has no H5FDperform_init.  H5Tdecode,
// H5Dread_chunk and H5Iregister_type are versioned in 2.x.  A parallel
// 1.14 also exports H5FD_mpio_init and H5Pget_fapl_mpio, which a serial library (the
// h5py wheel's) lacks.  The definitions below are local to the connector library (its
// version script exports nothing but tessera_vol_class), so the linker binds the
// connector's own references to them and the connector loads into every library;
// each one then asks the running library for the real thing, by name.
#include "vol/base/h5_runtime.h"

#include <H5FDdevelop.h>
#include <hdf5.h>

using tessera_vol::h5_is_2x;
using tessera_vol::h5_symbol;

namespace {

// A file driver's ID: 1.14's H5FD_<name>_init(), or 2.x's H5FD_<NAME>_id_g; invalid when
// the running library has no such driver (H5FD_MPIO in a serial build).
hid_t driver_id(const char* init_name, const char* global_name) {
  if (H5open() < 0) return H5I_INVALID_HID;
  if (h5_is_2x()) {
    auto* id = static_cast<const hid_t*>(h5_symbol(global_name));
    return id ? *id : H5I_INVALID_HID;
  }
  auto* init = reinterpret_cast<H5FD_init_t>(h5_symbol(init_name));
  return init ? init() : H5I_INVALID_HID;
}

}  // namespace

extern "C" {

// H5open first, as 1.14's does; then the driver's init (one of the functions below).
hid_t H5FDperform_init(H5FD_init_t op) {
  if (H5open() < 0 || !op) return H5I_INVALID_HID;
  return op();
}

hid_t H5FD_sec2_init(void) { return driver_id("H5FD_sec2_init", "H5FD_SEC2_id_g"); }
hid_t H5FD_core_init(void) { return driver_id("H5FD_core_init", "H5FD_CORE_id_g"); }
hid_t H5FD_family_init(void) { return driver_id("H5FD_family_init", "H5FD_FAMILY_id_g"); }
hid_t H5FD_log_init(void) { return driver_id("H5FD_log_init", "H5FD_LOG_id_g"); }
hid_t H5FD_multi_init(void) { return driver_id("H5FD_multi_init", "H5FD_MULTI_id_g"); }
hid_t H5FD_stdio_init(void) { return driver_id("H5FD_stdio_init", "H5FD_STDIO_id_g"); }
#ifdef H5_HAVE_DIRECT
hid_t H5FD_direct_init(void) { return driver_id("H5FD_direct_init", "H5FD_DIRECT_id_g"); }
#endif

hid_t H5VL_native_register(void) {
  if (H5open() < 0) return H5I_INVALID_HID;
  if (h5_is_2x()) {
    auto* id = static_cast<const hid_t*>(h5_symbol("H5VL_NATIVE_g"));
    return id ? *id : H5I_INVALID_HID;
  }
  auto* reg = reinterpret_cast<hid_t (*)(void)>(h5_symbol("H5VL_native_register"));
  return reg ? reg() : H5I_INVALID_HID;
}

// Versioned in 2.x (the 1.14 names became H5Tdecode1, H5Dread_chunk1, H5Iregister_type1,
// which 2.x still exports).  The connector itself calls decode_type/read_chunk_bytes
// (h5_runtime.h), which prefer the bounds-checked 2.x forms; these keep any other use of
// the 1.14 names loadable in both.
hid_t H5Tdecode(const void* buf) {
  auto* fn = reinterpret_cast<hid_t (*)(const void*)>(h5_symbol(h5_is_2x() ? "H5Tdecode1" : "H5Tdecode"));
  return fn ? fn(buf) : H5I_INVALID_HID;
}

herr_t H5Dread_chunk(hid_t dset_id, hid_t dxpl_id, const hsize_t* offset, uint32_t* filters, void* buf) {
  using Fn = herr_t (*)(hid_t, hid_t, const hsize_t*, uint32_t*, void*);
  auto* fn = reinterpret_cast<Fn>(h5_symbol(h5_is_2x() ? "H5Dread_chunk1" : "H5Dread_chunk"));
  return fn ? fn(dset_id, dxpl_id, offset, filters, buf) : -1;
}

H5I_type_t H5Iregister_type(size_t hash_size, unsigned reserved, H5I_free_t free_func) {
  using Fn = H5I_type_t (*)(size_t, unsigned, H5I_free_t);
  auto* fn = reinterpret_cast<Fn>(h5_symbol(h5_is_2x() ? "H5Iregister_type1" : "H5Iregister_type"));
  return fn ? fn(hash_size, reserved, free_func) : H5I_BADID;
}

#ifdef H5_HAVE_PARALLEL
hid_t H5FD_mpio_init(void) { return driver_id("H5FD_mpio_init", "H5FD_MPIO_id_g"); }

// Only reached for a fapl whose driver is H5FD_MPIO, which a serial library never has;
// still, a library without MPI-IO answers with an error, not a crash.
herr_t H5Pget_fapl_mpio(hid_t fapl_id, MPI_Comm* comm, MPI_Info* info) {
  using Fn = herr_t (*)(hid_t, MPI_Comm*, MPI_Info*);
  auto* fn = reinterpret_cast<Fn>(h5_symbol("H5Pget_fapl_mpio"));
  return fn ? fn(fapl_id, comm, info) : -1;
}

// Only reached for transfers on a parallel file (vol/model/mpio_cause.cc), as above.
herr_t H5Pget_dxpl_mpio(hid_t dxpl_id, H5FD_mpio_xfer_t* xfer_mode) {
  using Fn = herr_t (*)(hid_t, H5FD_mpio_xfer_t*);
  auto* fn = reinterpret_cast<Fn>(h5_symbol("H5Pget_dxpl_mpio"));
  return fn ? fn(dxpl_id, xfer_mode) : -1;
}
#endif

}  // extern "C"
