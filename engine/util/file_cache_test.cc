// The file cache (file_cache.h): the bound on open descriptors holds under random and
// concurrent reads, whose bytes are compared with what was written; a reopen checks the
// file is the same; files removed while a CachedFile holds them stay readable (kept open,
// or the unlink deferred); a removal by another process, a failed reopen and running out
// of descriptors are errors that say what happened.
#include "engine/util/file_cache.h"

#include <gtest/gtest.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "engine/testing/fault_env.h"
#include "engine/testing/fd_rig.h"
#include "engine/testing/testutil.h"
#include "engine/util/error.h"
#include "engine/util/file_io.h"

using namespace tessera;
using fd_rig::CacheBound;
using fd_rig::open_descriptors;

namespace {

// `n` files of different sizes and bytes under dir; their bytes are the model.
std::vector<std::vector<uint8_t>> make_files(const std::string& dir, size_t n, std::vector<std::string>* paths) {
  std::vector<std::vector<uint8_t>> model;
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < n; ++i) {
    std::vector<uint8_t> b(1000 + (rng() % 5000));
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    const std::string p = join_path(dir, "f" + std::to_string(i) + ".tfr");
    write_file_atomic(Env::posix(), p, b.data(), b.size(), /*durable=*/false);
    model.push_back(std::move(b));
    paths->push_back(p);
  }
  return model;
}

std::string error_of(const std::function<void()>& f, Errc* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

}  // namespace

TEST(FileCache, BoundHoldsUnderConcurrentRandomReads) {
  testutil::TempDir dir("tessera_fcache");
  std::vector<std::string> paths;
  const auto model = make_files(dir.path(), 200, &paths);
  CacheBound bound(8);
  const size_t base = open_descriptors();
  std::vector<std::unique_ptr<CachedFile>> files;
  for (auto& p : paths) files.push_back(CachedFile::open(Env::posix(), p));
  EXPECT_LE(open_descriptors(), base + 8);
  std::atomic<int> bad{0};
  std::atomic<size_t> most{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      for (int k = 0; k < 3000; ++k) {
        const size_t i = rng() % files.size();
        const uint64_t off = rng() % model[i].size(), n = 1 + rng() % (model[i].size() - off);
        std::vector<uint8_t> got(n);
        files[i]->pread_exact(got.data(), n, off);
        if (std::memcmp(got.data(), model[i].data() + off, n) != 0) ++bad;
        const size_t open = FileCache::process().stats().open;
        size_t m = most.load();
        while (open > m && !most.compare_exchange_weak(m, open)) {
        }
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0) << "a read after a reopen returned other bytes";
  const FileCache::Stats st = FileCache::process().stats();
  EXPECT_LE(st.peak_open, 8u) << "the bound held for every open, readers racing";
  EXPECT_LE(most.load(), 8u);
  EXPECT_GT(st.reopens, 1000u) << "200 files through 8 descriptors reopen most of the time";
  EXPECT_LE(open_descriptors(), base + 8);
  files.clear();
  EXPECT_EQ(open_descriptors(), base) << "every descriptor closes with its CachedFile";
}

TEST(FileCache, AReopenChecksItIsTheSameFile) {
  testutil::TempDir dir("tessera_fcache");
  std::vector<std::string> paths;
  const auto model = make_files(dir.path(), 1, &paths);
  CacheBound bound(4);
  auto f = CachedFile::open(Env::posix(), paths[0]);
  FileCache::process().shed(0);
  EXPECT_FALSE(f->is_open());
  std::vector<uint8_t> got(model[0].size());
  f->pread_exact(got.data(), got.size(), 0);
  EXPECT_EQ(got, model[0]) << "reopened by its name";
  // Replaced behind the cache's back (another file under the same name).
  FileCache::process().shed(0);
  const int keep = ::open(paths[0].c_str(), O_RDONLY);  // its inode number is not reused
  ASSERT_GE(keep, 0);
  ASSERT_EQ(::unlink(paths[0].c_str()), 0);
  write_file_atomic(Env::posix(), paths[0], "other", 5, false);
  Errc code = Errc::kOk;
  const std::string msg = error_of([&] { f->pread_exact(got.data(), 4, 0); }, &code);
  EXPECT_EQ(code, Errc::kCorrupt) << msg;
  EXPECT_NE(msg.find("replaced by another file"), std::string::npos) << msg;
  ::close(keep);
}

// The names in dir other than the regular files listed.
std::vector<std::string> hidden_names(const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string& n : list_dir(Env::posix(), dir))
    if (n[0] == '.') out.push_back(n);
  return out;
}

