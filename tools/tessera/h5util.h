// h5util.h — small HDF5 helpers for the `tessera` tool: readable names of datatypes and
// filters, and file access lists selecting a connector (the owning identifier Hid and
// h5_error_message are in convert/hid.h, shared with the connector).
#pragma once
#include <hdf5.h>

#include "convert/hid.h"

#include <string>
#include <vector>

namespace tool {

// A datatype as people write it: "int32 (LE)", "float64", "string[10] (ASCII)",
// "vlen string (UTF-8)", "compound {x: int32, y: float64}", "enum int8 {A=0, B=1}",
// "array[3x2] of float32", "object reference", ...
std::string type_text(hid_t type);

// A dataset creation plist's filters, in pipeline order: "shuffle", "deflate(6)",
// "fletcher32", "szip", "nbit", "scaleoffset", or "<name>(id N)" for registered ones.
std::vector<std::string> filter_texts(hid_t dcpl);

}  // namespace tool

namespace tool {

// File access property lists selecting a connector: tessera's (loaded from the build's
// plugins/ beside this program's tools/, else from HDF5_PLUGIN_PATH) or HDF5's native
// one.  Throw Failure when the connector cannot be loaded.
// settings: the connector's settings for this open ("as_of=12"), as after its name in
// HDF5_VOL_CONNECTOR.
Hid tessera_fapl(const std::string& settings = "");
Hid native_fapl();

}  // namespace tool
