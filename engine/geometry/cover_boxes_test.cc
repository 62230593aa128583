// cover_boxes (cover_boxes.h) against a set of covered offsets computed independently,
// and the spill that uses it: small box writes that cover tiles in part (row bands, as
// many small parallel H5Dwrites do) read back exactly — from memory, after the spill,
// after a reopen, as points — against a plain array model, and the spill did store some
// tile as several dense boxes.
#include "engine/geometry/cover_boxes.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/testing/test_schema.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using testutil::Rng;

TEST(CoverBoxes, DisjointBoxesWhoseUnionIsTheMask) {
  const uint64_t seed = testutil::named_seed("CoverBoxes", 20);
  std::printf("[ seed     ] CoverBoxes: %llu\n", static_cast<unsigned long long>(seed));
  Rng rng(seed);
  for (int round = 0; round < 400; ++round) {
    const int r = static_cast<int>(rng.range(1, 3));
    Coords lo(r), hi(r), ext(r);
    for (int d = 0; d < r; ++d) {
      lo[d] = rng.below(100);
      ext[d] = rng.range(1, 12);
      hi[d] = lo[d] + ext[d] - 1;
    }
    const Box bb(lo, hi);
    // Row-major or column-major linearization.
    uint64_t stride[kMaxRank];
    const bool col = rng.chance(0.5);
    uint64_t s = 1;
    for (int i = 0; i < r; ++i) {
      const int d = col ? i : r - 1 - i;
      stride[d] = s;
      s *= ext[d];
    }
    std::vector<uint8_t> mask(s, 0);
    std::set<uint64_t> want;
    auto offset_of = [&](const Coords& c) {
      uint64_t off = 0;
      for (int d = 0; d < r; ++d) off += (c[d] - lo[d]) * stride[d];
      return off;
    };
    // A union of random boxes (bands, overlapping), sometimes plus scattered cells.
    const int nb = static_cast<int>(rng.range(0, 6));
    for (int k = 0; k < nb; ++k) {
      Box b = testutil::random_box(rng, ext, 12);
      for (int d = 0; d < r; ++d) {
        b.lo[d] += lo[d];
        b.hi[d] += lo[d];
      }
      Coords c(b.lo);
      for (;;) {
        mask[offset_of(c)] = 1;
        want.insert(offset_of(c));
        int d = r - 1;
        for (; d >= 0; --d) {
          if (++c[d] <= b.hi[d]) break;
          c[d] = b.lo[d];
        }
        if (d < 0) break;
      }
    }
    if (rng.chance(0.3))
      for (int k = 0; k < 5; ++k) {
        const uint64_t off = rng.below(s);
        mask[off] = 1;
        want.insert(off);
      }
    std::vector<uint8_t> m2 = mask;
    std::vector<Box> out;
    ASSERT_TRUE(cover_boxes(bb, stride, mask, s + 1, &out)) << "round " << round;
    std::set<uint64_t> got;
    for (const Box& b : out) {
      ASSERT_TRUE(bb.contains(b)) << b.to_string() << " outside " << bb.to_string();
      Coords c(b.lo);
      for (;;) {
        ASSERT_TRUE(got.insert(offset_of(c)).second) << "boxes overlap at offset " << offset_of(c);
        int d = r - 1;
        for (; d >= 0; --d) {
          if (++c[d] <= b.hi[d]) break;
          c[d] = b.lo[d];
        }
        if (d < 0) break;
      }
    }
    ASSERT_EQ(got, want) << "round " << round;
    for (uint64_t off = 0; off < s; ++off) ASSERT_EQ(mask[off], want.count(off) ? 2 : 0);
    // One box fewer than it needs: refused.
    if (!out.empty()) {
      std::vector<Box> out2;
      EXPECT_FALSE(cover_boxes(bb, stride, m2, out.size() - 1, &out2));
    }
  }
}

std::vector<int32_t> read_box(Array& a, const Box& b) {
  std::vector<int32_t> v(b.cells());
  EXPECT_TRUE(a.read(Selection::from_box(b), v.data()).ok());
  return v;
}

