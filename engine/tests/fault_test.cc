// Fault injection (docs/reliability.md, "Fault injection"): ENOSPC, EIO and short writes
// at every write and sync call of (a) a flush that publishes three arrays (commit_arrays:
// inline catalog records, several fragment files under a journal, an extent change),
// (b) a consolidation and (c) an epoch commit (commit_epoch, the engine's part of an MPI
// flush).  The calls go through a FaultEnv (fault_env.h) in the Context the container was
// opened with.  For each operation the test first counts its points, then, for every
// point k and every fault, starts again from the same committed state, fails the k-th
// call, and checks against a model:
//   - a reader opened right after the failure (the writer still open) sees one whole
//     committed state: every array one generation, old or new (an epoch: the same for
//     all arrays; a consolidation: the model's values) — never a mix, never an error;
//   - then either the writer retries (the fault gone) and the retry succeeds and reads
//     back as the new state, or (odd k) the writer closes with the fault still there (a
//     full disk stays full) and a reopen reads one whole committed state and
//     verify_container finds no problem.
// TESSERA_FAULT_STRIDE=n injects at every n-th point only (quick runs); the number of
// points injected is printed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/testing/fault_env.h"
#include "engine/testing/fault_rig.h"
#include "engine/util/file_io.h"
#include "engine/testing/testutil.h"
#include "engine/container/verify.h"

using namespace tessera;

namespace {

using namespace fault_rig;
using Fault = FaultEnv::Fault;
const Fault kFaults[] = {Fault::kNoSpace, Fault::kIo, Fault::kShortWrite};

struct Rig {
  std::shared_ptr<FaultEnv> env = std::make_shared<FaultEnv>();
  std::shared_ptr<Context> ctx = std::make_shared<Context>(EngineOptions{}, env);
  testutil::TempDir tmp{"tessera_fault"};
  std::string root = tmp.path();
  uint64_t injected = 0, failed_ops = 0, new_state = 0, lost_reported = 0;
};

uint64_t first_point() {
  const char* s = std::getenv("TESSERA_FAULT_FIRST");
  return s && std::atoi(s) > 0 ? static_cast<uint64_t>(std::atoi(s)) : 1;
}

uint64_t stride() {
  const char* s = std::getenv("TESSERA_FAULT_STRIDE");
  return s && std::atoi(s) > 0 ? static_cast<uint64_t>(std::atoi(s)) : 1;
}

// The flush (serial or epoch) of generation 2 with a fault at every point.
void flush_with_faults(bool epochs, SyncPolicy sync, const char* label, bool file_arrays = false) {
  Rig rig;
  uint64_t ids[kArrays];
  // Count the points of a clean run.
  const std::string count_path = rig.root + "/count";
  make_committed(rig.ctx, count_path, epochs, sync, ids, file_arrays);
  if (::testing::Test::HasFatalFailure()) return;
  uint64_t points = 0;
  {
    Writer w;
    ASSERT_TRUE(open_writer(rig.ctx, count_path, ids, epochs, &w));
    rig.env->reset_count();
    ASSERT_TRUE(write_all(w, 2));
    ASSERT_TRUE(commit(w, epochs, sync).ok());
    points = rig.env->points();
  }
  ASSERT_GT(points, 0u);
  for (uint64_t k = first_point(); k <= points; k += stride())
    for (Fault fault : kFaults) {
      SCOPED_TRACE(std::string(label) + ": " + FaultEnv::fault_name(fault) + " at point " + std::to_string(k) +
                   " of " + std::to_string(points));
      const std::string path = rig.root + "/p" + std::to_string(k) + FaultEnv::fault_name(fault);
      make_committed(rig.ctx, path, epochs, sync, ids, file_arrays);
      if (::testing::Test::HasFatalFailure()) return;
      std::string at;
      {
        Writer w;
        ASSERT_TRUE(open_writer(rig.ctx, path, ids, epochs, &w));
        rig.env->arm(k, fault);
        const bool ok = write_all(w, 2) && commit(w, epochs, sync).ok();
        at = rig.env->fired_at();
        SCOPED_TRACE("fault at " + at);
        if (rig.env->fired()) ++rig.injected;
        if (!ok) ++rig.failed_ops;
        expect_whole(generations(path, ids, false), epochs, ok);
        if (k % 2 == 0) {
          // The writer goes on: the fault is gone, it writes again and commits.
          rig.env->disarm();
          ASSERT_TRUE(write_all(w, 2)) << "rewrite after the fault";
          Status st = commit(w, epochs, sync);
          if (!st.ok() && st.message().find("were lost") != std::string::npos) {
            // Writes that went into a fragment whose file failed are reported lost by
            // the next flush, once (never a flush that says success over them).
            ++rig.lost_reported;
            st = commit(w, epochs, sync);
          }
          ASSERT_TRUE(st.ok()) << "retry: " << st.message();
        }
        // else: the writer closes with the disk still full (destructors; errors lost).
      }
      rig.env->disarm();
      SCOPED_TRACE("after closing; the fault was at " + at);
      std::vector<int> g = generations(path, ids, true);
      expect_whole(g, epochs, k % 2 == 0);
      if (!g.empty() && g[0] == 2) ++rig.new_state;
      expect_verified(path);
      (void)guard([&] { remove_tree(Env::posix(), path); });
      if (::testing::Test::HasFatalFailure()) return;
    }
  std::printf("[ faults   ] %s: %llu points x %zu faults: %llu injected, %llu operations failed\n", label,
              static_cast<unsigned long long>(points), std::size(kFaults),
              static_cast<unsigned long long>(rig.injected), static_cast<unsigned long long>(rig.failed_ops));
}


}  // namespace

