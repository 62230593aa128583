// One window of a partial read of an unfiltered dense tile (Fragment::read_dense_runs):
// check blocks [b0, b1) read with ONE preadv whose pieces are the runs' destinations
// themselves where a run is long enough, and a scratch buffer for everything else (the
// gaps between runs, short runs).  Every block of the window is then verified against its
// checksum over the pieces it landed in, and only the short runs are copied out of
// scratch.  A whole-tile or box read thus costs the kernel's copy into the caller's buffer
// plus one checksum pass over it — no copy through a bounce buffer — and still verifies
// every byte it reads (docs/reliability.md).  The plan is pure arithmetic (tested in
// block_window_test.cc); the I/O and the checks are the Fragment's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/fragment/fragment.h"

namespace tessera {

struct WindowPlan {
  struct Piece {  // consecutive bytes of the window, in file order
    uint64_t len;
    uint8_t* dst;     // a run's destination, or null: scratch at `soff`
    uint64_t soff;
  };
  struct Copy {  // a short run's bytes, read into scratch, to copy out after the checks
    uint64_t soff, len;
    uint8_t* dst;
  };
  uint64_t b0 = 0, b1 = 0;  // the window's check blocks
  uint64_t w0 = 0, w1 = 0;  // its bytes within the tile
  std::vector<Piece> pieces;
  std::vector<Copy> copies;
  uint64_t scratch_bytes = 0;
  size_t next_run = 0;     // where the next window starts: runs[next_run] + next_skip
  uint64_t next_skip = 0;
};

struct WindowLimits {
  uint64_t block;          // check block size B
  uint64_t tile_size;      // stored bytes of the tile
  uint64_t max_bytes;      // window size cap (rounded down to whole blocks, at least one)
  uint64_t max_scratch;    // scratch cap: a window ends before a block that would pass it
  uint64_t direct_min;     // runs of at least this many bytes are read in place
  size_t max_pieces;       // iovecs of one preadv (IOV_MAX)
};

// Plans the window that starts at the block holding runs[k] + skip and ends after the
// block holding the last run byte, at max_bytes, or before a block that would take it
// past max_pieces pieces or max_scratch bytes of scratch (the window's first block is
// always taken: one that alone needs too many pieces is read whole into scratch).  runs:
// ascending, non-overlapping, inside the tile (read_dense_runs checks that); k < size.
void plan_window(const std::vector<ByteRun>& runs, size_t k, uint64_t skip, const WindowLimits& lim,
                 WindowPlan* plan);

}  // namespace tessera
