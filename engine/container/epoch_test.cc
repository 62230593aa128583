// The engine side of parallel files (docs/parallel.md): shadow catalogs, per-rank publish
// journals tagged with an epoch (rolled forward only when the epoch is committed), arrays
// opened in collective mode, timestamps raised across ranks, orphan cleanup.  "Ranks"
// here are Array objects with different writer ranks in one process; a crash is a forked
// child that exits without running any destructor.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/catalog/catalog.h"
#include "engine/util/file_io.h"

using namespace tessera;

namespace {

std::string tmpdir() {
  char tmpl[] = "/tmp/tessera_epoch_XXXXXX";
  return mkdtemp(tmpl);
}

Schema schema() {
  Schema s;
  s.extent = {32, 32};
  s.max_extent = {32, 32};
  s.tile_extent = {8, 8};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  return s;
}

ArrayOptions rank_opts(uint32_t rank, uint64_t committed = 0) {
  ArrayOptions o;
  o.durable_writes = false;
  o.blob_bytes = 0;  // a box write is a fragment of its own here
  o.collective = true;
  o.writer_rank = rank;
  o.shadow = rank != 0;
  o.committed_epoch = committed;
  return o;
}

// Rank r writes value r+1 into rows [8r, 8r+8) (a tile row) and sparse cell (31, r).
void write_part(Array& a, uint32_t r) {
  std::vector<int32_t> v(8 * 32, static_cast<int32_t>(r + 1));
  ASSERT_TRUE(a.write(Selection::from_box(Box({8 * r, 0}, {8 * r + 7, 31})), v.data()).ok());
  uint64_t c[2] = {31, r};
  int32_t x = static_cast<int32_t>(100 + r);
  ASSERT_TRUE(a.write_points(c, 1, &x).ok());
}

std::vector<int32_t> model(bool with_data) {
  std::vector<int32_t> m(32 * 32, 0);
  if (!with_data) return m;
  for (uint32_t r = 0; r < 2; ++r)
    for (uint64_t i = 8 * r; i < 8 * r + 8; ++i)
      for (uint64_t j = 0; j < 32; ++j) m[i * 32 + j] = static_cast<int32_t>(r + 1);
  m[31 * 32 + 0] = 100;
  m[31 * 32 + 1] = 101;
  return m;
}

std::vector<int32_t> read_all(Array& a) {
  std::vector<int32_t> v(32 * 32, -7);
  EXPECT_TRUE(a.read(Selection::from_box(Box({0, 0}, {31, 31})), v.data()).ok());
  return v;
}

size_t count_names(const std::string& dir, const std::string& suffix) {
  size_t n = 0;
  for (auto& name : list_dir(Env::posix(), dir))
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) ++n;
  return n;
}

// In a child: ranks 0 and 1 write and stage epoch 1, then the child dies (no destructors).
void crash_after_staging(const std::string& dir) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::unique_ptr<Array> r0, r1;
    if (!Array::open(dir, true, rank_opts(0), &r0).ok()) _exit(2);
    if (!Array::open(dir, true, rank_opts(1), &r1).ok()) _exit(2);
    write_part(*r0, 0);
    write_part(*r1, 1);
    for (Array* a : {r0.get(), r1.get()})
      if (!a->prepare_flush().ok() || !a->stage_prepared(false, 1).ok()) _exit(3);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace

TEST(Epoch, ShadowCatalogAppliesInMemoryAndNeverWrites) {
  std::string dir = tmpdir();
  auto writer = Catalog::open(dir, Catalog::Mode::kReadWrite, true);
  CatalogBatch b;
  b.put("k1", "v1");
  writer->commit(b);
  writer->sync();
  const size_t size = read_file(Env::posix(), writer->log_path()).size();
  // No lock: a shadow opens while the writer holds it.
  auto shadow = Catalog::open(dir, Catalog::Mode::kShadow, false);
  EXPECT_EQ(shadow->get("k1").value_or(""), "v1");
  EXPECT_TRUE(shadow->writable());
  CatalogBatch c;
  c.put("k2", "v2");
  c.del("k1");
  shadow->commit(c);
  shadow->sync();
  EXPECT_EQ(shadow->get("k2").value_or(""), "v2");
  EXPECT_FALSE(shadow->get("k1").has_value());
  shadow.reset();
  EXPECT_EQ(read_file(Env::posix(), writer->log_path()).size(), size);
  auto reader = Catalog::open(dir, Catalog::Mode::kReadOnly, false);
  EXPECT_EQ(reader->get("k1").value_or(""), "v1");
  EXPECT_FALSE(reader->get("k2").has_value());
}

