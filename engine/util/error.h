// Errors inside the engine.
//
// Internally the engine throws tessera::Error; every public entry point of the engine
// (Container, Array, Catalog) catches it and returns a Status, so no exception ever crosses
// into the connector or HDF5.  Messages are written for users: they name the file and say
// what was wrong ("fragment /x/y.tfr: checksum mismatch in tile 3").  System errors carry
// "errno = N" because h5py maps "errno = 2" to FileNotFoundError.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tessera {

enum class Errc {
  kOk = 0,
  kInvalidArgument,  // a malformed call: bad selection, wrong sizes, bad schema
  kNotFound,         // missing file/array/key (errno = 2 for files)
  kAlreadyExists,
  kCorrupt,          // bad magic, bad checksum, truncated file, impossible metadata
  kIo,               // any other system error
  kNoSpace,          // ENOSPC / EDQUOT
  kUnsupported,      // valid but not implemented / newer format version
  kBusy,             // locked by another writer
  kInternal,
};

const char* errc_name(Errc c);

class Error : public std::runtime_error {
 public:
  Error(Errc code, const std::string& msg) : std::runtime_error(msg), code_(code) {}
  Errc code() const { return code_; }

 private:
  Errc code_;
};

[[noreturn]] void throw_error(Errc code, const std::string& msg);
// Throws for a failed system call: "<what> '<path>': <strerror> (errno = N)".
// ENOENT -> kNotFound, EEXIST -> kAlreadyExists, ENOSPC/EDQUOT -> kNoSpace, else kIo.
[[noreturn]] void throw_errno(const std::string& what, const std::string& path, int err);

// The message of a file whose format version this build does not read: "<what>: format
// version <found> is not supported (this build reads version <supported> only)" and why —
// an older version was written by a development build (docs/format.md, "Format
// versions"), a newer one by a newer tessera.
std::string unsupported_version(const std::string& what, uint32_t found, uint32_t supported);

class Status {
 public:
  Status() = default;
  Status(Errc code, std::string msg) : code_(code), msg_(std::move(msg)) {}
  static Status OK() { return Status(); }
  bool ok() const { return code_ == Errc::kOk; }
  Errc code() const { return code_; }
  const std::string& message() const { return msg_; }

 private:
  Errc code_ = Errc::kOk;
  std::string msg_;
};

// Runs f() and converts any exception into a Status (use at public API boundaries).
template <class F>
Status guard(F&& f) noexcept {
  try {
    f();
    return Status::OK();
  } catch (const Error& e) {
    return Status(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return Status(Errc::kNoSpace, "out of memory");
  } catch (const std::exception& e) {
    return Status(Errc::kInternal, e.what());
  } catch (...) {
    return Status(Errc::kInternal, "unknown internal error");
  }
}

}  // namespace tessera
