// records.h — the catalog records of HDF5 objects, links and attributes, and the key and
// path helpers every user of them needs (byte layouts: docs/format.md, "Connector
// records"; keys: object_model.h).  records.cc; the `tessera` tool links it too
// (tessera_vol_records).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera_vol {

enum class ObjType : uint8_t { kGroup = 1, kDataset = 2, kDatatype = 3 };
constexpr uint64_t kRootOid = 1;

struct ObjectRecord {
  ObjType type = ObjType::kGroup;
  uint64_t rc = 0;              // hard links to this object
  std::string cpl;              // H5Pencode2 of the creation plist (gcpl/dcpl/tcpl)
  std::string type_enc;         // H5Tencode of the datatype (datasets, committed types)
  std::string space_enc;        // H5Sencode2 of the dataspace at creation (datasets)
  uint64_t array_id = 0;        // engine array (datasets)
  int64_t next_link_corder = 0; // groups: creation order of the next link
  int64_t next_attr_corder = 0;
  std::string comment;
  uint64_t committed_type = 0;  // datasets: the committed type they were created with, 0: none
  // Datasets of a variable-length type with a user fill value: the value as vlen.h's
  // stream.  H5Pencode2 would store the fill value's char*/hvl_t pointers, which dangle
  // in any later use, so `cpl` holds the dcpl with its fill value cleared (dataset.cc).
  std::string vlen_fill;
  // Creation time (seconds since the epoch) when the creation plist tracks object times
  // (H5Pset_obj_track_times, on by default), else 0: H5Oget_info's atime/mtime/ctime/btime
  // and H5Gget_objinfo's mtime, as native sets them at creation.
  int64_t times = 0;
  std::string serialize() const;
  static ObjectRecord deserialize(std::string_view s);
  // Sets `times` from the creation plist (H5P_DEFAULT: tracked, as native's default).
  void stamp_times(hid_t cpl);
  void stamp_times_tracking(bool track);  // the same, when the cpl's answer is known
};

struct LinkRecord {
  H5L_type_t type = H5L_TYPE_HARD;
  uint64_t target = 0;      // hard
  std::string soft_path;    // soft: the path; external: file name (raw value if target == 1, elink.h)
  std::string ext_obj;      // external: object path in that file
  int64_t corder = 0;
  H5T_cset_t cset = H5T_CSET_ASCII;
  // The link was moved or copied, with a valid creation order, into a group that does not
  // track creation order but stores links as messages (link storage c/d): native HDF5
  // keeps the link message's order there (H5G__obj_insert only renumbers for tracking
  // groups), and H5Lget_info reports it.  `corder` then holds that order.
  bool corder_kept = false;
  std::string serialize() const;
  static LinkRecord deserialize(std::string_view s);
  // A hard link to `target`, with the name encoding an lcpl asks for (H5P_DEFAULT: ASCII).
  static LinkRecord hard(uint64_t target, hid_t lcpl = H5P_DEFAULT);
};

struct AttrRecord {
  std::string type_enc, space_enc;
  std::string data;         // file-type bytes; variable-length data serialized (attr.cc)
  int64_t corder = 0;
  H5T_cset_t cset = H5T_CSET_ASCII;
  uint64_t committed_type = 0;  // object id of the committed type it was created with, 0: none
  std::string serialize() const;
  static AttrRecord deserialize(std::string_view s);
};

std::string hex16(uint64_t v);
// tag + hex16(id) + tail + name (a key such as "o/<hex16>" or "a/<hex16>/<name>"), built
// in one allocation.
std::string id_key(std::string_view tag, uint64_t id, std::string_view tail = {}, std::string_view name = {});
// The names of an HDF5 path, without empty and "." components ("/a//./b" -> a, b).
std::vector<std::string> path_components(const std::string& path);

}  // namespace tessera_vol
