// Per-block checksums of unfiltered dense tiles (footer field check_block, docs/format.md): a
// flipped byte in any block of a tile is reported by every read touching that block —
// box reads, point reads, whole-tile reads, a read whose first pass already verified the
// other blocks — while reads of other blocks of the same tile still return the right
// data.  Also: fragments of a development build's format version (a format-1 one built
// here byte by byte from its layout) are refused, naming the versions.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/util/checksum.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/fragment/fragment_format.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using testutil::Rng;
using testutil::status_str;

// 256 x 256 int32 in one tile: rows are 1 KiB, so each 64 KiB check block is 64 rows.
constexpr uint64_t kN = 256, kRowsPerBlock = kCheckBlock / (kN * 4);

struct Fixture {
  testutil::TempDir tmp{"tessera_blocks"};
  std::string dir = tmp.sub("a");
  std::vector<int32_t> truth = std::vector<int32_t>(kN * kN);

  Fixture() {
    Schema s;
    s.extent = s.max_extent = s.tile_extent = {kN, kN};
    s.elem_size = 4;
    s.kind = ElementKind::kInt;
    s.filters = FilterPipeline({}, 4);
    EXPECT_TRUE(Array::create(dir, s).ok());
    Rng rng(77);
    rng.fill(reinterpret_cast<uint8_t*>(truth.data()), truth.size() * 4);
    std::unique_ptr<Array> a;
    EXPECT_TRUE(Array::open(dir, true, ArrayOptions(), &a).ok());
    EXPECT_TRUE(a->write(Selection::from_box(Box({0, 0}, {kN - 1, kN - 1})), truth.data()).ok());
    EXPECT_TRUE(a->flush().ok());
  }
  std::string fragment_path() const {
    for (const std::string& n : list_dir(Env::posix(), join_path(dir, "frag")))
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".tfr") == 0) return join_path(join_path(dir, "frag"), n);
    ADD_FAILURE() << "no fragment";
    return "";
  }
};

bool rows_match(const std::vector<int32_t>& truth, const std::vector<int32_t>& out, uint64_t r0, uint64_t r1,
                uint64_t c0, uint64_t c1) {
  const uint64_t w = c1 - c0 + 1;
  for (uint64_t r = r0; r <= r1; ++r)
    if (std::memcmp(&out[(r - r0) * w], &truth[r * kN + c0], w * 4) != 0) return false;
  return true;
}