TEST(FileCache, AFileRemovedWhileReadIsRenamedAwayUntilItsLastReader) {
  testutil::TempDir dir("tessera_fcache");
  std::vector<std::string> paths;
  const auto model = make_files(dir.path(), 20, &paths);
  CacheBound bound(4);
  auto a = CachedFile::open(Env::posix(), paths[0]);
  // The same file under another spelling (another container object of the same file).
  const std::string other = dir.path() + "/./" + paths[0].substr(paths[0].find_last_of('/') + 1);
  auto b = CachedFile::open(Env::posix(), other);
  FileCache::process().shed(1);  // one of them closed, one open
  const uint64_t deferred = FileCache::process().stats().deferred_unlinks;
  remove_file(Env::posix(), paths[0]);
  EXPECT_FALSE(path_exists(Env::posix(), paths[0])) << "its name is gone at once, as after an unlink";
  EXPECT_EQ(FileCache::process().stats().deferred_unlinks, deferred + 1);
  const auto hidden = hidden_names(dir.path());
  ASSERT_EQ(hidden.size(), 1u);
  EXPECT_EQ(hidden[0].substr(hidden[0].size() - 4), ".tmp") << hidden[0];
  // Both read it, through any number of evictions.
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 1; i < paths.size(); ++i) {
      auto g = CachedFile::open(Env::posix(), paths[i]);
      std::vector<uint8_t> x(10);
      g->pread_exact(x.data(), x.size(), 0);
    }
    FileCache::process().shed(0);
    EXPECT_FALSE(a->is_open());
    for (auto* f : {a.get(), b.get()}) {
      std::vector<uint8_t> got(model[0].size());
      f->pread_exact(got.data(), got.size(), 0);
      EXPECT_EQ(got, model[0]);
    }
  }
  a.reset();
  EXPECT_EQ(hidden_names(dir.path()).size(), 1u) << "b still reads it";
  b.reset();
  EXPECT_TRUE(hidden_names(dir.path()).empty()) << "unlinked with its last reader";
  EXPECT_TRUE(path_exists(Env::posix(), paths[1])) << "nothing else";
  // A name no CachedFile holds is unlinked at once, and a missing one is no error.
  remove_file(Env::posix(), paths[1]);
  EXPECT_FALSE(path_exists(Env::posix(), paths[1]));
  EXPECT_TRUE(hidden_names(dir.path()).empty());
  remove_file(Env::posix(), paths[1]);
}

