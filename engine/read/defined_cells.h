// Which cells of a region are defined: written and not erased since (the sparse-data
// paper's H5Dget_defined; docs/sparse.md).  Answered from what the fragments' footers say
// (dense boxes, fill boxes) and the coordinates of their sparse and erased tiles — values
// are never read — so the cost follows the entries and sparse cells that touch the
// region, not the region's logical size.
//
// The precedence is the read planner's (read_planner.h): per space tile, dense boxes own
// cells newest first (a data box defines them, a fill box — an extent shrink or an
// erase — undefines them); a sparse or erased cell decides its cell when no newer dense
// box owns it, the newest such cell winning; the write buffer's cells are newest of all.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/geometry/box.h"
#include "engine/schema/layout.h"
#include "engine/read/read_planner.h"
#include "engine/schema/schema.h"

namespace tessera {

class DefinedPlanner {
 public:
  DefinedPlanner(const Schema& s, const ReadView& view);
  // region: disjoint boxes inside the extent.  *out: the defined cells among them as
  // disjoint boxes — dense pieces as they are stored, scattered cells joined into runs
  // along the last dimension — sorted by their low corner in row-major order.
  void defined(const std::vector<Box>& region, std::vector<Box>* out);
  // Whether each of n cells (n * rank coordinates) is defined: out[i] = 0 or 1.
  void defined_points(const uint64_t* coords, size_t n, uint8_t* out);

 private:
  const Schema& schema_;
  Layout layout_;
  const ReadView& view_;
  const FragmentList& frags_;
  int rank_;
};

}  // namespace tessera
