// error.h — the connector's HDF5 error class and helpers to push onto the error stack.
//
// At plugin initialisation (the connector's `initialize` callback) tessera registers an
// HDF5 error class "tessera" with one major code ("VOL connector") and a few minor codes;
// `terminate` unregisters it.  Callbacks report failures by pushing one record onto the
// default error stack and returning a failure value; HDF5 then adds its own records
// above it, so users see e.g. (HDF5's default error printer)
//
//   HDF5-DIAG: Error detected in HDF5 (1.14.5):
//     #000: ... in H5Fcreate(): unable to synchronously create file
//     ...
//   tessera-DIAG: Error detected in tessera (0.1.0):
//     #004: file.cc line 33 in file_create(): tessera: file create not supported yet ("x.h5")
//       major: VOL connector
//       minor: unsupported operation
//
// and h5py raises e.g. OSError("Unable to synchronously create file (tessera: file
// create not supported yet (...))").
//
// Every message is prefixed with "tessera: " by the helpers; callers write the rest.
// If the class is not registered (before initialize / after terminate) the helpers fall
// back to HDF5's own class with H5E_VOL as major code, so no message is ever lost.
#pragma once

#include <hdf5.h>

#include <cstdarg>
#include <string>

#include "engine/util/error.h"

#if defined(__GNUC__)
#define TESSERA_VOL_PRINTF(fmt_idx, first_arg) __attribute__((format(printf, fmt_idx, first_arg)))
#else
#define TESSERA_VOL_PRINTF(fmt_idx, first_arg)
#endif

namespace tessera_vol {

// Minor error codes of the "tessera" error class.
// The engine's error codes keep their own minor codes, so a program (or h5py, through the
// message) can tell a missing file from a corrupt one from a full disk.
enum class ErrorKind {
  kUnsupported,    // "unsupported operation": the connector does not implement this (yet)
  kBadArgument,    // "invalid argument": the caller passed something tessera cannot accept
  kEngine,         // "storage engine error": any other failure of the array engine
  kNotFound,       // "not found": a missing container, file or object
  kAlreadyExists,  // "already exists"
  kCorrupt,        // "corrupt or truncated data": a checksum, magic number or size is wrong
  kIo,             // "I/O error": the operating system refused a read or write
  kNoSpace,        // "no space left on the device"
  kBusy,           // "locked by another writer"
};
constexpr int kErrorKinds = 9;

// Registers the error class and its messages; idempotent.  Returns negative on failure.
herr_t register_error_class() noexcept;
// Unregisters the class (and its messages); idempotent, never fails.
void unregister_error_class() noexcept;
// The registered class id, or H5I_INVALID_HID.
hid_t error_class_id() noexcept;

// Pushes "tessera: <formatted message>" with minor code "unsupported operation".
void push_error(const char* func, const char* fmt, ...) noexcept TESSERA_VOL_PRINTF(2, 3);

// Full form: explicit source location and minor code.
void push_error_at(const char* file, unsigned line, const char* func, ErrorKind kind, const char* fmt,
                   ...) noexcept TESSERA_VOL_PRINTF(5, 6);
void vpush_error_at(const char* file, unsigned line, const char* func, ErrorKind kind, const char* fmt,
                    va_list ap) noexcept;

// Thrown inside the connector; callbacks catch it and push it onto the error stack.
struct VolError {
  int kind;  // ErrorKind as int
  std::string msg;
};
[[noreturn]] void fail_unsupported(const std::string& msg);
[[noreturn]] void fail_arg(const std::string& msg);
// The minor code an engine error code reports (error.h).
ErrorKind error_kind(tessera::Errc c);
[[noreturn]] void fail_engine(const tessera::Status& st);
inline void check(const tessera::Status& st) {
  if (!st.ok()) fail_engine(st);
}

}  // namespace tessera_vol

// Push an error of the given kind with the caller's source location.
#define TESSERA_VOL_ERROR(kind, ...) \
  ::tessera_vol::push_error_at(__FILE__, __LINE__, __func__, ::tessera_vol::ErrorKind::kind, __VA_ARGS__)

// "tessera: <what> not supported yet" — the skeleton's answer for every operation.
#define TESSERA_VOL_UNSUPPORTED(what) TESSERA_VOL_ERROR(kUnsupported, "%s not supported yet", what)
