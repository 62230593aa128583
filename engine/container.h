// A container: the directory an application names in H5Fcreate.  It holds a small header
// file (`tessera.container`), the catalog of HDF5 objects (catalog.h), and one directory
// per array under `arrays/`, named by a numeric id — never by a user string, so no object
// name can escape the container.  Byte layout: docs/format.md.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "engine/array.h"
#include "engine/catalog.h"
#include "engine/error.h"

namespace tessera {

class Container {
 public:
  enum class CreateMode { kTruncate, kExclusive };
  static Status create(const std::string& path, CreateMode mode, std::unique_ptr<Container>* out);
  static Status open(const std::string& path, bool writable, std::unique_ptr<Container>* out);
  // MPI ranks other than 0 of a parallel file: a writable view whose catalog is a shadow
  // (catalog.h) and whose array creation/removal only allocates ids — rank 0 runs the same
  // calls and does the disk work.  Rank 0 must have created or opened the container first.
  static Status open_shadow(const std::string& path, std::unique_ptr<Container>* out);
  // True for a directory holding a valid container header; never throws.
  static bool is_container(const std::string& path);
  static Status remove(const std::string& path);

  const std::string& path() const { return path_; }
  bool writable() const { return writable_; }
  bool shadow() const { return shadow_; }
  // Parallel commits (docs/parallel.md): the last epoch whose per-rank publish journals
  // are committed.  open_array passes it on, so recovery rolls those journals forward and
  // later ones back.
  static constexpr const char* kEpochKey = "sys/epoch";
  uint64_t committed_epoch() const;
  Catalog& catalog() { return *catalog_; }

  // Array ids are allocated from a counter kept in the catalog.
  // durable = false: the array's files are not synced until the next sync().
  Status create_array(const Schema& schema, uint64_t* id, bool durable = true);
  // One syncfs(2) over the container's file system (see Array::prepare_flush).
  Status sync();
  // True when an array was created with durable = false since the last sync().
  bool has_unsynced_arrays() const { return unsynced_arrays_; }
  Status open_array(uint64_t id, bool writable, const ArrayOptions& opts, std::unique_ptr<Array>* out);
  Status remove_array(uint64_t id);
  // Finishes every array's crash recovery now (publish journals rolled forward or back,
  // orphan temporary fragments removed) instead of at each array's first open.  A
  // parallel file's rank 0 calls it at open, so that the ranks may later open arrays
  // independently of each other.  Only arrays whose frag/ holds a journal or a temporary
  // file are opened.
  Status recover_arrays();
  std::string array_dir(uint64_t id) const;

 private:
  Container() = default;
  std::string path_;
  bool writable_ = false;
  bool shadow_ = false;
  bool unsynced_arrays_ = false;
  std::unique_ptr<Catalog> catalog_;
};

}  // namespace tessera
