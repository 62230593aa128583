// Faults and power loss across the members of a parallel epoch (docs/reliability.md,
// "Power loss" and "Fault injection"): what fault_test.cc and power_loss_test.cc do for a
// serial flush and a one-member epoch, here for two members (MPI ranks) that each
// publish fragments on their own first — H5Dclose in a parallel file, Array::publish_own:
// the files are named in the member's publish log (publish_log.h), synced, then renamed —
// and then commit an epoch together (H5Fflush: commit_epoch), which records those files
// and trims the logs.
//
// The members are threads of this process (thread_group.h), each with its own Context
// over one shared Env, running in turn so that the file-system calls come in the same
// order in every run: member 0's writes, syncs and renames of a step, then member 1's;
// the root's catalog batch; the logs' appends, syncs, rewrites and removals.
//
// The model: arrays A and B (32 x 32), member r's band is rows [16r, 16r + 16), written
// as two fragments (the upper half first).  Generation g puts 100000 a + 1000 g + cell
// into every cell.  The operation writes generation 2 over a committed generation 1:
// each member writes its band of B and publishes it on its own, then its band of A, and
// the epoch commits.  Whatever happens, half band by half band (one fragment each):
//   - a half whose write failed (the caller was told) holds generation 1;
//   - the halves of A whose writes returned are one generation, the same for both
//     members (an epoch is every member's or none), and 2 if the epoch returned on every
//     member;
//   - a band of B is a prefix of its member's writes (publish_own renames oldest first),
//     and all of them if its publish_own returned or the epoch committed (the epoch
//     publishes what publish_own left unpublished);
//   - nothing is unreadable, recovery changes nothing a reader saw, and verify_container
//     finds no problem.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/testing/fault_env.h"
#include "engine/util/file_io.h"
#include "engine/testing/power_loss_env.h"
#include "engine/testing/test_schema.h"
#include "engine/testing/testutil.h"
#include "engine/testing/thread_group.h"
#include "engine/container/verify.h"

using namespace tessera;

