// failure.h — the error the HDF5 file-to-file copy (h5copy.h) throws, shared by the
// `tessera` tool (which prints it and exits with `status`) and the connector (which puts
// it on HDF5's error stack).  Kept free of the tool's command line library so the
// connector can include it.
#pragma once
#include <string>

namespace tool {

// Thrown to stop with a message (and, in the tool, an exit status: docs/tool.md).
struct Failure {
  std::string message;
  int status = 2;  // the tool's kFailed
};
[[noreturn]] inline void fail(const std::string& message, int status = 2) { throw Failure{message, status}; }

}  // namespace tool
