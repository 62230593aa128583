// Crash safety with real processes: a child process writes to an array in a loop and
// reports over a pipe each operation it has completed; the parent SIGKILLs it at a random
// moment, reopens the array (read-only, then writable) and checks that it holds exactly
// the state after the last durable reported operation or after the one in flight — never
// anything else — and that every fragment file is complete (temp files and an interrupted
// flush's publish journal are allowed).  Four workloads: durable writes (direct dense
// writes, irregular writes of several boxes, point writes + flush, consolidations), the
// same with set_extent, and deferred
// publishing (durable at flush only) without and with set_extent.  Values encode the
// number of the op that wrote them, so a failure says which op's data is seen.  Then
// deterministic crash points between the steps of a deferred flush.
//
// The child is fork()ed inside the test body; it runs only the write loop and leaves with
// _exit(), so it never returns into GoogleTest (no other test runs in it, no atexit
// handlers, no gtest output).  This relies on the engine being usable in a forked child
// (its compression thread pool is rebuilt there; Crash.ForkedChildCanWriteFilteredTiles).
//
// TESSERA_TEST_SEED sets the base seed (run i uses base + i), TESSERA_CRASH_KILLS the
// number of kills per test.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/tests/crash_kills.h"
#include "engine/tests/crash_rig.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using namespace crash_rig;

// Dense box writes (direct fragments), point writes + flush, consolidations.
TEST(Crash, KillDuringWritesLeavesAPublishedState) { run_kills(Mode::kDurable); }

// Dense writes, point writes + flush, consolidations and extent changes.  Regression: a
// shrink used to publish its fill fragment before rewriting the schema, so a crash in
// between left the old extent with the cut cells already reading as fill.
TEST(Crash, KillDuringSetExtentLeavesAPublishedState) { run_kills(Mode::kDurableExtent); }

// Deferred mode (durable_writes = false): dense writes, buffered point writes, flushes and
// consolidations; a crash must leave exactly the state of the last completed flush, or of
// the flush in flight (array.h: "a crash loses everything since the last flush and
// nothing before it").
// A flush publishes several fragments; without a single commit point a crash between two
// renames exposed a state that never existed (found by this test with base seeds 1000,
// 2000, 4002, 5000).  The publish journal (Array::stage_publish) is that commit point.
TEST(Crash, DeferredKillLeavesTheLastFlushedState) { run_kills(Mode::kDeferred); }

// Deferred mode with extent changes, which it makes durable at flush together with the data.
TEST(Crash, DeferredKillWithSetExtentLeavesTheLastFlushedState) { run_kills(Mode::kDeferredExtent); }

// Deferred mode with automatic consolidation: flushes start background merges (and, with
// a retention of 0, retirements of the files they replaced), which the kill interrupts
// anywhere — merging, renaming, committing its batch, unlinking.  The reopened array must
// still hold the last flushed state (or the one in flight), and a vacuum must remove
// exactly the replaced fragments listed at open.
TEST(Crash, DeferredKillWithAutoConsolidationLeavesTheLastFlushedState) { run_kills(Mode::kDeferredAuto); }