namespace {

using testutil::ThreadGroup;
using Fault = FaultEnv::Fault;

constexpr uint32_t kMembers = 2;
enum { kA, kB, kArrays };
const Schema kSchema = int32_schema({32, 32}, {32, 32}, {8, 8});

int32_t value(int a, int g, uint64_t cell) { return static_cast<int32_t>(100000 * a + 1000 * g + cell); }

ArrayOptions member_opts(uint32_t r) {
  ArrayOptions o;
  o.durable_writes = false;  // the connector's: an epoch (or publish_own) publishes
  o.blob_bytes = 0;          // a box write is a fragment of its own
  o.collective = true;
  o.writer_rank = r;
  return o;
}

// Member r writes generation g into its band of array a: two fragments, the upper half
// first (writes in tile order would be appended to one fragment).  Returns how many of
// the two writes returned (a failed write is the caller's to know: the data was never
// taken).
int write_band(Array& arr, int a, int g, uint32_t r) {
  int n = 0;
  for (uint64_t lo : {16 * r + 8, 16 * r}) {
    std::vector<int32_t> v(8 * 32);
    for (uint64_t i = 0; i < 8; ++i)
      for (uint64_t j = 0; j < 32; ++j) v[i * 32 + j] = value(a, g, (lo + i) * 32 + j);
    if (!arr.write(Selection::from_box(Box({lo, 0}, {lo + 7, 31})), v.data()).ok()) return n;
    ++n;
  }
  return n;
}

// The members of a parallel file: member 0 holds the container (the catalog's writer),
// the others shadows of it; each has both arrays open (collective).
struct Members {
  std::vector<std::unique_ptr<Container>> cs;
  std::vector<std::map<uint64_t, std::shared_ptr<Array>>> open;
  uint64_t ids[kArrays] = {};
  Array& array(uint32_t r, int a) { return *open[r][ids[a]]; }
};

bool open_members(const std::string& path, const std::vector<std::shared_ptr<Context>>& ctxs, const uint64_t* ids,
                  Members* m) {
  m->cs.resize(kMembers);
  m->open.resize(kMembers);
  for (uint32_t r = 0; r < kMembers; ++r) {
    Status st = r == 0 ? Container::open(path, true, &m->cs[r], ctxs[r]) : Container::open_shadow(path, &m->cs[r], ctxs[r]);
    if (!st.ok()) return false;
    if (r == 0) m->cs[r]->set_file_arrays(true);
    for (int a = 0; a < kArrays; ++a) {
      std::unique_ptr<Array> arr;
      if (!m->cs[r]->open_array(ids[a], true, member_opts(r), &arr).ok()) return false;
      m->ids[a] = ids[a];
      m->open[r][ids[a]] = std::move(arr);
    }
  }
  return true;
}

// What one run of the operation did, member by member.
struct Outcome {
  int taken[kArrays][kMembers] = {};  // writes of the band that returned (upper half first)
  bool own[kMembers] = {};            // publish_own of B returned
  bool epoch[kMembers] = {};          // commit_epoch returned
  bool own_all() const { return own[0] && own[1]; }
  bool epoch_all() const { return epoch[0] && epoch[1]; }
  bool taken_all(int a) const { return taken[a][0] == 2 && taken[a][1] == 2; }
};

enum class Op {
  kAllByEpoch,    // both arrays written and committed by the epoch (the committed state)
  kOwnThenEpoch,  // B published on its own, then A by the epoch (the operation under test)
  kOwnOnly,       // B published on its own, no epoch (a job killed before its next epoch)
};

Outcome run(Members& m, Op op, int g) {
  Outcome out;
  const uint64_t e = m.cs[0]->committed_epoch() + 1;
  ThreadGroup::Shared shared(kMembers, /*in_turn=*/true);
  auto member = [&](uint32_t r) {
    ThreadGroup grp(shared, static_cast<int>(r));
    ThreadGroup::Turn turn(grp);
    std::map<uint64_t, uint64_t> alone;
    out.taken[kB][r] = write_band(m.array(r, kB), kB, g, r);
    if (op != Op::kAllByEpoch) {
      size_t n = 0;
      out.own[r] = out.taken[kB][r] == 2 && m.array(r, kB).publish_own(&n).ok();
      alone[m.ids[kB]] = n;
    }
    if (op == Op::kOwnOnly) return;
    out.taken[kA][r] = write_band(m.array(r, kA), kA, g, r);
    out.epoch[r] = commit_epoch(*m.cs[r], grp, m.open[r], alone, e).ok();
  };
  std::thread other(member, 1);
  member(0);
  other.join();
  return out;
}

void close_members(Members& m) {
  for (auto& o : m.open) o.clear();
  m.cs.clear();
}

// A fresh container at `path` (plain POSIX) holding generation 1 of both arrays, committed
// by epoch 1 of both members.
void make_committed(const std::string& path, uint64_t* ids) {
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kTruncate, &c).ok());
    c->set_file_arrays(true);
    for (int a = 0; a < kArrays; ++a) ASSERT_TRUE(c->create_array(kSchema, &ids[a]).ok());
    ASSERT_TRUE(guard([&] { c->catalog().sync(); }).ok());
  }
  Members m;
  ASSERT_TRUE(open_members(path, {nullptr, nullptr}, ids, &m));
  Outcome o = run(m, Op::kAllByEpoch, 1);
  ASSERT_TRUE(o.epoch_all() && o.taken_all(kA) && o.taken_all(kB)) << "the committed state";
}

// The operation succeeded as a whole: every write taken, and the epoch (or, without
// one, every publish_own) returned on every member.
bool done(Op op, const Outcome& o) {
  if (op == Op::kOwnOnly) return o.taken_all(kB) && o.own_all();
  return o.taken_all(kA) && o.taken_all(kB) && o.epoch_all();
}

// What the model expects once the operation succeeded: {A's halves, then B's} (below).
std::vector<int> all_new(Op op) {
  return op == Op::kOwnOnly ? std::vector<int>{1, 1, 1, 1, 2, 2, 2, 2} : std::vector<int>(8, 2);
}

