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
#include <numeric>
#include <string>
#include <vector>

#include "engine/testing/fault_env.h"
#include "engine/testing/fault_rig.h"
#include "engine/index/index_builder.h"
#include "engine/index/query_term.h"
#include "engine/testing/testutil.h"

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

// Counts of fault_every_read: faults that fired, operations that failed, faults that hit
// a file whose name holds the suffix asked for.
struct FaultCounts {
  uint64_t injected = 0, failed = 0, in_target = 0;
};

// Arms each read fault at each of `points` read points in turn, on a fresh context: `op`
// must give its exact result (it checks that itself) or an error naming a file under
// `path` (a short read is retried, never an error), and `op` again in the same context
// must succeed — the process goes on.
template <class Op>
FaultCounts fault_every_read(const ReadRig& rig, uint64_t points, const std::string& path, const char* suffix,
                             Op op) {
  FaultCounts n;
  for (uint64_t k = 1; k <= points; ++k)
    for (ReadFault fault : kReadFaults) {
      SCOPED_TRACE(std::string(FaultEnv::fault_name(fault)) + " at read " + std::to_string(k) + " of " +
                   std::to_string(points));
      auto ctx = rig.fresh_context();
      rig.env->arm_read(k, fault);
      Status st = op(ctx);
      const std::string at = rig.env->fired_at();
      rig.env->disarm();
      SCOPED_TRACE("fault at " + at);
      if (!at.empty()) ++n.injected;
      if (at.find(suffix) != std::string::npos) ++n.in_target;
      if (!st.ok()) {
        ++n.failed;
        expect_named(st, path);
        EXPECT_NE(fault, ReadFault::kShortRead) << "a short read failed the operation: " << st.message();
      }
      Status again = op(ctx);
      EXPECT_TRUE(again.ok()) << "the operation after the fault: " << again.message();
      if (::testing::Test::HasFatalFailure()) return n;
    }
  return n;
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

// Variable-length values (docs/format.md, "Variable-length heaps"): a read fault in the
// heap file (or the fragment holding the descriptors) ends in an error naming a file of
// the container or in exactly the values written — never other bytes (the heap reader
// checks each value's range against the heap and its checksum).
TEST(ReadFault, VariableLengthHeapReads) {
  ReadRig rig;
  const std::string path = rig.root + "/v";
  Schema s;
  s.extent = {64};
  s.max_extent = {64};
  s.tile_extent = {16};
  s.elem_size = kVarDescriptorSize;
  s.var = true;
  std::vector<uint64_t> len(64);
  std::string data;
  for (uint64_t i = 0; i < 64; ++i) {
    len[i] = 1 + (i * 7) % 23;  // values of 1..23 bytes, each its own characters
    data.append(len[i], static_cast<char>('A' + i % 26));
  }
  uint64_t id = 0;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c, rig.fresh_context()).ok());
    ASSERT_TRUE(c->create_array(s, &id).ok());
    std::unique_ptr<Array> a;
    ArrayOptions o;
    o.inline_fragment_bytes = 0;  // a fragment file and a heap file
    ASSERT_TRUE(c->open_array(id, true, o, &a).ok());
    ASSERT_TRUE(a->write_var(Selection::from_box(Box({0}, {31})), len.data(), data.data()).ok());
    ASSERT_TRUE(a->flush().ok());
    const size_t half = std::accumulate(len.begin(), len.begin() + 32, size_t{0});
    ASSERT_TRUE(a->write_var(Selection::from_box(Box({32}, {63})), len.data() + 32, data.data() + half).ok());
    ASSERT_TRUE(a->flush().ok());
  }
  auto open_and_read = [&](const std::shared_ptr<Context>& ctx) -> Status {
    std::unique_ptr<Container> c;
    Status st = Container::open(path, false, &c, ctx);
    if (!st.ok()) return st;
    std::unique_ptr<Array> a;
    st = c->open_array(id, false, ArrayOptions(), &a);
    if (!st.ok()) return st;
    std::vector<uint64_t> out_len;
    std::vector<uint8_t> out;
    st = a->read_var(Selection::from_box(Box({0}, {63})), &out_len, &out);
    if (!st.ok()) return st;
    EXPECT_EQ(out_len, len) << "other lengths read back";
    EXPECT_EQ(std::string(out.begin(), out.end()), data) << "other bytes read back";
    return st;
  };
  uint64_t points = 0;
  {
    auto ctx = rig.fresh_context();
    rig.env->reset_count();
    ASSERT_TRUE(open_and_read(ctx).ok());
    points = rig.env->read_points();
  }
  ASSERT_GT(points, 0u);
  const FaultCounts n = fault_every_read(rig, points, path, ".thp", open_and_read);
  if (HasFatalFailure()) return;
  const uint64_t injected = n.injected, failed = n.failed, in_heap = n.in_target;
  EXPECT_GT(in_heap, 0u) << "no fault reached the heap file";
  std::printf("[ faults   ] variable-length reads: %llu read points x %zu faults: %llu injected (%llu in the heap), "
              "%llu reads failed\n",
              static_cast<unsigned long long>(points), std::size(kReadFaults),
              static_cast<unsigned long long>(injected), static_cast<unsigned long long>(in_heap),
              static_cast<unsigned long long>(failed));
}