// Every mode's op sequence run to its end without a kill, then reopened: no op may fail
// and the array must hold the model's state.  The kill tests reach only a random prefix
// of a sequence (a few hundred ops at most), so an op that fails deterministically late
// in one shows there only when a loaded machine delays the kill.  Regression: a dense
// write appended to the open dense fragment under a Hilbert tile order took the box's hi
// corner tile for its last one and its lo corner tile for its first, and failed with
// "dense tiles must be added in ascending tile order" (seed 900072, op 221).
TEST(Crash, OpSequencesRunToTheEndAndMatchTheModel) {
  const uint64_t base = testutil::base_seed(kDefaultSeed);
  const uint64_t seeds = testutil::env_u64("TESSERA_CRASH_KILLS", testutil::kSanitized ? 4 : 8);
  const uint64_t ops = testutil::env_u64("TESSERA_CRASH_OPS", 400);
  std::vector<uint64_t> list = {900072};  // the regression's seed, then the run's own
  for (uint64_t k = 0; k < seeds; ++k) list.push_back(base + k);
  for (Mode mode : {Mode::kDurable, Mode::kDurableExtent, Mode::kDeferred, Mode::kDeferredExtent, Mode::kDeferredAuto})
  for (uint64_t seed : list) {
    if (::testing::Test::HasFailure()) return;
    SCOPED_TRACE(std::string(mode_name(mode)) + " seed " + std::to_string(seed) + " (replay: TESSERA_TEST_SEED=" +
                 std::to_string(seed) + " TESSERA_CRASH_KILLS=1)");
    testutil::TempDir dir("tessera_crash_seq");
    const std::string cpath = dir.sub("c");
    uint64_t id = 0;
    {
      std::unique_ptr<Container> c;
      ASSERT_TRUE(Container::create(cpath, Container::CreateMode::kExclusive, &c).ok());
      ASSERT_TRUE(c->create_array(crash_schema(seed), &id).ok());
    }
    const int fd = ::open("/dev/null", O_WRONLY);
    ASSERT_GE(fd, 0);
    const int rc = child_main(cpath, id, seed, mode, fd, ops);  // closes the array: a last flush
    // child_main armed the hung-child alarm in this, the test process: left armed, it
    // killed the whole engine_tests run (SIGALRM) two minutes later, in whatever test ran.
    ::alarm(0);
    ::close(fd);
    ASSERT_EQ(rc, 0) << "an operation failed (see stderr)";
    const Schema schema = crash_schema(seed);
    ArrayModel m(kExtent, kExtent, kElem, schema.fill);
    OpGen gen(seed, mode);
    for (uint64_t k = 1; k <= ops; ++k) apply(m, gen.next(), k);
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(cpath, false, &c).ok());
    std::unique_ptr<Array> a;
    Status st = c->open_array(id, false, ArrayOptions(), &a);
    ASSERT_TRUE(st.ok()) << status_str(st);
    const State want = model_state(m), got = engine_state(*a);
    EXPECT_TRUE(got == want) << describe_state(got, want);
  }
}