// The state a new process reads: the generation of each half band, {A: member 0's lower
// and upper half, member 1's; then B's}; empty (with a failure) if it is not one the model
// allows given what the operation reported.
std::vector<int> state_of(const std::string& path, const uint64_t* ids, bool writable, const Outcome& o) {
  std::unique_ptr<Container> c;
  Status st = Container::open(path, writable, &c);
  EXPECT_TRUE(st.ok()) << "reopen: " << st.message();
  if (!st.ok()) return {};
  // writable: recovery as a serial writer (or MPI rank 0 at open) runs it — journals
  // rolled, temporaries removed, unrecorded files recorded.
  if (writable) {
    st = c->recover_arrays();
    EXPECT_TRUE(st.ok()) << "recovery: " << st.message();
    if (!st.ok()) return {};
  }
  std::vector<int32_t> cells[kArrays];
  for (int a = 0; a < kArrays; ++a) {
    std::unique_ptr<Array> arr;
    st = c->open_array(ids[a], writable, ArrayOptions{}, &arr);
    if (st.ok()) {
      cells[a].assign(32 * 32, -7);
      st = arr->read(Selection::from_box(Box({0, 0}, {31, 31})), cells[a].data());
    }
    EXPECT_TRUE(st.ok()) << "array " << (a == kA ? "A" : "B") << " unreadable: " << st.message();
    if (!st.ok()) return {};
  }
  // The generation of rows [lo, lo + 8) of array a, or -1.
  auto gen = [&](int a, uint64_t lo) {
    int g = -1;
    for (uint64_t cell = lo * 32; cell < (lo + 8) * 32; ++cell) {
      const int32_t d = cells[a][cell] - value(a, 0, cell);
      const int x = d % 1000 == 0 ? d / 1000 : -1;
      if ((x != 1 && x != 2) || (g != -1 && x != g)) return -1;
      g = x;
    }
    return g;
  };
  std::vector<int> s;
  for (int a = 0; a < kArrays; ++a)
    for (uint32_t r = 0; r < kMembers; ++r) {
      s.push_back(gen(a, 16 * r));
      s.push_back(gen(a, 16 * r + 8));
    }
  auto at = [&](int a, uint32_t r, int upper) { return s[static_cast<size_t>(4 * a + 2 * r + upper)]; };
  // Half `upper` of member r's band was written and the write returned (upper: first).
  auto taken = [&](int a, uint32_t r, int upper) { return o.taken[a][r] >= (upper ? 1 : 2); };
  bool good = true;
  for (int x : s) good = good && x != -1;
  // A: the halves whose writes returned are one epoch; the others were never written.
  int ga = 0;
  for (uint32_t r = 0; r < kMembers && good; ++r)
    for (int up : {0, 1}) {
      if (!taken(kA, r, up)) good = good && at(kA, r, up) == 1;
      else if (ga == 0) ga = at(kA, r, up);
      else good = good && at(kA, r, up) == ga;
    }
  if (o.epoch_all()) good = good && (ga == 0 || ga == 2);
  const bool committed = o.epoch_all() || ga == 2;
  // B: publish_own renames oldest first (a prefix of the writes); what it published, or
  // left to a committed epoch, is there.
  for (uint32_t r = 0; r < kMembers && good; ++r) {
    for (int up : {0, 1})
      if (!taken(kB, r, up)) good = good && at(kB, r, up) == 1;
      else if (o.own[r] || committed) good = good && at(kB, r, up) == 2;
    if (taken(kB, r, 0)) good = good && !(at(kB, r, 0) == 2 && at(kB, r, 1) == 1);
  }
  if (!good) {
    std::string str;
    for (int x : s) str += " " + std::to_string(x);
    std::string took;
    for (int a = 0; a < kArrays; ++a)
      for (uint32_t r = 0; r < kMembers; ++r) took += " " + std::to_string(o.taken[a][r]);
    ADD_FAILURE() << "not a state the model allows: A's halves (member 0 lower, upper, member 1 ...), then B's:"
                  << str << "; writes taken (A0 A1 B0 B1):" << took << (o.epoch_all() ? "; the epoch returned" : "")
                  << (o.own[0] ? "; member 0's publish_own returned" : "")
                  << (o.own[1] ? "; member 1's publish_own returned" : "");
    return {};
  }
  return s;
}

void expect_verified(const std::string& path) {
  VerifyReport r;
  Status st = verify_container(path, VerifyOptions{}, &r);
  ASSERT_TRUE(st.ok()) << st.message();
  for (const auto& p : r.problems) ADD_FAILURE() << "verify: " << p;
}

uint64_t stride() {
  const char* s = std::getenv("TESSERA_FAULT_STRIDE");
  return s && std::atoi(s) > 0 ? static_cast<uint64_t>(std::atoi(s)) : 1;
}

// A FaultEnv under a PowerLossEnv under two Contexts (one per member), as power_loss_test.cc.
struct Rig {
  testutil::TempDir tmp{"tessera_par_fault"};
  std::string root = tmp.path();
  std::shared_ptr<FaultEnv> faults = std::make_shared<FaultEnv>();
  std::shared_ptr<PowerLossEnv> loss = std::make_shared<PowerLossEnv>(root, *faults);
  std::vector<std::shared_ptr<Context>> ctxs{std::make_shared<Context>(EngineOptions{}, loss),
                                             std::make_shared<Context>(EngineOptions{}, loss)};
  std::string path(const std::string& name) const { return root + "/" + name; }
};

std::string pending_str(const PowerLossEnv& env) {
  std::string s;
  for (auto& p : env.pending()) s += "\n  " + p;
  return s;
}