// Value indexes (docs/queries.md): a read fault in an index file (or a fragment a query
// reads values from) ends in an error naming a file of the container or in exactly the
// model's answer — a count and positions, never others.
TEST(ReadFault, IndexedQueryReads) {
  ReadRig rig;
  const std::string path = rig.root + "/q";
  const Schema s = int32_schema({64, 64}, {64, 64}, {16, 16});
  auto value = [](uint64_t i, uint64_t j) { return static_cast<int32_t>((i * 64 + j) * 37 % 1000); };
  uint64_t id = 0;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c, rig.fresh_context()).ok());
    ASSERT_TRUE(c->create_array(s, &id).ok());
    std::unique_ptr<Array> a;
    ArrayOptions o;
    o.inline_fragment_bytes = 0;  // fragment files, each with its index file
    ASSERT_TRUE(c->open_array(id, true, o, &a).ok());
    for (uint64_t half : {1, 0}) {  // two fragments
      std::vector<int32_t> v(32 * 64);
      for (uint64_t i = 0; i < 32; ++i)
        for (uint64_t j = 0; j < 64; ++j) v[i * 64 + j] = value(32 * half + i, j);
      ASSERT_TRUE(a->write(Selection::from_box(Box({32 * half, 0}, {32 * half + 31, 63})), v.data()).ok());
      ASSERT_TRUE(a->flush().ok());
    }
    IndexOptions io;
    io.max_bins = 16;  // bins straddle values: candidates are read from the fragments too
    IndexBuild b;
    ASSERT_TRUE(a->build_index(io, &b).ok());
  }
  TermQuery q;
  q.op = CmpOp::kLt;
  ASSERT_TRUE(Literal::parse("250", &q.lit));
  q.region = TermRegion{{0, 0}, {1, 1}, {64, 64}};
  std::vector<uint64_t> want;
  for (uint64_t i = 0; i < 64; ++i)
    for (uint64_t j = 0; j < 64; ++j)
      if (value(i, j) < 250) want.push_back(i * 64 + j);
  auto open_and_query = [&](const std::shared_ptr<Context>& ctx, bool* used_index) -> Status {
    std::unique_ptr<Container> c;
    Status st = Container::open(path, false, &c, ctx);
    if (!st.ok()) return st;
    std::unique_ptr<Array> a;
    st = c->open_array(id, false, ArrayOptions(), &a);
    if (!st.ok()) return st;
    TermAnswer ans;
    st = a->evaluate(q, &ans);
    if (!st.ok()) return st;
    if (used_index) *used_index = ans.decided > 0;
    EXPECT_EQ(ans.count, want.size()) << "another count";
    EXPECT_EQ(ans.hits.cardinality(), want.size()) << "other positions";
    for (uint64_t p : want)
      if (!ans.hits.contains(p)) {
        ADD_FAILURE() << "position " << p << " missing";
        break;
      }
    return st;
  };
  uint64_t points = 0;
  {
    auto ctx = rig.fresh_context();
    rig.env->reset_count();
    bool used = false;
    ASSERT_TRUE(open_and_query(ctx, &used).ok());
    ASSERT_TRUE(used) << "the query did not use the indexes";
    points = rig.env->read_points();
  }
  const FaultCounts n = fault_every_read(rig, points, path, ".tix",
                                         [&](const std::shared_ptr<Context>& ctx) { return open_and_query(ctx, nullptr); });
  if (HasFatalFailure()) return;
  const uint64_t injected = n.injected, failed = n.failed, in_index = n.in_target;
  EXPECT_GT(in_index, 0u) << "no fault reached an index file";
  std::printf("[ faults   ] indexed query: %llu read points x %zu faults: %llu injected (%llu in index files), "
              "%llu queries failed\n",
              static_cast<unsigned long long>(points), std::size(kReadFaults),
              static_cast<unsigned long long>(injected), static_cast<unsigned long long>(in_index),
              static_cast<unsigned long long>(failed));
}
