// Warm re-reads through the tile cache (ReadPlanner::admit_warm_tiles, docs/engine.md "The
// tile cache"): an unfiltered tile read whole a second time is kept, verified, in the
// tile cache and later reads return it from there — the model's bytes; a tile read once,
// a small part of a tile, or a read larger than a quarter of the cache is not kept; the
// cache stays within its budget; a closed or consolidated fragment's entries go and are
// never served; a byte damaged in the file is detected again once the copy is gone; a
// tile read in an earlier open of the file is cached at its first read after the reopen
// when its bytes are in the page cache (and verified), and read from the file when not.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/context/context.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using testutil::Rng;
using testutil::status_str;

// 256 rows x (256 * kTiles) int32 columns, tiles of 256 x 256 (256 KiB): a 1 MiB cache
// holds four tiles, and one read may cache one (a quarter of the cache).
constexpr uint64_t kT = 256, kTiles = 6, kCols = kT * kTiles;

struct Fixture {
  testutil::TempDir tmp{"tessera_warm_cache"};
  std::string dir = tmp.sub("a");
  std::vector<int32_t> truth = std::vector<int32_t>(kT * kCols);
  std::shared_ptr<Context> ctx;

  Fixture() {
    EngineOptions eo;
    eo.tile_cache_mb = 1;
    ctx = std::make_shared<Context>(eo);
    Schema s;
    s.extent = s.max_extent = {kT, kCols};
    s.tile_extent = {kT, kT};
    s.elem_size = 4;
    s.kind = ElementKind::kInt;
    s.filters = FilterPipeline({}, 4);
    EXPECT_TRUE(Array::create(dir, s).ok());
    Rng rng(91);
    rng.fill(reinterpret_cast<uint8_t*>(truth.data()), truth.size() * 4);
    auto a = open(true);
    EXPECT_TRUE(a->write(Selection::from_box(Box({0, 0}, {kT - 1, kCols - 1})), truth.data()).ok());
    EXPECT_TRUE(a->flush().ok());
  }
  std::unique_ptr<Array> open(bool writable) {
    ArrayOptions o;
    o.context = ctx;
    std::unique_ptr<Array> a;
    EXPECT_TRUE(Array::open(dir, writable, o, &a).ok());
    return a;
  }
  std::vector<std::string> fragment_paths() const {
    std::vector<std::string> out;
    for (const std::string& n : list_dir(Env::posix(), join_path(dir, "frag")))
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".tfr") == 0) out.push_back(join_path(join_path(dir, "frag"), n));
    return out;
  }
  // The file offset of tile t's bytes in the (only) fragment.
  uint64_t tile_offset(uint64_t t) const {
    auto paths = fragment_paths();
    EXPECT_EQ(paths.size(), 1u);
    auto f = Fragment::open(paths.at(0));
    for (const DenseEntry& e : f->meta().dense)
      if (e.box.lo[1] == t * kT) return e.blob.offset;
    ADD_FAILURE() << "no tile " << t;
    return 0;
  }
  uint64_t used() const { return ctx->tiles().used(); }
};

Box tile_box(uint64_t t) { return Box({0, t * kT}, {kT - 1, t * kT + kT - 1}); }

// The model's cells of `box` (rows of `truth`, kCols wide).
std::vector<int32_t> expected(const std::vector<int32_t>& truth, const Box& box) {
  std::vector<int32_t> out;
  for (uint64_t r = box.lo[0]; r <= box.hi[0]; ++r)
    out.insert(out.end(), truth.begin() + r * kCols + box.lo[1], truth.begin() + r * kCols + box.hi[1] + 1);
  return out;
}

Status read(Array& a, const Box& box, std::vector<int32_t>* out) {
  out->assign(box.cells(), 0);
  return a.read(Selection::from_box(box), out->data());
}

constexpr uint64_t kTileBytes = kT * kT * 4;

