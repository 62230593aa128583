// index_builder.h — building one fragment's value index (index_format.h).
//
// Two passes over the fragment's values, both streaming tile by tile:
//   1. a sample (every value of up to 16 evenly spaced tiles, thinned to about a million,
//      plus every tile's min/max from the footer) chooses the bin boundaries
//      (value_bins.h) — a fragment's bins follow its own values, so a new fragment never
//      changes an old one's index;
//   2. the chunks (whole tiles, or runs of small ones) are binned on the thread pool, a
//      few at a time in flight, each into one bitmap per bin it has values in.
// Chunks finish in file order into an unlinked spool file; the index is then written
// bin-major from it under a temporary name, synced and renamed into place.  Memory: the
// chunks in flight (their tiles, 8 bytes per cell of scratch, their bitmaps) and the
// pair rows — never the whole index or the whole fragment.  (Array::build_index runs two
// of these at once.)
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "engine/fragment/fragment.h"
#include "engine/schema/schema.h"
#include "engine/util/thread_pool.h"

namespace tessera {

struct IndexOptions {
  uint32_t precision = 3;    // significant decimal digits of bin boundaries (1..9)
  uint32_t max_bins = 1024;  // bins per fragment, at most (2..65536)
  // Entries (tile pieces, sparse tiles) smaller than this many cells are grouped into one
  // chunk; a larger one is a chunk of its own (its counts then answer for it alone).
  uint64_t chunk_cells = 1 << 16;
  // Throws kInvalidArgument naming the bad field.
  void validate() const;
};

// Cells done so far (called on the building thread after each chunk).
using IndexProgress = std::function<void(uint64_t cells)>;

// Writes the index file of file fragment `f` of the array in `array_dir` (its elements
// must be numbers: num_type) and publishes it (synced, renamed into place).
// pool: where chunks are binned (null: on the caller).  Returns the file's size in bytes.
uint64_t build_fragment_index(const Schema& s, const Fragment& f, const std::string& array_dir,
                              const IndexOptions& o, ThreadPool* pool, const IndexProgress& progress = nullptr);

// The same in two steps, so a caller building many can sync one index while it bins the
// next: write_fragment_index leaves the file under its temporary name, unsynced;
// publish_index syncs and renames it (and removes it if that fails).
struct WrittenIndex {
  std::string tmp, path;
  uint64_t bytes = 0;
  Env* env = nullptr;  // the fragment's (its Context's)
};
WrittenIndex write_fragment_index(const Schema& s, const Fragment& f, const std::string& array_dir,
                                  const IndexOptions& o, ThreadPool* pool, const IndexProgress& progress = nullptr);
void publish_index(const WrittenIndex& w);

// Positions the index of `f` covers (its data cells): the work a build does.
uint64_t index_positions(const FragmentMeta& m);

}  // namespace tessera
