// native_wrapper.h — the small native HDF5 file a one-file container begins with
// (docs/format.md, "The one-file container"): made by HDF5's own library (native
// connector, core driver, no backing store), superblock version 0, and a root group
// whose attribute `tessera` tells a native program what the file is and how to read it.
// The engine appends the container after it and keeps the superblock's end-of-file
// address above everything it writes, so a native program that opens the file
// read-write and adds objects never overwrites tessera's bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tessera_vol {

// The text of the root group's `tessera` attribute.
std::string wrapper_notice();
// The wrapper's bytes (made once per process).  Throws VolError when HDF5 cannot make it.
const std::vector<uint8_t>& native_wrapper();

}  // namespace tessera_vol
