// Cold box reads of unfiltered dense tiles run as parallel jobs with prefetch
// (ReadPlanner::run_jobs): the cells must equal an independent model (a cell formula,
// with a newer dense overlay and sparse point writes on top), whether the read went the
// parallel way (first read of the blocks) or the serial way (blocks verified before),
// into dense or strided destinations; and a damaged block is still reported as corruption
// when the read touching it runs on the I/O pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/array/array.h"
#include "engine/context/context.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/fragment/fragment_format.h"
#include "engine/read/read_planner.h"
#include "engine/testing/read_counts.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using testutil::Rng;
using testutil::status_str;

// 2048 x 2048 int32 in 512 x 512 tiles: a tile is 1 MiB, a row of it 2 KiB, so a 64 KiB
// check block is 32 rows and a box of a few hundred rows is a cold read of megabytes.
constexpr uint64_t kN = 2048, kT = 512;
// The newer dense overlay and the sparse points (written last) of the model.
constexpr uint64_t kO0 = 300, kO1 = 900, kP0 = 700, kP1 = 1500;

int32_t base_value(uint64_t i, uint64_t j) { return static_cast<int32_t>(i * kN + j); }
int32_t overlay_value(uint64_t i, uint64_t j) { return -static_cast<int32_t>(i * kN + j) - 1; }

struct Model {
  std::vector<uint64_t> points;  // i, j pairs
  std::vector<int32_t> point_values;
  std::unordered_map<uint64_t, int32_t> by_cell;  // i * kN + j -> point value
  int32_t at(uint64_t i, uint64_t j) const {
    auto it = by_cell.find(i * kN + j);
    if (it != by_cell.end()) return it->second;
    if (i >= kO0 && i <= kO1 && j >= kP0 && j <= kP1) return overlay_value(i, j);
    return base_value(i, j);
  }
};

// Files as on a disk: an Env that cannot say what is in the page cache (EnvWrapper does
// not pass cached_pages on), so a first read takes the cold paths however much of the
// freshly written files the kernel still holds.
class DiskEnv final : public EnvWrapper {
 public:
  DiskEnv() : EnvWrapper(Env::posix()) {}
};
// The opposite: every byte is in the page cache (the real files are read either way),
// but for the file named `missing`, if any, which has no page there.
class CachedEnv final : public EnvWrapper {
 public:
  explicit CachedEnv(std::string missing = "") : EnvWrapper(Env::posix()), missing_(std::move(missing)) {}
  int open(const char* path, int flags, mode_t mode) override {
    const int fd = EnvWrapper::open(path, flags, mode);
    if (fd >= 0 && missing_ == path) missing_fd_ = fd;
    return fd;
  }
  int64_t cached_pages(int fd, uint64_t off, uint64_t n) override {
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    return n && fd != missing_fd_ ? static_cast<int64_t>((off + n - 1) / page - off / page + 1) : 0;
  }

 private:
  std::string missing_;
  int missing_fd_ = -1;
};

// The paths the reads of every context below took (Context::set_read_observer).
ReadCounts reads;

std::shared_ptr<Context> counted(std::shared_ptr<Context> ctx) {
  ctx->set_read_observer(&reads);
  return ctx;
}

ArrayOptions with_env(std::shared_ptr<Env> env) {
  ArrayOptions o;
  o.context = counted(std::make_shared<Context>(EngineOptions(), std::move(env)));
  return o;
}

struct Fixture {
  testutil::TempDir tmp{"tessera_par_read"};
  std::string dir = tmp.sub("a");
  Model model;
  ArrayOptions disk() const { return with_env(std::make_shared<DiskEnv>()); }

