// plist_cache.h — stored creation property lists (H5Pencode2 bytes) decoded once per
// distinct encoding, and what dataset create and open read from a dcpl, read once per
// encoding (issue 20: each H5Pget_* is an API call, about a thousand instructions of
// context push and ID lookup, and a dataset create asked eight of them).
#pragma once

#include <hdf5.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessera_vol {

// The dcpl facts dataset create and open use.  An encoding determines them: they are
// read from the first dcpl seen with that encoding (the caller's at a create, the
// decoded copy at an open).  (The tessera_Pset_layout property is not part of an
// encoding: apply_layout reads it from the caller's dcpl.)
struct DcplFacts {
  H5D_layout_t layout = H5D_CONTIGUOUS;
  H5D_alloc_time_t alloc_time = H5D_ALLOC_TIME_DEFAULT;
  int nfilters = 0;
  H5D_fill_value_t fill_defined = H5D_FILL_VALUE_DEFAULT;
  H5D_fill_time_t fill_time = H5D_FILL_TIME_IFSET;
  std::vector<hsize_t> chunk;  // chunked layout: the chunk dims (H5Pget_chunk)
  int external_count = 0;      // H5Pget_external_count
  bool track_times = true;     // H5Pget_obj_track_times
  bool attr_order_tracked = false;  // H5Pget_attr_creation_order & H5P_CRT_ORDER_TRACKED
};

// Reads the facts from `dcpl` (H5P_* calls).  Throws VolError naming what cannot be read.
DcplFacts read_dcpl_facts(hid_t dcpl);

class PlistCache {
 public:
  PlistCache() = default;
  PlistCache(const PlistCache&) = delete;
  PlistCache& operator=(const PlistCache&) = delete;
  ~PlistCache() { clear(); }

  // The encoding decoded (H5Pdecode), owned here: callers H5Pcopy it, query it or take a
  // reference of their own (H5Iinc_ref), never close it.  H5I_INVALID_HID if it does not
  // decode.
  hid_t decoded(const std::string& enc);
  // The facts of a dcpl encoding, read the first time from `source` (a dcpl with that
  // encoding), or from the decoded copy when `source` is H5I_INVALID_HID.  Reading the
  // source decodes nothing: a dcpl with a variable-length fill value of its own encodes
  // the application's pointers, and closing a decoded copy would free them, so only
  // decoded() decodes, and only for dcpls without a fill value of their own.  Throws
  // VolError if the facts cannot be read.
  std::shared_ptr<const DcplFacts> dcpl_facts(const std::string& enc, hid_t source = H5I_INVALID_HID);
  void clear();

 private:
  struct Entry {
    bool decoded = false;  // H5Pdecode tried: id is its result
    hid_t id = H5I_INVALID_HID;
    std::shared_ptr<const DcplFacts> facts;
  };
  Entry& entry(const std::string& enc);
  // Bounded (256 encodings): files rarely hold more than a few distinct plists.
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace tessera_vol
