// virtual_dataset.h — HDF5 virtual datasets (VDS, H5Pset_virtual, h5py VirtualLayout) on
// tessera containers.
//
// A virtual dataset stores no data: its dcpl (kept as given, so H5Pget_virtual_* report
// the mappings) maps selections of the virtual dataspace onto selections of source
// datasets in the same container ("."), or in other tessera containers found the way
// native HDF5 finds them (HDF5_VDS_PREFIX, the dapl's virtual prefix, the VDS file's
// directory: file_prefix.h).  A read projects the file selection through every mapping
// (H5Sselect_project_intersection — the projections native's H5Dvirtual.c makes) and reads
// each source's share straight into the caller's buffer through the ordinary dataset read
// path (type conversion included); what no available source covers reads as the VDS's
// fill value.  A write goes the same way into the sources and is refused for elements no
// mapping covers, as native.
//
// Unlimited mappings follow native's rules (H5D__virtual_set_extent_unlim): a mapping
// whose virtual and source selections are both unlimited follows its source's current
// extent; a "printf" mapping (unlimited virtual selection, %b in the source file or dataset
// name) takes one source per block, found by trying names 0, 1, ... up to the dapl's printf
// gap past the last one found.  The view (H5Pset_virtual_view) decides the extent:
// LAST_AVAILABLE the largest any mapping reaches, FIRST_MISSING the smallest.  The extent
// is recomputed whenever the dataspace is asked for, at reads and writes, and at
// H5Drefresh (which also refreshes the sources).
//
// A source in a native HDF5 file is refused with a clear error (tessera reads data only
// from tessera containers); a missing source file or dataset reads as the fill value.
#pragma once

#include <hdf5.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vol/types/unlimited_selection.h"

namespace tessera_vol {

class SharedFile;
struct DatasetObj;

class VirtualDataset {
 public:
  // The mappings of a virtual dcpl; throws VolError if they cannot be read.
  explicit VirtualDataset(hid_t dcpl);
  ~VirtualDataset();
  VirtualDataset(const VirtualDataset&) = delete;
  VirtualDataset& operator=(const VirtualDataset&) = delete;

  // H5Dcreate / H5Dset_extent: the dataspace must contain every limited dimension of every
  // mapping's virtual selection (native's check).
  void check_dims(const hsize_t* dims, int rank) const;
  // Recomputes the extent from the sources (unlimited mappings) into d.space.
  void update_extent(DatasetObj& d);
  void read(DatasetObj& d, hid_t mtype, hid_t mspace, hid_t fspace, hid_t dxpl, void* buf);
  void write(DatasetObj& d, hid_t mtype, hid_t mspace, hid_t fspace, hid_t dxpl, const void* buf);
  // H5Drefresh: the sources pick up what other processes published.
  void refresh();

 private:
  struct Mapping {
    hid_t vspace = H5I_INVALID_HID, sspace = H5I_INVALID_HID;
    std::string file, dset;
    UnlimitedHyperslab vu, su;
    bool printf = false;  // unlimited virtual selection, limited source, %b in a name
  };
  // One mapping (or printf block) resolved for the current extent: limited selections
  // with as many elements each; the spaces are owned.
  struct Piece {
    hid_t vsel = H5I_INVALID_HID, ssel = H5I_INVALID_HID;
    DatasetObj* src = nullptr;
  };
  struct Source {
    std::shared_ptr<SharedFile> file;
    DatasetObj* dset = nullptr;
  };

  // The open source dataset named by (file, dset), or null when it does not exist.
  DatasetObj* source(DatasetObj& d, const std::string& file, const std::string& dset);
  // The limited pieces of every mapping for the extent `dims`.
  std::vector<Piece> pieces(DatasetObj& d, const hsize_t* dims);
  void close_pieces(std::vector<Piece>& p);
  // How far an unlimited mapping reaches in the virtual dataset's unlimited dimension.
  hsize_t reach(DatasetObj& d, const Mapping& m, H5D_vds_view_t view, hsize_t gap);
  // Number of consecutive printf blocks found from 0 (gap: missing names tolerated).
  hsize_t printf_found(DatasetObj& d, const Mapping& m, hsize_t gap);

  std::vector<Mapping> maps_;
  std::vector<hsize_t> min_dims_;
  std::map<std::pair<std::string, std::string>, Source> sources_;
};

}  // namespace tessera_vol
