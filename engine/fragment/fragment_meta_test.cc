// FragmentMeta (fragment_meta.h): the footer survives a serialize/deserialize round trip,
// and a truncated or tampered footer is corruption, never a crash or a wrong answer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/util/error.h"
#include "engine/fragment/fragment_format.h"
#include "engine/fragment/fragment_meta.h"

using namespace tessera;

namespace {

FragmentMeta sample() {
  FragmentMeta m;
  m.id = FragmentId{123456789, 2, 7, 1};
  m.rank = 2;
  m.elem_size = 4;
  m.values_filters = FilterPipeline({{FilterType::kShuffle, 0}, {FilterType::kZlib, 6}}, 4);
  m.coords_filters = FilterPipeline({{FilterType::kZstd, 0}}, 8);
  DenseEntry d;
  d.tile = {0, 1};
  d.box = Box({0, 8}, {3, 15});
  d.blob = BlobRef{32, 100, 4 * 32, 0xabcdef};
  d.stats.count = 32;
  m.dense.push_back(d);
  DenseEntry fill;
  fill.kind = DenseEntry::kFill;
  fill.tile = {1, 1};
  fill.box = Box({4, 8}, {5, 9});
  fill.stats.count = 4;
  m.dense.push_back(fill);
  SparseEntry s;
  s.cells = 3;
  s.mbr = Box({10, 0}, {12, 2});
  s.first = {10, 0};
  s.last = {12, 2};
  s.coords = BlobRef{132, 40, 48, 1};
  s.values = BlobRef{172, 12, 12, 2};
  s.stats.count = 3;
  m.sparse.push_back(s);
  SparseEntry e;  // an erased tile: coordinates only
  e.cells = 2;
  e.mbr = Box({13, 4}, {13, 6});
  e.first = {13, 4};
  e.last = {13, 6};
  e.coords = BlobRef{184, 20, 32, 3};
  m.erased.push_back(e);
  m.replaces = {FragmentId{1, 0, 0, 0}};
  m.sets_extent = true;
  m.extent = {20, 20};
  m.has_domain = true;
  m.domain = Box({0, 0}, {13, 15});
  m.cells = 41;
  return m;
}

}  // namespace

TEST(FragmentMeta, RoundTrip) {
  const FragmentMeta m = sample();
  std::vector<uint8_t> bytes = m.serialize();
  FragmentMeta r = FragmentMeta::deserialize(bytes.data(), bytes.size(), "test");
  EXPECT_EQ(r.id, m.id);
  EXPECT_EQ(r.rank, 2u);
  EXPECT_EQ(r.values_filters, m.values_filters);
  EXPECT_EQ(r.coords_filters, m.coords_filters);
  ASSERT_EQ(r.dense.size(), 2u);
  EXPECT_EQ(r.dense[0].box, m.dense[0].box);
  EXPECT_EQ(r.dense[0].blob.stored_size, 100u);
  EXPECT_EQ(r.dense[1].kind, DenseEntry::kFill);
  ASSERT_EQ(r.sparse.size(), 1u);
  EXPECT_EQ(r.sparse[0].mbr, m.sparse[0].mbr);
  EXPECT_EQ(r.sparse[0].values.checksum, 2u);
  ASSERT_EQ(r.erased.size(), 1u);
  EXPECT_EQ(r.erased[0].mbr, m.erased[0].mbr);
  EXPECT_EQ(r.erased[0].last, m.erased[0].last);
  EXPECT_EQ(r.erased[0].coords.checksum, 3u);
  ASSERT_EQ(r.replaces.size(), 1u);
  EXPECT_EQ(r.replaces[0], m.replaces[0]);
  EXPECT_TRUE(r.sets_extent);
  EXPECT_EQ(r.extent, m.extent);
  EXPECT_EQ(r.domain, m.domain);
  EXPECT_EQ(r.cells, 41u);
  EXPECT_EQ(r.serialize(), bytes) << "a second round trip is byte-identical";
}

TEST(FragmentMeta, EveryTruncationIsCorruption) {
  std::vector<uint8_t> bytes = sample().serialize();
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      (void)FragmentMeta::deserialize(bytes.data(), n, "test");
      ADD_FAILURE() << "a footer cut at " << n << " of " << bytes.size() << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kCorrupt) << n;
    }
  }
}