  explicit Fixture(Order cells = Order::kRowMajor) {
    Schema s;
    s.extent = s.max_extent = {kN, kN};
    s.tile_extent = {kT, kT};
    s.cell_order = cells;
    s.elem_size = 4;
    s.kind = ElementKind::kInt;
    s.filters = FilterPipeline({}, 4);
    EXPECT_TRUE(Array::create(dir, s).ok());
    std::unique_ptr<Array> a;
    EXPECT_TRUE(Array::open(dir, true, ArrayOptions(), &a).ok());
    // One fragment per band of tile rows (like a chunk-by-chunk load), then the overlay.
    std::vector<int32_t> band(kT * kN);
    for (uint64_t r = 0; r < kN; r += kT) {
      for (uint64_t i = 0; i < kT; ++i)
        for (uint64_t j = 0; j < kN; ++j) band[i * kN + j] = base_value(r + i, j);
      EXPECT_TRUE(a->write(Selection::from_box(Box({r, 0}, {r + kT - 1, kN - 1})), band.data()).ok());
      EXPECT_TRUE(a->flush().ok());
    }
    std::vector<int32_t> over((kO1 - kO0 + 1) * (kP1 - kP0 + 1));
    for (uint64_t i = kO0, k = 0; i <= kO1; ++i)
      for (uint64_t j = kP0; j <= kP1; ++j) over[k++] = overlay_value(i, j);
    EXPECT_TRUE(a->write(Selection::from_box(Box({kO0, kP0}, {kO1, kP1})), over.data()).ok());
    EXPECT_TRUE(a->flush().ok());
    Rng rng(4242);
    for (int k = 0; k < 200; ++k) {
      model.points.push_back(rng.below(kN));
      model.points.push_back(rng.below(kN));
      model.point_values.push_back(1000000000 + k);
    }
    // Distinct points only, so "which write wins" is not a question.
    for (size_t k = 0; k < model.point_values.size(); ++k)
      for (size_t m = 0; m < k; ++m)
        if (model.points[2 * k] == model.points[2 * m] && model.points[2 * k + 1] == model.points[2 * m + 1])
          model.points[2 * k + 1] = (model.points[2 * k + 1] + 1) % kN;
    for (size_t k = 0; k < model.point_values.size(); ++k)
      model.by_cell[model.points[2 * k] * kN + model.points[2 * k + 1]] = model.point_values[k];
    EXPECT_TRUE(a->write_points(model.points.data(), model.point_values.size(), model.point_values.data()).ok());
    EXPECT_TRUE(a->flush().ok());
  }

  // Reads box [r0, r1] x [c0, c1] into a destination with `pad` extra elements per row
  // and compares every cell (and that the padding is untouched) with the model.
  void check_box(Array& a, uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1, uint64_t pad = 0) const {
    SCOPED_TRACE("box [" + std::to_string(r0) + "," + std::to_string(r1) + "]x[" + std::to_string(c0) + "," +
                 std::to_string(c1) + "] pad " + std::to_string(pad));
    const uint64_t w = c1 - c0 + 1, stride = w + pad;
    std::vector<int32_t> out((r1 - r0 + 1) * stride, 0x7eadbeef);
    const uint64_t strides[2] = {stride, 1};
    Status st = a.read(Selection::from_box(Box({r0, c0}, {r1, c1})), out.data(), pad ? strides : nullptr);
    ASSERT_TRUE(st.ok()) << status_str(st);
    uint64_t bad = 0;
    for (uint64_t i = r0; i <= r1; ++i)
      for (uint64_t j = c0; j < c0 + stride; ++j) {
        const int32_t want = j <= c1 ? model.at(i, j) : 0x7eadbeef;
        if (out[(i - r0) * stride + (j - c0)] != want && bad++ < 5)
          ADD_FAILURE() << "cell (" << i << "," << j << "): " << out[(i - r0) * stride + (j - c0)] << " != " << want;
      }
    EXPECT_EQ(bad, 0u);
  }
};

std::vector<std::string> band_fragments(const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string& n : list_dir(Env::posix(), join_path(dir, "frag")))
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".tfr") == 0) out.push_back(join_path(join_path(dir, "frag"), n));
  return out;
}

// Column-major cells (MultiMap's, docs/layouts.md): a row of a selection is not
// contiguous in the tile, so cold reads stage the touched blocks (ReadPlanner::stage_runs)
// and copy from there: every box, column and strided destination must match the model.
class ParallelReadCells : public ::testing::TestWithParam<Order> {};

