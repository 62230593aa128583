// Commits of several arrays of one container (commit.h), on the engine alone: a serial
// commit (commit_arrays) under both sync routes, an epoch commit (commit_epoch with one
// member), and what a crash at each step of either leaves behind.  A crash is a forked
// child that SIGKILLs itself at the step; the parent then opens the container (running
// recovery) and checks every array against a model: one generation of values, whole.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include "engine/testing/test_schema.h"
#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/util/file_io.h"

using namespace tessera;

namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/tessera_commit_XXXXXX";
  return mkdtemp(tmpl);
}

// Three kinds of array, so one commit carries every kind of change: a small array (its
// fragments are inline catalog records), a large one (several fragment files per
// generation: a journal), and one whose extent grows with each generation (a schema
// change published with its data).
enum Which { kSmall, kLarge, kGrowing, kArrays };

Schema schema_of(int which) {
  switch (which) {
    case kSmall: return int32_schema({8, 8}, {8, 8}, {8, 8});
    case kLarge: return int32_schema({256, 256}, {256, 256}, {64, 64});
    default: return int32_schema({64, 256}, {kUnlimited, 256}, {32, 32});
  }
}

// Generation g: array `which` holds g in every cell, and the growing array's extent is
// 64 + 32g rows (too large for inline records: a file and a journal).
uint64_t rows_of(int which, int g) {
  return which == kGrowing ? 64 + 32 * static_cast<uint64_t>(g) : schema_of(which).extent[0];
}

void write_generation(Array& a, int which, int g) {
  const uint64_t cols = a.schema().extent[1];
  if (which == kGrowing) {
    ASSERT_TRUE(a.set_extent({rows_of(which, g), cols}).ok());
  }
  const uint64_t rows = a.schema().extent[0];
  std::vector<int32_t> v(rows * cols, g);
  if (which == kLarge) {
    // Four box writes (four fragments) and a few scattered cells (the write buffer).
    for (uint64_t q = 0; q < 4; ++q) {
      Box b({q * 64, 0}, {q * 64 + 63, cols - 1});
      ASSERT_TRUE(a.write(Selection::from_box(b), v.data()).ok());
    }
    uint64_t pts[6] = {3, 5, 100, 200, 255, 255};
    ASSERT_TRUE(a.write_points(pts, 3, v.data()).ok());
    return;
  }
  ASSERT_TRUE(a.write(Selection::from_box(Box({0, 0}, {rows - 1, cols - 1})), v.data()).ok());
}

// The generation array `which` holds, or -1 (with a failure) if it is not one whole
// generation: mixed values, or an extent from another generation than its data.
int generation_of(Array& a, int which) {
  const Coords& e = a.schema().extent;
  std::vector<int32_t> v(e[0] * e[1], -7);
  Status st = a.read(Selection::from_box(Box({0, 0}, {e[0] - 1, e[1] - 1})), v.data());
  EXPECT_TRUE(st.ok()) << st.message();
  for (int32_t x : v)
    if (x != v[0]) {
      ADD_FAILURE() << "array " << which << " mixes generations " << v[0] << " and " << x;
      return -1;
    }
  if (e[0] != rows_of(which, v[0])) {
    ADD_FAILURE() << "array " << which << " has " << e[0] << " rows with generation " << v[0] << "'s data";
    return -1;
  }
  return v[0];
}

struct Fixture {
  std::string path;
  uint64_t ids[kArrays];
  bool epochs = false;
};

ArrayOptions options(const Fixture& f) {
  ArrayOptions o;
  o.durable_writes = false;  // the connector's mode: published only by a commit
  o.blob_bytes = 0;  // a box write is a fragment of its own here
  o.collective = f.epochs;
  return o;
}

// Opens the container and its arrays, writes generation g into all of them and commits;
// at_step (if set) runs at each step of the commit.
void write_and_commit(const Fixture& f, int g, const CommitOptions& co, uint64_t epoch) {
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::open(f.path, true, &c).ok());
  std::map<uint64_t, std::shared_ptr<Array>> open;
  std::vector<Array*> list;
  for (int w = 0; w < kArrays; ++w) {
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(f.ids[w], true, options(f), &a).ok());
    write_generation(*a, w, g);
    open[f.ids[w]] = std::move(a);
    list.push_back(open[f.ids[w]].get());
  }
  if (f.epochs) {
    SoloGroup solo;
    Status st = commit_epoch(*c, solo, open, {}, epoch, {}, co);
    ASSERT_TRUE(st.ok()) << st.message();
  } else {
    Status st = commit_arrays(*c, list, co);
    ASSERT_TRUE(st.ok()) << st.message();
  }
}

