// elink.h — following external links across containers.
//
// tessera resolves paths inside one container (SharedFile::resolve).  When a path crosses an
// external link, the rest of the path lives in another container: ExternalHop walks the path
// first and, only if it meets an external link, rewrites the callback's location into a
// temporary group object of the target container, so the callback then runs unchanged there.
// Paths that stay in one container are left exactly as they were.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "vol/model/objects.h"

namespace tessera_vol {

// LinkRecord::target of an external link whose value is not a well-formed external link
// value (H5Lcreate_ud accepts any bytes): soft_path then holds the raw value.
inline constexpr uint64_t kRawLinkValue = 1;

class ExternalHop {
 public:
  // `o`, `lp`, `name`: the callback's location (name may be NULL: the location alone).
  // follow_last: whether the last path component is followed (opening an object) or named
  // (creating, or a link operation).  The lapl gives the prefix, access flags and fapl.
  // `apl`: the access plist (a lapl subclass: gapl, dapl, tapl) used when lp carries no lapl.
  ExternalHop(Obj* o, const H5VL_loc_params_t* lp, const char* name, bool follow_last, hid_t apl = H5P_DEFAULT);
  ExternalHop(const ExternalHop&) = delete;
  ExternalHop& operator=(const ExternalHop&) = delete;

  Obj* obj;                       // the location to use
  const H5VL_loc_params_t* lp;    // the location parameters to use
  const char* name;               // the name to use (NULL if the callback had none)
  bool crossed() const { return holder_ != nullptr; }

 private:
  std::unique_ptr<GroupObj> holder_;
  H5VL_loc_params_t lp_{};
  std::string name_;
};

// Opens the container an external link names, searching like HDF5 (H5F_prefix_open_file):
// the name as given, HDF5_EXT_PREFIX, the lapl's prefix, the linking file's directory.
// A native HDF5 file is refused with a clear error: tessera objects cannot live in it.
std::shared_ptr<SharedFile> open_external_file(SharedFile& parent, const std::string& group_path,
                                               const LinkRecord& l, hid_t lapl);

// The object an external link names, reached as traversing the link would reach it:
// its container (opened now, or the instance already open) and object id.  nullopt when
// the file or the object cannot be reached (H5Ocopy's H5O_COPY_EXPAND_EXT_LINK_FLAG
// then keeps the link, as native does).
struct ExternalTarget {
  std::shared_ptr<SharedFile> file;
  uint64_t oid = 0;
};
std::optional<ExternalTarget> external_link_target(SharedFile& parent, const std::string& group_path,
                                                   const LinkRecord& l, hid_t lapl);

// H5Oexists_by_name(o, name, lapl) with native HDF5's answers, across external links.
bool object_exists_by_name(Obj* o, const std::string& name, hid_t lapl);

}  // namespace tessera_vol