TEST(BlockChecks, UnfilteredTilesAreCheckedPerBlock) {
  Fixture fx;
  const std::string frag = fx.fragment_path();
  uint64_t blob_off;
  {
    auto f = Fragment::open(frag);
    ASSERT_EQ(f->meta().check_block, kCheckBlock);
    ASSERT_EQ(f->meta().dense.size(), 1u);
    ASSERT_EQ(f->meta().dense[0].block_checks.size(), kN / kRowsPerBlock);
    EXPECT_EQ(f->meta().dense[0].blob.checksum, 0u);
    blob_off = f->meta().dense[0].blob.offset;
  }
  const std::vector<uint8_t> original = read_file(Env::posix(), frag);
  Rng rng(5);
  for (uint64_t b = 0; b < kN / kRowsPerBlock; ++b) {
    SCOPED_TRACE("block " + std::to_string(b));
    testutil::flip_byte(frag, blob_off + b * kCheckBlock + rng.below(kCheckBlock));
    const uint64_t r0 = b * kRowsPerBlock, r1 = r0 + kRowsPerBlock - 1;
    std::unique_ptr<Array> a;
    ASSERT_TRUE(Array::open(fx.dir, false, ArrayOptions(), &a).ok());
    // Every other block reads correctly (first pass verifies, second pass reads directly).
    for (int pass = 0; pass < 2; ++pass)
      for (uint64_t o = 0; o < kN / kRowsPerBlock; ++o) {
        if (o == b) continue;
        const uint64_t q0 = o * kRowsPerBlock + 3, q1 = q0 + kRowsPerBlock - 7;
        std::vector<int32_t> out((q1 - q0 + 1) * 100);
        Status st = a->read(Selection::from_box(Box({q0, 17}, {q1, 116})), out.data());
        ASSERT_TRUE(st.ok()) << status_str(st);
        EXPECT_TRUE(rows_match(fx.truth, out, q0, q1, 17, 116));
      }
    // Any read touching the damaged block fails as corruption naming the file.
    std::vector<int32_t> out(kN * kN);
    for (int attempt = 0; attempt < 2; ++attempt) {  // the failure is not remembered as verified
      Status st = a->read(Selection::from_box(Box({r0 + 10, 0}, {r1, kN - 1})), out.data());
      EXPECT_EQ(st.code(), Errc::kCorrupt) << status_str(st);
      EXPECT_NE(st.message().find(frag.substr(frag.rfind('/') + 1)), std::string::npos) << st.message();
    }
    // A box spanning several blocks including the bad one; a whole read; a point read.
    EXPECT_EQ(a->read(Selection::from_box(Box({0, 5}, {kN - 1, 6})), out.data()).code(), Errc::kCorrupt);
    EXPECT_EQ(a->read(Selection::from_box(Box({0, 0}, {kN - 1, kN - 1})), out.data()).code(), Errc::kCorrupt);
    uint64_t pt[2] = {r0 + 1, 1};
    EXPECT_EQ(a->read_points(pt, 1, out.data()).code(), Errc::kCorrupt);
    File f = File::open_rw(Env::posix(), frag, false);
    f.pwrite_all(original.data(), original.size(), 0);
    f.close();
  }
  // Restored: everything reads back.
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(fx.dir, false, ArrayOptions(), &a).ok());
  std::vector<int32_t> out(kN * kN);
  ASSERT_TRUE(a->read(Selection::from_box(Box({0, 0}, {kN - 1, kN - 1})), out.data()).ok());
  EXPECT_EQ(out, fx.truth);
}

// A block is checked on every read, not only the first: the disk may damage it after one
// read, and the same open array reading it again must fail, not return the new bytes.
TEST(BlockChecks, ABlockDamagedAfterItsFirstReadFailsTheNextRead) {
  Fixture fx;
  const std::string frag = fx.fragment_path();
  uint64_t blob_off;
  {
    auto f = Fragment::open(frag);
    blob_off = f->meta().dense[0].blob.offset;
  }
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(fx.dir, false, ArrayOptions(), &a).ok());
  // A sub-box of the tile (a partial tile read, block by block; not the tile cache).
  const Box box({2, 3}, {40, 100});
  std::vector<int32_t> out(box.cells());
  ASSERT_TRUE(a->read(Selection::from_box(box), out.data()).ok());
  ASSERT_TRUE(rows_match(fx.truth, out, 2, 40, 3, 100));
  testutil::flip_byte(frag, blob_off + 10 * kN * 4 + 50 * 4);  // row 10, column 50: inside the box
  Status st = a->read(Selection::from_box(box), out.data());
  EXPECT_EQ(st.code(), Errc::kCorrupt) << "a block damaged after its first read was read unchecked: "
                                       << status_str(st);
  EXPECT_NE(st.message().find(frag), std::string::npos) << st.message();
  uint64_t pt[2] = {10, 50};
  EXPECT_EQ(a->read_points(pt, 1, out.data()).code(), Errc::kCorrupt);
}

