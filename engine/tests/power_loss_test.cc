// Power loss (docs/reliability.md, "Power loss"): what a commit reported durable survives
// a power loss at any moment, and a power loss mid-commit leaves the last committed state
// whole — which proves the engine syncs what it must (fragment data before the commit,
// the directory after a rename, the catalog log) in the right order.
//
// The container's I/O goes through a PowerLossEnv (power_loss_env.h), which tracks what
// is not durable yet.  For each operation — a serial flush of three arrays (both sync
// routes), an epoch commit, a consolidation, commits that compact the catalog log — the
// test counts its points (writes, syncs, name changes), then for every k starts again
// from a committed state, stops the machine after the k-th point, drops everything not
// durable, and reopens with plain POSIX: every array must be one whole generation, the
// new one whenever the operation had returned success, and verify_container finds
// nothing wrong.  Then the same with a sync or rename failing (EIO) first and the writer
// retrying until it succeeds: a failed fsync may have dropped data for good, so the
// success the retry reports must hold after a power loss too.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine/catalog/catalog.h"
#include "engine/testing/fault_env.h"
#include "engine/testing/fault_rig.h"
#include "engine/testing/power_loss_env.h"
#include "engine/testing/testutil.h"

using namespace tessera;
using namespace tessera::fault_rig;

