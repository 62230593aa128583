// Faults in reads (docs/reliability.md, "Fault injection"): a pread or preadv that fails
// with EIO, comes back short, or returns nothing (as if the file ended there), at every
// read of (a) opening a container and its arrays and reading them whole, and (b) a
// consolidation, which reads every fragment it merges.  The reads go through a FaultEnv
// (fault_env.h, read points) in the Context the container was opened with; each trial
// uses a fresh Context, so its tile cache is cold and every read reaches the Env.
// For every read point k and fault:
//   - nothing crashes (a pool thread's read failing must reach the caller as an error);
//   - an operation either succeeds with exactly the model's cells, or fails with an error
//     naming a file of the container — never other data; a short read must succeed (it
//     is legal, the reader goes on);
//   - the process goes on: once the fault is gone, the same container and array handles
//     read the model, and so do arrays opened afresh (no half-loaded fragment, no cached
//     failure or bad tile left behind); a consolidation that failed succeeds when run
//     again, and the container verifies.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine/fault_env.h"
#include "engine/fault_rig.h"
#include "engine/testutil.h"

using namespace tessera;
using namespace tessera::fault_rig;

namespace {

using ReadFault = FaultEnv::ReadFault;
const ReadFault kReadFaults[] = {ReadFault::kReadIo, ReadFault::kShortRead, ReadFault::kEof};

struct ReadRig {
  testutil::TempDir tmp{"tessera_readfault"};
  std::string root = tmp.path();
  std::shared_ptr<FaultEnv> env = std::make_shared<FaultEnv>();
  std::shared_ptr<Context> fresh_context() const { return std::make_shared<Context>(EngineOptions{}, env); }
};

// Reads array `which` whole; its generation must be `want` (a failure otherwise).
Status read_generation(Array& a, int which, int want) {
  const Coords& e = a.schema().extent;
  std::vector<int32_t> v(e[0] * e[1], -7);
  Status st = a.read(Selection::from_box(Box({0, 0}, {e[0] - 1, e[1] - 1})), v.data());
  if (!st.ok()) return st;
  size_t bad = 0;
  for (int32_t x : v) bad += x != want;
  EXPECT_EQ(bad, 0u) << "array " << which << ": cells other than generation " << want << " read back";
  EXPECT_EQ(e[0], rows_of(which, want)) << "array " << which << ": extent";
  return st;
}

// An error must say which file of the container failed.
void expect_named(const Status& st, const std::string& path) {
  EXPECT_NE(st.message().find(path), std::string::npos) << "the error names no file of the container: " << st.message();
}

}  // namespace

TEST(ReadFault, OpenAndReadEveryArray) {
  ReadRig rig;
  uint64_t ids[kArrays];
  const std::string path = rig.root + "/c";
  // Generation 1, then 2 over it: several fragments per array, the newer ones win.
  make_committed(rig.fresh_context(), path, false, kPerFile, ids);
  if (HasFatalFailure()) return;
  {
    Writer w;
    ASSERT_TRUE(open_writer(rig.fresh_context(), path, ids, false, &w));
    ASSERT_TRUE(write_all(w, 2));
    ASSERT_TRUE(commit(w, false, kPerFile).ok());
  }
  auto open_and_read = [&](const std::shared_ptr<Context>& ctx, std::unique_ptr<Container>* c,
                           std::vector<std::unique_ptr<Array>>* arrays) -> Status {
    Status st = Container::open(path, false, c, ctx);
    if (!st.ok()) return st;
    arrays->clear();
    arrays->resize(kArrays);
    for (int i = 0; i < kArrays; ++i) {
      st = (*c)->open_array(ids[i], false, options(false), &(*arrays)[i]);
      if (!st.ok()) return st;
      st = read_generation(*(*arrays)[i], i, 2);
      if (!st.ok()) return st;
    }
    return st;
  };
  uint64_t points = 0;
  {
    std::unique_ptr<Container> c;
    std::vector<std::unique_ptr<Array>> arrays;
    auto ctx = rig.fresh_context();
    rig.env->reset_count();
    ASSERT_TRUE(open_and_read(ctx, &c, &arrays).ok());
    points = rig.env->read_points();
  }
  ASSERT_GT(points, 0u);
  uint64_t injected = 0, failed = 0;
  for (uint64_t k = 1; k <= points; ++k)
    for (ReadFault fault : kReadFaults) {
      SCOPED_TRACE(std::string(FaultEnv::fault_name(fault)) + " at read " + std::to_string(k) + " of " +
                   std::to_string(points));
      auto ctx = rig.fresh_context();
      std::unique_ptr<Container> c;
      std::vector<std::unique_ptr<Array>> arrays;
      rig.env->arm_read(k, fault);
      Status st = open_and_read(ctx, &c, &arrays);
      const std::string at = rig.env->fired_at();
      rig.env->disarm();
      SCOPED_TRACE("fault at " + at);
      if (!at.empty()) ++injected;
      if (!st.ok()) {
        ++failed;
        expect_named(st, path);
        EXPECT_NE(fault, ReadFault::kShortRead) << "a short read failed the read: " << st.message();
      }
      // The process goes on: the handles it holds, then fresh ones, read the model.
      if (c) {
        for (int i = 0; i < kArrays; ++i) {
          if (arrays.size() > static_cast<size_t>(i) && arrays[i]) {
            Status again = read_generation(*arrays[i], i, 2);
            EXPECT_TRUE(again.ok()) << "array " << i << " held through the fault: " << again.message();
          }
          std::unique_ptr<Array> a;
          Status o = c->open_array(ids[i], false, options(false), &a);
          ASSERT_TRUE(o.ok()) << "array " << i << " opened after the fault: " << o.message();
          Status again = read_generation(*a, i, 2);
          EXPECT_TRUE(again.ok()) << "array " << i << " opened after the fault: " << again.message();
        }
      }
      std::unique_ptr<Container> c2;
      std::vector<std::unique_ptr<Array>> arrays2;
      Status again = open_and_read(ctx, &c2, &arrays2);
      EXPECT_TRUE(again.ok()) << "reopened in the same context: " << again.message();
      if (HasFatalFailure()) return;
    }
  std::printf("[ faults   ] open and read: %llu read points x %zu faults: %llu injected, %llu reads failed\n",
              static_cast<unsigned long long>(points), std::size(kReadFaults),
              static_cast<unsigned long long>(injected), static_cast<unsigned long long>(failed));
}

