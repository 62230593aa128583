// file_prefix.h — where HDF5 looks for a file that another file names: the target of an
// external link, the source file of a virtual dataset mapping (H5F_prefix_open_file).
#pragma once

#include <string>
#include <vector>

namespace tessera_vol {

// Candidate paths in HDF5's order: an absolute name as given, then its last component
// (or the relative name) under each entry of the environment variable `env_var`
// (HDF5_EXT_PREFIX, HDF5_VDS_PREFIX; ':'-separated), under `prop_prefix` (the lapl's
// elink prefix, the dapl's VDS prefix), in the naming file's directory, as given
// (relative to the current directory), and in the naming file's real directory.
// "${ORIGIN}" at the start of a prefix stands for the naming file's directory.
std::vector<std::string> prefix_candidates(const std::string& parent_name, const std::string& file_name,
                                           const char* env_var, const std::string& prop_prefix);

// Whether `path` is a native HDF5 file (a regular file starting with HDF5's signature).
bool is_native_hdf5(const std::string& path);

}  // namespace tessera_vol