// When the rename fails, the name is unlinked as before and an open descriptor of it is
// kept (never evicted) until its CachedFile goes.
TEST(FileCache, AFileThatCannotBeRenamedAwayKeepsItsOpenDescriptor) {
  testutil::TempDir dir("tessera_fcache");
  std::vector<std::string> paths;
  const auto model = make_files(dir.path(), 10, &paths);
  CacheBound bound(4);
  FaultEnv env;
  auto f = CachedFile::open(env, paths[0]);
  ASSERT_TRUE(f->is_open());
  env.arm(1, FaultEnv::Fault::kIo);  // the rename: the removal's first point
  remove_file(env, paths[0]);
  EXPECT_TRUE(env.fired());
  EXPECT_NE(env.fired_at().find("rename"), std::string::npos) << env.fired_at();
  env.disarm();
  EXPECT_FALSE(path_exists(Env::posix(), paths[0]));
  EXPECT_TRUE(hidden_names(dir.path()).empty());
  for (size_t i = 1; i < paths.size(); ++i) {
    auto g = CachedFile::open(Env::posix(), paths[i]);
    std::vector<uint8_t> x(10);
    g->pread_exact(x.data(), x.size(), 0);
  }
  FileCache::process().shed(0);
  EXPECT_TRUE(f->is_open()) << "the only way to an unlinked file";
  std::vector<uint8_t> got(model[0].size());
  f->pread_exact(got.data(), got.size(), 0);
  EXPECT_EQ(got, model[0]);
  const size_t before = FileCache::process().stats().open;
  f.reset();
  EXPECT_EQ(FileCache::process().stats().open, before - 1);
}

TEST(FileCache, ARemovalByAnotherProcessIsAClearError) {
  testutil::TempDir dir("tessera_fcache");
  std::vector<std::string> paths;
  make_files(dir.path(), 1, &paths);
  CacheBound bound(4);
  auto f = CachedFile::open(Env::posix(), paths[0]);
  FileCache::process().shed(0);
  ASSERT_EQ(::unlink(paths[0].c_str()), 0);  // not through the cache: as another process would
  Errc code = Errc::kOk;
  uint8_t b[4];
  const std::string msg = error_of([&] { f->pread_exact(b, 4, 0); }, &code);
  EXPECT_EQ(code, Errc::kNotFound) << msg;
  EXPECT_NE(msg.find("another process removed it"), std::string::npos) << msg;
}

