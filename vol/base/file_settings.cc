// file_settings.cc — see file_settings.h.
#include "vol/base/file_settings.h"

#include <fcntl.h>
#include <unistd.h>

#include <H5FDcore.h>
#include <H5FDmulti.h>
#include <H5VLnative.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "vol/base/error.h"

namespace tessera_vol {

namespace {

hid_t real_fapl(hid_t fapl) { return fapl == H5P_DEFAULT ? H5P_FILE_ACCESS_DEFAULT : fapl; }

std::string base_name(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

}  // namespace

std::string temporary_container_path(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/tessera-core-XXXXXX";
  if (!::mkdtemp(t.data())) fail_arg("cannot create a temporary directory for in-memory file '" + name + "'");
  std::string b = base_name(name);
  return t + "/" + (b.empty() ? "file" : b);
}

namespace {

// The metadata member's name of a split/multi file (H5FD_MEM_SUPER's name pattern).
std::string multi_meta_name(const std::string& name, hid_t fapl) {
  H5FD_mem_t map[H5FD_MEM_NTYPES];
  hid_t memb_fapl[H5FD_MEM_NTYPES];
  char* memb_name[H5FD_MEM_NTYPES] = {};
  haddr_t memb_addr[H5FD_MEM_NTYPES];
  hbool_t relax = 0;
  if (H5Pget_fapl_multi(fapl, map, memb_fapl, memb_name, memb_addr, &relax) < 0)
    fail_arg("cannot read the multi/split driver settings");
  std::string pattern = memb_name[map[H5FD_MEM_SUPER]] ? memb_name[map[H5FD_MEM_SUPER]] : "%s-m.h5";
  for (int i = 0; i < H5FD_MEM_NTYPES; ++i) {
    if (memb_fapl[i] >= 0) H5Pclose(memb_fapl[i]);
    std::free(memb_name[i]);
  }
  size_t at = pattern.find("%s");
  return at == std::string::npos ? name + pattern : pattern.replace(at, 2, name);
}

}  // namespace

std::string container_path(const std::string& name, hid_t fapl, bool* temporary, bool* foreign) {
  *temporary = false;
  if (foreign) *foreign = false;
  fapl = real_fapl(fapl);
  hid_t drv = H5Pget_driver(fapl);
  if (drv < 0) fail_arg("cannot read the file driver");
  if (drv == H5FD_SEC2 || drv == H5FD_STDIO || drv == H5FD_LOG || drv == H5FD_FAMILY) return name;
#ifdef H5_HAVE_PARALLEL
  if (drv == H5FD_MPIO) return name;
#endif
#ifdef H5_HAVE_DIRECT
  if (drv == H5FD_DIRECT) return name;
#endif
  if (drv == H5FD_CORE) {
    size_t incr = 0;
    hbool_t backing = 1;
    if (H5Pget_fapl_core(fapl, &incr, &backing) < 0) fail_arg("cannot read the core driver settings");
    if (backing) return name;
    *temporary = true;
    return temporary_container_path(name);
  }
  if (drv == H5FD_MULTI) return multi_meta_name(name, fapl);
  if (foreign) {  // file_image.h: the file's bytes stay with the driver, in native format
    *temporary = *foreign = true;
    return temporary_container_path(name);
  }
  fail_unsupported("file '" + name + "': this file driver cannot hold a tessera container (a container is a "
                   "directory on a file system: use the default, sec2, core, split or MPI-IO driver)");
}

void apply_page_buffering(hid_t fapl, hid_t fcpl, bool create) {
  H5F_fspace_strategy_t strategy = H5F_FSPACE_STRATEGY_FSM_AGGR;
  hbool_t persist = 0;
  hsize_t threshold = 0, page = 4096;
  if (H5Pget_file_space_strategy(fcpl, &strategy, &persist, &threshold) < 0 ||
      H5Pget_file_space_page_size(fcpl, &page) < 0)
    fail_arg("cannot read the file space settings");
  if (create) {
    // Native's superblock rules for the userblock (H5F__super_init): a whole number of
    // pages (paged strategy) or of the fapl's alignment.
    hsize_t ub = 0, thr = 0, align = 1;
    if (H5Pget_userblock(fcpl, &ub) < 0 || H5Pget_alignment(fapl, &thr, &align) < 0)
      fail_arg("cannot read the userblock size or alignment");
    const hsize_t unit = strategy == H5F_FSPACE_STRATEGY_PAGE ? page : align;
    if (ub > 0 && ub < unit) fail_arg("userblock size must be > file object alignment");
    if (ub > 0 && unit > 0 && ub % unit != 0)
      fail_arg("userblock size must be an integral multiple of file object alignment");
    // Non-default file space settings need superblock version 3 (the 1.10 format): a fapl
    // whose high library-version bound is older cannot create such a file (native too).
    H5F_libver_t low = H5F_LIBVER_EARLIEST, high = H5F_LIBVER_LATEST;
    const bool non_default = strategy != H5F_FSPACE_STRATEGY_FSM_AGGR || persist || threshold != 1 || page != 4096;
    if (non_default && H5Pget_libver_bounds(fapl, &low, &high) >= 0 && high < H5F_LIBVER_V110)
      fail_arg("superblock version out of bounds: non-default file space settings need the 1.10 format "
               "(a high library-version bound of H5F_LIBVER_V110 or later)");
  }
  size_t pbs = 0;
  unsigned mm = 0, mr = 0;
  if (H5Pget_page_buffer_size(fapl, &pbs, &mm, &mr) < 0) fail_arg("cannot read the page buffer size");
  if (pbs == 0) return;
  if (strategy != H5F_FSPACE_STRATEGY_PAGE) {
    if (create) fail_arg("Enabling Page Buffering requires PAGE file space strategy");
    pbs = 0;  // an existing file without pages: no page buffer (native 1.14.4+)
  } else if (pbs < page) {
    if (create) fail_arg("Page Buffer size must be >= to the page size");
    pbs = page;
  } else {
    pbs = pbs / page * page;
  }
  if (H5Pset_page_buffer_size(fapl, pbs, mm, mr) < 0) fail_arg("cannot record the page buffer size");
}

LockingFlags LockingFlags::of(hid_t fapl) {
  LockingFlags l;
  hbool_t use = 1, ignore = 0;
  if (H5Pget_file_locking(real_fapl(fapl), &use, &ignore) < 0) fail_arg("cannot read the file locking settings");
  l.use = use;
  l.ignore_disabled = ignore;
  // HDF5_USE_FILE_LOCKING overrides the fapl, as in native (H5F__check_if_using_file_locks).
  if (const char* e = std::getenv("HDF5_USE_FILE_LOCKING")) {
    if (!std::strcmp(e, "FALSE") || !std::strcmp(e, "0")) l.use = false, l.ignore_disabled = false;
    else if (!std::strcmp(e, "TRUE") || !std::strcmp(e, "1")) l.use = true, l.ignore_disabled = false;
    else if (!std::strcmp(e, "BEST_EFFORT")) l.use = true, l.ignore_disabled = true;
  }
  return l;
}

}  // namespace tessera_vol