TEST(Epoch, CommittedEpochRollsRankJournalsForward) {
  std::string dir = tmpdir() + "/a";
  ASSERT_TRUE(Array::create(dir, schema()).ok());
  crash_after_staging(dir);
  EXPECT_EQ(count_names(dir + "/frag", ".journal"), 2u);  // publish-r0, publish-r1
  // A reader that knows epoch 1 is committed sees both ranks' data, without touching disk.
  std::unique_ptr<Array> ro;
  ArrayOptions o;
  o.committed_epoch = 1;
  ASSERT_TRUE(Array::open(dir, false, o, &ro).ok());
  EXPECT_EQ(read_all(*ro), model(true));
  EXPECT_EQ(count_names(dir + "/frag", ".journal"), 2u);
  ro.reset();
  // A writer finishes the renames and removes the journals.
  std::unique_ptr<Array> w;
  o.sole_writer = true;
  ASSERT_TRUE(Array::open(dir, true, o, &w).ok());
  EXPECT_EQ(read_all(*w), model(true));
  w.reset();
  EXPECT_EQ(count_names(dir + "/frag", ".journal"), 0u);
  EXPECT_EQ(count_names(dir + "/frag", ".tmp"), 0u);
  EXPECT_EQ(count_names(dir + "/frag", ".tfr"), 4u);
}

TEST(Epoch, UncommittedEpochRollsBack) {
  std::string dir = tmpdir() + "/a";
  ASSERT_TRUE(Array::create(dir, schema()).ok());
  crash_after_staging(dir);
  std::unique_ptr<Array> ro;
  ArrayOptions o;  // committed_epoch 0: epoch 1 never committed
  ASSERT_TRUE(Array::open(dir, false, o, &ro).ok());
  EXPECT_EQ(read_all(*ro), model(false));
  ro.reset();
  std::unique_ptr<Array> w;
  ASSERT_TRUE(Array::open(dir, true, o, &w).ok());
  EXPECT_EQ(read_all(*w), model(false));
  w.reset();
  EXPECT_EQ(count_names(dir + "/frag", ".journal"), 0u);
  EXPECT_EQ(count_names(dir + "/frag", ".tmp"), 0u);  // named by the journals: removed
  EXPECT_EQ(count_names(dir + "/frag", ".tfr"), 0u);
}

TEST(Epoch, FullCommitPublishesEveryRankAndRefreshShowsThem) {
  std::string dir = tmpdir() + "/a";
  ASSERT_TRUE(Array::create(dir, schema()).ok());
  std::unique_ptr<Array> r0, r1;
  ASSERT_TRUE(Array::open(dir, true, rank_opts(0), &r0).ok());
  ASSERT_TRUE(Array::open(dir, true, rank_opts(1), &r1).ok());
  write_part(*r0, 0);
  write_part(*r1, 1);
  for (Array* a : {r0.get(), r1.get()}) {
    ASSERT_TRUE(a->prepare_flush().ok());
    ASSERT_TRUE(a->stage_prepared(false, 1).ok());
  }
  for (Array* a : {r0.get(), r1.get()}) ASSERT_TRUE(a->publish_prepared(false).ok());
  EXPECT_EQ(count_names(dir + "/frag", ".journal"), 0u);
  for (Array* a : {r0.get(), r1.get()}) {
    ASSERT_TRUE(a->refresh().ok());
    EXPECT_EQ(read_all(*a), model(true));
  }
  // Timestamps: after agreeing on the maximum, the next fragment of either rank sorts
  // after every fragment so far.
  uint64_t ts = std::max(r0->last_timestamp(), r1->last_timestamp()) + 1000000000ull;
  r1->raise_timestamp(ts);
  std::vector<int32_t> v(64, 9);
  ASSERT_TRUE(r1->write(Selection::from_box(Box({0, 0}, {7, 7})), v.data()).ok());
  ASSERT_TRUE(r1->prepare_flush().ok());
  auto frags = r1->fragments();
  ASSERT_FALSE(frags.empty());
  EXPECT_GT(frags.back().id.ts, ts);
  EXPECT_EQ(frags.back().id.rank, 1u);
}

TEST(Epoch, CollectiveArrayDiscardsWhatNoEpochCommitted) {
  std::string dir = tmpdir() + "/a";
  ASSERT_TRUE(Array::create(dir, schema()).ok());
  {
    std::unique_ptr<Array> r1;
    ASSERT_TRUE(Array::open(dir, true, rank_opts(1), &r1).ok());
    write_part(*r1, 1);
    ASSERT_TRUE(r1->prepare_flush().ok());
  }
  EXPECT_EQ(list_dir(Env::posix(), dir + "/frag").size(), 0u);
  std::unique_ptr<Array> ro;
  ASSERT_TRUE(Array::open(dir, false, ArrayOptions{}, &ro).ok());
  EXPECT_EQ(read_all(*ro), model(false));
}