namespace {

struct LossRig {
  testutil::TempDir tmp{"tessera_power"};
  std::string root = tmp.path();
  std::shared_ptr<FaultEnv> faults = std::make_shared<FaultEnv>();
  std::shared_ptr<PowerLossEnv> env = std::make_shared<PowerLossEnv>(root, *faults);
  std::shared_ptr<Context> ctx = std::make_shared<Context>(EngineOptions{}, env);
  uint64_t crashes = 0, new_state = 0;
};

uint64_t stride() {
  const char* s = std::getenv("TESSERA_FAULT_STRIDE");
  return s && std::atoi(s) > 0 ? static_cast<uint64_t>(std::atoi(s)) : 1;
}

std::string pending_str(const PowerLossEnv& env) {
  std::string s;
  for (auto& p : env.pending()) s += "\n  " + p;
  return s;
}

// A serial flush or an epoch of generation 2, the machine stopped after every point.
void flush_with_power_loss(bool epochs, SyncPolicy sync, const char* label, bool file_arrays = false) {
  LossRig rig;
  uint64_t ids[kArrays];
  const std::string count_path = rig.root + "/count";
  make_committed(rig.ctx, count_path, epochs, sync, ids, file_arrays);
  if (::testing::Test::HasFatalFailure()) return;
  rig.env->settle();
  uint64_t points = 0;
  {
    Writer w;
    ASSERT_TRUE(open_writer(rig.ctx, count_path, ids, epochs, &w));
    rig.env->stop_after(0);
    ASSERT_TRUE(write_all(w, 2));
    ASSERT_TRUE(commit(w, epochs, sync).ok());
    points = rig.env->points();
  }
  // The operation returned: a power loss now must keep all of it.
  rig.env->power_loss();
  {
    SCOPED_TRACE(std::string(label) + ": power loss after the commit returned");
    std::vector<int> g = generations(count_path, ids, false);
    expect_whole(g, epochs, true);
  }
  ASSERT_GT(points, 0u);
  for (uint64_t k = 1; k <= points; k += stride()) {
    SCOPED_TRACE(std::string(label) + ": power loss after point " + std::to_string(k) + " of " +
                 std::to_string(points));
    const std::string path = rig.root + "/p" + std::to_string(k);
    make_committed(rig.ctx, path, epochs, sync, ids, file_arrays);
    if (::testing::Test::HasFatalFailure()) return;
    rig.env->settle();
    bool ok = false;
    std::string lost;
    {
      Writer w;
      ASSERT_TRUE(open_writer(rig.ctx, path, ids, epochs, &w));
      rig.env->stop_after(k);
      ok = write_all(w, 2) && commit(w, epochs, sync).ok();
      lost = pending_str(*rig.env);
    }  // the writer goes with the machine stopped: nothing it does now reaches the disk
    rig.env->power_loss();
    ++rig.crashes;
    SCOPED_TRACE("not durable at the power loss:" + lost);
    std::vector<int> g = generations(path, ids, false);
    expect_whole(g, epochs, ok);
    std::vector<int> after = generations(path, ids, true);  // recovery
    EXPECT_EQ(after, g) << "recovery changed what a reader saw";
    if (!g.empty() && g[0] == 2) ++rig.new_state;
    expect_verified(path);
    (void)guard([&] { remove_tree(Env::posix(), path); });
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::printf("[ power    ] %s: %llu points: %llu power losses (%llu kept the new state)\n", label,
              static_cast<unsigned long long>(points), static_cast<unsigned long long>(rig.crashes + 1),
              static_cast<unsigned long long>(rig.new_state));
}

// A write, sync or rename of the flush fails with EIO at point k (FaultEnv under the
// PowerLossEnv); the writer writes generation 2 again and commits until that succeeds;
// then the power goes.  Generation 2 must be what is left.
void flush_failing_then_power_loss(bool epochs, SyncPolicy sync, const char* label, bool file_arrays = false) {
  LossRig rig;
  uint64_t ids[kArrays];
  const std::string count_path = rig.root + "/count";
  make_committed(rig.ctx, count_path, epochs, sync, ids, file_arrays);
  if (::testing::Test::HasFatalFailure()) return;
  uint64_t points = 0;
  {
    Writer w;
    ASSERT_TRUE(open_writer(rig.ctx, count_path, ids, epochs, &w));
    rig.faults->reset_count();
    ASSERT_TRUE(write_all(w, 2));
    ASSERT_TRUE(commit(w, epochs, sync).ok());
    points = rig.faults->points();
  }
  uint64_t failed = 0;
  for (uint64_t k = 1; k <= points; k += stride()) {
    SCOPED_TRACE(std::string(label) + ": EIO at point " + std::to_string(k) + " of " + std::to_string(points) +
                 ", then a power loss after the retry succeeded");
    const std::string path = rig.root + "/p" + std::to_string(k);
    make_committed(rig.ctx, path, epochs, sync, ids, file_arrays);
    if (::testing::Test::HasFatalFailure()) return;
    rig.env->settle();
    std::string at, lost;
    {
      Writer w;
      ASSERT_TRUE(open_writer(rig.ctx, path, ids, epochs, &w));
      rig.faults->arm(k, FaultEnv::Fault::kIo);
      bool ok = write_all(w, 2) && commit(w, epochs, sync).ok();
      at = rig.faults->fired_at();
      rig.faults->disarm();
      failed += !ok;
      for (int attempt = 0; !ok && attempt < 3; ++attempt)
        ok = write_all(w, 2) && commit(w, epochs, sync).ok();
      ASSERT_TRUE(ok) << "the retry failed (fault at " << at << ")";
      lost = pending_str(*rig.env);
    }
    rig.env->power_loss();
    SCOPED_TRACE("EIO at " + at + "; not durable at the power loss:" + lost);
    std::vector<int> g = generations(path, ids, false);
    expect_whole(g, epochs, true);
    expect_verified(path);
    (void)guard([&] { remove_tree(Env::posix(), path); });
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::printf("[ power    ] %s: EIO at each of %llu points (%llu commits failed and were retried), then a power "
              "loss\n",
              label, static_cast<unsigned long long>(points), static_cast<unsigned long long>(failed));
}

// The connector's first flush of a new file (H5Fcreate, H5Dcreate, H5Dwrite, H5Fclose):
// the container is created, its arrays created and written, and one commit makes it all
// durable — creation syncs nothing of its own (pending_names.h).  Returns the commit's
// success.
bool create_write_commit(const std::shared_ptr<Context>& ctx, const std::string& path, SyncPolicy sync,
                         uint64_t* ids) {
  Writer w;
  if (!Container::create(path, Container::CreateMode::kTruncate, &w.c, ctx).ok()) return false;
  w.c->catalog().set_durability(Catalog::Durability::kOnSync);  // the connector's
  for (int i = 0; i < kArrays; ++i) {
    std::unique_ptr<Array> a;
    if (!w.c->create_and_open_array(schema_of(i), false, true, options(false), &ids[i], &a).ok()) return false;
    w.ids[i] = ids[i];
    w.list.push_back(a.get());
    w.open[ids[i]] = std::move(a);
  }
  return write_all(w, 1) && commit(w, false, sync).ok();
}

// After a power loss during create_write_commit: nothing of it, or all of it.  Nothing:
// no directory, or one a create may replace (Container::is_unfinished), or a container
// without the arrays.  A create over what is left must succeed in every case.
void expect_nothing_or_all(const std::string& path, const uint64_t* ids, bool returned) {
  if (!returned && !path_exists(Env::posix(), path)) return;
  std::unique_ptr<Container> c;
  Status st = Container::open(path, false, &c);
  if (!st.ok()) {
    EXPECT_FALSE(returned) << "the commit returned, the container does not open: " << st.message();
    EXPECT_TRUE(Container::is_unfinished(Env::posix(), path)) << "neither a container nor a leftover: " << st.message();
  } else {
    int present = 0;
    for (int i = 0; i < kArrays; ++i) {
      std::unique_ptr<Array> a;
      if (!c->open_array(ids[i], false, options(false), &a).ok()) continue;
      ++present;
      EXPECT_EQ(generation_of(*a, i), 1);
    }
    EXPECT_TRUE(present == 0 || present == kArrays) << present << " of the arrays survived";
    if (returned) {
      EXPECT_EQ(present, kArrays) << "the commit returned";
    }
    c.reset();
    expect_verified(path);
  }
  std::unique_ptr<Container> again;
  st = Container::create(path, Container::CreateMode::kTruncate, &again);
  EXPECT_TRUE(st.ok()) << "a create over what the power loss left failed: " << st.message();
}

void first_flush_with_power_loss(SyncPolicy sync, const char* label) {
  LossRig rig;
  uint64_t ids[kArrays];
  uint64_t points = 0;
  {
    rig.env->stop_after(0);
    ASSERT_TRUE(create_write_commit(rig.ctx, rig.root + "/count", sync, ids));
    points = rig.env->points();
  }
  rig.env->power_loss();
  {
    SCOPED_TRACE(std::string(label) + ": power loss after the commit returned");
    expect_nothing_or_all(rig.root + "/count", ids, true);
  }
  ASSERT_GT(points, 0u);
  for (uint64_t k = 1; k <= points; k += stride()) {
    SCOPED_TRACE(std::string(label) + ": power loss after point " + std::to_string(k) + " of " +
                 std::to_string(points));
    const std::string path = rig.root + "/p" + std::to_string(k);
    rig.env->settle();
    rig.env->stop_after(k);
    const bool ok = create_write_commit(rig.ctx, path, sync, ids);
    const std::string lost = pending_str(*rig.env);
    rig.env->power_loss();
    SCOPED_TRACE("not durable at the power loss:" + lost);
    expect_nothing_or_all(path, ids, ok);
    (void)guard([&] { remove_tree(Env::posix(), path); });
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::printf("[ power    ] %s: %llu points: %llu power losses\n", label, static_cast<unsigned long long>(points),
              static_cast<unsigned long long>(points / stride() + 1));
}

}  // namespace

TEST(PowerLoss, EnvDropsWhatWasNotSynced) {
  // The env itself against what the POSIX rules say survives.
  testutil::TempDir tmp("tessera_power_env");
  const std::string d = tmp.path();
  FaultEnv faults;
  PowerLossEnv env(d, faults);
  const std::string kept = d + "/kept", lost = d + "/lost", renamed = d + "/renamed", gone = d + "/gone";
  auto put = [&](const std::string& p, const char* s, bool sync) {
    File f = File::open_rw(env, p, true);
    f.pwrite_all(s, std::strlen(s), 0);
    if (sync) f.sync();
  };
  auto text = [&](const std::string& p) {
    if (!path_exists(Env::posix(), p)) return std::string("(none)");
    auto b = read_file(Env::posix(), p);
    return std::string(b.begin(), b.end());
  };
  put(kept, "old", true);
  put(gone, "gone", true);
  sync_dir(env, d);
  put(renamed + ".tmp", "r", true);
  sync_dir(env, d);
  put(kept, "new", false);       // data not synced
  put(lost, "lost", true);       // data synced, name not
  env.rename((renamed + ".tmp").c_str(), renamed.c_str());  // no directory sync
  remove_file(env, gone);        // no directory sync
  env.power_loss();
  EXPECT_EQ(text(kept), "old");
  EXPECT_EQ(text(lost), "(none)");
  EXPECT_EQ(text(renamed), "(none)");
  EXPECT_EQ(text(renamed + ".tmp"), "r");
  EXPECT_EQ(text(gone), "gone");
  // Synced data and names survive.
  put(kept, "new", true);
  rename_durable(env, renamed + ".tmp", renamed);
  env.power_loss();
  EXPECT_EQ(text(kept), "new");
  EXPECT_EQ(text(renamed), "r");
  // A failed fdatasync drops what it was to write for good; rewriting brings it back.
  {
    File f = File::open_rw(env, kept, false);
    f.pwrite_all("abc", 3, 0);
    faults.arm(1, FaultEnv::Fault::kIo);
    EXPECT_THROW(f.sync(), Error);
    faults.disarm();
    f.sync();  // returns 0, as Linux does after reporting the error once
    EXPECT_EQ(text(kept), "abc") << "the page cache still has it";
  }
  env.power_loss();
  EXPECT_EQ(text(kept), "new") << "a failed sync's data survived a power loss";
  {
    File f = File::open_rw(env, kept, false);
    f.pwrite_all("abc", 3, 0);
    faults.arm(1, FaultEnv::Fault::kIo);
    EXPECT_THROW(f.sync(), Error);
    faults.disarm();
    f.pwrite_all("xyz", 3, 0);
    f.sync();
  }
  env.power_loss();
  EXPECT_EQ(text(kept), "xyz");
  // Stopped: nothing more reaches the disk.
  env.stop_after(1);
  EXPECT_THROW(put(lost, "1", true), Error);  // the create is point 1; the write fails
  EXPECT_TRUE(env.stopped());
  EXPECT_EQ(text(lost), "") << "created, nothing written";
  EXPECT_THROW(put(gone, "2", true), Error);
  env.power_loss();
  EXPECT_EQ(text(lost), "(none)");
}

TEST(PowerLoss, SerialFlushPerFileSyncs) { flush_with_power_loss(false, kPerFile, "serial flush, per-file syncs"); }
TEST(PowerLoss, SerialFlushSyncfs) { flush_with_power_loss(false, kSyncfs, "serial flush, syncfs"); }
TEST(PowerLoss, EpochCommit) { flush_with_power_loss(true, kPerFile, "epoch commit"); }
// A serial writer of a parallel file's arrays (Array::record_staged: the catalog batch
// before the renames).
TEST(PowerLoss, SerialFlushOfParallelFileArraysPerFileSyncs) {
  flush_with_power_loss(false, kPerFile, "serial flush of a parallel file's arrays, per-file syncs", true);
}
TEST(PowerLoss, SerialFlushOfParallelFileArraysSyncfs) {
  flush_with_power_loss(false, kSyncfs, "serial flush of a parallel file's arrays, syncfs", true);
}
TEST(PowerLoss, AfterAFailedSyncSerialFlushOfParallelFileArrays) {
  flush_failing_then_power_loss(false, kPerFile, "serial flush of a parallel file's arrays, per-file syncs", true);
}
TEST(PowerLoss, NewContainerFirstFlushPerFileSyncs) {
  first_flush_with_power_loss(kPerFile, "new container's first flush, per-file syncs");
}
TEST(PowerLoss, NewContainerFirstFlushSyncfs) {
  first_flush_with_power_loss(kSyncfs, "new container's first flush, syncfs");
}
TEST(PowerLoss, EpochCommitSyncfs) { flush_with_power_loss(true, kSyncfs, "epoch commit, syncfs"); }

TEST(PowerLoss, AfterAFailedSyncSerialFlush) {
  flush_failing_then_power_loss(false, kPerFile, "serial flush, per-file syncs");
}
TEST(PowerLoss, AfterAFailedSyncEpochCommit) { flush_failing_then_power_loss(true, kPerFile, "epoch commit"); }

TEST(PowerLoss, Consolidation) {
  LossRig rig;
  uint64_t id = 0;
  ArrayOptions o = options(false);
  o.inline_fragment_bytes = 0;
  const std::string count_path = rig.root + "/count";
  make_fragments(rig.ctx, count_path, &id);
  if (HasFatalFailure()) return;
  rig.env->settle();
  uint64_t points = 0;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(count_path, true, &c, rig.ctx).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, true, o, &a).ok());
    rig.env->stop_after(0);
    ASSERT_TRUE(a->consolidate_all().ok());
    points = rig.env->points();
  }
  rig.env->power_loss();
  size_t frags = 0;
  expect_model(count_path, id, false, &frags);
  EXPECT_EQ(frags, 1u) << "the consolidation returned, but its result did not survive";
  for (uint64_t k = 1; k <= points; k += stride()) {
    SCOPED_TRACE("consolidation: power loss after point " + std::to_string(k) + " of " + std::to_string(points));
    const std::string path = rig.root + "/p" + std::to_string(k);
    make_fragments(rig.ctx, path, &id);
    if (HasFatalFailure()) return;
    rig.env->settle();
    std::string lost;
    {
      std::unique_ptr<Container> c;
      ASSERT_TRUE(Container::open(path, true, &c, rig.ctx).ok());
      std::unique_ptr<Array> a;
      ASSERT_TRUE(c->open_array(id, true, o, &a).ok());
      rig.env->stop_after(k);
      (void)a->consolidate_all();
      lost = pending_str(*rig.env);
    }
    rig.env->power_loss();
    SCOPED_TRACE("not durable at the power loss:" + lost);
    expect_model(path, id, false);
    expect_model(path, id, true);
    expect_verified(path);
    (void)guard([&] { remove_tree(Env::posix(), path); });
    if (HasFatalFailure()) return;
  }
  std::printf("[ power    ] consolidation: %llu points: %llu power losses\n", static_cast<unsigned long long>(points),
              static_cast<unsigned long long>(points / stride() + 1));
}
