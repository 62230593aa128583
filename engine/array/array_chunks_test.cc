// Tiles as HDF5 chunks (array_chunks.cc): encoded bytes written and read back as they
// are, values checked against a plain model array, chunk bytes produced and consumed by
// zlib itself (compress2/uncompress: the library behind HDF5's deflate filter) and by a
// shuffle written here from HDF5's definition.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/array/array.h"

using namespace tessera;

namespace {

constexpr uint64_t R = 40, C = 36, TR = 8, TC = 12;

Schema schema(std::vector<Filter> filters, uint64_t max_rows = kUnlimited) {
  Schema s;
  s.extent = {R, C};
  s.max_extent = {max_rows, C};
  s.tile_extent = {TR, TC};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  s.fill.assign(4, 0);
  int32_t fv = -5;
  std::memcpy(s.fill.data(), &fv, 4);
  s.filters = FilterPipeline(std::move(filters), 4);
  return s;
}

std::vector<uint8_t> zlib_compress(const std::vector<uint8_t>& raw) {
  uLongf n = compressBound(raw.size());
  std::vector<uint8_t> out(n);
  EXPECT_EQ(compress2(out.data(), &n, raw.data(), raw.size(), 6), Z_OK);
  out.resize(n);
  return out;
}

std::vector<uint8_t> zlib_uncompress(const std::vector<uint8_t>& enc, size_t raw) {
  std::vector<uint8_t> out(raw);
  uLongf n = raw;
  EXPECT_EQ(uncompress(out.data(), &n, enc.data(), enc.size()), Z_OK);
  EXPECT_EQ(n, raw);
  return out;
}

// HDF5's shuffle: byte j of element i goes to j * count + i.
std::vector<uint8_t> shuffle(const std::vector<uint8_t>& in, bool forward) {
  const size_t es = 4, n = in.size() / es;
  std::vector<uint8_t> out(in.size());
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < es; ++j) {
      if (forward) out[j * n + i] = in[i * es + j];
      else out[i * es + j] = in[j * n + i];
    }
  return out;
}

std::vector<uint8_t> chunk_cells(int seed) {
  std::vector<uint8_t> b(TR * TC * 4);
  for (uint64_t i = 0; i < TR * TC; ++i) {
    int32_t v = seed * 1000 + static_cast<int32_t>(i);
    std::memcpy(&b[i * 4], &v, 4);
  }
  return b;
}

struct Fixture {
  std::string dir;
  std::unique_ptr<Array> a;
  std::vector<int32_t> model = std::vector<int32_t>(R * C, -5);

  explicit Fixture(const Schema& s, bool durable = false) {
    char tmpl[] = "/tmp/tessera_chunks_XXXXXX";
    dir = std::string(mkdtemp(tmpl)) + "/a";
    EXPECT_TRUE(Array::create(dir, s).ok());
    ArrayOptions o;
    o.durable_writes = durable;
    EXPECT_TRUE(Array::open(dir, true, o, &a).ok());
  }
  // The model learns a whole chunk's cells (inside the extent).
  void learn(uint64_t tr, uint64_t tc, const std::vector<uint8_t>& cells) {
    for (uint64_t r = 0; r < TR; ++r)
      for (uint64_t c = 0; c < TC; ++c) {
        uint64_t gr = tr * TR + r, gc = tc * TC + c;
        if (gr < R && gc < C) std::memcpy(&model[gr * C + gc], &cells[(r * TC + c) * 4], 4);
      }
  }
  void expect_model() {
    std::vector<int32_t> v(R * C);
    ASSERT_TRUE(a->read(Selection::from_box(Box({0, 0}, {R - 1, C - 1})), v.data()).ok());
    EXPECT_EQ(v, model);
  }
};

}  // namespace

TEST(ArrayChunks, ZlibBytesAreStoredAndReturnedUnchanged) {
  Fixture f(schema({{FilterType::kShuffle, 0}, {FilterType::kZlib, 6}}));
  std::vector<std::vector<uint8_t>> written;
  for (uint64_t t = 0; t < 4; ++t) {
    std::vector<uint8_t> cells = chunk_cells(static_cast<int>(t) + 1);
    std::vector<uint8_t> enc = zlib_compress(shuffle(cells, true));
    uint64_t tile[2] = {t, t % 3};
    ASSERT_TRUE(f.a->write_tile_encoded(tile, 0, enc.data(), enc.size()).ok());
    f.learn(t, t % 3, cells);
    written.push_back(enc);
  }
  f.expect_model();
  // Ascending tiles: one fragment.
  EXPECT_EQ(f.a->fragments().size(), 1u);
  for (uint64_t t = 0; t < 4; ++t) {
    uint64_t tile[2] = {t, t % 3};
    std::vector<uint8_t> back;
    uint32_t skip = 99;
    uint64_t size = 0;
    ASSERT_TRUE(f.a->read_tile_encoded(tile, &back, &skip).ok());
    EXPECT_EQ(back, written[t]);
    EXPECT_EQ(skip, 0u);
    ASSERT_TRUE(f.a->tile_encoded_size(tile, &size, &skip).ok());
    EXPECT_EQ(size, written[t].size());
  }
  // After a flush and a reopen, still the same bytes and values.
  ASSERT_TRUE(f.a->flush().ok());
  f.a.reset();
  ASSERT_TRUE(Array::open(f.dir, false, ArrayOptions{}, &f.a).ok());
  f.expect_model();
  uint64_t tile[2] = {2, 2};
  std::vector<uint8_t> back;
  uint32_t skip = 99;
  ASSERT_TRUE(f.a->read_tile_encoded(tile, &back, &skip).ok());
  EXPECT_EQ(back, written[2]);
}