TEST(Epoch, ShadowRankNeverWritesSchemaOrFillFragments) {
  std::string dir = tmpdir() + "/a";
  Schema s = schema();
  s.max_extent = {64, 64};
  ASSERT_TRUE(Array::create(dir, s).ok());
  std::unique_ptr<Array> r1;
  ASSERT_TRUE(Array::open(dir, true, rank_opts(1), &r1).ok());
  write_part(*r1, 1);
  ASSERT_TRUE(r1->prepare_flush().ok());
  ASSERT_TRUE(r1->stage_prepared(false, 1).ok());
  ASSERT_TRUE(r1->publish_prepared(false).ok());
  const auto before = read_file(Env::posix(), dir + "/schema");
  ASSERT_TRUE(r1->set_extent({4, 32}).ok());  // a shrink over data: rank 0 would write fill
  ASSERT_TRUE(r1->set_extent({40, 32}).ok());
  EXPECT_EQ(r1->schema().extent, (Coords{40, 32}));
  EXPECT_EQ(r1->unpublished_count(), 0u);
  ASSERT_TRUE(r1->prepare_flush().ok());
  ASSERT_TRUE(r1->stage_prepared(false, 2).ok());
  ASSERT_TRUE(r1->publish_prepared(false).ok());
  EXPECT_EQ(read_file(Env::posix(), dir + "/schema"), before);
}

TEST(Epoch, SerialConsolidationMergesEveryRanksFragments) {
  std::string dir = tmpdir() + "/a";
  ASSERT_TRUE(Array::create(dir, schema()).ok());
  std::vector<int32_t> want = model(true);
  {
    std::unique_ptr<Array> r0, r1;
    ASSERT_TRUE(Array::open(dir, true, rank_opts(0), &r0).ok());
    ASSERT_TRUE(Array::open(dir, true, rank_opts(1), &r1).ok());
    write_part(*r0, 0);
    write_part(*r1, 1);
    auto commit = [&](uint64_t e) {
      for (Array* a : {r0.get(), r1.get()}) {
        ASSERT_TRUE(a->prepare_flush().ok());
        ASSERT_TRUE(a->stage_prepared(false, e).ok());
      }
      uint64_t ts = std::max(r0->last_timestamp(), r1->last_timestamp());
      for (Array* a : {r0.get(), r1.get()}) {
        a->raise_timestamp(ts);
        ASSERT_TRUE(a->publish_prepared(false).ok());
      }
    };
    commit(1);
    // Epoch 2: rank 1 overwrites part of rank 0's rows; newer must win after merging.
    std::vector<int32_t> v(4 * 4, 77);
    ASSERT_TRUE(r1->write(Selection::from_box(Box({2, 2}, {5, 5})), v.data()).ok());
    for (uint64_t i = 2; i <= 5; ++i)
      for (uint64_t j = 2; j <= 5; ++j) want[i * 32 + j] = 77;
    commit(2);
  }
  std::unique_ptr<Array> a;
  ArrayOptions o;
  o.committed_epoch = 2;
  ASSERT_TRUE(Array::open(dir, true, o, &a).ok());
  ASSERT_EQ(a->fragments().size(), 5u);
  EXPECT_EQ(read_all(*a), want);
  ASSERT_TRUE(a->consolidate_all().ok());
  EXPECT_EQ(a->fragments().size(), 1u);
  EXPECT_EQ(read_all(*a), want);
  a.reset();
  ASSERT_TRUE(Array::open(dir, false, o, &a).ok());
  EXPECT_EQ(read_all(*a), want);
}

