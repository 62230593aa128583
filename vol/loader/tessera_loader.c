/* tessera_loader.c — the file HDF5 loads from HDF5_PLUGIN_PATH (libtessera.so).
 *
 * Why a separate loader: the connector itself (libtessera_vol.so, the sources of vol/) calls
 * hundreds of HDF5 functions, and the process it is loaded into may hold any HDF5 of
 * 1.14 or 2.x — the one of a C program, of a source-built h5py, or the copy a binary
 * h5py wheel bundles (h5py.libs/libhdf5-<hash>.so.320, loaded RTLD_LOCAL).  Linking
 * the connector against libhdf5 would load a second, different libhdf5 into such a
 * process, whose IDs and state are not the first one's.  So neither this loader nor the
 * connector has a DT_NEEDED entry for libhdf5; instead, when HDF5 asks for the class:
 *
 *   1. find the libhdf5 that is asking: the object defining the code that called
 *      H5PLget_plugin_info (dladdr on the return address), else the one libhdf5 found
 *      in the process (dl_iterate_phdr); two different ones is an error (a libhdf5 is an
 *      object that defines H5get_libversion itself, whatever its file is called);
 *   2. promote it to the global symbol scope (dlopen RTLD_NOLOAD|RTLD_GLOBAL: nothing is
 *      loaded), so the connector's undefined HDF5 symbols bind to it;
 *   3. dlopen the connector (RTLD_NOW: every symbol it needs must exist in that library,
 *      or loading fails here with the linker's message) and ask it for the class that
 *      matches the running version (tessera_vol_class, vol/base/h5_runtime.h).
 *
 * Every failure is printed on stderr with the reason, and HDF5 gets NULL (it then
 * reports that the connector cannot be loaded).  The loader uses HDF5's headers for
 * constants only, and links nothing but libc/libdl. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <H5PLextern.h>

typedef const void *(*class_fn)(void *hdf5, unsigned maj, unsigned min, unsigned rel, char *err,
                                size_t errlen);
typedef int (*libversion_fn)(unsigned *, unsigned *, unsigned *);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const void *the_class; /* result of the one load attempt */
static void *caller_pc;       /* return address of the first H5PLget_plugin_info call */

static void fail(const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "tessera: the VOL connector cannot be loaded: ");
  fprintf(stderr, fmt, a ? a : "", b ? b : "");
  fputc('\n', stderr);
}

/* Whether the loaded object at `path` is a libhdf5: it defines H5get_libversion itself
 * (dlsym on a handle also searches the object's dependencies, hence the dladdr check).
 * By symbol, not by file name: libhdf5.so.310, a wheel's libhdf5-<hash>.so.320, Debian's
 * libhdf5_serial.so.103 are all libhdf5; libhdf5_hl is not. */
static int defines_hdf5(const char *path) {
  void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return 0;
  void *sym = dlsym(h, "H5get_libversion");
  Dl_info di;
  int own = sym && dladdr(sym, &di) && di.dli_fname && strcmp(di.dli_fname, path) == 0;
  dlclose(h);
  return own;
}

struct scan {
  char first[4096];
  int count; /* distinct loaded objects that are a libhdf5 */
};

static int scan_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct scan *s = data;
  const char *path = info->dlpi_name;
  if (!path || !*path || !strstr(path, "hdf5") || !defines_hdf5(path)) return 0;
  if (s->count++ == 0) snprintf(s->first, sizeof s->first, "%s", path);
  return 0;
}

/* The directory of this loader, for the default connector location. */
static int loader_dir(char *out, size_t n) {
  Dl_info di;
  if (!dladdr((void *)&loader_dir, &di) || !di.dli_fname) return -1;
  snprintf(out, n, "%s", di.dli_fname);
  char *slash = strrchr(out, '/');
  if (!slash) return -1;
  *slash = '\0';
  return 0;
}

static void load(void) {
  /* 1. the libhdf5 in the process */
  char hdf5_path[4096] = "";
  Dl_info di;
  if (caller_pc && dladdr(caller_pc, &di) && di.dli_fname && defines_hdf5(di.dli_fname))
    snprintf(hdf5_path, sizeof hdf5_path, "%s", di.dli_fname);
  struct scan s = {"", 0};
  dl_iterate_phdr(scan_cb, &s);
  if (!hdf5_path[0]) {
    if (s.count == 0) {
      fail("no libhdf5 is loaded in this process%s%s", NULL, NULL);
      return;
    }
    if (s.count > 1) {
      fail("%s and another libhdf5 are both loaded in this process; tessera must run inside "
           "exactly one HDF5 library%s", s.first, NULL);
      return;
    }
    snprintf(hdf5_path, sizeof hdf5_path, "%s", s.first);
  } else if (s.count > 1) {
    fail("more than one libhdf5 is loaded in this process (%s asked for the plugin); tessera "
         "must run inside exactly one HDF5 library%s", hdf5_path, NULL);
    return;
  }
  /* 2. promote it to global scope (RTLD_NOLOAD: never load a second copy) */
  void *hdf5 = dlopen(hdf5_path, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  if (!hdf5) {
    fail("cannot reopen %s: %s", hdf5_path, dlerror());
    return;
  }
  libversion_fn libversion = (libversion_fn)dlsym(hdf5, "H5get_libversion");
  unsigned maj = 0, min = 0, rel = 0;
  if (!libversion || libversion(&maj, &min, &rel) < 0) {
    fail("%s has no usable H5get_libversion%s", hdf5_path, NULL);
    return;
  }
  /* 3. the connector */
  char core[4160]; /* a 4096-byte directory plus the file name */
  const char *env = getenv("TESSERA_VOL_CORE");
  if (env && *env) {
    snprintf(core, sizeof core, "%s", env);
  } else {
    char dir[4096];
    if (loader_dir(dir, sizeof dir) < 0) {
      fail("cannot find the loader's own directory%s%s", NULL, NULL);
      return;
    }
    snprintf(core, sizeof core, "%s/../lib/libtessera_vol.so", dir);
  }
  void *h = dlopen(core, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fail("%s (set TESSERA_VOL_CORE to the connector library's path)%s", dlerror(), NULL);
    return;
  }
  class_fn get_class = (class_fn)dlsym(h, "tessera_vol_class");
  if (!get_class) {
    fail("%s has no tessera_vol_class: not a tessera connector library%s", core, NULL);
    return;
  }
  char err[512] = "";
  the_class = get_class(hdf5, maj, min, rel, err, sizeof err);
  if (!the_class) fail("%s (%s)", err, hdf5_path);
}

H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_VOL; }

const void *H5PLget_plugin_info(void) {
  if (!caller_pc) caller_pc = __builtin_return_address(0);
  pthread_once(&once, load);
  return the_class;
}
