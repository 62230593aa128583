// Bounded descriptors under removal and failure (engine/util/file_cache.h): readers race
// consolidations of the fragments they hold while the cache evicts their descriptors;
// another process consolidates away files a reader had closed; reopens fail on purpose.
// Every read is compared with a model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/container/verify.h"
#include "engine/testing/fault_env.h"
#include "engine/testing/fd_rig.h"
#include "engine/testing/test_schema.h"
#include "engine/testing/testutil.h"
#include "engine/util/file_cache.h"

using namespace tessera;
using namespace tessera::fd_rig;

namespace {

constexpr uint64_t kSide = 128;

ArrayOptions options(const std::shared_ptr<Context>& ctx) {
  ArrayOptions o;
  o.durable_writes = false;
  o.inline_fragment_bytes = 0;
  o.blob_bytes = 0;
  o.context = ctx;
  return o;
}

// A container of one kSide x kSide array written by `n` commits of overlapping random
// boxes (one fragment file each); the model is what it holds.
uint64_t build(const std::string& path, const std::shared_ptr<Context>& ctx, int n, std::vector<int32_t>* model) {
  std::unique_ptr<Container> c;
  EXPECT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c, ctx).ok());
  uint64_t id = 0;
  EXPECT_TRUE(c->create_array(int32_schema({kSide, kSide}, {kSide, kSide}, {16, 16}), &id).ok());
  std::unique_ptr<Array> a;
  EXPECT_TRUE(c->open_array(id, true, options(ctx), &a).ok());
  model->assign(kSide * kSide, 0);
  std::mt19937_64 rng(11);
  for (int i = 1; i <= n; ++i) {
    const uint64_t r0 = rng() % kSide, c0 = rng() % kSide;
    const uint64_t r1 = std::min(kSide - 1, r0 + rng() % 40), c1 = std::min(kSide - 1, c0 + rng() % 40);
    std::vector<int32_t> v((r1 - r0 + 1) * (c1 - c0 + 1));
    size_t k = 0;
    for (uint64_t r = r0; r <= r1; ++r)
      for (uint64_t cc = c0; cc <= c1; ++cc, ++k) (*model)[r * kSide + cc] = v[k] = i * 100000 + static_cast<int32_t>(k);
    EXPECT_TRUE(a->write(Selection::from_box(Box({r0, c0}, {r1, c1})), v.data()).ok());
    Status st = commit_arrays(*c, {a.get()});
    EXPECT_TRUE(st.ok()) << st.message();
  }
  return id;
}

// A random box of the array read and compared; "" or what went wrong.
std::string read_box(Array& a, const std::vector<int32_t>& model, std::mt19937_64& rng) {
  uint64_t r0 = rng() % kSide, c0 = rng() % kSide, r1 = r0 + rng() % (kSide - r0), c1 = c0 + rng() % (kSide - c0);
  if (rng() % 4 == 0) r0 = c0 = 0, r1 = c1 = kSide - 1;
  std::vector<int32_t> v((r1 - r0 + 1) * (c1 - c0 + 1), -1);
  Status st = a.read(Selection::from_box(Box({r0, c0}, {r1, c1})), v.data());
  if (!st.ok()) return st.message();
  size_t k = 0;
  for (uint64_t r = r0; r <= r1; ++r)
    for (uint64_t c = c0; c <= c1; ++c)
      if (v[k++] != model[r * kSide + c])
        return "cell (" + std::to_string(r) + ", " + std::to_string(c) + ") read " + std::to_string(v[k - 1]) +
               ", the model holds " + std::to_string(model[r * kSide + c]);
  return "";
}

size_t hidden_files(const std::string& dir) {
  size_t n = 0;
  for (const std::string& name : list_dir(Env::posix(), dir)) n += name.find(".removed.") != std::string::npos;
  return n;
}

}  // namespace

