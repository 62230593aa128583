// cover_boxes.h — the covered cells of a painted buffer as a few disjoint boxes.
//
// A spill paints a tile's blob pieces into one buffer with a coverage mask
// (write_spill.cc).  When the pieces do not cover their bounding box whole — many small
// H5Dwrites of row bands, each crossing a few tiles — the covered cells used to go out as
// sparse cells: 16 bytes of coordinates per cell to encode at the spill, and every read
// decoding them again (issue 20, workload (4): most of a small-write close's CPU).  The
// same cells are almost always a handful of boxes, each of which is a dense piece of the
// tile (several disjoint data boxes may share a tile: docs/format.md).
#pragma once
#include <cstdint>
#include <vector>

#include "engine/geometry/box.h"

namespace tessera {

// Splits the cells of `bb` whose mask byte is 1 into disjoint boxes whose union is
// exactly those cells.  The mask holds one byte per cell of bb, cell (bb.lo + x) at offset
// sum(x[d] * stride[d]) — the strides of a dense linearization of bb (any order of the
// dimensions).  Greedy: from the first covered cell in memory order, the box grows along
// the fastest dimension, then each slower one, while the added slab is covered and not
// yet taken.  Returns false (out unspecified) as soon as more than max_boxes are needed.
// The mask is consumed: covered cells are marked taken (2).
bool cover_boxes(const Box& bb, const uint64_t* stride, std::vector<uint8_t>& mask, size_t max_boxes,
                 std::vector<Box>* out);

}  // namespace tessera