Fixture make_fixture(bool epochs) {
  Fixture f;
  f.path = temp_dir() + "/c";
  f.epochs = epochs;
  std::unique_ptr<Container> c;
  EXPECT_TRUE(Container::create(f.path, Container::CreateMode::kTruncate, &c).ok());
  c->set_file_arrays(epochs);  // parallel files: every array a directory (docs/parallel.md)
  for (int w = 0; w < kArrays; ++w) EXPECT_TRUE(c->create_array(schema_of(w), &f.ids[w]).ok());
  EXPECT_TRUE(guard([&] { c->catalog().sync(); }).ok());
  return f;
}

// Every array's generation after opening the container again (recovery runs).
std::vector<int> generations(const Fixture& f) {
  std::unique_ptr<Container> c;
  Status st = Container::open(f.path, true, &c);
  EXPECT_TRUE(st.ok()) << st.message();
  std::vector<int> out;
  for (int w = 0; w < kArrays && c; ++w) {
    std::unique_ptr<Array> a;
    ArrayOptions o;
    o.durable_writes = false;
    o.blob_bytes = 0;  // a box write is a fragment of its own here
    EXPECT_TRUE(c->open_array(f.ids[w], false, o, &a).ok());
    out.push_back(a ? generation_of(*a, w) : -1);
  }
  return out;
}

// Runs generation 2's commit in a child that SIGKILLs itself at `step` (never, if null).
void crash_at(const Fixture& f, const char* step, SyncPolicy sync, uint64_t epoch) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0) << std::strerror(errno);
  if (pid == 0) {
    CommitOptions co;
    co.sync = sync;
    std::string at = step ? step : "";
    co.at_step = [at](const char* s, uint64_t) {
      if (at == s) std::raise(SIGKILL);
    };
    write_and_commit(f, 2, co, epoch);
    _exit(::testing::Test::HasFailure() ? 3 : 0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (step) {
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child did not reach step " << step;
  } else {
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed: " << status;
  }
}

const SyncPolicy kPerFile{1000}, kSyncfs{0};

}  // namespace

TEST(Commit, SerialCommitsEveryArray) {
  for (SyncPolicy sync : {kPerFile, kSyncfs}) {
    Fixture f = make_fixture(false);
    CommitOptions co;
    co.sync = sync;
    write_and_commit(f, 1, co, 0);
    EXPECT_EQ(generations(f), (std::vector<int>{1, 1, 1}));
    crash_at(f, nullptr, sync, 0);
    EXPECT_EQ(generations(f), (std::vector<int>{2, 2, 2}));
  }
}

// A serial commit is atomic over all its arrays (never a mix of generations, never an
// extent without its data) and loses nothing committed before it: the catalog batch that
// records every array's files, inline fragments and schemas is the one commit point, so a
// crash at any step before it leaves every array as it was — a batch staged in a
// journal, even renamed, is not read without its records (array_store.h, files_complete).
TEST(Commit, SerialCrashAtEachStep) {
  for (SyncPolicy sync : {kPerFile, kSyncfs})
    for (const char* step : {"prepared", "staged", "published"}) {
      SCOPED_TRACE(std::string(step) + (sync.per_file_max ? " per file" : " syncfs"));
      Fixture f = make_fixture(false);
      CommitOptions co;
      co.sync = sync;
      write_and_commit(f, 1, co, 0);
      crash_at(f, step, sync, 0);
      std::vector<int> g = generations(f);
      ASSERT_EQ(g.size(), size_t{kArrays});
      for (int x : g) EXPECT_TRUE(x == 1 || x == 2) << x;
      EXPECT_EQ(g, (std::vector<int>{1, 1, 1}));
    }
}

// An epoch is all arrays or none: staged but not committed rolls every array back,
// committed rolls every array forward, whatever was renamed when the crash came.
TEST(Commit, EpochIsAllArraysOrNone) {
  for (SyncPolicy sync : {kPerFile, kSyncfs}) {
    {
      Fixture f = make_fixture(true);
      CommitOptions co;
      co.sync = sync;
      write_and_commit(f, 1, co, 1);
      EXPECT_EQ(generations(f), (std::vector<int>{1, 1, 1}));
      crash_at(f, nullptr, sync, 2);
      EXPECT_EQ(generations(f), (std::vector<int>{2, 2, 2}));
    }
    for (const char* step : {"staged", "committed"}) {
      SCOPED_TRACE(step);
      Fixture f = make_fixture(true);
      CommitOptions co;
      co.sync = sync;
      write_and_commit(f, 1, co, 1);
      crash_at(f, step, sync, 2);
      int want = std::string(step) == "staged" ? 1 : 2;
      EXPECT_EQ(generations(f), (std::vector<int>{want, want, want}));
    }
  }
}
