// An open, published fragment: its footer (validated on open) and access to its tiles.
// Every tile read verifies the tile's checksum before decoding, so corrupt bytes surface
// as a kCorrupt error naming the file — never as wrong data.  The file stays open for
// the Fragment's lifetime, so it remains readable even after consolidation unlinks it.
// An inline fragment (a catalog record holding the same bytes as a .tfr file) is read
// through the same code from an in-memory copy (byte_source.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/byte_source.h"
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
  // An inline fragment: `label` names it in messages (the catalog key).
  static std::shared_ptr<Fragment> open_inline(const std::string& label,
                                               std::shared_ptr<const std::vector<uint8_t>> bytes);
  const FragmentMeta& meta() const { return meta_; }
  const std::string& path() const { return path_; }
  // The fragment file was renamed (a deferred publish): keeps messages accurate.
  void set_path(std::string p) { path_ = std::move(p); }
  // The open file of a file fragment (kInternal for an inline one).
  File& file();
  bool is_inline() const { return inline_ != nullptr; }
  // The bytes of an inline fragment (null for a file fragment).
  std::shared_ptr<const std::vector<uint8_t>> inline_bytes() const {
    return inline_ ? inline_->bytes() : nullptr;
  }
  // Bytes stored: the file's size, or the inline record's.
  uint64_t file_size() const { return file_size_; }

  // Decoded cells of dense entry i (cells of its box in cell order).
  std::shared_ptr<const std::vector<uint8_t>> dense_tile(size_t i) const;
  // Decoded cells of sparse tile i; `layout` (the array's) computes the cells' keys.
  std::shared_ptr<const SparseTileData> sparse_tile(size_t i, const Layout& layout) const;

 private:
  static std::shared_ptr<Fragment> open_source(const std::string& path, std::unique_ptr<ByteSource> src);
  std::vector<uint8_t> read_blob(const BlobRef& b, const FilterPipeline& p, const std::string& what) const;
  std::string path_;
  std::unique_ptr<ByteSource> src_;
  MemorySource* inline_ = nullptr;  // src_ when inline
  uint64_t file_size_ = 0;
  uint64_t serial_ = 0;  // process-unique, keys the tile cache
  FragmentMeta meta_;
};

}  // namespace tessera