TEST_P(ParallelReadCells, ColdAndWarmBoxReadsMatchTheModel) {
  Fixture fx(GetParam());
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(fx.dir, false, fx.disk(), &a).ok());
  Rng rng(9);
  struct B {
    uint64_t r0, r1, c0, c1, pad;
  };
  std::vector<B> boxes;
  for (int k = 0; k < 24; ++k) {
    const uint64_t h = rng.range(300, 1100), w = rng.range(300, 1100);
    const uint64_t r0 = rng.below(kN - h + 1), c0 = rng.below(kN - w + 1);
    boxes.push_back({r0, r0 + h - 1, c0, c0 + w - 1, k % 3 == 0 ? uint64_t{7} : 0});
  }
  boxes.push_back({0, kN - 1, 1234, 1234, 0});             // a column through every tile row
  boxes.push_back({kO0 - 40, kO1 + 40, kP0 - 40, kP1 + 40, 0});  // around the overlay
  const uint64_t before = reads.parallel_reads();
  for (const B& b : boxes) fx.check_box(*a, b.r0, b.r1, b.c0, b.c1, b.pad);  // first reads: cold path
  EXPECT_GT(reads.parallel_reads(), before) << "no read took the parallel path";
  const uint64_t mid = reads.parallel_reads(), warm = reads.warm_parallel_reads();
  for (const B& b : boxes) fx.check_box(*a, b.r0, b.r1, b.c0, b.c1, b.pad);  // verified blocks
  EXPECT_EQ(reads.parallel_reads(), mid) << "re-reads of verified blocks take no cold path";
  EXPECT_GT(reads.warm_parallel_reads(), warm) << "no large re-read was split over the cores";
  fx.check_box(*a, 0, kN - 1, 0, kN - 1);  // everything, after the blocks are verified
  // A fresh open reads the whole array cold in one call (many jobs, a sliding prefetch).
  ASSERT_TRUE(Array::open(fx.dir, false, fx.disk(), &a).ok());
  fx.check_box(*a, 0, kN - 1, 0, kN - 1);
  // Rows and columns through every tile, cold, into padded destinations too.
  ASSERT_TRUE(Array::open(fx.dir, false, fx.disk(), &a).ok());
  fx.check_box(*a, 0, kN - 1, 77, 77, 3);
  fx.check_box(*a, 1999, 1999, 0, kN - 1);
  fx.check_box(*a, 5, kN - 6, 600, 601, 1);
}

INSTANTIATE_TEST_SUITE_P(Cells, ParallelReadCells, ::testing::Values(Order::kRowMajor, Order::kColMajor),
                         [](const ::testing::TestParamInfo<Order>& i) {
                           return std::string(i.param == Order::kRowMajor ? "RowMajor" : "ColMajor");
                         });