TEST(WarmTileCache, SecondWholeReadCachesTheVerifiedTile) {
  Fixture fx;
  auto a = fx.open(false);
  std::vector<int32_t> out;
  ASSERT_TRUE(read(*a, tile_box(2), &out).ok());
  EXPECT_EQ(out, expected(fx.truth, tile_box(2)));
  EXPECT_EQ(fx.used(), 0u) << "a tile read once was cached";
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(read(*a, tile_box(2), &out).ok());
    EXPECT_EQ(out, expected(fx.truth, tile_box(2)));
    EXPECT_EQ(fx.used(), kTileBytes);
  }
  // Parts of the cached tile come from the copy: the model's bytes.
  const Box part({5, 2 * kT + 7}, {200, 2 * kT + 100});
  ASSERT_TRUE(read(*a, part, &out).ok());
  EXPECT_EQ(out, expected(fx.truth, part));
  // A read of two tiles, one of them cached: the other (a quarter of the cache, as much
  // as one read may add) is cached on its second read.
  const Box two({0, kT}, {kT - 1, 3 * kT - 1});
  ASSERT_TRUE(read(*a, two, &out).ok());
  ASSERT_TRUE(read(*a, two, &out).ok());
  EXPECT_EQ(out, expected(fx.truth, two));
  EXPECT_EQ(fx.used(), 2 * kTileBytes);
}

TEST(WarmTileCache, SmallPartsAndScansAreNotCached) {
  Fixture fx;
  auto a = fx.open(false);
  std::vector<int32_t> out;
  const Box small({10, 3}, {40, 90});  // a small part of tile 0
  const Box col({0, 4 * kT + 17}, {kT - 1, 4 * kT + 17});
  const Box all({0, 0}, {kT - 1, kCols - 1});  // six tiles: more than a quarter of the cache
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(read(*a, small, &out).ok());
    EXPECT_EQ(out, expected(fx.truth, small));
    ASSERT_TRUE(read(*a, col, &out).ok());
    EXPECT_EQ(out, expected(fx.truth, col));
    ASSERT_TRUE(read(*a, all, &out).ok());
    EXPECT_EQ(out, fx.truth);
  }
  EXPECT_EQ(fx.used(), 0u);
  // A cached tile survives the scans.
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(read(*a, tile_box(5), &out).ok());
  EXPECT_EQ(fx.used(), kTileBytes);
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(read(*a, all, &out).ok());
  EXPECT_EQ(out, fx.truth);
  EXPECT_EQ(fx.used(), kTileBytes);
}

// A loop reading tile after tile, one read each, over more tiles than the cache holds:
// under LRU every entry would be evicted before its next read, so caching would only add
// an allocation and a copy to every read.  Nothing is cached; a loop over fewer tiles
// than the cache holds is cached from its second pass on.
TEST(WarmTileCache, LoopsOverMoreTilesThanTheCacheHoldsAreNotCached) {
  Fixture fx;
  auto a = fx.open(false);
  std::vector<int32_t> out;
  for (int pass = 0; pass < 4; ++pass)
    for (uint64_t t = 0; t < kTiles; ++t) {  // 6 tiles of 256 KiB, a 1 MiB cache
      ASSERT_TRUE(read(*a, tile_box(t), &out).ok());
      EXPECT_EQ(out, expected(fx.truth, tile_box(t)));
      EXPECT_EQ(fx.used(), 0u) << "pass " << pass << " tile " << t;
    }
  for (int pass = 0; pass < 3; ++pass)
    for (uint64_t t = 0; t < 3; ++t) {  // 3 tiles: 768 KiB
      ASSERT_TRUE(read(*a, tile_box(t), &out).ok());
      EXPECT_EQ(out, expected(fx.truth, tile_box(t)));
      // In the first pass each tile's last read was six tiles (1.5 MiB) before; from
      // the second on, three (768 KiB).
      const uint64_t cached = pass == 0 ? 0 : pass == 1 ? t + 1 : 3;
      EXPECT_EQ(fx.used(), cached * kTileBytes) << "pass " << pass << " tile " << t;
    }
}

