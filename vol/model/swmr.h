// swmr.h — HDF5's single-writer/multiple-reader mode (SWMR) on a tessera container.
//
// What SWMR promises — one writer process appends and flushes, readers in other processes
// open the file with H5F_ACC_SWMR_READ and see a consistent newer state after
// H5Drefresh — is how a container works anyway: fragments are immutable, a flush
// publishes a dataset's new fragments before its new extent (the schema record last), and
// a refresh reads the extent before the fragments, so a reader never sees an extent whose
// cells are not published yet.  What remains is HDF5's bookkeeping, kept as native keeps
// it: the SWMR bits of the file's intent (H5Fget_intent), H5Fstart_swmr_write and its
// preconditions, and the "superblock version 3" a file needs for SWMR writing — a
// container records whether it was created with library bounds of 1.10 or later
// (catalog key sys/sb3), as native's superblock version says.
#pragma once

#include <hdf5.h>

#include "engine/catalog/catalog.h"

namespace tessera_vol {

class SharedFile;
struct FileObj;

// H5Fcreate: validates SWMR_WRITE against the fapl's library bounds and records sys/sb3
// in the creating batch.
void swmr_on_create(unsigned flags, hid_t fapl, tessera::CatalogBatch& b);
// H5Fopen of a container (new or already open in this process): validates the SWMR flags
// as native does; returns the SWMR bits the intent gains.
unsigned swmr_on_open(SharedFile& f, unsigned flags, bool already_open);
// H5Fstart_swmr_write.
void start_swmr_write(FileObj& fo);
// Whether the file's objects have native's version 2 headers (created with a low bound
// of 1.8 or later): they report all four object times, version 1 only the change time.
bool object_header2(SharedFile& f);

}  // namespace tessera_vol