TEST(ParallelRead, DamagedBlockIsReportedFromThePool) {
  Fixture fx;
  // Flip one byte in the middle of the tile data of every band fragment in turn.
  int tested = 0;
  for (const std::string& frag : band_fragments(fx.dir)) {
    auto f = Fragment::open(frag);
    if (f->meta().dense.empty() || f->meta().check_block == 0) continue;
    const DenseEntry& e = f->meta().dense[f->meta().dense.size() / 2];
    if (e.kind != DenseEntry::kData || e.box.hi[0] - e.box.lo[0] + 1 != kT || e.box.hi[1] - e.box.lo[1] + 1 != kT)
      continue;  // a whole tile of a band, so block 2 is rows 64..95 of it
    const Box tile = e.box;
    const uint64_t off = e.blob.offset + 2 * kCheckBlock + 100;  // block 2: rows 64..95 of the tile
    f.reset();
    ++tested;
    SCOPED_TRACE(frag);
    const std::vector<uint8_t> original = read_file(Env::posix(), frag);
    testutil::flip_byte(frag, off);
    std::unique_ptr<Array> a;
    ASSERT_TRUE(Array::open(fx.dir, false, fx.disk(), &a).ok());
    // A large box over the damaged tile and its neighbours, ending 300 rows inside the
    // tile: cold, and readahead would overread, so it runs parallel.
    const uint64_t r0 = tile.lo[0], r1 = tile.hi[0] - 300;
    const uint64_t c0 = tile.lo[1] > 300 ? tile.lo[1] - 300 : 0, c1 = std::min(kN - 1, tile.hi[1] + 300);
    std::vector<int32_t> out((r1 - r0 + 1) * (c1 - c0 + 1));
    const uint64_t before = reads.parallel_reads();
    for (int attempt = 0; attempt < 2; ++attempt) {
      Status st = a->read(Selection::from_box(Box({r0, c0}, {r1, c1})), out.data());
      EXPECT_EQ(st.code(), Errc::kCorrupt) << status_str(st);
      EXPECT_NE(st.message().find("checksum mismatch"), std::string::npos) << st.message();
    }
    EXPECT_GT(reads.parallel_reads(), before);
    // Rows of the same tile in other blocks, and other tiles, still read right.
    fx.check_box(*a, tile.lo[0] + 128, tile.hi[0], tile.lo[1], tile.hi[1]);
    const uint64_t other_r0 = tile.lo[0] >= kT ? 0 : kT;
    fx.check_box(*a, other_r0, other_r0 + kT - 1, 0, kN - 1);
    File w = File::open_rw(Env::posix(), frag, false);
    w.pwrite_all(original.data(), original.size(), 0);
    w.close();
  }
  EXPECT_EQ(tested, 4) << "one tile per band fragment should have been damaged";
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// Whole tiles read cold: a column through the four band fragments reads every block of
// one tile per band (tiles 1 MiB apart in different files), so serial preads would let
// readahead run on past each tile: it must take the parallel path with exact prefetch.
// A band of contiguous whole tiles in one fragment, read in file order, is what
// readahead serves well: it must stay serial.  Both match the model.
TEST(ParallelRead, ScatteredWholeTilesPrefetchContiguousOnesStaySerial) {
  Fixture fx;
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(fx.dir, false, fx.disk(), &a).ok());
  uint64_t before = reads.parallel_reads();
  fx.check_box(*a, 2 * kT, 3 * kT - 1, 0, kN - 1);  // band 2: no overlay, four whole tiles
  EXPECT_EQ(reads.parallel_reads(), before) << "contiguous whole tiles should stay serial";
  ASSERT_TRUE(Array::open(fx.dir, false, fx.disk(), &a).ok());
  before = reads.parallel_reads();
  fx.check_box(*a, 0, kN - 1, 1700, 1700);  // a column outside the overlay
  EXPECT_GT(reads.parallel_reads(), before) << "scattered whole tiles should be prefetched exactly";
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// A large warm re-read hands jobs to the filter pool.  Run from a task of another pool
// while every filter worker is busy until that read returns (tasks that wait for a read,
// as a pool task may), it must not wait for helpers that cannot start: the caller does
// the jobs itself and returns.  Also from a filter worker itself (no helpers at all).
TEST(ParallelRead, WarmReadNeverWaitsForHelpersThatCannotStart) {
  Fixture fx;
  EngineOptions eo;
  eo.threads = 2;
  eo.io_threads = 1;
  eo.tile_cache_mb = 0;  // re-reads from the file: the tile cache would serve them on the caller
  auto ctx = counted(std::make_shared<Context>(eo));
  ArrayOptions ao;
  ao.context = ctx;
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(fx.dir, false, ao, &a).ok());
  fx.check_box(*a, 0, kN - 1, 0, kN - 1);  // verifies every block: the next reads are warm
  const uint64_t warm0 = reads.warm_parallel_reads();
  fx.check_box(*a, 0, kN - 1, 0, kN - 1);
  ASSERT_GT(reads.warm_parallel_reads(), warm0) << "the whole re-read should be split over the cores";

  std::promise<void> read_done;
  std::shared_future<void> done = read_done.get_future().share();
  std::vector<std::future<void>> blockers;
  for (unsigned i = 0; i < ctx->filters().size(); ++i) blockers.push_back(ctx->filters().submit([done] { done.wait(); }));
  auto reader = ctx->io().submit([&] { fx.check_box(*a, 0, kN - 1, 0, kN - 1); });
  const bool finished = reader.wait_for(std::chrono::seconds(120)) == std::future_status::ready;
  read_done.set_value();  // frees the filter workers either way, so a failure cannot hang
  ASSERT_TRUE(finished) << "a warm read waited for filter-pool helpers that could not start";
  reader.get();
  for (auto& b : blockers) b.wait();

  auto inside = ctx->filters().submit([&] { fx.check_box(*a, 0, kN - 1, 0, kN - 1); });
  ASSERT_EQ(inside.wait_for(std::chrono::seconds(120)), std::future_status::ready);
  inside.get();
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// A short cold read that stays serial (two tiles' pieces ending in their tiles' last
// blocks: nothing for readahead to overread) hands its blocks to the kernel first
// (ReadPath::kHintedSerial); its cells match the model, a re-read of the
// verified blocks and a read of more than kPrefetchWindow hint nothing, and a damaged
// block in the hinted span still fails the read.
TEST(ParallelRead, ShortSerialColdReadIsHintedAndStillVerified) {
  Fixture fx;
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(fx.dir, false, fx.disk(), &a).ok());
  // Band 2 (no overlay), tiles (2,0) and (2,1) but for their last row and column.
  const uint64_t r0 = 2 * kT, r1 = 3 * kT - 2, c0 = 0, c1 = 2 * kT - 2;
  uint64_t par = reads.parallel_reads(), hinted = reads.hinted_serial_reads();
  fx.check_box(*a, r0, r1, c0, c1);
  EXPECT_EQ(reads.parallel_reads(), par) << "the box should have stayed serial";
  EXPECT_EQ(reads.hinted_serial_reads(), hinted + 1) << "its cold blocks should have been hinted";
  fx.check_box(*a, r0, r1, c0, c1);
  EXPECT_EQ(reads.hinted_serial_reads(), hinted + 1) << "a re-read of verified blocks hints nothing";
  ASSERT_TRUE(Array::open(fx.dir, false, fx.disk(), &a).ok());
  hinted = reads.hinted_serial_reads();
  fx.check_box(*a, 0, kN - 1, 0, kN - 1);  // 16 MiB cold: left to the readahead
  EXPECT_EQ(reads.hinted_serial_reads(), hinted) << "a read longer than the window is not hinted";

  // The same box with one byte of tile (2,1) damaged, in a fresh open.
  std::string frag;
  uint64_t off = 0;
  for (const std::string& p : band_fragments(fx.dir)) {
    auto f = Fragment::open(p);
    for (const DenseEntry& e : f->meta().dense)
      if (e.kind == DenseEntry::kData && e.box.lo[0] == r0 && e.box.lo[1] == kT && e.box.hi[0] == r0 + kT - 1)
        frag = p, off = e.blob.offset + 5 * kCheckBlock + 17;
  }
  ASSERT_FALSE(frag.empty()) << "no fragment holds tile (2,1) whole";
  testutil::flip_byte(frag, off);
  ASSERT_TRUE(Array::open(fx.dir, false, fx.disk(), &a).ok());
  hinted = reads.hinted_serial_reads();
  std::vector<int32_t> out((r1 - r0 + 1) * (c1 - c0 + 1));
  Status st = a->read(Selection::from_box(Box({r0, c0}, {r1, c1})), out.data());
  EXPECT_EQ(st.code(), Errc::kCorrupt) << status_str(st);
  EXPECT_NE(st.message().find("checksum mismatch"), std::string::npos) << st.message();
  EXPECT_EQ(reads.hinted_serial_reads(), hinted + 1);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// A large first read of blocks all in the page cache (a file reopened just after it was
// written) costs CPU only, as a warm re-read does: it is split over the cores
// (ReadPath::kParallelResident), contiguous whole tiles too, without hints; every
// block is still verified (a damaged one fails the read), and the cells match the model.
// The same reads from the disk take the cold paths, and a read that finds one job's
// blocks missing from the page cache is not taken for a resident one.
TEST(ParallelRead, ResidentFirstReadIsSplitOverTheCores) {
  Fixture fx;
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(fx.dir, false, with_env(std::make_shared<CachedEnv>()), &a).ok());
  uint64_t res = reads.resident_parallel_reads(), par = reads.parallel_reads();
  const uint64_t hinted = reads.hinted_serial_reads();
  fx.check_box(*a, 2 * kT, 3 * kT - 1, 0, kN - 1);  // band 2: four contiguous whole tiles
  EXPECT_EQ(reads.resident_parallel_reads(), res + 1) << "a resident band should be split over the cores";
  fx.check_box(*a, 0, kN - 1, 1700, 1700);  // a column through scattered tiles
  fx.check_box(*a, 0, kN - 1, 0, kN - 1, 5);  // everything, strided (band 2 now verified)
  EXPECT_EQ(reads.resident_parallel_reads(), res + 3);
  EXPECT_EQ(reads.parallel_reads(), par) << "resident blocks take no cold path";
  EXPECT_EQ(reads.hinted_serial_reads(), hinted) << "resident blocks need no hint";
  fx.check_box(*a, 0, kN - 1, 0, kN - 1);  // verified now: a warm re-read
  EXPECT_EQ(reads.resident_parallel_reads(), res + 3);

  // From the disk, the band stays serial (readahead) and the column is prefetched.
  ASSERT_TRUE(Array::open(fx.dir, false, fx.disk(), &a).ok());
  res = reads.resident_parallel_reads(), par = reads.parallel_reads();
  fx.check_box(*a, 2 * kT, 3 * kT - 1, 0, kN - 1);
  fx.check_box(*a, 0, kN - 1, 1700, 1700);
  EXPECT_EQ(reads.resident_parallel_reads(), res);
  EXPECT_EQ(reads.parallel_reads(), par + 1);

  // Band 3 cached, band 1 not: the read of both is not a resident one.
  const std::string band1 = [&] {
    for (const std::string& p : band_fragments(fx.dir)) {
      auto f = Fragment::open(p);
      for (const DenseEntry& e : f->meta().dense)
        if (e.kind == DenseEntry::kData && e.box.lo[0] == kT && e.box.hi[0] == 2 * kT - 1) return p;
    }
    return std::string();
  }();
  ASSERT_FALSE(band1.empty());
  ASSERT_TRUE(Array::open(fx.dir, false, with_env(std::make_shared<CachedEnv>(band1)), &a).ok());
  res = reads.resident_parallel_reads();
  fx.check_box(*a, kT + kT / 2, 3 * kT - 1, 0, kN - 1);  // half of band 1, all of band 3
  EXPECT_EQ(reads.resident_parallel_reads(), res) << "a read with blocks on the disk is not resident";

  // A damaged block in a resident read still fails it, from the pool, and the rest reads.
  const std::string frag = band_fragments(fx.dir).front();
  auto f = Fragment::open(frag);
  ASSERT_FALSE(f->meta().dense.empty());
  const DenseEntry e = f->meta().dense.front();
  f.reset();
  ASSERT_EQ(e.kind, DenseEntry::kData);
  testutil::flip_byte(frag, e.blob.offset + 3 * kCheckBlock + 9);
  ASSERT_TRUE(Array::open(fx.dir, false, with_env(std::make_shared<CachedEnv>()), &a).ok());
  res = reads.resident_parallel_reads();
  std::vector<int32_t> out(kN * kN);
  Status st = a->read(Selection::from_box(Box({0, 0}, {kN - 1, kN - 1})), out.data());
  EXPECT_EQ(st.code(), Errc::kCorrupt) << status_str(st);
  EXPECT_NE(st.message().find("checksum mismatch"), std::string::npos) << st.message();
  EXPECT_EQ(reads.resident_parallel_reads(), res + 1);
  const uint64_t other_r0 = e.box.lo[0] >= kT ? 0 : kT;
  fx.check_box(*a, other_r0, other_r0 + kT - 1, 0, kN - 1);
}