TEST(ArrayChunks, OrdinaryWritesReadAsChunksZlibDecodes) {
  Fixture f(schema({{FilterType::kShuffle, 0}, {FilterType::kZlib, 4}}));
  // A box over parts of several tiles, then a whole tile.
  std::vector<int32_t> box(10 * 20);
  for (size_t i = 0; i < box.size(); ++i) box[i] = static_cast<int32_t>(i * 7);
  ASSERT_TRUE(f.a->write(Selection::from_box(Box({3, 5}, {12, 24})), box.data()).ok());
  for (uint64_t r = 0; r < 10; ++r)
    for (uint64_t c = 0; c < 20; ++c) f.model[(3 + r) * C + 5 + c] = box[r * 20 + c];
  f.expect_model();
  for (uint64_t tr = 0; tr < 2; ++tr)
    for (uint64_t tc = 0; tc < 3; ++tc) {
      uint64_t tile[2] = {tr, tc};
      std::vector<uint8_t> enc;
      uint32_t skip = 99;
      ASSERT_TRUE(f.a->read_tile_encoded(tile, &enc, &skip).ok());
      EXPECT_EQ(skip, 0u);
      std::vector<uint8_t> cells = shuffle(zlib_uncompress(enc, TR * TC * 4), false);
      for (uint64_t r = 0; r < TR; ++r)
        for (uint64_t c = 0; c < TC; ++c) {
          int32_t v;
          std::memcpy(&v, &cells[(r * TC + c) * 4], 4);
          EXPECT_EQ(v, f.model[(tr * TR + r) * C + tc * TC + c]) << tr << "," << tc << " cell " << r << "," << c;
        }
    }
}

TEST(ArrayChunks, NewestWriteWinsBetweenDirectAndOrdinaryWrites) {
  Fixture f(schema({{FilterType::kZlib, 6}}));
  // Small buffered points, then a direct chunk over them: the chunk wins.
  std::vector<uint64_t> pts = {1, 1, 2, 3, 20, 30};
  int32_t pv[3] = {7, 8, 9};
  ASSERT_TRUE(f.a->write_points(pts.data(), 3, pv).ok());
  f.model[20 * C + 30] = 9;
  std::vector<uint8_t> cells = chunk_cells(3);
  std::vector<uint8_t> enc = zlib_compress(cells);
  uint64_t t00[2] = {0, 0};
  ASSERT_TRUE(f.a->write_tile_encoded(t00, 0, enc.data(), enc.size()).ok());
  f.learn(0, 0, cells);
  f.expect_model();
  // Then an ordinary write into the chunk wins over it; the chunk reads as the merge.
  int32_t one = 4242;
  ASSERT_TRUE(f.a->write(Selection::from_box(Box({2, 2}, {2, 2})), &one).ok());
  f.model[2 * C + 2] = one;
  f.expect_model();
  std::vector<uint8_t> back;
  uint32_t skip = 99;
  ASSERT_TRUE(f.a->read_tile_encoded(t00, &back, &skip).ok());
  std::vector<uint8_t> dec = zlib_uncompress(back, TR * TC * 4);
  int32_t v;
  std::memcpy(&v, &dec[(2 * TC + 2) * 4], 4);
  EXPECT_EQ(v, one);
  // Out-of-order direct writes start new fragments and the last one wins.
  uint64_t t11[2] = {1, 1};
  for (int k = 0; k < 3; ++k) {
    cells = chunk_cells(10 + k);
    enc = zlib_compress(cells);
    ASSERT_TRUE(f.a->write_tile_encoded(k == 1 ? t00 : t11, 0, enc.data(), enc.size()).ok());
    f.learn(k == 1 ? 0 : 1, k == 1 ? 0 : 1, cells);
  }
  f.expect_model();
}

