// external_storage.h — raw data in external files (H5Pset_external), as native HDF5 keeps it.
//
// A contiguous dataset with an external file list stores its elements in plain files
// outside the container: the dataset's bytes, element after element in row-major order
// and the file type's byte order, laid across the segments (name, offset, size) in turn;
// a last segment of size H5F_UNLIMITED takes the rest.  The container keeps only the
// dataset's metadata (an engine array that is never written), so the external files are
// the data — other programs read and write them, and tessera reads what they hold.
//
// As native (src/H5Defl.c): relative names resolve against the efile prefix
// (HDF5_EXTFILE_PREFIX, else the dapl's H5Pset_efile_prefix, "${ORIGIN}" being the
// HDF5 file's directory), else the current directory; writes create missing files;
// reading a file that does not exist is an error, reading past a file's end gives zeros;
// only the first dimension may be extendible, and the segments must hold the largest
// extent (an unlimited extent needs an unlimited last segment).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tessera_vol {

class ExternalStorage {
 public:
  static bool used(hid_t dcpl);
  // The dcpl's segments for a dataset of `space` with `elem_size`-byte elements; throws
  // VolError where native's H5Dcreate refuses the combination.
  ExternalStorage(hid_t dcpl, hid_t space, size_t elem_size);
  // The expanded efile prefix for a dataset of file `file_name` ("" = current directory).
  static std::string prefix(hid_t dapl, const std::string& file_name);

  // The elements selected in `fspace` (a dataspace of the dataset), packed in selection
  // order, read from / written to the external files.
  void read(hid_t fspace, const std::string& prefix, uint8_t* packed) const;
  void write(hid_t fspace, const std::string& prefix, const uint8_t* packed) const;

 private:
  struct Segment {
    std::string name;
    int64_t offset = 0;
    hsize_t size = 0;  // H5F_UNLIMITED: to the end
  };
  // Bytes [pos, pos + n) of the dataset's stream to or from `buf`.
  void transfer(uint64_t pos, uint64_t n, uint8_t* buf, bool write, const std::string& prefix) const;
  template <class F>
  void for_each_run(hid_t fspace, F f) const;

  std::vector<Segment> segs_;
  size_t es_ = 1;
};

}  // namespace tessera_vol
