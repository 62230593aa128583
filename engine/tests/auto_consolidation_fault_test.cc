// Fault injection on automatic consolidation's paths (docs/reliability.md, "Fault
// injection"): ENOSPC, EIO and short writes at every write, sync and name call of a
// background merge and of the retirement of the files it replaced — the merged
// fragment's temporary file, its sync, rename and directory sync, the catalog batch that
// publishes it, the synced batch that retires the inputs, their unlinks.  The calls go
// through a FaultEnv (fault_env.h) in the Context the container was opened with; the
// points are counted in a clean run (those after the commit that makes the merge due),
// then each point is failed in a fresh copy of the same history.  After each fault:
//   - the writer reads the committed data (the model's), and so does a fresh reader;
//   - the failure is counted by the array (consolidation_info), nothing is reported lost;
//   - with the fault gone, the next writer's open merges what was due, reads the model,
//     leaves no stray file beside its fragments, and the container verifies.
// Then the same points as kills: a child process is SIGKILLed just before each of them
// (KillEnv), and the reopened container must hold the committed data, verify, and merge
// cleanly under the next writer.
// TESSERA_FAULT_STRIDE=n injects at every n-th point only.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/container/verify.h"
#include "engine/testing/fault_env.h"
#include "engine/testing/test_schema.h"
#include "engine/testing/testutil.h"
#include "engine/util/file_io.h"

namespace tessera {
namespace {

using testutil::status_str;
using Fault = FaultEnv::Fault;

constexpr uint64_t kCols = 16;
constexpr uint64_t kCommits = 4;  // the fourth makes a run of four due

Schema schema() {
  Schema s = int32_schema({0, kCols}, {kUnlimited, kCols}, {64, kCols});
  return s;
}

int32_t value(uint64_t row, uint64_t col) { return static_cast<int32_t>(row * 100 + col + 1); }

Status commit_row(Container& c, Array& a, uint64_t k) {
  Status st = a.set_extent({k, kCols});
  if (!st.ok()) return st;
  std::vector<int32_t> row(kCols);
  for (uint64_t j = 0; j < kCols; ++j) row[j] = value(k - 1, j);
  st = a.write(Selection::from_box(Box({k - 1, 0}, {k - 1, kCols - 1})), row.data());
  return st.ok() ? commit_arrays(c, {&a}) : st;
}

std::string check(Array& a, uint64_t rows) {
  if (a.schema().extent[0] != rows) return "extent " + std::to_string(a.schema().extent[0]);
  std::vector<int32_t> got(rows * kCols);
  Status st = a.read(Selection::from_box(Box({0, 0}, {rows - 1, kCols - 1})), got.data());
  if (!st.ok()) return "read: " + status_str(st);
  for (uint64_t i = 0; i < got.size(); ++i)
    if (got[i] != value(i / kCols, i % kCols)) return "cell " + std::to_string(i) + " differs";
  return "";
}

ArrayOptions opts(bool files) {
  ArrayOptions o;
  o.durable_writes = false;
  o.auto_merge.on = true;
  o.auto_merge.fanin = static_cast<uint32_t>(kCommits);
  o.auto_merge.retain_ns = 0;  // the retirement follows the merge at once
  if (files) o.inline_fragment_bytes = 0;
  return o;
}

// Every name in the fragment directory that is not a live fragment file.
std::vector<std::string> strays(Container& c, uint64_t id, Array& a) {
  std::vector<std::string> out;
  const std::string d = join_path(c.array_dir(id), "frag");
  if (!is_directory(c.env(), d)) return out;  // the container's Env: a one-file container's too
  for (auto& name : list_dir(c.env(), d)) {
    bool live = false;
    for (auto& f : a.fragments()) live = live || (!f.is_inline && f.path == join_path(d, name));
    if (!live) out.push_back(name);
  }
  return out;
}

struct Rig {
  std::shared_ptr<FaultEnv> env = std::make_shared<FaultEnv>();
  std::shared_ptr<Context> ctx = std::make_shared<Context>(EngineOptions{}, env);
  std::unique_ptr<Container> c;
  std::unique_ptr<Array> a;
  uint64_t id = 0;
};

// A container with kCommits - 1 committed rows (nothing due yet), its writer open.
void prepare(const std::string& path, bool files, Rig* s) {
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &s->c, s->ctx).ok());
  ASSERT_TRUE(s->c->create_array(schema(), &s->id).ok());
  ASSERT_TRUE(s->c->open_array(s->id, true, opts(files), &s->a).ok());
  for (uint64_t k = 1; k < kCommits; ++k) ASSERT_TRUE(commit_row(*s->c, *s->a, k).ok());
  s->a->settle_merges();
  ASSERT_EQ(s->a->consolidation_info().merges, 0u);
}