TEST(ArrayChunks, SkippedFiltersAreRecordedPerFragment) {
  Fixture f(schema({{FilterType::kShuffle, 0}, {FilterType::kZlib, 6}}));
  std::vector<uint8_t> cells = chunk_cells(5);
  std::vector<uint8_t> unshuffled = zlib_compress(cells);  // shuffle (bit 0) skipped
  uint64_t t[2] = {1, 0};
  ASSERT_TRUE(f.a->write_tile_encoded(t, 1, unshuffled.data(), unshuffled.size()).ok());
  f.learn(1, 0, cells);
  std::vector<uint8_t> raw = chunk_cells(6);  // every filter skipped
  uint64_t u[2] = {2, 0};
  ASSERT_TRUE(f.a->write_tile_encoded(u, 0xffffffffu, raw.data(), raw.size()).ok());
  f.learn(2, 0, raw);
  f.expect_model();
  std::vector<uint8_t> back;
  uint32_t skip = 0;
  ASSERT_TRUE(f.a->read_tile_encoded(t, &back, &skip).ok());
  EXPECT_EQ(skip, 1u);
  EXPECT_EQ(back, unshuffled);
  ASSERT_TRUE(f.a->read_tile_encoded(u, &back, &skip).ok());
  EXPECT_EQ(skip, 3u);
  EXPECT_EQ(back, raw);
}

TEST(ArrayChunks, EdgeTilesCutByTheMaximumExtentAreDecoded) {
  // 40 rows, max 44: the last tile row (40..47) is cut at 43.
  Schema s = schema({{FilterType::kZlib, 6}}, 44);
  s.extent = {44, C};
  Fixture f(s);
  f.model.assign(44 * C, -5);
  std::vector<uint8_t> cells = chunk_cells(8);
  std::vector<uint8_t> enc = zlib_compress(cells);
  uint64_t t[2] = {5, 1};
  ASSERT_TRUE(f.a->write_tile_encoded(t, 0, enc.data(), enc.size()).ok());
  std::vector<int32_t> v(44 * C);
  ASSERT_TRUE(f.a->read(Selection::from_box(Box({0, 0}, {43, C - 1})), v.data()).ok());
  for (uint64_t r = 40; r < 44; ++r)
    for (uint64_t c = 0; c < TC; ++c) {
      int32_t want;
      std::memcpy(&want, &cells[((r - 40) * TC + c) * 4], 4);
      EXPECT_EQ(v[r * C + TC + c], want);
    }
  // A chunk entirely past the maximum extent is refused.
  uint64_t past[2] = {6, 0};
  EXPECT_FALSE(f.a->write_tile_encoded(past, 0, enc.data(), enc.size()).ok());
}

TEST(ArrayChunks, UnfilteredBytesShortOrLong) {
  Fixture f(schema({}));
  std::vector<uint8_t> cells = chunk_cells(2);
  uint64_t t[2] = {0, 1};
  std::vector<uint8_t> shorter(cells.begin(), cells.end() - 4);
  EXPECT_FALSE(f.a->write_tile_encoded(t, 0, shorter.data(), shorter.size()).ok());
  // Longer: HDF5 keeps every byte and reads the first ones as the cells.
  std::vector<uint8_t> longer = cells;
  longer.insert(longer.end(), 100, 0xab);
  ASSERT_TRUE(f.a->write_tile_encoded(t, 0, longer.data(), longer.size()).ok());
  f.learn(0, 1, cells);
  f.expect_model();
  std::vector<uint8_t> back;
  uint32_t skip = 9;
  ASSERT_TRUE(f.a->read_tile_encoded(t, &back, &skip).ok());
  EXPECT_EQ(back, longer);
  ASSERT_TRUE(f.a->flush().ok());
  f.a.reset();
  ASSERT_TRUE(Array::open(f.dir, false, ArrayOptions{}, &f.a).ok());
  f.expect_model();
}

TEST(ArrayChunks, CorruptChunkBytesFailOnReadNamingTheFragment) {
  Fixture f(schema({{FilterType::kZlib, 6}}), /*durable=*/true);
  std::vector<uint8_t> junk(50, 0x5a);
  uint64_t t[2] = {0, 0};
  ASSERT_TRUE(f.a->write_tile_encoded(t, 0, junk.data(), junk.size()).ok());
  std::vector<int32_t> v(R * C);
  Status st = f.a->read(Selection::from_box(Box({0, 0}, {R - 1, C - 1})), v.data());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("fragment"), std::string::npos) << st.message();
}

TEST(Filters, ZlibStageIsWhatZlibWritesAndReads) {
  std::vector<uint8_t> raw(5000);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<uint8_t>((i * 31) % 251);
  FilterPipeline p({{FilterType::kZlib, 6}}, 1);
  std::vector<uint8_t> enc, dec;
  p.encode(raw.data(), raw.size(), enc);
  EXPECT_EQ(zlib_uncompress(enc, raw.size()), raw);  // no header of tessera's own
  std::vector<uint8_t> z = zlib_compress(raw);
  p.decode(z.data(), z.size(), raw.size(), dec, "test");
  EXPECT_EQ(dec, raw);
  // A stream that decodes to more than the raw size is corruption, not an overrun.
  std::vector<uint8_t> big(6000, 1), zb = zlib_compress(big);
  EXPECT_THROW(p.decode(zb.data(), zb.size(), raw.size(), dec, "test"), Error);
  z.push_back(0);  // trailing bytes
  EXPECT_THROW(p.decode(z.data(), z.size(), raw.size(), dec, "test"), Error);
}