TEST(Epoch, ParallelConsolidationPartsPublishTogether) {
  std::string dir = tmpdir() + "/a";
  ASSERT_TRUE(Array::create(dir, schema()).ok());
  std::unique_ptr<Array> r0, r1;
  ASSERT_TRUE(Array::open(dir, true, rank_opts(0), &r0).ok());
  ASSERT_TRUE(Array::open(dir, true, rank_opts(1), &r1).ok());
  auto epoch = [&](uint64_t e) {
    for (Array* a : {r0.get(), r1.get()}) {
      ASSERT_TRUE(a->prepare_flush().ok());
      ASSERT_TRUE(a->stage_prepared(false, e).ok());
    }
    for (Array* a : {r0.get(), r1.get()}) ASSERT_TRUE(a->publish_prepared(false).ok());
    for (Array* a : {r0.get(), r1.get()}) ASSERT_TRUE(a->refresh().ok());
  };
  write_part(*r0, 0);
  write_part(*r1, 1);
  // Pending writes must be committed before a part can merge.
  EXPECT_FALSE(r0->consolidate_part(0, 2).ok());
  epoch(1);
  ASSERT_EQ(r0->fragments().size(), 4u);
  ASSERT_TRUE(r0->consolidate_part(0, 2).ok());
  ASSERT_TRUE(r1->consolidate_part(1, 2).ok());
  // Unpublished parts change nothing yet, not even for the rank that wrote one.
  EXPECT_EQ(r0->fragments().size(), 4u);
  EXPECT_EQ(read_all(*r0), model(true));
  epoch(2);
  for (Array* a : {r0.get(), r1.get()}) {
    EXPECT_EQ(a->fragments().size(), 2u);
    EXPECT_EQ(read_all(*a), model(true));
  }
  // The inputs stay, hidden, until a vacuum removes them.
  EXPECT_EQ(count_names(dir + "/frag", ".tfr"), 6u);
  EXPECT_EQ(r0->replaced_fragments().size(), 4u);
  VacuumResult vr;
  ASSERT_TRUE(r0->vacuum(&vr).ok());
  EXPECT_EQ(vr.fragments, 4u);
  EXPECT_EQ(count_names(dir + "/frag", ".tfr"), 2u);
  EXPECT_EQ(read_all(*r0), model(true));
}

// H5Dwrite in a parallel file (docs/parallel.md, "Visibility"): a rank's shared
// fragments are read by the other ranks at once, never by other processes, and become
// committed only through an epoch — a crash before it leaves nothing behind.
TEST(Epoch, SharedFragmentsAreSeenByOtherRanksButCommittedOnlyByAnEpoch) {
  std::string dir = tmpdir() + "/a";
  ASSERT_TRUE(Array::create(dir, schema()).ok());
  std::vector<int32_t> want = model(true);  // rank 1's part only
  for (uint64_t i = 0; i < 8; ++i)
    for (uint64_t j = 0; j < 32; ++j) want[i * 32 + j] = 0;
  want[31 * 32 + 0] = 0;
  std::unique_ptr<Array> r0, r1;
  ASSERT_TRUE(Array::open(dir, true, rank_opts(0), &r0).ok());
  ASSERT_TRUE(Array::open(dir, true, rank_opts(1), &r1).ok());
  write_part(*r1, 1);
  ASSERT_TRUE(r1->share_own().ok());
  EXPECT_GE(count_names(dir + "/frag", ".tfr.shared.tmp"), 1u);
  ASSERT_TRUE(r0->refresh_fragments().ok());
  EXPECT_EQ(read_all(*r0), want);
  {
    std::unique_ptr<Array> other;  // another process: not a rank of the job
    ASSERT_TRUE(Array::open(dir, false, ArrayOptions{}, &other).ok());
    EXPECT_EQ(read_all(*other), model(false));
  }
  for (Array* a : {r0.get(), r1.get()}) {
    ASSERT_TRUE(a->prepare_flush().ok());
    ASSERT_TRUE(a->stage_prepared(false, 1).ok());
  }
  for (Array* a : {r0.get(), r1.get()}) ASSERT_TRUE(a->publish_prepared(false).ok());
  EXPECT_EQ(count_names(dir + "/frag", ".tmp"), 0u);
  r0.reset();
  r1.reset();
  std::unique_ptr<Array> after;
  ArrayOptions o;
  o.committed_epoch = 1;
  ASSERT_TRUE(Array::open(dir, false, o, &after).ok());
  EXPECT_EQ(read_all(*after), want);

  // A rank killed after sharing, before any epoch: recovery removes what it shared.
  std::string dir2 = tmpdir() + "/b";
  ASSERT_TRUE(Array::create(dir2, schema()).ok());
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::unique_ptr<Array> k;
    if (!Array::open(dir2, true, rank_opts(1), &k).ok()) _exit(2);
    write_part(*k, 1);
    if (!k->share_own().ok()) _exit(3);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_GE(count_names(dir2 + "/frag", ".tfr.shared.tmp"), 1u);
  std::unique_ptr<Array> w;
  ArrayOptions recovering;  // as rank 0 opening a parallel file, or a serial writer
  recovering.sole_writer = true;
  ASSERT_TRUE(Array::open(dir2, true, recovering, &w).ok());
  EXPECT_EQ(read_all(*w), model(false));
  EXPECT_EQ(count_names(dir2 + "/frag", ".tmp"), 0u);
}