TEST(ReadFault, Consolidation) {
  ReadRig rig;
  uint64_t id = 0;
  ArrayOptions o = options(false);
  o.inline_fragment_bytes = 0;
  const std::string count_path = rig.root + "/count";
  make_fragments(rig.fresh_context(), count_path, &id);
  if (HasFatalFailure()) return;
  uint64_t points = 0;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(count_path, true, &c, rig.fresh_context()).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, true, o, &a).ok());
    rig.env->reset_count();
    ASSERT_TRUE(a->consolidate_all().ok());
    points = rig.env->read_points();
  }
  ASSERT_GT(points, 0u);
  uint64_t injected = 0, failed = 0;
  for (uint64_t k = 1; k <= points; ++k)
    for (ReadFault fault : kReadFaults) {
      SCOPED_TRACE(std::string("consolidation: ") + FaultEnv::fault_name(fault) + " at read " + std::to_string(k) +
                   " of " + std::to_string(points));
      const std::string path = rig.root + "/p" + std::to_string(k) + FaultEnv::fault_name(fault);
      make_fragments(rig.fresh_context(), path, &id);
      if (HasFatalFailure()) return;
      {
        std::unique_ptr<Container> c;
        ASSERT_TRUE(Container::open(path, true, &c, rig.fresh_context()).ok());
        std::unique_ptr<Array> a;
        ASSERT_TRUE(c->open_array(id, true, o, &a).ok());
        rig.env->arm_read(k, fault);
        Status st = a->consolidate_all();
        const std::string at = rig.env->fired_at();
        rig.env->disarm();
        SCOPED_TRACE("fault at " + at);
        if (!at.empty()) ++injected;
        if (!st.ok()) {
          ++failed;
          expect_named(st, path);
          EXPECT_NE(fault, ReadFault::kShortRead) << "a short read failed the consolidation: " << st.message();
        }
        expect_model(path, id, false);
        st = a->consolidate_all();
        ASSERT_TRUE(st.ok()) << "consolidation after the fault: " << st.message();
        EXPECT_EQ(a->fragments().size(), 1u);
      }
      size_t frags = 0;
      expect_model(path, id, true, &frags);
      EXPECT_EQ(frags, 1u);
      expect_verified(path);
      (void)guard([&] { remove_tree(Env::posix(), path); });
      if (HasFatalFailure()) return;
    }
  std::printf("[ faults   ] consolidation reads: %llu read points x %zu faults: %llu injected, %llu failed\n",
              static_cast<unsigned long long>(points), std::size(kReadFaults),
              static_cast<unsigned long long>(injected), static_cast<unsigned long long>(failed));
}