// Counts the calls FaultEnv counts as points (writes, syncs, truncations, creations,
// renames, links, removals) and SIGKILLs the process just before the k-th after arm(k).
class KillEnv final : public EnvWrapper {
 public:
  KillEnv() : EnvWrapper(Env::posix()) {}
  void arm(uint64_t k) {
    count_ = 0;
    at_ = k;
  }
  uint64_t points() const { return count_; }
  int open(const char* p, int flags, mode_t mode) override {
    if (flags & O_CREAT) point();
    return base_.open(p, flags, mode);
  }
  ssize_t pwrite(int fd, const void* b, size_t n, off_t off) override { return point(), base_.pwrite(fd, b, n, off); }
  ssize_t pwritev(int fd, const struct iovec* v, int c, off_t off) override {
    return point(), base_.pwritev(fd, v, c, off);
  }
  int fdatasync(int fd) override { return point(), base_.fdatasync(fd); }
  int fsync(int fd) override { return point(), base_.fsync(fd); }
  int syncfs(int fd) override { return point(), base_.syncfs(fd); }
  int ftruncate(int fd, off_t n) override { return point(), base_.ftruncate(fd, n); }
  int mkdir(const char* p, mode_t m) override { return point(), base_.mkdir(p, m); }
  int rmdir(const char* p) override { return point(), base_.rmdir(p); }
  int unlink(const char* p) override { return point(), base_.unlink(p); }
  int rename(const char* a, const char* b) override { return point(), base_.rename(a, b); }
  int link(const char* a, const char* b) override { return point(), base_.link(a, b); }

 private:
  void point() {
    if (++count_ == at_) ::kill(::getpid(), SIGKILL);
  }
  std::atomic<uint64_t> count_{0}, at_{0};
};

uint64_t stride() {
  const char* v = std::getenv("TESSERA_FAULT_STRIDE");
  return v && std::atoi(v) > 0 ? static_cast<uint64_t>(std::atoi(v)) : 1;
}

TEST(AutoConsolidationFault, FailedMergesAndRetirementsLeaveCommittedDataIntact) {
  uint64_t injected = 0, fired = 0, failures = 0;
  for (bool files : {false, true}) {
    SCOPED_TRACE(files ? "fragment files" : "inline fragments");
    testutil::TempDir dir("tessera_auto_fault");
    // The clean run: the points of the background work after the fourth commit.
    uint64_t first = 0, last = 0;
    {
      Rig s;
      prepare(dir.sub("count"), files, &s);
      if (::testing::Test::HasFatalFailure()) return;
      s.env->reset_count();
      ASSERT_TRUE(commit_row(*s.c, *s.a, kCommits).ok());
      first = s.env->points() + 1;
      s.a->settle_merges();
      last = s.env->points();
      ASSERT_EQ(s.a->consolidation_info().merges, 1u);
      ASSERT_EQ(check(*s.a, kCommits), "");
    }
    ASSERT_GE(last, first) << "the merge made no call that changes the file system";
    std::printf("[ faults   ] automatic merge of four %s%s: %llu points x 3 faults\n",
                files ? "fragment files and the retirement of its inputs" : "inline fragments",
                files ? "" : " (its housekeeping batch)", static_cast<unsigned long long>(last - first + 1));
    int run = 0;
    for (uint64_t k = first; k <= last; k += stride())
      for (Fault f : {Fault::kNoSpace, Fault::kIo, Fault::kShortWrite}) {
        SCOPED_TRACE("point " + std::to_string(k) + " of " + std::to_string(first) + ".." + std::to_string(last) +
                     ", " + FaultEnv::fault_name(f));
        const std::string path = dir.sub("f" + std::to_string(run++));
        Rig s;
        prepare(path, files, &s);
        if (::testing::Test::HasFatalFailure()) return;
        s.env->arm(k, f);
        Status st = commit_row(*s.c, *s.a, kCommits);
        ASSERT_TRUE(st.ok()) << "the fault hit the commit, not the merge: " << status_str(st);
        s.a->settle_merges();
        ++injected;
        const ConsolidationInfo info = s.a->consolidation_info();
        if (s.env->fired()) {
          ++fired;
          failures += info.failures;
        }
        // The committed data, for the writer and for a fresh reader (a clean Env).
        EXPECT_EQ(check(*s.a, kCommits), "") << "fault at " << s.env->fired_at();
        {
          std::unique_ptr<Container> rc;
          ASSERT_TRUE(Container::open(path, false, &rc).ok());
          std::unique_ptr<Array> ra;
          st = rc->open_array(s.id, false, ArrayOptions(), &ra);
          ASSERT_TRUE(st.ok()) << status_str(st) << " (fault at " << s.env->fired_at() << ")";
          EXPECT_EQ(check(*ra, kCommits), "");
        }
        // The fault gone, a later writer merges what was due.
        s.env->disarm();
        s.a.reset();
        s.c.reset();
        ASSERT_TRUE(Container::open(path, true, &s.c).ok());
        st = s.c->open_array(s.id, true, opts(files), &s.a);
        ASSERT_TRUE(st.ok()) << status_str(st);
        s.a->settle_merges();
        const ConsolidationInfo after = s.a->consolidation_info();
        EXPECT_EQ(after.failures, 0u) << after.last_error;
        EXPECT_EQ(s.a->fragments().size(), 1u);
        EXPECT_EQ(check(*s.a, kCommits), "");
        EXPECT_TRUE(strays(*s.c, s.id, *s.a).empty()) << strays(*s.c, s.id, *s.a)[0];
        s.a.reset();
        s.c.reset();
        VerifyReport rep;
        ASSERT_TRUE(verify_container(path, VerifyOptions(), &rep).ok());
        EXPECT_TRUE(rep.ok()) << (rep.problems.empty() ? "" : rep.problems[0]);
        if (::testing::Test::HasFailure()) return;
      }
  }
  std::printf("[ faults   ] automatic consolidation: %llu faults injected, %llu fired, %llu merge or retirement "
              "failures reported, committed data intact after each\n",
              static_cast<unsigned long long>(injected), static_cast<unsigned long long>(fired),
              static_cast<unsigned long long>(failures));
  EXPECT_GT(fired, 0u);
}