// Three readers, each its own container object of the file (its own Fragments), read
// the array over and over while the writer consolidates random runs of adjacent
// fragments down to one — removing files every reader still lists — and the cache, at
// 12 descriptors for 300 fragments, closes the readers' descriptors all the time.
TEST(DescriptorBound, ReadersRaceConsolidationWhileTheCacheEvicts) {
  testutil::TempDir dir("tessera_fds");
  const std::string path = dir.sub("c");
  auto ctx = nosync_context();
  std::vector<int32_t> model;
  const uint64_t id = build(path, ctx, 300, &model);
  CacheBound bound(12);
  const uint64_t deferred0 = FileCache::process().stats().deferred_unlinks;
  const uint64_t reopens0 = FileCache::process().stats().reopens;
  std::unique_ptr<Container> wc;
  ASSERT_TRUE(Container::open(path, true, &wc, ctx).ok());
  std::unique_ptr<Array> w;
  ASSERT_TRUE(wc->open_array(id, true, options(ctx), &w).ok());
  const std::string frag_dir = wc->array_dir(id) + "/frag";
  std::atomic<bool> done{false}, opened_all{false};
  std::atomic<int> opened{0}, reads{0};
  std::mutex mu;
  std::vector<std::string> errors;
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t)
    readers.emplace_back([&, t] {
      std::mt19937_64 rng(500 + t);
      std::unique_ptr<Container> c;
      std::unique_ptr<Array> a;
      Status st = Container::open(path, false, &c, ctx);
      if (st.ok()) st = c->open_array(id, false, options(ctx), &a);
      ++opened;
      while (!opened_all) std::this_thread::yield();
      auto fail = [&](const std::string& e) {
        std::lock_guard<std::mutex> g(mu);
        errors.push_back("reader " + std::to_string(t) + ": " + e);
      };
      if (!st.ok()) return fail(st.message());
      while (!done) {
        const std::string e = read_box(*a, model, rng);
        ++reads;
        if (!e.empty()) return fail(e);
      }
      // Read from its own listing throughout: the files the writer removed stayed at
      // hand in this process (never "gone", which would have listed the array again).
      if (a->fragments().size() != 300) fail("listed again: " + std::to_string(a->fragments().size()));
      // Its snapshot's files were all removed by now: a refresh finds the one left.
      if (!(st = a->refresh()).ok()) return fail(st.message());
      if (a->fragments().size() != 1) fail("refresh found " + std::to_string(a->fragments().size()) + " fragments");
      const std::string e = read_box(*a, model, rng);
      if (!e.empty()) fail("after refresh: " + e);
    });
  while (opened < 3) std::this_thread::yield();
  opened_all = true;
  std::mt19937_64 rng(3);
  int merges = 0;
  while (w->fragments().size() > 1) {
    const size_t n = w->fragments().size(), first = rng() % (n - 1), last = std::min(n - 1, first + 1 + rng() % 6);
    Status st = w->consolidate(first, last);
    ASSERT_TRUE(st.ok()) << st.message();
    ++merges;
    if (merges % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GT(hidden_files(frag_dir), 0u) << "the readers' files, renamed away until they let go";
  done = true;
  for (auto& t : readers) t.join();
  for (auto& e : errors) ADD_FAILURE() << e;
  EXPECT_GT(reads.load(), 3);
  EXPECT_GT(FileCache::process().stats().reopens, reopens0 + 1000) << "the readers' descriptors were evicted";
  EXPECT_GT(FileCache::process().stats().deferred_unlinks, deferred0 + 100);
  EXPECT_EQ(hidden_files(frag_dir), 0u) << "unlinked with their last readers";
  size_t tfr = 0;
  for (const std::string& name : list_dir(Env::posix(), frag_dir)) tfr += name.size() == 47 && name[0] != '.';
  EXPECT_EQ(tfr, 1u) << "only the consolidated fragment is left";
  EXPECT_EQ(read_box(*w, model, rng), "");
  w.reset();
  wc.reset();
  VerifyReport rep;
  ASSERT_TRUE(verify_container(path, VerifyOptions{}, &rep).ok());
  EXPECT_TRUE(rep.ok()) << (rep.problems.empty() ? "" : rep.problems[0]);
  EXPECT_TRUE(rep.notes.empty()) << (rep.notes.empty() ? "" : rep.notes[0]);
}

// Another process's removal cannot be seen: a reader whose descriptors were closed finds
// its files gone after a consolidation elsewhere, lists the array again and reads the
// same cells from the consolidated fragment.
TEST(DescriptorBound, AReaderListsAgainWhenAnotherProcessRemovedItsFiles) {
  testutil::TempDir dir("tessera_fds");
  const std::string path = dir.sub("c");
  std::vector<int32_t> model;
  const uint64_t id = build(path, nosync_context(), 60, &model);
  int to_child[2], to_parent[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(to_parent), 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 0;
    {
      FileCache::process().set_capacity(4);
      std::unique_ptr<Container> c;
      std::unique_ptr<Array> a;
      if (!Container::open(path, false, &c).ok() || !c->open_array(id, false, ArrayOptions{}, &a).ok()) ::_exit(20);
      std::vector<int32_t> got(kSide * kSide, -1);
      const Selection all = Selection::from_box(Box({0, 0}, {kSide - 1, kSide - 1}));
      if (!a->read(all, got.data()).ok() || got != model) code = 21;
      if (a->fragments().size() != 60) code = 22;
      FileCache::process().shed(0);
      char x = 'r';
      if (::write(to_parent[1], &x, 1) != 1 || ::read(to_child[0], &x, 1) != 1) ::_exit(23);
      std::fill(got.begin(), got.end(), -1);
      Status st = a->read(all, got.data());
      if (!st.ok()) {
        std::fprintf(stderr, "child: %s\n", st.message().c_str());
        code = 24;
      } else if (got != model) {
        code = 25;
      }
      if (a->fragments().size() != 1) code = 26;  // listed again
    }
    ::_exit(code);
  }
  char x = 0;
  ASSERT_EQ(::read(to_parent[0], &x, 1), 1);
  {
    std::unique_ptr<Container> c;
    std::unique_ptr<Array> a;
    ASSERT_TRUE(Container::open(path, true, &c).ok());
    ASSERT_TRUE(c->open_array(id, true, ArrayOptions{}, &a).ok());
    ASSERT_TRUE(a->consolidate_all().ok());
  }
  ASSERT_EQ(::write(to_child[1], &x, 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's failure code (see the test)";
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) ::close(fd);
}

// Reopens that fail: a device error or a refused open fails that read alone, naming the
// file, and the next read reopens; running out of descriptors with idle ones in the cache
// costs nothing; a file found missing is listed again.
TEST(DescriptorBound, FailedReopensFailOnlyThatRead) {
  testutil::TempDir dir("tessera_fds");
  const std::string path = dir.sub("c");
  auto env = std::make_shared<FaultEnv>();
  EngineOptions eo;
  eo.tile_cache_mb = 0;  // every read from the files (a warm tile would need no reopen)
  auto ctx = std::make_shared<Context>(eo, env);
  std::vector<int32_t> model;
  const uint64_t id = build(path, nosync_context(), 40, &model);
  CacheBound bound(6);
  std::unique_ptr<Container> c;
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Container::open(path, false, &c, ctx).ok());
  ASSERT_TRUE(c->open_array(id, false, options(ctx), &a).ok());
  const Selection all = Selection::from_box(Box({0, 0}, {kSide - 1, kSide - 1}));
  std::vector<int32_t> got(kSide * kSide);
  // How many reopens a whole read makes (fragments newer ones hide are not read).
  FileCache::process().shed(0);
  env->reset_count();
  ASSERT_TRUE(a->read(all, got.data()).ok());
  const uint64_t reopens = env->opens();
  ASSERT_GE(reopens, 8u);
  for (int err : {EIO, EACCES, ENOENT, EMFILE})
    for (uint64_t k : {uint64_t{1}, uint64_t{2}, reopens / 2, reopens - 3}) {
      SCOPED_TRACE("errno " + std::to_string(err) + " at reopen " + std::to_string(k));
      FileCache::process().shed(err == EMFILE ? 3 : 0);  // EMFILE: idle descriptors to give back
      env->arm_open(k, err);
      std::fill(got.begin(), got.end(), -1);
      Status st = a->read(all, got.data());
      ASSERT_TRUE(env->fired()) << "a whole read reopens every fragment";
      if (err == EIO || err == EACCES) {
        EXPECT_FALSE(st.ok());
        EXPECT_EQ(st.code(), Errc::kIo) << st.message();
        EXPECT_NE(st.message().find("cannot open again"), std::string::npos) << st.message();
        EXPECT_NE(st.message().find(".tfr"), std::string::npos) << st.message();
      } else {
        EXPECT_TRUE(st.ok()) << st.message();  // listed again / descriptors given back
        EXPECT_EQ(got, model);
      }
      env->disarm();
      std::fill(got.begin(), got.end(), -1);
      st = a->read(all, got.data());
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_EQ(got, model);
      FileCache::process().set_capacity(6);  // forget EMFILE's shrink
    }
}