void spill_of_bands(Order cell_order, bool deflate) {
  char tmpl[] = "/tmp/tessera_cover_XXXXXX";
  const std::string root = mkdtemp(tmpl), dir = root + "/a";
  const uint64_t N = 96;
  Schema s = int32_schema({N, N}, {N, N}, {32, 16});
  s.cell_order = cell_order;
  if (deflate) s.filters = FilterPipeline({{FilterType::kShuffle, 0}, {FilterType::kDeflate, 1}}, 4);
  ASSERT_TRUE(Array::create(dir, s).ok());
  std::unique_ptr<Array> a;
  ArrayOptions o;
  o.durable_writes = false;  // the connector's mode: box writes are buffered blobs
  ASSERT_TRUE(Array::open(dir, true, o, &a).ok());
  std::vector<int32_t> model(N * N, 0);
  Rng rng(7 + static_cast<int>(cell_order) + 10 * deflate);
  // A first layer everywhere (an older fragment below the bands).
  for (uint64_t i = 0; i < N; ++i)
    for (uint64_t j = 0; j < N; ++j) model[i * N + j] = -1 - static_cast<int32_t>(i * N + j);
  ASSERT_TRUE(a->write(Selection::from_box(Box({0, 0}, {N - 1, N - 1})), model.data()).ok());
  ASSERT_TRUE(a->flush().ok());
  // Bands of 4 x 24 at random places (crossing tiles, overlapping), each its own write.
  int32_t next = 1;
  for (int k = 0; k < 30; ++k) {
    const uint64_t r0 = rng.below(N - 3), c0 = rng.below(N - 23);
    std::vector<int32_t> v(4 * 24);
    for (auto& x : v) x = next++;
    ASSERT_TRUE(a->write(Selection::from_box(Box({r0, c0}, {r0 + 3, c0 + 23})), v.data()).ok());
    for (uint64_t i = 0; i < 4; ++i)
      for (uint64_t j = 0; j < 24; ++j) model[(r0 + i) * N + c0 + j] = v[i * 24 + j];
  }
  const Box all({0, 0}, {N - 1, N - 1});
  EXPECT_EQ(read_box(*a, all), model) << "before the spill";
  ASSERT_TRUE(a->flush().ok());
  EXPECT_EQ(read_box(*a, all), model) << "after the spill";
  a.reset();
  ASSERT_TRUE(Array::open(dir, false, ArrayOptions(), &a).ok());
  EXPECT_EQ(read_box(*a, all), model) << "after a reopen";
  for (int q = 0; q < 30; ++q) {
    const Box b = testutil::random_box(rng, {N, N}, 40);
    std::vector<int32_t> want;
    for (uint64_t i = b.lo[0]; i <= b.hi[0]; ++i)
      for (uint64_t j = b.lo[1]; j <= b.hi[1]; ++j) want.push_back(model[i * N + j]);
    EXPECT_EQ(read_box(*a, b), want) << b.to_string();
  }
  std::vector<uint64_t> pts;
  std::vector<int32_t> want;
  for (int q = 0; q < 500; ++q) {
    const uint64_t i = rng.below(N), j = rng.below(N);
    pts.insert(pts.end(), {i, j});
    want.push_back(model[i * N + j]);
  }
  std::vector<int32_t> got(want.size());
  ASSERT_TRUE(a->read_points(pts.data(), want.size(), got.data()).ok());
  EXPECT_EQ(got, want) << "point reads";
  a.reset();
  // The bands' fragment holds some tile as several dense boxes, and few of its cells as
  // sparse cells (a tile whose overlapping bands leave many small pieces).
  size_t shared_tiles = 0;
  uint64_t sparse_cells = 0, band_cells = 0;
  for (const std::string& name : list_dir(Env::posix(), dir + "/frag")) {
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".tfr") != 0 || name[0] == '.') continue;
    auto f = Fragment::open(dir + "/frag/" + name);
    const FragmentMeta& m = f->meta();
    if (m.cells == N * N) continue;  // the first layer
    band_cells += m.cells;
    for (const SparseEntry& e : m.sparse) sparse_cells += e.cells;
    for (size_t i = 1; i < m.dense.size(); ++i)
      if (m.dense[i].tile == m.dense[i - 1].tile && m.dense[i].kind == DenseEntry::kData) ++shared_tiles;
  }
  EXPECT_GT(shared_tiles, 0u);
  EXPECT_GT(band_cells, 0u);
  EXPECT_LT(sparse_cells * 2, band_cells) << sparse_cells << " of " << band_cells << " cells sparse";
  std::system(("rm -rf " + root).c_str());
}

TEST(CoverBoxes, SpillOfPartlyCoveredTilesReadsBack) { spill_of_bands(Order::kRowMajor, false); }
TEST(CoverBoxes, SpillOfPartlyCoveredTilesReadsBackColMajorDeflate) { spill_of_bands(Order::kColMajor, true); }

}  // namespace
}  // namespace tessera
