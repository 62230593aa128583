// file_settings.h — HDF5 file-level settings that shape only HDF5's own file format or
// its in-memory caches (page buffering, metadata cache configuration, file locking
// flags, file drivers), kept as native keeps them on a tessera container.
//
// A container has no pages, no metadata cache and no virtual file driver, so none of
// these settings changes how a container is stored.  They are accepted and reported back
// as native reports them (H5Fget_access_plist, H5Fget_mdc_config, ...), and the rules
// native enforces around them are enforced too (page buffering needs the paged file
// space strategy; a second open of a file must use the same locking flags), so a program
// sees the answers it would see natively.  The drivers: sec2, stdio, direct, log and
// family store a container under the given name; core with no backing store keeps the
// container in a private temporary directory removed when the file closes (nothing
// remains, as natively); split/multi store it under the metadata member's name
// (<name>-m.h5 by default); with any other driver (h5py's Python file-object driver,
// ros3, ...) the file stays in native format with that driver and tessera works on a
// private temporary container, imported at open and written back at flush and close
// (file_image.h).
#pragma once

#include <hdf5.h>

#include <string>

namespace tessera_vol {

class SharedFile;

// Where a file of this name and fapl lives: the container path (`temporary` true when it
// must be removed at close: core driver without backing store).  A driver that cannot
// hold a container (h5py's file-object driver, ros3, ...): with `foreign`, a temporary
// container and *foreign = true (its bytes are imported and written back in native
// format, file_image.h); without, an error.
std::string container_path(const std::string& name, hid_t fapl, bool* temporary, bool* foreign = nullptr);

// A path for a container in a new private temporary directory (under $TMPDIR, else
// /tmp), named after `name`'s last component: in-memory files and file images.
std::string temporary_container_path(const std::string& name);

// The fapl's page buffer size adjusted as native adjusts it for a file whose fcpl is
// `fcpl` (create: refuses page buffering without the paged strategy; open: disables it);
// at create also native's userblock rules (a multiple of the page size or alignment).
void apply_page_buffering(hid_t fapl, hid_t fcpl, bool create);

// The file locking flags an open asks for (HDF5_USE_FILE_LOCKING overrides the fapl).
struct LockingFlags {
  bool use = true, ignore_disabled = false;
  static LockingFlags of(hid_t fapl);
  bool operator==(const LockingFlags& o) const { return use == o.use && (!use || ignore_disabled == o.ignore_disabled); }
};


}  // namespace tessera_vol
