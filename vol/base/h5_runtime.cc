// h5_runtime.cc — binding the connector to the running HDF5 (see h5_runtime.h) and
// tessera_vol_class, the one function the connector library exports: the loader
// (vol/loader/tessera_loader.c) calls it with the libhdf5 it found.
#include "vol/base/h5_runtime.h"

#include "vol/base/tessera_vol.h"

#include <dlfcn.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>

namespace tessera_vol {
namespace {
H5Runtime g_runtime;
}  // namespace

const H5Runtime& h5_runtime() { return g_runtime; }

// Each name is looked up once: dlsym walks the library's hash tables and a miss (1.14 has
// no H5Tdecode2) formats a dlerror message, ~1 us that every datatype decode paid — 5 % of
// the 10,000-dataset metadata benchmark.  The handle never changes once bound.
void* h5_symbol(const char* name) {
  if (!g_runtime.handle) return nullptr;
  static std::mutex mu;
  static std::unordered_map<std::string, void*> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, dlsym(g_runtime.handle, name)).first;
  return it->second;
}

hid_t decode_type(const void* buf, size_t size) {
  using Decode2 = hid_t (*)(const void*, size_t);
  using Decode1 = hid_t (*)(const void*);
  if (auto* d2 = reinterpret_cast<Decode2>(h5_symbol("H5Tdecode2"))) return d2(buf, size);
  if (auto* d1 = reinterpret_cast<Decode1>(h5_symbol(h5_is_2x() ? "H5Tdecode1" : "H5Tdecode"))) return d1(buf);
  return H5I_INVALID_HID;
}

herr_t read_chunk_bytes(hid_t dset, hid_t dxpl, const hsize_t* offset, uint32_t* filters, void* buf,
                        size_t* buf_size) {
  using Read2 = herr_t (*)(hid_t, hid_t, const hsize_t*, uint32_t*, void*, size_t*);
  using Read1 = herr_t (*)(hid_t, hid_t, const hsize_t*, uint32_t*, void*);
  if (auto* r2 = reinterpret_cast<Read2>(h5_symbol("H5Dread_chunk2")))
    return r2(dset, dxpl, offset, filters, buf, buf_size);
  if (auto* r1 = reinterpret_cast<Read1>(h5_symbol(h5_is_2x() ? "H5Dread_chunk1" : "H5Dread_chunk")))
    return r1(dset, dxpl, offset, filters, buf);
  return -1;
}

}  // namespace tessera_vol

// Called once by the loader.  HDF5 1.14 and 2.x both take VOL class version 3 with the
// same layout, so one class serves both; other versions are refused with a message.
extern "C" __attribute__((visibility("default"))) const void* tessera_vol_class(void* hdf5, unsigned maj,
                                                                                 unsigned min, unsigned rel,
                                                                                 char* err, size_t errlen) {
  using tessera_vol::g_runtime;
  if (!((maj == 1 && min == 14) || maj == 2)) {
    std::snprintf(err, errlen, "tessera supports HDF5 1.14 and 2.x; this process runs HDF5 %u.%u.%u", maj,
                  min, rel);
    return nullptr;
  }
  if (g_runtime.handle && g_runtime.handle != hdf5) {
    std::snprintf(err, errlen, "tessera is already bound to another libhdf5 in this process");
    return nullptr;
  }
  g_runtime.handle = hdf5;
  g_runtime.major = maj;
  g_runtime.minor = min;
  g_runtime.release = rel;
  return &tessera_vol::kTesseraClass;
}