// The points (writes, syncs, name changes) of one clean run of `op`.
uint64_t count_points(Rig& rig, Op op, bool stop_counter) {
  uint64_t ids[kArrays];
  const std::string path = rig.path("count");
  make_committed(path, ids);
  if (::testing::Test::HasFatalFailure()) return 0;
  rig.loss->settle();
  Members m;
  EXPECT_TRUE(open_members(path, rig.ctxs, ids, &m));
  if (stop_counter) rig.loss->stop_after(0);
  else rig.faults->reset_count();
  Outcome o = run(m, op, 2);
  EXPECT_TRUE(done(op, o)) << "a clean run failed";
  const uint64_t points = stop_counter ? rig.loss->points() : rig.faults->points();
  close_members(m);
  rig.loss->settle();
  (void)guard([&] { remove_tree(Env::posix(), path); });
  return points;
}

// The machine stops after point k of the operation; the power goes; a new process must
// read a state of the model, the same before and after recovery, and verify finds nothing.
void power_loss_at_every_point(Op op, const char* label) {
  Rig rig;
  const uint64_t points = count_points(rig, op, /*stop_counter=*/true);
  ASSERT_GT(points, 0u);
  uint64_t losses = 0, new_a = 0;
  for (uint64_t k = 1; k <= points; k += stride()) {
    SCOPED_TRACE(std::string(label) + ": power loss after point " + std::to_string(k) + " of " +
                 std::to_string(points));
    const std::string path = rig.path("p" + std::to_string(k));
    uint64_t ids[kArrays];
    make_committed(path, ids);
    if (::testing::Test::HasFatalFailure()) return;
    rig.loss->settle();
    Outcome o;
    std::string lost;
    {
      Members m;
      ASSERT_TRUE(open_members(path, rig.ctxs, ids, &m));
      rig.loss->stop_after(k);
      o = run(m, op, 2);
      lost = pending_str(*rig.loss);
      close_members(m);  // with the machine stopped: nothing they do now reaches the disk
    }
    rig.loss->power_loss();
    ++losses;
    SCOPED_TRACE("not durable at the power loss:" + lost);
    std::vector<int> s = state_of(path, ids, false, o);
    std::vector<int> after = state_of(path, ids, true, o);  // recovery (rank 0 or a serial writer)
    EXPECT_EQ(after, s) << "recovery changed what a reader saw";
    if (!s.empty() && s[0] == 2) ++new_a;  // the epoch committed
    expect_verified(path);
    (void)guard([&] { remove_tree(Env::posix(), path); });
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::printf("[ power    ] %s: %llu points: %llu power losses (%llu with the epoch committed)\n", label,
              static_cast<unsigned long long>(points), static_cast<unsigned long long>(losses),
              static_cast<unsigned long long>(new_a));
}

// EIO at point k (a write, sync or name change failing once), the members retry until
// the operation succeeds (an epoch: until it returns on every member; publish_own alone:
// until every member's returns), then the power goes: what the successful retry
// reported must be there, whatever the failed call dropped ("fsyncgate").
void failed_sync_then_power_loss(Op op, const char* label) {
  Rig rig;
  const uint64_t points = count_points(rig, op, /*stop_counter=*/false);
  ASSERT_GT(points, 0u);
  uint64_t failed = 0, in_logs = 0;
  for (uint64_t k = 1; k <= points; k += stride()) {
    SCOPED_TRACE(std::string(label) + ": EIO at point " + std::to_string(k) + " of " + std::to_string(points) +
                 ", then a power loss after the retry succeeded");
    const std::string path = rig.path("p" + std::to_string(k));
    uint64_t ids[kArrays];
    make_committed(path, ids);
    if (::testing::Test::HasFatalFailure()) return;
    rig.loss->settle();
    std::string at, lost;
    Outcome o;
    {
      Members m;
      ASSERT_TRUE(open_members(path, rig.ctxs, ids, &m));
      rig.faults->arm(k, Fault::kIo);
      o = run(m, op, 2);
      at = rig.faults->fired_at();
      rig.faults->disarm();
      in_logs += at.find("published-r") != std::string::npos;
      failed += !done(op, o);
      // A first retry may report writes lost by the fault ("were lost"): write again.
      for (int attempt = 0; !done(op, o) && attempt < 3; ++attempt) o = run(m, op, 2);
      ASSERT_TRUE(done(op, o)) << "the retry failed (fault at " << at << ")";
      lost = pending_str(*rig.loss);
      close_members(m);
    }
    rig.loss->power_loss();
    SCOPED_TRACE("EIO at " + at + "; not durable at the power loss:" + lost);
    std::vector<int> s = state_of(path, ids, false, o);
    if (!s.empty()) {
      EXPECT_EQ(s, all_new(op));
    }
    expect_verified(path);
    (void)guard([&] { remove_tree(Env::posix(), path); });
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::printf("[ power    ] %s: EIO at each of %llu points (%llu in publish logs; %llu operations failed and were "
              "retried), then a power loss\n",
              label, static_cast<unsigned long long>(points), static_cast<unsigned long long>(in_logs),
              static_cast<unsigned long long>(failed));
}

// ENOSPC, EIO or a short write at point k.  A reader opened at once (the members still
// open) reads a state of the model; then for even k the fault goes and the members write
// and commit again, which must succeed and read back as generation 2 everywhere; for odd
// k they close with the fault in place (a full disk stays full), and the reopened
// container reads a state of the model, before and after recovery, and verifies.
void faults_at_every_point(Op op, const char* label) {
  Rig rig;
  const uint64_t points = count_points(rig, op, /*stop_counter=*/false);
  ASSERT_GT(points, 0u);
  const Fault kFaults[] = {Fault::kNoSpace, Fault::kIo, Fault::kShortWrite};
  uint64_t injected = 0, in_logs = 0, failed = 0;
  for (uint64_t k = 1; k <= points; k += stride())
    for (Fault fault : kFaults) {
      SCOPED_TRACE(std::string(label) + ": " + FaultEnv::fault_name(fault) + " at point " + std::to_string(k) +
                   " of " + std::to_string(points));
      const std::string path = rig.path("p" + std::to_string(k) + FaultEnv::fault_name(fault));
      uint64_t ids[kArrays];
      make_committed(path, ids);
      if (::testing::Test::HasFatalFailure()) return;
      rig.loss->settle();  // not losing power here: nothing to track
      Outcome o;
      std::string at;
      {
        Members m;
        ASSERT_TRUE(open_members(path, rig.ctxs, ids, &m));
        rig.faults->arm(k, fault);
        o = run(m, op, 2);
        at = rig.faults->fired_at();
        SCOPED_TRACE("fault at " + at);
        injected += rig.faults->fired();
        in_logs += at.find("published-r") != std::string::npos;
        failed += !done(op, o);
        (void)state_of(path, ids, false, o);
        if (k % 2 == 0) {
          rig.faults->disarm();
          // A first retry may report writes lost by the fault ("were lost"): write again.
          for (int attempt = 0; attempt < 3; ++attempt)
            if (done(op, o = run(m, op, 2))) break;
          ASSERT_TRUE(done(op, o)) << "the retry failed";
        }
        close_members(m);  // odd k: with the fault still there
      }
      rig.faults->disarm();
      SCOPED_TRACE("after closing; the fault was at " + at);
      std::vector<int> s = state_of(path, ids, false, o);
      EXPECT_EQ(state_of(path, ids, true, o), s) << "recovery changed what a reader saw";
      if (k % 2 == 0 && !s.empty()) {
        EXPECT_EQ(s, all_new(op));
      }
      expect_verified(path);
      (void)guard([&] { remove_tree(Env::posix(), path); });
      if (::testing::Test::HasFatalFailure()) return;
    }
  std::printf("[ faults   ] %s: %llu points x 3 faults: %llu injected (%llu in publish logs), %llu operations failed\n",
              label, static_cast<unsigned long long>(points), static_cast<unsigned long long>(injected),
              static_cast<unsigned long long>(in_logs), static_cast<unsigned long long>(failed));
}

}  // namespace

TEST(PowerLoss, ParallelEpochAcrossMembers) {
  power_loss_at_every_point(Op::kOwnThenEpoch, "two members: publish_own, then an epoch");
}
TEST(PowerLoss, ParallelPublishOwn) { power_loss_at_every_point(Op::kOwnOnly, "two members: publish_own"); }
TEST(PowerLoss, AfterAFailedSyncParallelEpoch) {
  failed_sync_then_power_loss(Op::kOwnThenEpoch, "two members: publish_own, then an epoch");
}
TEST(PowerLoss, AfterAFailedSyncPublishOwn) { failed_sync_then_power_loss(Op::kOwnOnly, "two members: publish_own"); }
TEST(Fault, ParallelEpochWithPublishLogs) {
  faults_at_every_point(Op::kOwnThenEpoch, "two members: publish_own, then an epoch");
}
TEST(Fault, ParallelPublishOwn) { faults_at_every_point(Op::kOwnOnly, "two members: publish_own"); }
