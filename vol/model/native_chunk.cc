// native_chunk.cc — see native_chunk.h.
#include "vol/model/native_chunk.h"

#include <atomic>
#include <string>

#include "vol/base/h5_runtime.h"
#include "vol/base/error.h"  // fail_arg

namespace tessera_vol {

namespace {
std::atomic<uint64_t> g_scratch_counter{0};
}  // namespace

NativeChunk::NativeChunk(hid_t ftype, hid_t dcpl, const tessera::Coords& chunk) : chunk_(chunk) {
  ftype_ = H5Tcopy(ftype);
  dcpl_ = H5Pcopy(dcpl);
  if (ftype_ < 0 || dcpl_ < 0) fail_arg("cannot copy the datatype or dcpl for the filter pipeline");
  std::vector<hsize_t> ch(chunk.begin(), chunk.end());
  // One chunk, written and read whole, allocated when written; no external storage or
  // fill-time settings of the dataset matter here.
  if (H5Pset_chunk(dcpl_, static_cast<int>(ch.size()), ch.data()) < 0 ||
      H5Pset_alloc_time(dcpl_, H5D_ALLOC_TIME_INCR) < 0)
    fail_arg("cannot set up the filter pipeline's chunk");
  open();  // fails here, where native's H5Dcreate would
}

NativeChunk::~NativeChunk() {
  close();
  if (ftype_ >= 0) H5Tclose(ftype_);
  if (dcpl_ >= 0) H5Pclose(dcpl_);
}

void NativeChunk::open() {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  // Native, whatever HDF5_VOL_CONNECTOR says: the pipeline is HDF5's own.
  bool ok = fapl >= 0 && H5Pset_fapl_core(fapl, 1 << 20, 0) >= 0 && H5Pset_vol(fapl, H5VL_NATIVE, nullptr) >= 0;
  std::string name = "tessera-filter-scratch-" + std::to_string(g_scratch_counter++);
  if (ok) file_ = H5Fcreate(name.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl);
  if (fapl >= 0) H5Pclose(fapl);
  if (file_ < 0) fail_arg("cannot create the in-memory file for the filter pipeline");
  std::vector<hsize_t> dims(chunk_.begin(), chunk_.end());
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
  // No chunk cache: every write goes through the filters and every read comes back
  // through them.
  if (dapl >= 0) H5Pset_chunk_cache(dapl, 0, 0, 1.0);
  dset_ = H5Dcreate2(file_, "chunk", ftype_, space, H5P_DEFAULT, dcpl_, dapl);
  if (space >= 0) H5Sclose(space);
  if (dapl >= 0) H5Pclose(dapl);
  if (dset_ < 0) {
    close();
    fail_arg("the dataset's filters cannot be applied to its datatype (HDF5 refused the filter pipeline)");
  }
}

void NativeChunk::close() {
  if (dset_ >= 0) H5Dclose(dset_);
  if (file_ >= 0) H5Fclose(file_);
  dset_ = file_ = H5I_INVALID_HID;
}

void NativeChunk::maybe_renew() {
  // Rewritten chunks of another size leave free space behind in the in-memory file:
  // start a fresh one now and then.
  if (++trips_ % 1024 == 0) {
    close();
    open();
  }
}

void NativeChunk::round_trip(void* chunk) {
  maybe_renew();
  if (H5Dwrite(dset_, ftype_, H5S_ALL, H5S_ALL, H5P_DEFAULT, chunk) < 0 ||
      H5Dread(dset_, ftype_, H5S_ALL, H5S_ALL, H5P_DEFAULT, chunk) < 0)
    fail_arg("the dataset's filter pipeline failed on a chunk");
}

void NativeChunk::encode(const void* chunk, std::vector<uint8_t>* bytes, uint32_t* mask) {
  maybe_renew();
  std::vector<hsize_t> zero(chunk_.size(), 0);
  hsize_t size = 0;
  if (H5Dwrite(dset_, ftype_, H5S_ALL, H5S_ALL, H5P_DEFAULT, chunk) < 0 ||
      H5Dget_chunk_storage_size(dset_, zero.data(), &size) < 0)
    fail_arg("the dataset's filter pipeline failed on a chunk");
  bytes->resize(size);
  size_t room = bytes->size();
  if (read_chunk_bytes(dset_, H5P_DEFAULT, zero.data(), mask, bytes->data(), &room) < 0)
    fail_arg("the dataset's filter pipeline failed on a chunk");
}

void NativeChunk::decode(const void* bytes, size_t n, uint32_t mask, void* chunk) {
  maybe_renew();
  std::vector<hsize_t> zero(chunk_.size(), 0);
  if (H5Dwrite_chunk(dset_, H5P_DEFAULT, mask, zero.data(), n, bytes) < 0)
    fail_arg("cannot store the chunk's bytes");
  if (H5Dread(dset_, ftype_, H5S_ALL, H5S_ALL, H5P_DEFAULT, chunk) < 0)
    fail_arg("the chunk's bytes do not decode through the dataset's filter pipeline");
}

}  // namespace tessera_vol
