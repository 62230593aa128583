// Dense tiles written straight from the caller's rows (issue 20): the streaming block
// checksums, the merged statistics, the row spans of a strided source and, end to end,
// FragmentWriter::add_dense_tile_spans — whose fragment must hold exactly the bytes
// add_dense_tile writes for the same cells gathered into one buffer (docs/format.md).
#include <gtest/gtest.h>
#include <xxhash.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/tile/block_checksummer.h"
#include "engine/util/checksum.h"
#include "engine/context/context.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_format.h"
#include "engine/fragment/fragment_writer.h"
#include "engine/tile/row_spans.h"
#include "engine/testing/testutil.h"
#include "engine/fragment/tile_stats.h"

using namespace tessera;
using testutil::Rng;

namespace {

// Cuts [0, n) into pieces of random lengths (some empty, some long), each a multiple of
// `unit`; n must be one too.
std::vector<ByteSpan> random_pieces(Rng& rng, const uint8_t* p, size_t n, size_t unit, size_t max_units) {
  std::vector<ByteSpan> out;
  size_t pos = 0;
  while (pos < n) {
    size_t len = std::min(n - pos, unit * rng.range(0, max_units));
    out.push_back({p + pos, len});
    pos += len;
  }
  return out;
}

}  // namespace

// checksum64 may run xxhash's AVX2 form (checksum_avx2.cc): its values must be the
// library's own XXH3_64bits, one-shot and streamed, for every length class.
TEST(Checksum64, EqualsTheLibrarysXxh3) {
  Rng rng(testutil::named_seed("Checksum64", 9));
  std::vector<uint8_t> buf(3 << 20);
  rng.fill(buf.data(), buf.size());
  std::vector<size_t> lens = {0, 1, 3, 16, 17, 128, 129, 240, 241, 1024, 65536, 65537, buf.size()};
  for (int i = 0; i < 200; ++i) lens.push_back(rng.range(0, 300000));
  for (size_t n : lens) {
    const uint8_t* p = buf.data() + rng.below(buf.size() - n + 1);
    const uint64_t want = XXH3_64bits(p, n);
    EXPECT_EQ(checksum64(p, n), want) << n;
    Checksum64Stream st;
    for (auto& piece : random_pieces(rng, p, n, 1, rng.chance(0.5) ? 50 : 70000)) st.update(piece.data, piece.len);
    EXPECT_EQ(st.digest(), want) << n;
  }
}

TEST(BlockChecksummer, EqualsOneShotPerBlockWhateverThePieces) {
  Rng rng(testutil::named_seed("BlockChecksummer", 7));
  for (size_t n : {size_t{0}, size_t{1}, size_t{kCheckBlock - 1}, size_t{kCheckBlock}, size_t{kCheckBlock + 1},
                   size_t{5 * kCheckBlock + 12345}}) {
    std::vector<uint8_t> buf(n);
    rng.fill(buf.data(), n);
    for (int round = 0; round < 4; ++round) {
      const size_t maxp = round == 0 ? 1 : round == 1 ? 700 : 100000;
      auto pieces = random_pieces(rng, buf.data(), n, 1, maxp);
      BlockChecksummer blocks(kCheckBlock), whole(0);
      for (auto& s : pieces) {
        blocks.update(s.data, s.len);
        whole.update(s.data, s.len);
      }
      std::vector<uint64_t> want;
      for (size_t b = 0; b * kCheckBlock < n; ++b)
        want.push_back(checksum64(buf.data() + b * kCheckBlock, std::min<size_t>(kCheckBlock, n - b * kCheckBlock)));
      EXPECT_EQ(blocks.finish(), want) << n;
      EXPECT_EQ(whole.finish(), std::vector<uint64_t>{checksum64(buf.data(), n)}) << n;
    }
  }
}