TEST(AutoConsolidationFault, KillAtEveryPointOfAMergeLeavesTheCommittedState) {
  uint64_t kills = 0;
  for (bool files : {false, true}) {
    SCOPED_TRACE(files ? "fragment files" : "inline fragments");
    testutil::TempDir dir("tessera_auto_kill");
    // A child writes: kCommits - 1 rows, then (armed) the row that makes a merge due, and
    // waits for the merge.  Returns the points it counted after arming (at == 0).
    auto child = [&](const std::string& path, uint64_t at) -> int {
      auto env = std::make_shared<KillEnv>();
      auto ctx = std::make_shared<Context>(EngineOptions{}, env);
      std::unique_ptr<Container> c;
      uint64_t id = 0;
      std::unique_ptr<Array> a;
      if (!Container::create(path, Container::CreateMode::kExclusive, &c, ctx).ok() ||
          !c->create_array(schema(), &id).ok() || !c->open_array(id, true, opts(files), &a).ok())
        return -1;
      for (uint64_t k = 1; k < kCommits; ++k)
        if (!commit_row(*c, *a, k).ok()) return -1;
      a->settle_merges();
      env->arm(at);
      const uint64_t before = env->points();
      if (!commit_row(*c, *a, kCommits).ok()) return -1;
      const uint64_t commit_points = env->points() - before;
      a->settle_merges();
      return at ? 0 : static_cast<int>((env->points() << 8) | commit_points);
    };
    auto run_child = [&](const std::string& path, uint64_t at) -> int {
      std::fflush(nullptr);
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::alarm(60);
        const int r = child(path, at);
        _exit(r < 0 ? 3 : 0);
      }
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return status;
    };
    const int counted = child(dir.sub("count"), 0);  // in this process: no kill armed
    ASSERT_GT(counted, 0);
    const uint64_t total = static_cast<uint64_t>(counted) >> 8, commit = static_cast<uint64_t>(counted) & 0xff;
    ASSERT_GT(total, commit) << "the merge made no call that changes the file system";
    for (uint64_t k = commit + 1; k <= total; k += stride()) {
      SCOPED_TRACE("killed before point " + std::to_string(k) + " of " + std::to_string(total) + " (the commit's: 1.." +
                   std::to_string(commit) + ")");
      const std::string path = dir.sub("k" + std::to_string(k));
      const int status = run_child(path, k);
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
      ++kills;
      for (bool writable : {false, true}) {
        std::unique_ptr<Container> c;
        ASSERT_TRUE(Container::open(path, writable, &c).ok());
        std::unique_ptr<Array> a;
        Status st = c->open_array(1, writable, writable ? opts(files) : ArrayOptions(), &a);
        ASSERT_TRUE(st.ok()) << status_str(st);
        if (writable) a->settle_merges();  // the next writer merges what was due
        EXPECT_EQ(check(*a, kCommits), "") << (writable ? "writable" : "read-only");
        if (writable) {
          EXPECT_EQ(a->fragments().size(), 1u);
          EXPECT_EQ(a->consolidation_info().failures, 0u) << a->consolidation_info().last_error;
          EXPECT_TRUE(strays(*c, 1, *a).empty()) << strays(*c, 1, *a)[0];
        }
      }
      VerifyReport rep;
      ASSERT_TRUE(verify_container(path, VerifyOptions(), &rep).ok());
      EXPECT_TRUE(rep.ok()) << (rep.problems.empty() ? "" : rep.problems[0]);
      if (::testing::Test::HasFailure()) return;
    }
  }
  std::printf("[ kills    ] automatic consolidation: %llu SIGKILLs, one before each point of a background merge "
              "and retirement, each reopened and checked\n",
              static_cast<unsigned long long>(kills));
  EXPECT_GT(kills, 0u);
}

}  // namespace
}  // namespace tessera
