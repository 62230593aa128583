// swmr.cc — see swmr.h.
#include "vol/model/swmr.h"

#include <string>

#include "vol/model/objects.h"

namespace tessera_vol {

namespace {

constexpr char kSuperblock3Key[] = "sys/sb3";
constexpr char kObjectHeader2Key[] = "sys/oh2";

}  // namespace

bool object_header2(SharedFile& f) {
  auto v = f.container().catalog().get(kObjectHeader2Key);
  return v && *v == "1";
}

namespace {

bool superblock3(SharedFile& f) {
  auto v = f.container().catalog().get(kSuperblock3Key);
  return v && *v == "1";
}

H5F_libver_t high_bound(hid_t fapl) {
  H5F_libver_t low = H5F_LIBVER_EARLIEST, high = H5F_LIBVER_LATEST;
  if (fapl >= 0 && H5Pget_libver_bounds(fapl, &low, &high) < 0) fail_arg("cannot read the library version bounds");
  return high;
}

}  // namespace

void swmr_on_create(unsigned flags, hid_t fapl, tessera::CatalogBatch& b) {
  H5F_libver_t low = H5F_LIBVER_EARLIEST, high = H5F_LIBVER_LATEST;
  if (fapl != H5P_DEFAULT && H5Pget_libver_bounds(fapl, &low, &high) < 0)
    fail_arg("cannot read the library version bounds");
  const bool swmr = (flags & H5F_ACC_SWMR_WRITE) != 0;
  // Native: SWMR writing creates a version 3 superblock (raising the low bound to 1.10),
  // which a high bound below 1.10 cannot allow.
  if (swmr && high < H5F_LIBVER_V110) fail_arg("superblock version exceeds high bound");
  b.put(kSuperblock3Key, swmr || low >= H5F_LIBVER_V110 ? "1" : "0");
  // Object headers of version 2 (low bound 1.8 or later, or SWMR) store all four object
  // times; version 1 only the change time (object.cc fill_info).
  b.put(kObjectHeader2Key, swmr || low >= H5F_LIBVER_V18 ? "1" : "0");
}

unsigned swmr_on_open(SharedFile& f, unsigned flags, bool already_open) {
  const unsigned want = flags & (H5F_ACC_SWMR_WRITE | H5F_ACC_SWMR_READ);
  if (already_open) {
    if ((flags & H5F_ACC_SWMR_WRITE) && !(f.intent() & H5F_ACC_SWMR_WRITE))
      fail_arg("SWMR write access flag not the same for file that is already open");
    if ((flags & H5F_ACC_SWMR_READ) && !(f.intent() & (H5F_ACC_SWMR_WRITE | H5F_ACC_SWMR_READ | H5F_ACC_RDWR)))
      fail_arg("SWMR read access flag not the same for file that is already open");
    return 0;  // the shared intent stays as the first open set it
  }
  if ((flags & H5F_ACC_SWMR_WRITE) && !superblock3(f)) fail_arg("superblock version for SWMR is less than 3");
  return want;
}

void start_swmr_write(FileObj& fo) {
  SharedFile& f = *fo.file;
  std::lock_guard<std::recursive_mutex> g(f.mu());
  if (!f.writable()) fail_arg("no write intent on file");
  if (!superblock3(f)) fail_arg("file superblock version - should be at least 3");
  if (high_bound(f.fapl()) < H5F_LIBVER_V110)
    fail_arg("file format version does not support SWMR - needs to be 1.10 or greater");
  if (f.intent() & H5F_ACC_SWMR_WRITE) fail_arg("file already in SWMR writing mode");
  for (auto& [p, type] : f.open_objects())
    if (type == H5I_ATTR || type == H5I_DATATYPE)
      fail_arg("named datatypes and/or attributes opened in the file");
  // Readers that open the file from now on see everything written so far.
  if (!f.parallel()) f.flush_arrays();
  f.add_intent(H5F_ACC_SWMR_WRITE);
}

}  // namespace tessera_vol