// Rewrites a fragment as format 1, a development build's (the layout before block checks:
// no check_block field, one XXH3-64 per tile).
void downgrade_to_v1(const std::string& path) {
  auto f = Fragment::open(path);
  FragmentMeta m = f->meta();
  const std::vector<uint8_t> bytes = read_file(Env::posix(), path);
  m.check_block = 0;
  for (DenseEntry& e : m.dense) {
    if (e.kind != DenseEntry::kData) continue;
    e.block_checks.clear();
    e.blob.checksum = checksum64(bytes.data() + e.blob.offset, e.blob.stored_size);
  }
  std::vector<uint8_t> footer = m.serialize();
  // Version 2 inserted a u64 check_block after the two filter pipelines: drop it.
  auto pipeline_size = [](const FilterPipeline& p) { return 4 + 5 * p.filters().size() + 4; };
  const size_t at = 20 + 4 + 4 + pipeline_size(m.values_filters) + pipeline_size(m.coords_filters);
  footer.erase(footer.begin() + at, footer.begin() + at + 8);
  // Version 4 appended the fragment's order (tile and cell order bytes; no MultiMap cube
  // here) and version 3 the erased tiles' count (0 here) before it: drop both.
  footer.resize(footer.size() - 2 - 8 * m.order.cube.size() - 8);
  uint64_t foff = 0;
  std::memcpy(&foff, bytes.data() + bytes.size() - kFragTrailerSize, 8);
  std::vector<uint8_t> out(bytes.begin(), bytes.begin() + foff);
  const uint32_t v1 = 1;
  std::memcpy(out.data() + 8, &v1, 4);
  out.insert(out.end(), footer.begin(), footer.end());
  uint8_t trailer[kFragTrailerSize] = {};
  uint64_t fsz = footer.size(), fck = checksum64(footer.data(), footer.size());
  std::memcpy(trailer, &foff, 8);
  std::memcpy(trailer + 8, &fsz, 8);
  std::memcpy(trailer + 16, &fck, 8);
  std::memcpy(trailer + 24, &v1, 4);
  std::memcpy(trailer + 32, kFragEndMagic, 8);
  out.insert(out.end(), trailer, trailer + sizeof trailer);
  File w = File::open_rw(Env::posix(), path, false);
  w.truncate(0);
  w.pwrite_all(out.data(), out.size(), 0);
  w.close();
}

// Sets the version in a fragment's header and trailer (what a development build of that
// version wrote there; the footer's layout is never reached).
void set_version(const std::string& path, uint32_t v) {
  File f = File::open_rw(Env::posix(), path, false);
  f.pwrite_all(&v, 4, 8);
  f.pwrite_all(&v, 4, f.size() - kFragTrailerSize + 24);
  f.close();
}

// Versions 1 to 3 came from development builds only (docs/format.md, "Format versions"):
// refused on open, naming the file, the version found and the one read.
TEST(BlockChecks, DevelopmentFormatVersionsAreRefused) {
  for (uint32_t v : {1u, 2u, 3u}) {
    SCOPED_TRACE("version " + std::to_string(v));
    Fixture fx;
    const std::string frag = fx.fragment_path();
    if (v == 1) downgrade_to_v1(frag);  // a whole version-1 file
    else set_version(frag, v);
    std::unique_ptr<Array> a;
    Status st = Array::open(fx.dir, false, ArrayOptions(), &a);
    ASSERT_FALSE(st.ok()) << "read a version " << v << " fragment";
    EXPECT_EQ(st.code(), Errc::kUnsupported) << status_str(st);
    EXPECT_NE(st.message().find("fragment '" + frag + "': format version " + std::to_string(v) + " is not supported"),
              std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("reads version 4 only"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("written by a development build of tessera"), std::string::npos) << st.message();
  }
}

TEST(BlockChecks, UnknownFormatVersionIsRejected) {
  Fixture fx;
  const std::string frag = fx.fragment_path();
  File f = File::open_rw(Env::posix(), frag, false);
  const uint32_t v = kFragVersion + 1;
  f.pwrite_all(&v, 4, 8);
  f.close();
  std::unique_ptr<Array> a;
  Status st = Array::open(fx.dir, false, ArrayOptions(), &a);
  if (st.ok()) {
    std::vector<int32_t> out(16);
    st = a->read(Selection::from_box(Box({0, 0}, {3, 3})), out.data());
  }
  EXPECT_EQ(st.code(), Errc::kUnsupported) << status_str(st);
  EXPECT_NE(st.message().find("format version 5 is not supported"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("newer tessera"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tessera
