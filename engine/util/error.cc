#include "engine/util/error.h"

#include <cerrno>
#include <cstring>

namespace tessera {
namespace {

// strerror_r is the GNU flavour (returns the text) or the XSI one (fills buf, returns 0),
// depending on feature macros; overloading picks whichever this libc provides.
[[maybe_unused]] const char* strerror_text(const char* gnu, const char*) { return gnu; }
[[maybe_unused]] const char* strerror_text(int xsi_rc, const char* buf) {
  return xsi_rc == 0 ? buf : "unknown error";
}

}  // namespace

std::string unsupported_version(const std::string& what, uint32_t found, uint32_t supported) {
  std::string m = what + ": format version " + std::to_string(found) + " is not supported (this build reads version " +
                  std::to_string(supported) + " only)";
  if (found != 0 && found < supported)
    return m + ": the container was written by a development build of tessera, whose formats are not read; "
               "re-create it";
  return m + ": written by a newer tessera, or damaged";
}

const char* errc_name(Errc c) {
  switch (c) {
    case Errc::kOk: return "ok";
    case Errc::kInvalidArgument: return "invalid argument";
    case Errc::kNotFound: return "not found";
    case Errc::kAlreadyExists: return "already exists";
    case Errc::kCorrupt: return "corrupt";
    case Errc::kIo: return "I/O error";
    case Errc::kNoSpace: return "no space";
    case Errc::kUnsupported: return "unsupported";
    case Errc::kBusy: return "busy";
    case Errc::kInternal: return "internal error";
  }
  return "unknown error";
}

void throw_error(Errc code, const std::string& msg) { throw Error(code, msg); }

void throw_errno(const std::string& what, const std::string& path, int err) {
  Errc code = Errc::kIo;
  switch (err) {
    case ENOENT: code = Errc::kNotFound; break;
    case EEXIST: code = Errc::kAlreadyExists; break;
    case ENOSPC:
    case EDQUOT: code = Errc::kNoSpace; break;
    default: break;
  }
  char buf[256];
  const char* text = strerror_text(strerror_r(err, buf, sizeof buf), buf);
  throw Error(code, what + " '" + path + "': " + text + " (errno = " + std::to_string(err) + ")");
}

}  // namespace tessera
