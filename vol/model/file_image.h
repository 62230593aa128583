// file_image.h — HDF5 file images on tessera: opening a byte image of a file
// (H5Pset_file_image on a core-driver fapl, H5LTopen_file_image, h5py's
// File.in_memory(image) and h5f.open_file_image) and taking one (H5Fget_file_image).
//
// A file image is the bytes of a native HDF5 file: that is what every program that
// sends, stores or inspects images expects (PHDF5's daisy chain sends them between ranks,
// h5py users write them to disk and open them anywhere).  A container is a directory, so
// tessera converts at the two ends, as `tessera import` and `tessera export` do
// (convert/h5copy.h):
//  - opening an image imports it into a private temporary container (removed when the
//    file closes, as the core driver's memory is freed); the image itself is opened by
//    HDF5's native connector with the caller's fapl, so the caller's image callbacks
//    (H5Pset_file_image_callbacks) run as natively;
//  - H5Fget_file_image exports the container into a native in-memory (core) file and
//    returns that file's image.
//  - a file whose driver keeps its bytes outside the file system (h5py's file-object
//    driver for Python file-like objects, ros3, ...): imported the same way at open, and
//    written back through that driver as a native file at every H5Fflush and close
//    (whole: the copy is the file).  Errors of the driver (a broken Python file object)
//    surface there, not at the H5Dwrite that natively would have met them.
// Memory: the image (both ways) and the copy's slabs (64 MiB at most); an image is
// in memory by nature.  What the copy cannot carry (h5copy.h: user-defined links,
// references inside compound types) fails with the copy's message.
#pragma once

#include <hdf5.h>
#include <sys/types.h>

#include <string>

namespace tessera_vol {

struct FileObj;
class SharedFile;

// True when the fapl holds a file image (H5Pset_file_image) for the core driver.
bool has_file_image(hid_t fapl);

// Imports the image in `fapl` (opened natively under `name`) into a new container at
// `container`.  Throws (VolError) with the reason when the image cannot be read or copied;
// nothing is left at `container` then.
void import_file_image(const std::string& name, hid_t fapl, const std::string& container);

// A foreign-driver file (SharedFile::writes_back): writes the container's contents back
// through the file's own driver as a native HDF5 file (H5Fcreate, H5F_ACC_TRUNC).
void write_back(SharedFile& f);

// H5Fget_file_image: the size of the file's image; when buf is not null, the image is
// also copied into buf (size bytes; too small a buffer fails, as natively).
ssize_t file_image(FileObj& fo, void* buf, size_t size);

}  // namespace tessera_vol