namespace {
template <class T>
void check_merge(ElementKind kind, Rng& rng, bool nans) {
  Schema s;
  s.elem_size = sizeof(T);
  s.kind = kind;
  for (int round = 0; round < 20; ++round) {
    const size_t cells = rng.range(1, 3000);
    std::vector<T> v(cells);
    for (auto& x : v) {
      if constexpr (std::is_floating_point_v<T>) {
        x = static_cast<T>(static_cast<double>(rng.range(0, 2000000)) / 7.0 - 100000.0);
        if (x == 0) x = 1;  // -0 and +0 compare equal: either may be kept (tile_stats.h)
        if (nans && rng.chance(0.3)) x = std::numeric_limits<T>::quiet_NaN();
      } else {
        uint64_t r = rng.gen()();
        std::memcpy(&x, &r, sizeof x);
      }
    }
    if (nans && round == 0)
      for (auto& x : v) x = std::numeric_limits<T>::quiet_NaN();  // no min/max at all
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    const TileStats want = compute_stats(s, p, cells);
    TileStats got;
    for (auto& piece : random_pieces(rng, p, cells * sizeof(T), sizeof(T), 50))
      merge_stats(s, &got, compute_stats(s, static_cast<const uint8_t*>(piece.data), piece.len / sizeof(T)));
    EXPECT_EQ(got.count, want.count);
    ASSERT_EQ(got.has_minmax, want.has_minmax);
    if (want.has_minmax) {
      EXPECT_EQ(std::memcmp(got.min, want.min, 8), 0);
      EXPECT_EQ(std::memcmp(got.max, want.max, 8), 0);
      // And against the plain definition, not compute_stats alone.
      T lo = std::numeric_limits<T>::max(), hi = std::numeric_limits<T>::lowest();
      for (T x : v) {
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(x)) continue;
        }
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
      T glo, ghi;
      std::memcpy(&glo, got.min, sizeof(T));
      std::memcpy(&ghi, got.max, sizeof(T));
      EXPECT_EQ(glo, lo);
      EXPECT_EQ(ghi, hi);
    }
  }
}
}  // namespace

TEST(MergeStats, EqualsWholeTileStatistics) {
  Rng rng(testutil::named_seed("MergeStats", 11));
  check_merge<int8_t>(ElementKind::kInt, rng, false);
  check_merge<int32_t>(ElementKind::kInt, rng, false);
  check_merge<int64_t>(ElementKind::kInt, rng, false);
  check_merge<uint16_t>(ElementKind::kUInt, rng, false);
  check_merge<uint64_t>(ElementKind::kUInt, rng, false);
  check_merge<float>(ElementKind::kFloat, rng, true);
  check_merge<double>(ElementKind::kFloat, rng, true);
}

TEST(RowSpans, ConcatenationIsTheRowMajorGather) {
  Rng rng(testutil::named_seed("RowSpans", 3));
  for (int round = 0; round < 200; ++round) {
    const int rank = static_cast<int>(rng.range(1, 4));
    const size_t es = size_t{1} << rng.range(0, 3);
    uint64_t shape[kMaxRank], full[kMaxRank], lo[kMaxRank], sstride[kMaxRank], dstride[kMaxRank];
    for (int d = 0; d < rank; ++d) {
      shape[d] = rng.range(1, d == rank - 1 ? 700 : 6);
      full[d] = shape[d] + (rng.chance(0.5) ? 0 : rng.range(1, 5));  // sometimes the whole width
      lo[d] = rng.below(full[d] - shape[d] + 1);
    }
    uint64_t cells = 1, s = 1;
    for (int d = rank - 1; d >= 0; --d) {
      sstride[d] = s;
      s *= full[d];
      dstride[d] = cells;
      cells *= shape[d];
    }
    std::vector<uint8_t> src(s * es);
    rng.fill(src.data(), src.size());
    uint64_t off = 0;
    for (int d = 0; d < rank; ++d) off += lo[d] * sstride[d];
    std::vector<ByteSpan> spans;
    const bool ok = row_spans(rank, shape, src.data() + off * es, sstride, dstride, es, &spans);
    ASSERT_EQ(ok, shape[rank - 1] * es >= kMinSpanRowBytes);
    if (!ok) continue;
    // The model: every cell of the block in row-major order, by its own index.
    std::vector<uint8_t> want;
    for (uint64_t c = 0; c < cells; ++c) {
      uint64_t rem = c, so = 0;
      for (int d = rank - 1; d >= 0; --d) {
        so += (lo[d] + rem % shape[d]) * sstride[d];
        rem /= shape[d];
      }
      want.insert(want.end(), src.begin() + so * es, src.begin() + (so + 1) * es);
    }
    std::vector<uint8_t> got;
    for (auto& sp : spans) got.insert(got.end(), (const uint8_t*)sp.data, (const uint8_t*)sp.data + sp.len);
    ASSERT_EQ(got, want) << "round " << round;
  }
  // Column-major destination: not a row-major image, refused.
  uint64_t shape[2] = {4, 1000}, sstride[2] = {2000, 1}, dstride[2] = {1, 4};
  std::vector<uint8_t> src(4 * 2000);
  std::vector<ByteSpan> spans;
  EXPECT_FALSE(row_spans(2, shape, src.data(), sstride, dstride, 1, &spans));
}