// Deterministic crash points inside a deferred flush, using its three steps (prepare_flush,
// stage_prepared, publish_prepared): the child stops dead after a step; the reopened array
// must hold the state before the flush or after it, the extent changes made since the last
// flush included or excluded together with the data.
// Regression: a crash after stage_prepared, with extent changes in the batch (shrink to
// 8 x 8, grow to 20 x 20, write in the grown region), reopened with the extent of the
// intermediate shrink's fill fragment and the write invisible; the batch's final schema
// now travels in the publish journal.
TEST(Crash, DeferredFlushWithExtentChangesIsAtomic) {
  for (bool extent_changes : {false, true})
  for (int crash_after = 0; crash_after <= 2; ++crash_after) {
    const char* step_names[] = {"prepare_flush", "stage_prepared", "publish_prepared"};
    SCOPED_TRACE(std::string("child dies after ") + step_names[crash_after] +
                 (extent_changes ? ", batch with extent changes" : ", batch without extent changes"));
    testutil::TempDir dir("tessera_crash_steps");
    const std::string adir = dir.sub("a");
    Schema s = crash_schema(0);
    ASSERT_TRUE(Array::create(adir, s).ok());
    ArrayOptions o;
    o.durable_writes = false;
    o.direct_cells = 64;
    ArrayModel m(kExtent, kExtent, kElem, s.fill);
    auto box_write = [&](Array& a, const Box& b, uint64_t k) {
      std::vector<uint64_t> v(b.cells());
      for (size_t i = 0; i < v.size(); ++i) v[i] = (k << 32) | i;
      if (!a.write(Selection::from_box(b), v.data()).ok()) return false;
      testutil::IndexSets sets(2);
      for (int d = 0; d < 2; ++d)
        for (uint64_t x = b.lo[d]; x <= b.hi[d]; ++x) sets[d].push_back(x);
      std::vector<uint64_t> st = testutil::dense_strides(sets);
      m.write(sets, reinterpret_cast<uint8_t*>(v.data()), st.data());
      return true;
    };
    // The flushed state, then the batch (the child repeats the same calls).
    {
      std::unique_ptr<Array> a;
      ASSERT_TRUE(Array::open(adir, true, o, &a).ok());
      ASSERT_TRUE(box_write(*a, Box({0, 0}, {15, 15}), 1));
      ASSERT_TRUE(a->flush().ok());
    }
    const State before = model_state(m);
    if (extent_changes) {
      m.set_extent({8, 8});
      m.set_extent({20, 20});
    }
    {
      testutil::IndexSets sets{{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, {10, 11, 12, 13, 14, 15, 16, 17, 18, 19}};
      std::vector<uint64_t> v(100);
      for (size_t i = 0; i < v.size(); ++i) v[i] = (uint64_t{2} << 32) | i;
      std::vector<uint64_t> st = testutil::dense_strides(sets);
      m.write(sets, reinterpret_cast<uint8_t*>(v.data()), st.data());
    }
    const State after = model_state(m);
    std::fflush(nullptr);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::alarm(60);
      std::unique_ptr<Array> a;
      if (!Array::open(adir, true, o, &a).ok()) _exit(2);
      if (extent_changes && (!a->set_extent({8, 8}).ok() || !a->set_extent({20, 20}).ok())) _exit(3);
      std::vector<uint64_t> v(100);
      for (size_t i = 0; i < v.size(); ++i) v[i] = (uint64_t{2} << 32) | i;
      if (!a->write(Selection::from_box(Box({10, 10}, {19, 19})), v.data()).ok()) _exit(4);
      if (!a->prepare_flush().ok()) _exit(5);
      if (crash_after >= 1 && !a->stage_prepared(false).ok()) _exit(6);
      if (crash_after >= 2 && !a->publish_prepared(false).ok()) _exit(7);
      _exit(0);  // dies: no destructor, no further flush
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    for (bool writable : {false, true}) {
      SCOPED_TRACE(writable ? "reopened writable" : "reopened read-only");
      std::unique_ptr<Array> a;
      Status st = Array::open(adir, writable, ArrayOptions(), &a);
      ASSERT_TRUE(st.ok()) << status_str(st);
      State got = engine_state(*a);
      // Before the commit point (inside stage_prepared or publish_prepared: a single
      // fragment needs no journal) the old state, after publish_prepared the new one.
      if (crash_after == 0) {
        EXPECT_TRUE(got == before) << "want the state before the flush: " << describe_state(got, before);
      } else if (crash_after == 2) {
        EXPECT_TRUE(got == after) << "want the state after the flush: " << describe_state(got, after);
      } else {
        EXPECT_TRUE(got == before || got == after)
            << "neither the state before the flush (" << describe_state(got, before) << ") nor after it ("
            << describe_state(got, after) << ")";
      }
    }
  }
}

// The process context's compression thread pool's workers exist only in the process that
// started them; a forked child (Python multiprocessing with h5py, this test's children)
// must get its own pool, or every filtered write in it blocks forever.  Regression test
// (the child is killed by the alarm if it hangs).
TEST(Crash, ForkedChildCanWriteFilteredTiles) {
  testutil::TempDir dir("tessera_crash_fork");
  std::string adir = dir.sub("a");
  Schema s = crash_schema(1);  // shuffle + zstd
  ASSERT_TRUE(Array::create(adir, s).ok());
  {
    std::unique_ptr<Array> a;
    ASSERT_TRUE(Array::open(adir, true, ArrayOptions(), &a).ok());
    std::vector<uint64_t> v(64, 7);
    ASSERT_TRUE(a->write(Selection::from_box(Box({0, 0}, {7, 7})), v.data()).ok());  // the pool is running now
    ASSERT_TRUE(a->flush().ok());
  }
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(5);
    std::unique_ptr<Array> a;
    if (!Array::open(adir, true, ArrayOptions(), &a).ok()) _exit(2);
    std::vector<uint64_t> v(64, 9);
    if (!a->write(Selection::from_box(Box({8, 8}, {15, 15})), v.data()).ok()) _exit(3);
    if (!a->flush().ok()) _exit(4);
    _exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "forked child did not finish a filtered write: "
      << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status)) + " (14 = SIGALRM: it hung)"
                              : "exit status " + std::to_string(WEXITSTATUS(status)));
}

}  // namespace
}  // namespace tessera
