// Heaps for variable-length cells.
//
// A variable-length array stores, in its ordinary tiles, one 32-byte descriptor per cell:
//   u64 heap ts, u32 heap rank, u32 heap seq   which heap file (named like a fragment id)
//   u64 offset, u32 length                     where the cell's bytes are in it
//   u32 check                                  low 32 bits of XXH3-64 of the bytes
// An all-zero descriptor is the empty value (the fill).  Each write that carries
// variable-length data appends the bytes to one heap file, which is published (synced,
// renamed) before any fragment that refers to it, so a descriptor never points at bytes
// that are not durable.  Fragments stay small and fixed-size; consolidation copies
// descriptors and leaves heaps alone.  Format: docs/format.md, "Heap files".
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/util/file_cache.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_id.h"

namespace tessera {

struct VarDescriptor {
  uint64_t ts = 0;
  uint32_t rank = 0, seq = 0;
  uint64_t offset = 0;
  uint32_t length = 0, check = 0;
};
static_assert(sizeof(VarDescriptor) == 32, "descriptor layout is part of the format");

// Accumulates the bytes of one heap in memory, then publishes them as a heap file.
class HeapBuilder {
 public:
  explicit HeapBuilder(FragmentId id) : id_(id) {}
  const FragmentId& id() const { return id_; }
  VarDescriptor append(const uint8_t* p, uint64_t n);
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  bool empty() const { return bytes_.empty(); }
  // Writes <dir>/<id>.thp durably (temp file, fdatasync, rename, dir fsync).
  void publish(Env& env, const std::string& dir) const;

 private:
  FragmentId id_;
  std::vector<uint8_t> bytes_;
};

// Reads cell values from heap files, each opened once through the file cache
// (file_cache.h: its descriptor may be closed between reads and reopened).
class HeapReader {
 public:
  HeapReader(Env& env, std::string dir) : env_(env), dir_(std::move(dir)) {}
  // Appends the value's bytes to out; `pending` (may be null) is a not yet published heap
  // whose bytes are served from memory.  Throws kCorrupt on a bad check or range.
  void read(const VarDescriptor& d, const HeapBuilder* pending, std::vector<uint8_t>* out);
  static std::string file_name(const FragmentId& id) { return id.name() + ".thp"; }

 private:
  Env& env_;
  std::string dir_;
  struct OpenHeap {
    std::shared_ptr<CachedFile> file;
    uint64_t size;  // checked against every descriptor before anything is allocated
  };
  std::map<std::string, OpenHeap> open_;
};

}  // namespace tessera
