// An open, published fragment: its footer (validated on open) and access to its tiles.
// Every tile read verifies the tile's checksum before decoding, so corrupt bytes surface
// as a kCorrupt error naming the file — never as wrong data.  The file stays open for
// the Fragment's lifetime, so it remains readable even after consolidation unlinks it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/file_io.h"
#include "engine/fragment_meta.h"

namespace tessera {

struct SparseTileData {
  std::vector<uint64_t> coords;  // cells * rank
  std::vector<uint8_t> values;   // cells * elem_size
  std::vector<uint64_t> keys;    // cells * layout.key_size(): global-order keys for searches
};

class Fragment {
 public:
  static std::shared_ptr<Fragment> open(const std::string& path);
  const FragmentMeta& meta() const { return meta_; }
  const std::string& path() const { return path_; }
  // The fragment file was renamed (a deferred publish): keeps messages accurate.
  void set_path(std::string p) { path_ = std::move(p); }
  File& file() { return file_; }
  uint64_t file_size() const { return file_size_; }

  // Decoded cells of dense entry i (cells of its box in cell order).
  std::shared_ptr<const std::vector<uint8_t>> dense_tile(size_t i) const;
  // Decoded cells of sparse tile i; `layout` (the array's) computes the cells' keys.
  std::shared_ptr<const SparseTileData> sparse_tile(size_t i, const Layout& layout) const;

 private:
  std::vector<uint8_t> read_blob(const BlobRef& b, const FilterPipeline& p, const std::string& what) const;
  std::string path_;
  File file_;
  uint64_t file_size_ = 0;
  uint64_t serial_ = 0;  // process-unique, keys the tile cache
  FragmentMeta meta_;
};

}  // namespace tessera
