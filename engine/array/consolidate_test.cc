// Consolidation (consolidation.cc, TileDB §4.3) on its own: merged fragments read exactly as
// the fragments they replace, the replaced files go, and the size-tiered policy merges
// runs of similar sizes while leaving a much larger fragment alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/util/file_io.h"

using namespace tessera;

namespace {

Schema schema() {
  Schema s;
  s.extent = {64, 64};
  s.max_extent = {64, 64};
  s.tile_extent = {8, 8};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  s.filters = FilterPipeline({{FilterType::kShuffle, 0}, {FilterType::kZlib, 1}}, 4);
  return s;
}

struct Model {
  std::vector<int32_t> v = std::vector<int32_t>(64 * 64, 0);
  void box(Array& a, uint64_t r0, uint64_t c0, uint64_t nr, uint64_t nc, int32_t base) {
    std::vector<int32_t> w(nr * nc);
    for (uint64_t i = 0; i < nr * nc; ++i) w[i] = base + static_cast<int32_t>(i);
    ASSERT_TRUE(a.write(Selection::from_box(Box({r0, c0}, {r0 + nr - 1, c0 + nc - 1})), w.data()).ok());
    for (uint64_t r = 0; r < nr; ++r)
      for (uint64_t c = 0; c < nc; ++c) v[(r0 + r) * 64 + c0 + c] = w[r * nc + c];
  }
  void points(Array& a, const std::vector<uint64_t>& coords, int32_t base) {
    std::vector<int32_t> w(coords.size() / 2);
    for (size_t i = 0; i < w.size(); ++i) w[i] = base - static_cast<int32_t>(i);
    ASSERT_TRUE(a.write_points(coords.data(), w.size(), w.data()).ok());
    ASSERT_TRUE(a.flush().ok());
    for (size_t i = 0; i < w.size(); ++i) v[coords[2 * i] * 64 + coords[2 * i + 1]] = w[i];
  }
  void expect(Array& a) {
    std::vector<int32_t> got(64 * 64);
    ASSERT_TRUE(a.read(Selection::from_box(Box({0, 0}, {63, 63})), got.data()).ok());
    EXPECT_EQ(got, v);
  }
};

std::unique_ptr<Array> make(std::string* dir) {
  char tmpl[] = "/tmp/tessera_consolidate_XXXXXX";
  *dir = std::string(mkdtemp(tmpl)) + "/a";
  EXPECT_TRUE(Array::create(*dir, schema()).ok());
  std::unique_ptr<Array> a;
  EXPECT_TRUE(Array::open(*dir, true, ArrayOptions{}, &a).ok());
  return a;
}

}  // namespace

TEST(Consolidate, MergedReadsAsTheFragmentsItReplaced) {
  std::string dir;
  auto a = make(&dir);
  Model m;
  m.box(*a, 0, 0, 64, 64, 0);          // everything
  m.box(*a, 5, 7, 20, 30, 100000);     // overlapping, not tile-aligned
  m.points(*a, {0, 0, 63, 63, 33, 1, 5, 7}, -1);  // a sparse delta over both
  m.box(*a, 40, 40, 16, 16, 200000);   // tile-aligned, newest
  ASSERT_GE(a->fragments().size(), 4u);
  m.expect(*a);
  ASSERT_TRUE(a->consolidate_all().ok());
  EXPECT_EQ(a->fragments().size(), 1u);
  m.expect(*a);
  // Reopened: only the merged fragment remains on disk, and it reads the same.
  a.reset();
  ASSERT_TRUE(Array::open(dir, false, ArrayOptions{}, &a).ok());
  EXPECT_EQ(a->fragments().size(), 1u);
  size_t files = 0;
  for (const std::string& name : list_dir(Env::posix(), dir + "/frag"))
    files += name.size() > 4 && name.compare(name.size() - 4, 4, ".tfr") == 0 && name[0] != '.';
  EXPECT_EQ(files, 1u) << "the replaced fragment files are removed";
  m.expect(*a);
}

TEST(Consolidate, SizeTieredMergesSimilarSizesOnly) {
  std::string dir;
  auto a = make(&dir);
  Model m;
  m.box(*a, 0, 0, 64, 64, 0);  // one large fragment
  for (int k = 0; k < 6; ++k) m.box(*a, static_cast<uint64_t>(k) * 8, 0, 8, 8, 1000 * (k + 1));  // six one-tile ones
  ASSERT_EQ(a->fragments().size(), 7u);
  ASSERT_TRUE(a->consolidate_auto(4, 4.0).ok());
  std::vector<FragmentInfo> f = a->fragments();
  ASSERT_EQ(f.size(), 2u) << "the small ones merged, the large one stayed";
  EXPECT_GT(f[0].cells, f[1].cells) << "oldest first: the large fragment, then the merge";
  EXPECT_EQ(f[1].cells, 6u * 64u);
  m.expect(*a);
}
