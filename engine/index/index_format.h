// index_format.h — a fragment's value index on disk (<array dir>/index/<fragment id>.tix)
// and reading it back.  Byte layout: docs/format.md, "Index files".
//
// The index covers the fragment's *positions*: its dense data entries' cells (each
// entry's box in cell order, entries in footer order), then its sparse tiles' cells.
// Positions are grouped into chunks of whole entries (one tile piece, or several small
// ones together), and for every (chunk, bin) holding values the file has one bitmap of
// the chunk-local positions in that bin, with the count, minimum and maximum of those
// values.  Bitmaps are stored bin-major (every chunk's bitmap of bin 0, then of bin 1,
// ...), so the bins a range query needs are one contiguous stretch of the file, read in
// one request; per-chunk bitmaps let a subarray query skip the chunks it does not touch
// and let a chunk's count come from its (chunk, bin) counts alone.
//
// The file is immutable and belongs to exactly one fragment (id and size recorded):
// written whole under a temporary name, synced and renamed (index_builder.h), so a
// crash leaves no index or a whole one, never a half.  Every part is checksummed; a bad
// checksum is a kCorrupt error naming the file — never a wrong answer.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/index/bitmap.h"
#include "engine/util/file_cache.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/index/value_type.h"

namespace tessera {

// The index file of fragment `id` in an array directory.
std::string index_dir(const std::string& array_dir);
std::string index_path(const std::string& array_dir, const FragmentId& id);

struct IndexChunk {
  enum : uint8_t { kDense = 0, kSparse = 1 };
  uint8_t kind = kDense;
  uint64_t first = 0, count = 0;  // entries [first, first + count) of that kind
  uint64_t cells = 0;             // positions (fill entries have none)
};

// One (chunk, bin) bitmap.
struct IndexPair {
  uint64_t chunk = 0, count = 0;
  uint8_t min[8] = {}, max[8] = {};  // element bytes, host order, zero-padded
  uint64_t offset = 0, size = 0, checksum = 0;  // the bitmap's bytes in the file
  static constexpr size_t kBytes = 56;
};

struct IndexBin {
  bool nan = false;  // the bin of NaN values (min/max unused)
  uint64_t count = 0;
  uint8_t min[8] = {}, max[8] = {};
  uint64_t first_pair = 0, pairs = 0;  // its rows of the pair table (chunk order)
  uint64_t pairs_checksum = 0;         // XXH3-64 of those rows' bytes
};

struct IndexHead {
  FragmentId fragment;
  uint64_t fragment_bytes = 0;
  NumType type = NumType::kF64;
  uint8_t big_endian = 0;
  uint32_t precision = 0, max_bins = 0;  // how it was built (informational)
  std::vector<IndexChunk> chunks;
  std::vector<IndexBin> bins;  // non-NaN bins in ascending value order, then the NaN bin
  uint64_t pairs_offset = 0, pair_count = 0;

  std::vector<uint8_t> serialize() const;
  static IndexHead deserialize(const uint8_t* p, size_t n, const std::string& what);
};

// The file's fixed parts.
constexpr char kIndexMagic[8] = {'T', 'S', 'R', 'A', 'I', 'N', 'D', 'X'};
constexpr char kIndexEndMagic[8] = {'T', 'S', 'R', 'A', 'I', 'E', 'N', 'D'};
constexpr uint32_t kIndexVersion = 1;
constexpr size_t kIndexHeaderBytes = 32, kIndexTrailerBytes = 40;

// The pair table's bytes (rows in the order given).
std::vector<uint8_t> serialize_pairs(const std::vector<IndexPair>& pairs);

// Which chunk holds each position, per kind: chunk numbers and the first position of
// every entry inside its chunk.
struct ChunkMap {
  std::vector<uint64_t> dense_chunk, dense_base;    // per dense entry
  std::vector<uint64_t> sparse_chunk, sparse_base;  // per sparse tile
  static ChunkMap of(const FragmentMeta& m, const std::vector<IndexChunk>& chunks);
};

// An opened index file, validated against its fragment.
class IndexFile {
 public:
  // The index of `f` in the array directory, or null when it has none (no file).
  // `type` and `big_endian` are the array's elements: an index built for others is corrupt.
  static std::shared_ptr<IndexFile> open(const std::string& array_dir, const Fragment& f, NumType type,
                                         bool big_endian);
  const IndexHead& head() const { return head_; }
  const ChunkMap& chunk_map() const { return map_; }
  const std::string& path() const { return path_; }
  uint64_t file_bytes() const { return size_; }
  // The pair rows of bins [lo, hi] (verified).
  std::vector<IndexPair> pairs(uint32_t lo, uint32_t hi) const;
  // Reads [off, off + n) of the file.
  std::vector<uint8_t> read(uint64_t off, uint64_t n) const;
  // Asks the kernel to start reading [off, off + n) now (a hint).
  void will_need(uint64_t off, uint64_t n) const { file_->will_need(off, n); }
  // Decodes pair p's bitmap from `bytes`, which hold the file's bytes from `base` on.
  Bitmap bitmap(const IndexPair& p, const std::vector<uint8_t>& bytes, uint64_t base) const;

 private:
  std::string path_;
  // Through the file cache: a query over thousands of fragments holds an index of each.
  std::unique_ptr<CachedFile> file_;
  uint64_t size_ = 0;
  IndexHead head_;
  ChunkMap map_;
};

}  // namespace tessera
