// visible_boxes.h — what a tile's buffered box writes show, as disjoint boxes, without
// painting the tile.
//
// A spill painted every tile its box writes touch into a buffer of their bounding box
// with a coverage mask (write_spill.cc).  With large tiles and a few small writes far
// apart in one — the benchmark's 256 writes of 8x256 cells into 2048x1024 tiles
// (issue 20, workload (4) at full scale) — the bounding box is most of the tile: ~8 MiB
// cleared, painted and scanned per tile for ~20 KiB of data, 90 % of that close's time.
// The boxes themselves say what is visible: each later write hides the part of the
// earlier ones it meets, and what is left of each is a few boxes (Box subtraction).
#pragma once
#include <cstddef>
#include <vector>

#include "engine/geometry/box.h"

namespace tessera {

struct VisibleBox {
  Box box;
  size_t src;  // index into the input: the write whose cells show here
};

// The boxes `in` were written in order (a later one wins where they overlap).  Sets *out
// to disjoint boxes whose union is the union of `in`, each inside the input box it names,
// that box being the last input holding its cells.  Returns false (out unspecified) as
// soon as more than max_out boxes are held after some input (a bound on the work: a
// later input may still hide some of them).
bool visible_boxes(const std::vector<Box>& in, size_t max_out, std::vector<VisibleBox>* out);

}  // namespace tessera