TEST(FileCache, AFailedReopenIsAnErrorOfThatReadOnly) {
  testutil::TempDir dir("tessera_fcache");
  std::vector<std::string> paths;
  const auto model = make_files(dir.path(), 6, &paths);
  CacheBound bound(4);
  FaultEnv env;
  std::vector<std::unique_ptr<CachedFile>> files;
  for (auto& p : paths) files.push_back(CachedFile::open(env, p));
  FileCache::process().shed(0);
  std::vector<uint8_t> got(model[0].size());
  // A device error on the reopen: this read fails, naming the file; the next one reopens.
  env.arm_open(1, EIO);
  Errc code = Errc::kOk;
  std::string msg = error_of([&] { files[0]->pread_exact(got.data(), got.size(), 0); }, &code);
  EXPECT_TRUE(env.fired());
  EXPECT_EQ(code, Errc::kIo) << msg;
  EXPECT_NE(msg.find(paths[0]), std::string::npos) << msg;
  files[0]->pread_exact(got.data(), got.size(), 0);
  EXPECT_EQ(got, model[0]);
  // Out of descriptors with idle ones in the cache: it closes some and the open goes on.
  for (size_t i = 1; i < 4; ++i) files[i]->pread_exact(got.data(), 1, 0);
  ASSERT_GE(FileCache::process().stats().open, 4u);
  env.arm_open(1, EMFILE);
  got.assign(model[5].size(), 0);
  files[5]->pread_exact(got.data(), got.size(), 0);
  EXPECT_TRUE(env.fired());
  EXPECT_EQ(got, model[5]);
  EXPECT_LE(FileCache::process().capacity(), 4u);
  // Out of descriptors with none idle: an error in words, not "errno 24".
  FileCache::process().set_capacity(4);
  FileCache::process().shed(0);
  env.arm_open(1, EMFILE);
  msg = error_of([&] { files[2]->pread_exact(got.data(), 1, 0); }, &code);
  EXPECT_EQ(code, Errc::kIo) << msg;
  EXPECT_NE(msg.find("limit of open files"), std::string::npos) << msg;
  EXPECT_NE(msg.find("max_open_files"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("errno"), std::string::npos) << msg;
  env.disarm();
}

// Under a real RLIMIT_NOFILE (a forked child): the automatic bound is half of it, a
// thousand files read within it, and the application taking every descriptor left makes
// the cache give back its idle ones before an open fails, then fail in words.
TEST(FileCache, TheAutomaticBoundUnderARealLimit) {
  testutil::TempDir dir("tessera_fcache");
  std::vector<std::string> paths;
  const auto model = make_files(dir.path(), 1000, &paths);
  ::fflush(nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    struct rlimit rl = {64, 64};
    int code = 0;
    if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) ::_exit(10);
    FileCache::process().set_capacity(0);
    if (FileCache::process().capacity() != 32) ::_exit(11);
    FileCache::process().reset_peak();
    {
      std::vector<std::unique_ptr<CachedFile>> files;
      for (auto& p : paths) files.push_back(CachedFile::open(Env::posix(), p));
      for (size_t i = 0; i < files.size(); ++i) {
        std::vector<uint8_t> got(model[i].size());
        files[i]->pread_exact(got.data(), got.size(), 0);
        if (got != model[i]) code = 12;
      }
      if (FileCache::process().stats().peak_open > 32) code = 13;
      // The application takes every descriptor left, the cache below its bound (else its
      // own eviction before an open would make the room).
      FileCache::process().shed(20);
      std::vector<int> hog;
      for (int fd; (fd = ::open("/dev/null", O_RDONLY)) >= 0;) hog.push_back(fd);
      std::vector<uint8_t> got(model[0].size());
      try {
        files[0]->pread_exact(got.data(), got.size(), 0);  // closed long ago: a reopen
        if (got != model[0]) code = 14;
      } catch (const Error&) {
        code = 15;  // idle descriptors were there to give back
      }
      if (FileCache::process().capacity() >= 32) code = 16;  // and the cache stays smaller
      while (hog.size() < 200 && (hog.push_back(::open("/dev/null", O_RDONLY)), hog.back() >= 0)) {
      }
      FileCache::process().shed(0);
      while (hog.size() < 300 && (hog.push_back(::open("/dev/null", O_RDONLY)), hog.back() >= 0)) {
      }
      try {
        files[1]->pread_exact(got.data(), 1, 0);
        code = 17;
      } catch (const Error& e) {
        const std::string m = e.what();
        if (m.find("limit of open files (ulimit -n, RLIMIT_NOFILE: 64)") == std::string::npos) code = 18;
      }
      for (int fd : hog)
        if (fd >= 0) ::close(fd);
      // Still a working cache afterwards.
      files[1]->pread_exact(got.data(), 1, 0);
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's failure code (see the test)";
}

// A whole tree removed (a removed dataset's directory, a container) while a file in it is
// still read: that file is renamed away, the rest goes, and the removal is no error.
TEST(FileCache, ATreeRemovedWhileOneOfItsFilesIsRead) {
  testutil::TempDir dir("tessera_fcache");
  const std::string tree = dir.sub("arr"), sub = join_path(tree, "heap");
  make_dirs(Env::posix(), sub);
  std::vector<std::string> paths;
  const auto model = make_files(sub, 3, &paths);
  CacheBound bound(4);
  auto f = CachedFile::open(Env::posix(), paths[1]);
  FileCache::process().shed(0);
  remove_tree(Env::posix(), tree);
  const auto left = hidden_names(sub);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(list_dir(Env::posix(), sub).size(), 1u) << "only the file still read";
  std::vector<uint8_t> got(model[1].size());
  f->pread_exact(got.data(), got.size(), 0);
  EXPECT_EQ(got, model[1]);
  f.reset();
  EXPECT_TRUE(list_dir(Env::posix(), sub).empty());
  remove_tree(Env::posix(), tree);  // a later removal takes the directories
  EXPECT_FALSE(path_exists(Env::posix(), tree));
}