TEST(Fault, EnvCountsAndFailsTheArmedPoint) {
  // The env itself, against plain POSIX results: the k-th point fails, a short write
  // writes half, a full disk stays full until disarmed, removals still work.
  FaultEnv env;
  testutil::TempDir tmp("tessera_faultenv");
  const std::string dir = tmp.path();
  const std::string p = dir + "/f";
  File f = File::open_rw(env, p, true);
  env.arm(2, Fault::kShortWrite);
  const char data[] = "0123456789";
  f.pwrite_all(data, 10, 0);  // point 1: whole
  EXPECT_FALSE(env.fired());
  try {
    f.pwrite_all(data, 10, 10);  // point 2: 5 bytes, then ENOSPC on the retry
    ADD_FAILURE() << "a full disk did not fail the write";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
  EXPECT_TRUE(env.fired());
  EXPECT_EQ(f.size(), 15u);
  EXPECT_THROW(f.sync(), Error);
  f.close();
  EXPECT_NO_THROW(remove_file(env, p));  // freeing space works on a full disk
  EXPECT_FALSE(path_exists(Env::posix(), p));
  env.disarm();
  File g = File::open_rw(env, p, true);
  g.pwrite_all(data, 10, 0);
  g.sync();
  EXPECT_EQ(read_file(Env::posix(), p), std::vector<uint8_t>(data, data + 10));
  env.arm(1, Fault::kIo);  // once
  EXPECT_THROW(g.sync(), Error);
  EXPECT_NO_THROW(g.sync());
}

TEST(Fault, SerialFlushPerFileSyncs) { flush_with_faults(false, kPerFile, "serial flush, per-file syncs"); }
TEST(Fault, SerialFlushSyncfs) { flush_with_faults(false, kSyncfs, "serial flush, syncfs"); }
TEST(Fault, EpochCommit) { flush_with_faults(true, kPerFile, "epoch commit"); }
// A serial writer of a parallel file's arrays: a batch of several files or an extent
// change commits through its catalog batch before its renames (Array::record_staged).
TEST(Fault, SerialFlushOfParallelFileArraysPerFileSyncs) {
  flush_with_faults(false, kPerFile, "serial flush of a parallel file's arrays, per-file syncs", true);
}
TEST(Fault, SerialFlushOfParallelFileArraysSyncfs) {
  flush_with_faults(false, kSyncfs, "serial flush of a parallel file's arrays, syncfs", true);
}

// A consolidation, or (convert) one that rewrites the fragments into another layout and
// publishes the schema's new order with them (Array::consolidate_layout): after any fault
// the array reads as the model, in the old order or wholly in the new one.
void consolidation_with_faults(bool convert, const char* what) {
  Rig rig;
  auto op = [&](Array& a) {
    return convert ? a.consolidate_layout(Order::kHilbert, Order::kColMajor) : a.consolidate_all();
  };
  // After a conversion that succeeded (retried), every fragment and the schema are in the
  // new order; after one that failed, the schema's order is the old one or the new one
  // and the fragments each record theirs (the values are checked by expect_model).
  auto expect_order = [&](const std::string& path, uint64_t id, bool converted) {
    if (!convert) return;
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(path, false, &c).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, false, ArrayOptions{}, &a).ok());
    const bool now = a->schema().tile_order == Order::kHilbert && a->schema().cell_order == Order::kColMajor;
    const bool old = a->schema().tile_order == Order::kRowMajor && a->schema().cell_order == Order::kRowMajor;
    EXPECT_TRUE(now || old) << "schema order " << a->schema().order().name();
    if (converted) {
      EXPECT_TRUE(now) << "schema order " << a->schema().order().name();
      for (auto& f : a->fragments()) EXPECT_EQ(f.order.name(), "hilbert:column-major");
    }
  };
  uint64_t id = 0;
  ArrayOptions o = options(false);
  o.inline_fragment_bytes = 0;
  const std::string count_path = rig.root + "/count";
  make_fragments(rig.ctx, count_path, &id);
  if (::testing::Test::HasFatalFailure()) return;
  uint64_t points = 0;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(count_path, true, &c, rig.ctx).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, true, o, &a).ok());
    rig.env->reset_count();
    ASSERT_TRUE(op(*a).ok());
    points = rig.env->points();
    ASSERT_EQ(a->fragments().size(), 1u);
  }
  ASSERT_GT(points, 0u);
  for (uint64_t k = first_point(); k <= points; k += stride())
    for (Fault fault : kFaults) {
      SCOPED_TRACE(std::string(what) + ": " + FaultEnv::fault_name(fault) + " at point " + std::to_string(k) +
                   " of " + std::to_string(points));
      const std::string path = rig.root + "/p" + std::to_string(k) + FaultEnv::fault_name(fault);
      make_fragments(rig.ctx, path, &id);
      if (::testing::Test::HasFatalFailure()) return;
      {
        std::unique_ptr<Container> c;
        ASSERT_TRUE(Container::open(path, true, &c, rig.ctx).ok());
        std::unique_ptr<Array> a;
        ASSERT_TRUE(c->open_array(id, true, o, &a).ok());
        rig.env->arm(k, fault);
        const bool ok = op(*a).ok();
        SCOPED_TRACE("fault at " + rig.env->fired_at());
        if (rig.env->fired()) ++rig.injected;
        if (!ok) ++rig.failed_ops;
        expect_model(path, id, false);
        if (k % 2 == 0) {
          rig.env->disarm();
          Status st = op(*a);
          ASSERT_TRUE(st.ok()) << "retry: " << st.message();
          EXPECT_EQ(a->fragments().size(), 1u);
        }
      }
      rig.env->disarm();
      size_t frags = 0;
      expect_model(path, id, true, &frags);
      if (k % 2 == 0) {
        EXPECT_EQ(frags, 1u);
      }
      expect_order(path, id, k % 2 == 0);
      expect_verified(path);
      (void)guard([&] { remove_tree(Env::posix(), path); });
      if (::testing::Test::HasFatalFailure()) return;
    }
  std::printf("[ faults   ] %s: %llu points x %zu faults: %llu injected, %llu operations failed\n", what,
              static_cast<unsigned long long>(points), std::size(kFaults),
              static_cast<unsigned long long>(rig.injected), static_cast<unsigned long long>(rig.failed_ops));
}

TEST(Fault, Consolidation) { consolidation_with_faults(false, "consolidation"); }
TEST(Fault, ConsolidationToLayout) { consolidation_with_faults(true, "consolidation --layout hilbert:column-major"); }