TEST(WarmTileCache, BudgetHoldsAndEvictedTilesAreVerifiedAgain) {
  Fixture fx;
  const std::string frag = fx.fragment_paths().at(0);
  const uint64_t off0 = fx.tile_offset(0), off5 = fx.tile_offset(5);
  auto a = fx.open(false);
  std::vector<int32_t> out;
  for (uint64_t t = 0; t < kTiles; ++t)
    for (int k = 0; k < 2; ++k) {
      ASSERT_TRUE(read(*a, tile_box(t), &out).ok());
      EXPECT_EQ(out, expected(fx.truth, tile_box(t)));
      EXPECT_LE(fx.used(), fx.ctx->tiles().budget());
    }
  EXPECT_EQ(fx.used(), 4 * kTileBytes);  // tiles 2..5; 0 and 1 were evicted
  // Damage a byte of tile 0 (evicted) and of tile 5 (cached).
  testutil::flip_byte(frag, off0 + 1000);
  testutil::flip_byte(frag, off5 + 70000);
  Status st = read(*a, tile_box(0), &out);
  EXPECT_EQ(st.code(), Errc::kCorrupt) << "an evicted tile was not verified again: " << status_str(st);
  // Tile 5's verified copy still answers: what was checked when it came from the file.
  ASSERT_TRUE(read(*a, tile_box(5), &out).ok());
  EXPECT_EQ(out, expected(fx.truth, tile_box(5)));
  // Closing the array drops its fragment's entries; reopened, tile 5 comes from the file.
  a.reset();
  EXPECT_EQ(fx.used(), 0u);
  a = fx.open(false);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(read(*a, tile_box(5), &out).code(), Errc::kCorrupt);
  EXPECT_EQ(fx.used(), 0u);
}

TEST(WarmTileCache, ConsolidatedFragmentsAreNeverServed) {
  Fixture fx;
  auto a = fx.open(true);
  std::vector<int32_t> out;
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(read(*a, tile_box(1), &out).ok());
  EXPECT_EQ(fx.used(), kTileBytes);
  // New values for tile 1, then one fragment for everything.
  Rng rng(5);
  std::vector<int32_t> cells(kT * kT);
  rng.fill(reinterpret_cast<uint8_t*>(cells.data()), cells.size() * 4);
  ASSERT_TRUE(a->write(Selection::from_box(tile_box(1)), cells.data()).ok());
  ASSERT_TRUE(a->flush().ok());
  for (uint64_t r = 0; r < kT; ++r) std::memcpy(&fx.truth[r * kCols + kT], &cells[r * kT], kT * 4);
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(read(*a, tile_box(1), &out).ok());
    EXPECT_EQ(out, cells) << "read " << k << " after the overwrite";
  }
  Status st = a->consolidate_all();
  ASSERT_TRUE(st.ok()) << status_str(st);
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(read(*a, tile_box(1), &out).ok());
    EXPECT_EQ(out, cells) << "read " << k << " after consolidation";
  }
  a.reset();
  a = fx.open(false);
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(read(*a, Box({0, 0}, {kT - 1, kCols - 1}), &out).ok());
    EXPECT_EQ(out, fx.truth);
    ASSERT_TRUE(read(*a, tile_box(1), &out).ok());
    EXPECT_EQ(out, cells);
  }
  a.reset();
  EXPECT_EQ(fx.used(), 0u) << "closed fragments left entries in the cache";
}

// Whether every page of [off, off + n) of `path` is in the page cache, asked of the kernel
// directly (mincore of a mapping: it starts no read, as a probing read could).
bool resident(const std::string& path, uint64_t off, uint64_t n) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)), lo = off / page * page;
  const size_t len = static_cast<size_t>(off + n - lo);
  int fd = ::open(path.c_str(), O_RDONLY);
  void* m = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(lo));
  ::close(fd);
  if (m == MAP_FAILED) return false;
  std::vector<unsigned char> in((len + page - 1) / page);
  const bool ok = ::mincore(m, len, in.data()) == 0;
  ::munmap(m, len);
  for (unsigned char c : in)
    if (!(c & 1)) return false;
  return ok;
}

