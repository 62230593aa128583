// file_arrays.h — a file's engine arrays, shared by all dataset handles of the container:
// the registry of open arrays, their options, extents, and committing them (flush; an
// epoch under MPI, parallel_state.h).  One part of SharedFile (object_model.h);
// file_arrays.cc.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "engine/array/array.h"
#include "engine/catalog/catalog.h"

namespace tessera_vol {

class SharedFile;

class FileArrays {
 public:
  explicit FileArrays(SharedFile& f) : f_(f) {}
  // SharedFile's calls of the same names (object_model.h) say what each does.
  std::shared_ptr<tessera::Array> array(uint64_t array_id);
  void create_array(const tessera::Schema& schema, uint64_t* id);
  bool create_array_into(const tessera::Schema& schema, tessera::CatalogBatch* b, uint64_t* id);
  void abandon_array(uint64_t array_id);
  void set_extent(tessera::Array& a, const tessera::Coords& extent);
  void flush_arrays();
  std::shared_ptr<tessera::Array> open_array(uint64_t array_id);
  void publish_own(tessera::Array& a);
  void drop_array(uint64_t array_id);
  void release_array(uint64_t array_id, const std::shared_ptr<tessera::Array>& held);
  // The file closes: buffered writes are flushed or (parallel) discarded.
  void clear() { arrays_.clear(); }

 private:
  tessera::ArrayOptions array_options();
  // Parallel flush: the epoch commit (docs/parallel.md).
  void commit_epoch();

  SharedFile& f_;
  // Arrays stay open (write buffers alive) until the container closes.
  std::map<uint64_t, std::shared_ptr<tessera::Array>> arrays_;
  std::optional<tessera::ArrayOptions> array_opts_;  // array_options()
};

}  // namespace tessera_vol