namespace {

struct TileCase {
  Coords tile;
  Box box;
};

// One fragment of `tiles` written two ways — each tile gathered into one buffer
// (add_dense_tile) and as random pieces of it (add_dense_tile_spans) — must be the same
// bytes.  inline_limit > 0: the fragment may stay in memory or move to a file midway.
void same_bytes(const Schema& s, const std::vector<TileCase>& tiles, Rng& rng, uint64_t inline_limit,
                bool whole_checksums, bool nans) {
  testutil::TempDir dir("tessera_spans");
  std::vector<std::vector<uint8_t>> data;
  for (auto& t : tiles) {
    std::vector<uint8_t> d(t.box.cells() * s.elem_size);
    rng.fill(d.data(), d.size());
    if (nans && s.kind == ElementKind::kFloat && s.elem_size == 8)
      for (size_t i = 0; i + 8 <= d.size(); i += 8 * 97) {
        double q = std::numeric_limits<double>::quiet_NaN();
        std::memcpy(d.data() + i, &q, 8);
      }
    data.push_back(std::move(d));
  }
  FragmentId id;
  id.ts = 42;
  std::vector<uint8_t> bytes[2];
  for (int way = 0; way < 2; ++way) {
    FragmentWriter w(*Context::process(), dir.path(), id, s, inline_limit);
    if (whole_checksums) w.set_whole_checksums();
    for (size_t k = 0; k < tiles.size(); ++k) {
      if (way == 0) {
        w.add_dense_tile(tiles[k].tile.data(), tiles[k].box, data[k]);
      } else {
        auto pieces = random_pieces(rng, data[k].data(), data[k].size(), s.elem_size, rng.chance(0.5) ? 3 : 4000);
        w.add_dense_tile_spans(tiles[k].tile.data(), tiles[k].box, pieces.data(), pieces.size());
      }
    }
    std::string path = w.finish();
    bytes[way] = path.empty() ? w.take_inline() : read_file(Env::posix(), path);
    w.abort();
  }
  ASSERT_FALSE(bytes[0].empty());
  EXPECT_EQ(bytes[0].size(), bytes[1].size());
  EXPECT_TRUE(bytes[0] == bytes[1]);
}

}  // namespace

TEST(DenseSpans, FragmentBytesEqualTheGatheredTiles) {
  Rng rng(testutil::named_seed("DenseSpans", 5));
  {  // int32, 700 x 300 tiles (820 KiB: across 512 KiB write groups), a partial edge tile
    Schema s;
    s.extent = {1000, 500};
    s.max_extent = s.extent;
    s.tile_extent = {700, 300};
    s.elem_size = 4;
    s.kind = ElementKind::kInt;
    std::vector<TileCase> tiles = {{{0, 0}, Box({0, 0}, {699, 299})},
                                   {{0, 1}, Box({0, 300}, {699, 499})},
                                   {{1, 0}, Box({700, 0}, {999, 299})},
                                   {{1, 1}, Box({700, 300}, {850, 411})}};
    same_bytes(s, tiles, rng, 0, false, false);
    same_bytes(s, tiles, rng, 0, true, false);         // whole-tile checksums
    same_bytes(s, tiles, rng, 1u << 20, false, false);  // starts in memory, moves to a file
  }
  {  // small tiles: the fragment stays in memory; one head_-sized tile, odd element size
    Schema s;
    s.extent = {37, 129};
    s.max_extent = s.extent;
    s.tile_extent = {37, 129};
    s.elem_size = 3;
    s.kind = ElementKind::kOpaque;
    same_bytes(s, {{{0, 0}, Box({0, 0}, {36, 128})}}, rng, 1u << 20, false, false);
    same_bytes(s, {{{0, 0}, Box({3, 5}, {20, 99})}}, rng, 0, false, false);
  }
  {  // doubles with NaNs, 3-D, a tile of 2 MiB
    Schema s;
    s.extent = {64, 64, 64};
    s.max_extent = s.extent;
    s.tile_extent = {32, 64, 128};
    s.elem_size = 8;
    s.kind = ElementKind::kFloat;
    same_bytes(s, {{{0, 0, 0}, Box({0, 0, 0}, {31, 63, 63})}, {{1, 0, 0}, Box({32, 0, 0}, {63, 63, 63})}}, rng, 0,
               false, true);
  }
}
