// cmd_export.cc — `tessera export CONTAINER OUT.h5 [--force]` and
// `tessera import IN.h5 CONTAINER [--force]`: a tessera container to a native HDF5 file
// and back, everything HDF5 can hold (h5copy.h), streaming with bounded memory.
//
// One side is opened through the tessera connector, the other through HDF5's native
// one; the target is created (refused if it exists, unless --force) with the source's
// file creation properties and library version bounds, and made durable before the
// command returns (a native file is fdatasync'ed; a container's close commits).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "tools/tessera/command.h"
#include "convert/h5copy.h"
#include "tools/tessera/h5util.h"
#include "tools/tessera/output.h"
#include "tools/tessera/progress.h"

namespace tool {

namespace {

struct Args {
  std::string from, to, as_of;
  bool force = false;
};

bool is_native_hdf5(const std::string& path) {
  if (!tessera::path_exists(tessera::Env::posix(), path) || tessera::is_directory(tessera::Env::posix(), path)) return false;
  if (tessera::Container::is_container(path)) return false;  // a one-file container begins with an HDF5 file
  Hid fapl = native_fapl();
  htri_t r;
  H5E_BEGIN_TRY { r = H5Fis_accessible(path.c_str(), fapl); }
  H5E_END_TRY
  return r > 0;
}

void fdatasync_path(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0 || ::fdatasync(fd) != 0) {
    if (fd >= 0) ::close(fd);
    fail("syncing '" + path + "' failed");
  }
  ::close(fd);
}

// to_native: export (container -> native file); else import.
int run(const Args& a, bool to_native) {
  const char* verb = to_native ? "export" : "import";
  if (!tessera::path_exists(tessera::Env::posix(), a.from)) fail("'" + a.from + "': no such file or directory");
  if (to_native && !tessera::Container::is_container(a.from))
    fail("'" + a.from + "' is not a tessera container" +
         (is_native_hdf5(a.from) ? std::string(" (it is a native HDF5 file: `tessera import` converts those)") : ""));
  if (!to_native && !is_native_hdf5(a.from))
    fail("'" + a.from + "' is not a native HDF5 file" +
         (tessera::Container::is_container(a.from) ? std::string(" (it is a tessera container: `tessera export` converts those)")
                                                   : ""));
  if (tessera::path_exists(tessera::Env::posix(), a.to)) {
    if (!a.force) fail("'" + a.to + "' exists (--force replaces it)");
    if (to_native && tessera::is_directory(tessera::Env::posix(), a.to)) fail("'" + a.to + "' is a directory; give a file name to export to");
    if (!to_native && !tessera::Container::is_container(a.to) && tessera::is_directory(tessera::Env::posix(), a.to))
      fail("'" + a.to + "' is a directory but not a tessera container; refusing to replace it");
  }
  if (!a.as_of.empty() && a.as_of.find_first_of(" \t,") != std::string::npos)
    fail("--as-of " + a.as_of + ": write a time without blanks (2026-11-26T10:41:09Z)", kUsage);
  Hid src_fapl = to_native ? tessera_fapl(a.as_of.empty() ? "" : "as_of=" + a.as_of) : native_fapl();
  Hid dst_fapl = to_native ? native_fapl() : tessera_fapl();
  Hid src(H5Fopen(a.from.c_str(), H5F_ACC_RDONLY, src_fapl));
  if (!src.valid()) fail("opening '" + a.from + "': " + h5_error_message());
  // The target gets the source's file creation properties and version bounds.
  Hid fcpl(H5Fget_create_plist(src));
  Hid sfapl(H5Fget_access_plist(src));
  H5F_libver_t lo = H5F_LIBVER_EARLIEST, hi = H5F_LIBVER_LATEST;
  if (sfapl.valid() && H5Pget_libver_bounds(sfapl, &lo, &hi) >= 0) H5Pset_libver_bounds(dst_fapl, lo, hi);
  H5Eclear2(H5E_DEFAULT);
  if (a.force && tessera::path_exists(tessera::Env::posix(), a.to) && !to_native) {
    tessera::Status st = tessera::Container::remove(a.to);
    if (!st.ok()) fail("replacing '" + a.to + "': " + st.message());
  }
  Hid dst(H5Fcreate(a.to.c_str(), a.force ? H5F_ACC_TRUNC : H5F_ACC_EXCL, fcpl.valid() ? fcpl.get() : H5P_DEFAULT,
                    dst_fapl));
  if (!dst.valid()) fail("creating '" + a.to + "': " + h5_error_message());
  const auto t0 = std::chrono::steady_clock::now();
  Progress bar(std::string(verb) + "ing", 0);
  CopyOptions o;
  o.progress = [&](uint64_t done, uint64_t total) {
    bar.set_total(total);
    bar.update(done);
  };
  CopyStats s;
  try {
    s = copy_file(src, dst, o);
  } catch (const Failure& f) {
    bar.finish();
    dst.reset();
    // Leave nothing half-made behind.
    if (to_native) tessera::remove_file(tessera::Env::posix(), a.to);
    else (void)tessera::Container::remove(a.to);
    throw Failure{std::string(verb) + " of '" + a.from + "' failed (nothing written): " + f.message, f.status};
  }
  bar.finish();
  if (H5Fclose(dst.release()) < 0) fail("closing '" + a.to + "': " + h5_error_message());
  if (to_native) fdatasync_path(a.to);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%sed %s -> %s: %llu group(s), %llu dataset(s), %llu committed datatype(s), %llu link(s), %llu "
              "attribute(s); %s of data in %.2f s (%s/s)%s\n",
              verb, a.from.c_str(), a.to.c_str(), static_cast<unsigned long long>(s.groups),
              static_cast<unsigned long long>(s.datasets), static_cast<unsigned long long>(s.datatypes),
              static_cast<unsigned long long>(s.links), static_cast<unsigned long long>(s.attributes),
              human_bytes(s.bytes).c_str(), secs, human_bytes(static_cast<uint64_t>(s.bytes / (secs > 0 ? secs : 1))).c_str(),
              s.stored_chunks ? (", " + std::to_string(s.stored_chunks) + " chunk(s) moved as stored").c_str() : "");
  return kOk;
}

}  // namespace

Runner setup_convert(CLI::App& sub, bool to_native) {
  auto args = std::make_shared<Args>();
  sub.add_option(to_native ? "CONTAINER" : "IN", args->from,
                 to_native ? "The tessera container" : "The native HDF5 file")
      ->required();
  sub.add_option(to_native ? "OUT" : "CONTAINER", args->to,
                 to_native ? "The native HDF5 file to write" : "The tessera container to create")
      ->required();
  sub.add_flag("--force", args->force, "Replace the target if it exists");
  if (to_native) as_of_option(sub, args->as_of);
  return [args, to_native] { return run(*args, to_native); };
}

Runner setup_export(CLI::App& sub) { return setup_convert(sub, true); }
Runner setup_import(CLI::App& sub) { return setup_convert(sub, false); }

}  // namespace tool