TEST(FragmentMeta, TamperedBytesNeverCrash) {
  std::vector<uint8_t> bytes = sample().serialize();
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t flip : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> b = bytes;
      b[i] ^= flip;
      try {
        (void)FragmentMeta::deserialize(b.data(), b.size(), "test");  // may be accepted
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), Errc::kCorrupt) << "byte " << i;
      }
    }
  }
}

// A dense box whose cell count times the element size wraps around 64 bits matched a
// small stored size (found by fuzz_share_log: a box 2^62 + 1 cells wide, 4-byte cells,
// stored in 4 bytes): reads then computed offsets far outside the tile from the box's
// strides and stopped at an internal check ("dense tile runs out of order or out of the
// tile", kInternal).  The sizes are checked without overflow: corruption.  Sparse and
// erased tiles' cell counts the same.
TEST(FragmentMeta, SizesThatOverflowAreCorruption) {
  auto rejected = [](const FragmentMeta& m) {
    const std::vector<uint8_t> b = m.serialize();
    try {
      (void)FragmentMeta::deserialize(b.data(), b.size(), "test");
    } catch (const Error& e) {
      return e.code() == Errc::kCorrupt;
    }
    return false;
  };
  FragmentMeta m = sample();
  m.values_filters = FilterPipeline({}, 4);
  m.dense[0].box = Box({0, 0}, {0, (uint64_t{1} << 62)});  // 2^62 + 1 cells: x 4 = 4 (mod 2^64)
  m.dense[0].blob = BlobRef{32, 4, 4, 0};
  EXPECT_TRUE(rejected(m)) << "a dense box of 2^62 + 1 four-byte cells in 4 bytes";
  m = sample();
  m.sparse[0].cells = (uint64_t{1} << 62) + 3;  // x 16 coordinate bytes = 48, x 4 = 12 (mod 2^64)
  EXPECT_TRUE(rejected(m)) << "a sparse tile whose cell count wraps its sizes";
  m = sample();
  m.erased[0].cells = (uint64_t{1} << 60) + 2;  // x 16 = 32 (mod 2^64)
  EXPECT_TRUE(rejected(m)) << "an erased tile whose cell count wraps its size";
}

// Two entries naming the same stored bytes (found by fuzz_fragment: dense tiles 2 and 3 at
// one offset, 32 and 80 bytes): the tile cache keys a decoded tile by its offset, so the
// second entry was handed the first's 32-byte tile for its 20 four-byte cells, and a read
// copied past its end.  No writer produces shared or overlapping tiles: corruption.
TEST(FragmentMeta, TilesSharingStoredBytesAreCorruption) {
  auto rejected = [](const FragmentMeta& m) {
    const std::vector<uint8_t> b = m.serialize();
    try {
      (void)FragmentMeta::deserialize(b.data(), b.size(), "test");
    } catch (const Error& e) {
      return e.code() == Errc::kCorrupt && std::string(e.what()).find("share stored bytes") != std::string::npos;
    }
    return false;
  };
  EXPECT_FALSE(rejected(sample())) << "the sample's tiles are disjoint";
  FragmentMeta m = sample();
  DenseEntry twin = m.dense[0];  // a second data tile at the first one's offset
  twin.tile = {2, 1};
  twin.box = Box({8, 8}, {11, 15});
  m.dense.push_back(twin);
  EXPECT_TRUE(rejected(m)) << "two dense tiles at one offset";
  m = sample();
  m.sparse[0].coords.offset = 120;  // starts inside dense tile 0 (32 + 100)
  EXPECT_TRUE(rejected(m)) << "sparse coordinates overlapping a dense tile";
  m = sample();
  m.erased[0].coords.offset = m.sparse[0].values.offset;  // the erased tile over the values
  EXPECT_TRUE(rejected(m)) << "an erased tile on a sparse tile's values";
  m = sample();
  m.sparse[0].values.offset = 132 + 40;  // touching, not overlapping: allowed
  EXPECT_FALSE(rejected(m)) << "adjacent tiles";
}