// Whether this kernel answers cachestat(2) (Linux 6.5+), asked directly: without it
// the engine cannot tell a resident tile from one on the disk and caches neither.
bool kernel_has_cachestat(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  uint64_t range[2] = {0, 4096}, st[5] = {};
  const long r = ::syscall(451, fd, range, st, 0u);
  ::close(fd);
  return r == 0;
}

// Drops the file's pages from the page cache (written back first: only clean pages go).
void evict(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fdatasync(fd), 0);
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  ::close(fd);
}

// A script that opens a file, reads a tile, closes it and does it again (or h5py code that
// opens the file inside a function): the reopened file's first read of a tile read before
// is one copy from the page cache plus the checksums, and the reads after it come from
// the tile cache, as the same reads would in one open.  The copy is verified as it is
// made (a byte damaged between the opens is found), and a tile whose bytes are not in
// the page cache is read from the file as any first read.
TEST(WarmTileCache, AReopenedFilesRecentTilesAreCachedFromThePageCache) {
  Fixture fx;
  const std::string frag = fx.fragment_paths().at(0);
  const uint64_t off2 = fx.tile_offset(2), off4 = fx.tile_offset(4);
  auto a = fx.open(false);
  std::vector<int32_t> out;
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(read(*a, tile_box(2), &out).ok());
  ASSERT_TRUE(read(*a, tile_box(4), &out).ok());  // read once: stamped, not cached
  EXPECT_EQ(fx.used(), kTileBytes);
  a.reset();
  EXPECT_EQ(fx.used(), 0u);
  ASSERT_TRUE(resident(frag, off2, kTileBytes) && resident(frag, off4, kTileBytes));
  // Without cachestat the reopened file's tiles are read as first reads (not cached).
  const uint64_t one = kernel_has_cachestat(frag) ? kTileBytes : 0;

  a = fx.open(false);
  ASSERT_TRUE(read(*a, tile_box(0), &out).ok());  // never read before: not cached
  EXPECT_EQ(out, expected(fx.truth, tile_box(0)));
  EXPECT_EQ(fx.used(), 0u);
  ASSERT_TRUE(read(*a, tile_box(2), &out).ok());
  EXPECT_EQ(out, expected(fx.truth, tile_box(2)));
  EXPECT_EQ(fx.used(), one) << "the reopened file's first read of a recent tile";
  ASSERT_TRUE(read(*a, tile_box(4), &out).ok());
  EXPECT_EQ(out, expected(fx.truth, tile_box(4)));
  EXPECT_EQ(fx.used(), 2 * one);
  for (int k = 0; k < 2; ++k) {
    ASSERT_TRUE(read(*a, tile_box(2), &out).ok());
    EXPECT_EQ(out, expected(fx.truth, tile_box(2)));
  }
  EXPECT_EQ(fx.used(), one + kTileBytes);  // tile 2 re-read in this open: cached either way
  a.reset();

  // A byte of tile 2 damaged between the opens (in the page cache too): the copy is not
  // kept and the read fails, every time.
  testutil::flip_byte(frag, off2 + 4321);
  a = fx.open(false);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(read(*a, tile_box(2), &out).code(), Errc::kCorrupt);
  EXPECT_EQ(fx.used(), 0u);
  a.reset();

  // Tile 4's pages evicted: its first read after the reopen comes from the file, as a
  // cold read, and caches nothing; its second read is a warm re-read again (cached).
  evict(frag);
  ASSERT_FALSE(resident(frag, off4, kTileBytes)) << "the kernel kept the pages: the case is not tested";
  a = fx.open(false);
  ASSERT_TRUE(read(*a, tile_box(4), &out).ok());
  EXPECT_EQ(out, expected(fx.truth, tile_box(4)));
  EXPECT_EQ(fx.used(), 0u) << "a tile read from the disk was cached";
  ASSERT_TRUE(read(*a, tile_box(4), &out).ok());
  EXPECT_EQ(out, expected(fx.truth, tile_box(4)));
  EXPECT_EQ(fx.used(), kTileBytes);
}

}  // namespace
}  // namespace tessera
