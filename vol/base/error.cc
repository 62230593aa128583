// error.cc — the "tessera" HDF5 error class (see error.h).
#include "vol/base/error.h"

#include <cstdio>
#include <cstring>

#ifndef TESSERA_VERSION_STRING
#define TESSERA_VERSION_STRING "0.0.0"
#endif

namespace tessera_vol {
namespace {

// HDF5 1.14 built without thread safety serialises nothing for us, but the connector is
// only entered from HDF5 API calls, which are themselves not re-entrant across threads in
// such a build; plain globals are therefore sufficient here.
hid_t g_class = H5I_INVALID_HID;
hid_t g_major = H5I_INVALID_HID;
hid_t g_minor[kErrorKinds] = {H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID,
                              H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID};

// In ErrorKind's order.
const char* const kMinorText[kErrorKinds] = {
    "unsupported operation", "invalid argument", "storage engine error",
    "not found",             "already exists",   "corrupt or truncated data",
    "I/O error",             "no space left on the device", "locked by another writer",
};

int kind_index(ErrorKind kind) noexcept {
  const int i = static_cast<int>(kind);
  return i >= 0 && i < kErrorKinds ? i : 0;
}

// HDF5's own codes, used when our class is not registered.
hid_t fallback_minor(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::kUnsupported: return H5E_UNSUPPORTED;
    case ErrorKind::kBadArgument: return H5E_BADVALUE;
    case ErrorKind::kEngine: return H5E_CANTOPERATE;
    case ErrorKind::kNotFound: return H5E_NOTFOUND;
    case ErrorKind::kAlreadyExists: return H5E_EXISTS;
    case ErrorKind::kCorrupt: return H5E_CANTDECODE;
    case ErrorKind::kIo: return H5E_SYSERRSTR;
    case ErrorKind::kNoSpace: return H5E_NOSPACE;
    case ErrorKind::kBusy: return H5E_CANTLOCKFILE;
  }
  return H5E_UNSUPPORTED;
}

const char* base_name(const char* path) noexcept {
  if (!path) return "tessera";
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

herr_t register_error_class() noexcept {
  if (g_class != H5I_INVALID_HID) return 0;
  hid_t cls = H5Eregister_class("tessera", "tessera", TESSERA_VERSION_STRING);
  if (cls < 0) return -1;
  hid_t major = H5Ecreate_msg(cls, H5E_MAJOR, "VOL connector");
  hid_t minor[kErrorKinds];
  bool ok = major >= 0;
  for (int i = 0; i < kErrorKinds; ++i) {
    minor[i] = ok ? H5Ecreate_msg(cls, H5E_MINOR, kMinorText[i]) : H5I_INVALID_HID;
    ok = ok && minor[i] >= 0;
  }
  if (!ok) {
    H5Eunregister_class(cls);  // also releases the messages created so far
    return -1;
  }
  g_class = cls;
  g_major = major;
  for (int i = 0; i < kErrorKinds; ++i) g_minor[i] = minor[i];
  return 0;
}

void unregister_error_class() noexcept {
  if (g_class == H5I_INVALID_HID) return;
  // Unregistering the class releases its messages too.  During library shutdown this
  // may fail harmlessly (the error interface may already be closing): ignore that.
  H5E_BEGIN_TRY { H5Eunregister_class(g_class); }
  H5E_END_TRY
  g_class = H5I_INVALID_HID;
  g_major = H5I_INVALID_HID;
  for (hid_t& m : g_minor) m = H5I_INVALID_HID;
}

hid_t error_class_id() noexcept { return g_class; }

void vpush_error_at(const char* file, unsigned line, const char* func, ErrorKind kind, const char* fmt,
                    va_list ap) noexcept {
  char body[1024];
  std::vsnprintf(body, sizeof body, fmt ? fmt : "", ap);
  char msg[1100];
  std::snprintf(msg, sizeof msg, "tessera: %s", body);

  hid_t cls = g_class, major = g_major, minor = g_minor[kind_index(kind)];
  if (cls == H5I_INVALID_HID) {
    cls = H5E_ERR_CLS;
    major = H5E_VOL;
    minor = fallback_minor(kind);
  }
  // "%s" so that '%' in names (file names are user input) is never interpreted.
  H5Epush2(H5E_DEFAULT, base_name(file), func ? func : "?", line, cls, major, minor, "%s", msg);
}

void push_error_at(const char* file, unsigned line, const char* func, ErrorKind kind, const char* fmt,
                   ...) noexcept {
  va_list ap;
  va_start(ap, fmt);
  vpush_error_at(file, line, func, kind, fmt, ap);
  va_end(ap);
}

void push_error(const char* func, const char* fmt, ...) noexcept {
  va_list ap;
  va_start(ap, fmt);
  vpush_error_at("tessera", 0, func, ErrorKind::kUnsupported, fmt, ap);
  va_end(ap);
}

void fail_unsupported(const std::string& msg) { throw VolError{static_cast<int>(ErrorKind::kUnsupported), msg}; }
void fail_arg(const std::string& msg) { throw VolError{static_cast<int>(ErrorKind::kBadArgument), msg}; }
ErrorKind error_kind(tessera::Errc c) {
  switch (c) {
    case tessera::Errc::kInvalidArgument: return ErrorKind::kBadArgument;
    case tessera::Errc::kUnsupported: return ErrorKind::kUnsupported;
    case tessera::Errc::kNotFound: return ErrorKind::kNotFound;
    case tessera::Errc::kAlreadyExists: return ErrorKind::kAlreadyExists;
    case tessera::Errc::kCorrupt: return ErrorKind::kCorrupt;
    case tessera::Errc::kIo: return ErrorKind::kIo;
    case tessera::Errc::kNoSpace: return ErrorKind::kNoSpace;
    case tessera::Errc::kBusy: return ErrorKind::kBusy;
    default: return ErrorKind::kEngine;
  }
}

void fail_engine(const tessera::Status& st) { throw VolError{static_cast<int>(error_kind(st.code())), st.message()}; }

}  // namespace tessera_vol
