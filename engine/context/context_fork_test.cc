// A forked child (fork without exec: Python's multiprocessing 'fork', Dask and joblib
// workers) uses the contexts its parent had working — their pools, tile cache and write
// budget flusher had threads in the parent, none in the child — to write and read a
// container of its own.  The parent waits a bounded time: a child that hangs fails the test.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/container/container.h"
#include "engine/testing/test_schema.h"
#include "engine/testing/testutil.h"

using namespace tessera;

namespace {

constexpr uint64_t kRows = 64, kCols = 64;

// Scattered point batches with a tiny buffer budget, so the budget's flusher spills in the
// background again and again, then a flush; returns the value each cell must hold
// (computed here, independently of the engine) or an empty vector on an engine error.
std::vector<int32_t> write_container(const std::string& path, std::shared_ptr<Context> ctx, int32_t salt,
                                     uint64_t* id, std::string* err) {
  std::vector<int32_t> model(kRows * kCols, 0);
  std::unique_ptr<Container> c;
  Status st = Container::create(path, Container::CreateMode::kExclusive, &c);
  if (st.ok()) st = c->create_array(int32_schema({kRows, kCols}, {kRows, kCols}, {16, 16}), id);
  std::unique_ptr<Array> a;
  ArrayOptions o;
  o.context = std::move(ctx);
  o.durable_writes = false;
  o.buffer_budget = 2048;
  if (st.ok()) st = c->open_array(*id, true, o, &a);
  testutil::Rng rng(static_cast<uint64_t>(salt) * 7919 + 1);
  for (int batch = 0; st.ok() && batch < 300; ++batch) {
    std::vector<uint64_t> pts;
    std::vector<int32_t> vals;
    for (int i = 0; i < 40; ++i) {
      const uint64_t r = rng.below(kRows), col = rng.below(kCols);
      pts.push_back(r);
      pts.push_back(col);
      vals.push_back(salt * 1000000 + batch * 100 + i);
    }
    st = a->write_points(pts.data(), vals.size(), vals.data());
    // Later points of a batch win over earlier ones, as later batches win.
    for (size_t i = 0; st.ok() && i < vals.size(); ++i) model[pts[2 * i] * kCols + pts[2 * i + 1]] = vals[i];
    if (st.ok() && batch % 50 == 49) st = a->flush();
  }
  if (st.ok()) st = a->flush();
  if (!st.ok()) {
    *err = testutil::status_str(st);
    return {};
  }
  return model;
}

// Reads the array back through a fresh open of the container.
bool read_back(const std::string& path, uint64_t id, std::shared_ptr<Context> ctx, const std::vector<int32_t>& want,
               std::string* err) {
  std::unique_ptr<Container> c;
  std::unique_ptr<Array> a;
  ArrayOptions o;
  o.context = std::move(ctx);
  Status st = Container::open(path, false, &c);
  if (st.ok()) st = c->open_array(id, false, o, &a);
  std::vector<int32_t> got(kRows * kCols, -1);
  if (st.ok()) st = a->read(Selection::from_box(Box({0, 0}, {kRows - 1, kCols - 1})), got.data());
  if (!st.ok()) {
    *err = testutil::status_str(st);
    return false;
  }
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) {
      *err = "cell " + std::to_string(i) + ": " + std::to_string(got[i]) + ", want " + std::to_string(want[i]);
      return false;
    }
  return true;
}

// The child's side: 0 when its container reads back as written.
int child(const std::string& dir, const std::vector<std::shared_ptr<Context>>& ctxs) {
  for (size_t k = 0; k < ctxs.size(); ++k) {
    const std::string path = dir + "/child" + std::to_string(k);
    std::string err;
    uint64_t id = 0;
    std::vector<int32_t> want = write_container(path, ctxs[k], static_cast<int32_t>(10 + k), &id, &err);
    if (want.empty() || !read_back(path, id, ctxs[k], want, &err)) {
      std::fprintf(stderr, "fork child, context %zu: %s\n", k, err.c_str());
      return 1;
    }
  }
  return 0;
}

// Forks, runs child() there in a new folder `dir`, and waits at most `limit` for it.
void fork_and_check(const std::string& dir, const std::vector<std::shared_ptr<Context>>& ctxs,
                    std::chrono::seconds limit = std::chrono::seconds(30)) {
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir << ": " << std::strerror(errno);
  std::fflush(nullptr);  // nothing buffered may be written twice
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0) << std::strerror(errno);
  if (pid == 0) _exit(child(dir, ctxs));
  const auto end = std::chrono::steady_clock::now() + limit;
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (r == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "the forked child hung (killed after " << limit.count() << " s)";
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

}  // namespace

TEST(ContextFork, ChildWritesAndReadsItsOwnContainerThroughContextsWithLiveThreads) {
  testutil::TempDir dir("tessera_ctx_fork");
  EngineOptions eo;
  eo.threads = 2;
  eo.io_threads = 2;
  // The parent's own context and the process's: both have started every thread they
  // have (filter and I/O workers, the budget's flusher) before the fork.
  const std::vector<std::shared_ptr<Context>> ctxs = {std::make_shared<Context>(eo), Context::process()};
  for (size_t k = 0; k < ctxs.size(); ++k) {
    const std::string path = dir.sub("parent" + std::to_string(k));
    std::string err;
    uint64_t id = 0;
    std::vector<int32_t> want = write_container(path, ctxs[k], static_cast<int32_t>(k + 1), &id, &err);
    ASSERT_FALSE(want.empty()) << err;
    ASSERT_TRUE(read_back(path, id, ctxs[k], want, &err)) << err;
  }
  // Twice: a child of a parent that has forked before is no different.
  fork_and_check(dir.sub("fork1"), ctxs);
  fork_and_check(dir.sub("fork2"), ctxs);
  // And the parent's contexts still work after its children are gone.
  std::string err;
  uint64_t id = 0;
  std::vector<int32_t> want = write_container(dir.sub("parent_after"), ctxs[0], 7, &id, &err);
  ASSERT_FALSE(want.empty()) << err;
  EXPECT_TRUE(read_back(dir.sub("parent_after"), id, ctxs[0], want, &err)) << err;
}

// Forks while other threads of the parent are writing and reading through the same
// contexts, so a fork lands while one of them holds a context's lock (the tile cache's, the
// budget's) or a pool's worker is running a task.
TEST(ContextFork, ForkWhileOtherThreadsUseTheContexts) {
  testutil::TempDir dir("tessera_ctx_fork_busy");
  EngineOptions eo;
  eo.threads = 2;
  eo.io_threads = 2;
  const std::vector<std::shared_ptr<Context>> ctxs = {std::make_shared<Context>(eo), Context::process()};
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  std::string busy_err;
  std::thread busy([&] {
    for (int n = 0; !stop; ++n) {
      const std::string path = dir.sub("busy" + std::to_string(n));
      std::string err;
      uint64_t id = 0;
      std::vector<int32_t> want = write_container(path, ctxs[n % 2], 3, &id, &err);
      if (want.empty() || !read_back(path, id, ctxs[n % 2], want, &err)) {
        busy_err = err;
        return;
      }
      ++rounds;
    }
  });
  for (int i = 0; i < 6 && !HasFatalFailure(); ++i) {
    fork_and_check(dir.sub("fork" + std::to_string(i)), ctxs);
  }
  stop = true;
  busy.join();
  EXPECT_TRUE(busy_err.empty()) << busy_err;
  EXPECT_GT(rounds.load(), 0);
}