// A re-read of whole tiles that the tile cache holds (read twice: cached on the second
// read) copies them out of memory split over the cores (cached_parallel_reads), into
// dense and strided destinations, and the cells match the model; with no tile cache the
// same re-reads are warm reads of verified blocks instead.
TEST(ParallelRead, TileCacheCopiesAreSplitOverTheCores) {
  Fixture fx;
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(fx.dir, false, fx.disk(), &a).ok());
  const uint64_t r0 = 2 * kT, r1 = 3 * kT - 1;  // band 2: four whole 1 MiB tiles
  fx.check_box(*a, r0, r1, 0, kN - 1);  // cold
  fx.check_box(*a, r0, r1, 0, kN - 1);  // verified, read again: cached now
  const uint64_t cached = reads.cached_parallel_reads();
  fx.check_box(*a, r0, r1, 0, kN - 1);
  fx.check_box(*a, r0, r1, 0, kN - 1, 3);
  EXPECT_EQ(reads.cached_parallel_reads(), cached + 2) << "copies out of the tile cache stayed serial";
  fx.check_box(*a, r0, r0 + kT / 4, 0, kN - 1);  // 1 MiB: too small to split
  EXPECT_EQ(reads.cached_parallel_reads(), cached + 2);

  EngineOptions eo;
  eo.tile_cache_mb = 0;
  ArrayOptions no_cache;
  no_cache.context = counted(std::make_shared<Context>(eo, std::make_shared<DiskEnv>()));
  ASSERT_TRUE(Array::open(fx.dir, false, no_cache, &a).ok());
  const uint64_t warm = reads.warm_parallel_reads();
  for (int k = 0; k < 3; ++k) fx.check_box(*a, r0, r1, 0, kN - 1);
  EXPECT_EQ(reads.cached_parallel_reads(), cached + 2);
  EXPECT_EQ(reads.warm_parallel_reads(), warm + 2);
}

}  // namespace
}  // namespace tessera
