// Array::write_boxes (an irregular HDF5 selection in one call) against a model: random
// disjoint boxes, small and large, in both publishing modes; the large ones land in one
// fragment unless two share a tile, and every cell reads back as the model says.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

TEST(WriteBoxes, DisjointBoxesReadBackAndShareFragments) {
  testutil::Rng rng(testutil::named_seed("WriteBoxes", 11));
  for (int run = 0; run < 20; ++run) {
    testutil::TempDir dir("tessera_boxes");
    std::unique_ptr<Container> cont;
    ASSERT_TRUE(Container::create(dir.sub("c.tsr"), Container::CreateMode::kExclusive, &cont).ok());
    Schema s;
    s.extent = s.max_extent = {96, 80};
    s.tile_extent = {32, 16};
    s.elem_size = 4;
    s.kind = ElementKind::kUInt;
    uint64_t id;
    ASSERT_TRUE(cont->create_array(s, &id).ok());
    ArrayOptions o;
    o.durable_writes = run % 2;
    o.direct_cells = 1 + rng.below(200);
    std::unique_ptr<Array> a;
    ASSERT_TRUE(cont->open_array(id, true, o, &a).ok());
    // Disjoint boxes: cells of a random grid of row bands x column bands, some skipped.
    std::vector<uint64_t> rows = {0}, cols = {0};
    while (rows.back() < 96) rows.push_back(std::min<uint64_t>(96, rows.back() + 1 + rng.below(40)));
    while (cols.back() < 80) cols.push_back(std::min<uint64_t>(80, cols.back() + 1 + rng.below(30)));
    std::vector<Box> boxes;
    for (size_t i = 0; i + 1 < rows.size(); ++i)
      for (size_t j = 0; j + 1 < cols.size(); ++j)
        if (rng.chance(0.6)) boxes.push_back(Box({rows[i], cols[j]}, {rows[i + 1] - 1, cols[j + 1] - 1}));
    std::vector<uint32_t> model(96 * 80, 0), src;
    for (const Box& b : boxes)
      for (uint64_t r = b.lo[0]; r <= b.hi[0]; ++r)
        for (uint64_t c = b.lo[1]; c <= b.hi[1]; ++c) {
          src.push_back(static_cast<uint32_t>(rng.gen()()));
          model[r * 80 + c] = src.back();
        }
    const size_t before = a->fragments().size();
    ASSERT_TRUE(a->write_boxes(boxes, src.data()).ok());
    ASSERT_TRUE(a->flush().ok());
    std::vector<uint32_t> got(96 * 80);
    ASSERT_TRUE(a->read(Selection::from_box(Box({0, 0}, {95, 79})), got.data()).ok());
    ASSERT_EQ(got, model) << "run " << run;
    // The large boxes: as many fragments as the most of them sharing one tile; the
    // buffer's spill one more.
    const uint64_t direct = std::min<uint64_t>(o.direct_cells, 32 * 16);
    std::map<std::pair<uint64_t, uint64_t>, size_t> per_tile;
    size_t layers = 0;
    for (const Box& b : boxes) {
      if (b.cells() < direct) continue;
      for (uint64_t tr = b.lo[0] / 32; tr <= b.hi[0] / 32; ++tr)
        for (uint64_t tc = b.lo[1] / 16; tc <= b.hi[1] / 16; ++tc) layers = std::max(layers, ++per_tile[{tr, tc}]);
    }
    EXPECT_LE(a->fragments().size() - before, layers + 1) << "run " << run;
  }
}

}  // namespace
}  // namespace tessera
