// Stress (docs/reliability.md, "Concurrent readers, writer and consolidator"): reader
// processes read a container over and over while, in the parent, a writer thread commits
// generation after generation and a consolidator thread merges the arrays'
// fragments (consolidate_all on the writer's handle: a second writable handle of an array
// would break the one-writer rule, ArrayOptions::sole_writer; and the consolidator takes
// its turn between generations, since consolidating flushes the handle's writes).  Generation g writes g into every cell of each array (four
// box writes, scattered points, an extent change on the growing array) and commits them
// with one commit_arrays.  Every read must be one committed state: all cells of an array
// one generation, its extent that generation's, and never older than a generation the
// same reader saw before.  Any failed open or read counts too (the writer may remove
// fragments a reader listed, but a read must never fail for it).
//
// A third test has no consolidator thread: the writer's arrays merge by themselves in
// the background (automatic consolidation), retiring what they replaced at once.
//
// TESSERA_STRESS_SECONDS (default 4) and TESSERA_STRESS_READERS (default 3);
// TESSERA_STRESS_REUSE=0: readers always open afresh (no refresh of held handles).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "engine/testing/test_schema.h"
#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/testing/testutil.h"

using namespace tessera;

namespace {

// A large array (fragment files), a small one (inline records), a growing one.
enum { kLarge, kSmall, kGrowing, kArrays };
Schema schema_of(int w) {
  switch (w) {
    case kLarge: return int32_schema({64, 64}, {64, 64}, {16, 16});
    case kSmall: return int32_schema({8, 8}, {8, 8}, {8, 8});
    default: return int32_schema({16, 32}, {kUnlimited, 32}, {16, 16});
  }
}
uint64_t rows_of(int w, int64_t g) { return w == kGrowing ? 16 + 4 * static_cast<uint64_t>(g % 16) : schema_of(w).extent[0]; }

ArrayOptions writer_opts() {
  ArrayOptions o;
  o.durable_writes = false;
  o.blob_bytes = 0;
  // TESSERA_STRESS_INLINE_KB: the small array's inline budget (default 1024): small, its
  // fragments soon become files (two per commit).
  o.inline_array_bytes = testutil::env_u64("TESSERA_STRESS_INLINE_KB", 1024) << 10;
  return o;
}

void write_generation(Array& a, int w, int32_t g, std::string* err) {
  auto check = [&](const Status& st) {
    if (!st.ok() && err->empty()) *err = st.message();
  };
  const uint64_t cols = a.schema().extent[1];
  if (w == kGrowing) check(a.set_extent({rows_of(w, g), cols}));
  const uint64_t rows = a.schema().extent[0];
  std::vector<int32_t> v(rows * cols, g);
  const uint64_t q = rows >= 16 ? rows / 4 : rows;
  for (uint64_t lo = 0; lo < rows; lo += q) {  // tile rows in reverse would append; any order is fine
    const uint64_t hi = std::min(rows, lo + q) - 1;
    check(a.write(Selection::from_box(Box({lo, 0}, {hi, cols - 1})), v.data()));
  }
  uint64_t pts[6] = {0, 0, rows - 1, cols - 1, rows / 2, 1};
  check(a.write_points(pts, 3, v.data()));
}

struct ReaderResult {
  uint64_t reads = 0, bad = 0, errors = 0;
  char first[512] = {};
};

// One reader process: until the deadline, open the container read-only, read every array
// whole, check it.  Half of the rounds reuse open handles and refresh() them instead.
ReaderResult reader(const std::string& path, const uint64_t* ids, int narrays,
                    std::chrono::steady_clock::time_point until) {
  ReaderResult r;
  auto note = [&](const std::string& what, bool error) {
    (error ? r.errors : r.bad)++;
    if (!r.first[0]) std::snprintf(r.first, sizeof r.first, "%s", what.c_str());
  };
  int64_t seen[kArrays] = {};
  std::unique_ptr<Container> c;
  std::unique_ptr<Array> a[kArrays];
  for (uint64_t round = 0; std::chrono::steady_clock::now() < until; ++round) {
    const bool reuse = c && round % 2 && testutil::env_u64("TESSERA_STRESS_REUSE", 1);
    if (!reuse) {
      for (auto& x : a) x.reset();
      c.reset();
      Status st = Container::open(path, false, &c);
      if (!st.ok()) {
        note("open container: " + st.message(), true);
        continue;
      }
    } else {
      (void)guard([&] { c->catalog().reload(); });
    }
    for (int w = 0; w < narrays; ++w) {
      Status st = reuse && a[w] ? a[w]->refresh() : c->open_array(ids[w], false, ArrayOptions{}, &a[w]);
      if (!st.ok()) {
        note("open/refresh array " + std::to_string(w) + ": " + st.message(), true);
        a[w].reset();
        continue;
      }
      const Coords e = a[w]->schema().extent;
      std::vector<int32_t> v(e[0] * e[1], -7);
      st = a[w]->read(Selection::from_box(Box({0, 0}, {e[0] - 1, e[1] - 1})), v.data());
      ++r.reads;
      if (!st.ok()) {
        note("read array " + std::to_string(w) + ": " + st.message(), true);
        continue;
      }
      const int32_t g = v[0];
      bool whole = true;
      for (int32_t x : v) whole = whole && x == g;
      if (!whole) note("array " + std::to_string(w) + " mixes generations", false);
      else if (e[0] != rows_of(w, g)) note("array " + std::to_string(w) + ": extent of another generation", false);
      else if (g < seen[w]) note("array " + std::to_string(w) + " went back from " + std::to_string(seen[w]) + " to " + std::to_string(g), false);
      else seen[w] = g;
    }
  }
  return r;
}

// narrays: 2 (fixed extents) or 3 (with the growing array).  automatic: no consolidator
// thread; the writer's arrays merge by themselves in the background (auto_merge.h),
// retiring what they replaced at once.
void stress(int narrays, bool automatic = false) {
  const uint64_t seconds = testutil::env_u64("TESSERA_STRESS_SECONDS", 4);
  const uint64_t nreaders = testutil::env_u64("TESSERA_STRESS_READERS", 3);
  testutil::TempDir dir("tessera_stress");
  const std::string path = dir.sub("c");
  uint64_t ids[kArrays];
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
  std::unique_ptr<Array> arrays[kArrays];
  std::vector<Array*> list;
  for (int w = 0; w < narrays; ++w) {
    ASSERT_TRUE(c->create_array(schema_of(w), &ids[w]).ok());
    ArrayOptions o = writer_opts();
    o.auto_merge.on = automatic;
    o.auto_merge.retain_ns = 0;
    ASSERT_TRUE(c->open_array(ids[w], true, o, &arrays[w]).ok());
    std::string err;
    write_generation(*arrays[w], w, 1, &err);
    ASSERT_EQ(err, "");
    list.push_back(arrays[w].get());
  }
  ASSERT_TRUE(commit_arrays(*c, list).ok());

  // The readers are forked before the parent starts any thread of its own.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::vector<std::pair<pid_t, int>> kids;
  for (uint64_t i = 0; i < nreaders; ++i) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      ReaderResult r = reader(path, ids, narrays, until);
      ssize_t n = ::write(fds[1], &r, sizeof r);
      _exit(n == static_cast<ssize_t>(sizeof r) ? 0 : 2);
    }
    ::close(fds[1]);
    kids.emplace_back(pid, fds[0]);
  }

  std::atomic<bool> stop{false};
  std::string werr, cerr;
  uint64_t commits = 0, consolidations = 0;
  std::mutex turn;  // a generation is written and committed whole, then the consolidator may run
  // The large array is consolidated every round; the others every 8th, so that their
  // fragments (two per commit, files once their inline budget is spent) stay bounded:
  // never consolidated, a 5-minute run left 20,000 fragment files in the small array and
  // ran the writer out of file descriptors (EMFILE).
  std::thread consolidator([&] {
    for (uint64_t round = 0; !stop && !automatic; ++round) {
      Status st;
      {
        std::lock_guard<std::mutex> g(turn);
        st = arrays[kLarge]->consolidate_all();
        for (int w = kLarge + 1; w < narrays && st.ok() && round % 8 == 7; ++w) st = arrays[w]->consolidate_all();
      }
      if (!st.ok()) {
        cerr = "consolidate: " + st.message();
        return;
      }
      ++consolidations;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  for (int32_t g = 2; std::chrono::steady_clock::now() < until && werr.empty(); ++g) {
    std::lock_guard<std::mutex> lk(turn);
    for (int w = 0; w < narrays; ++w) write_generation(*arrays[w], w, g, &werr);
    Status st = commit_arrays(*c, list);
    if (!st.ok() && werr.empty()) werr = "commit: " + st.message();
    ++commits;
  }
  stop = true;
  consolidator.join();
  EXPECT_EQ(werr, "");
  EXPECT_EQ(cerr, "");
  for (int w = 0; automatic && w < narrays; ++w) {
    arrays[w]->settle_merges();
    const ConsolidationInfo info = arrays[w]->consolidation_info();
    EXPECT_EQ(info.failures, 0u) << info.last_error;
    consolidations += info.merges;
  }

  ReaderResult total;
  for (auto& [pid, fd] : kids) {
    ReaderResult r;
    ssize_t n = ::read(fd, &r, sizeof r);
    ::close(fd);
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_EQ(n, static_cast<ssize_t>(sizeof r)) << "reader " << pid << " status " << status;
    total.reads += r.reads;
    total.bad += r.bad;
    total.errors += r.errors;
    if (r.first[0]) ADD_FAILURE() << "reader " << pid << ": " << r.first;
  }
  EXPECT_EQ(total.bad, 0u) << "reads that were not a committed state";
  EXPECT_EQ(total.errors, 0u) << "opens or reads that failed";
  EXPECT_GT(total.reads, 0u);
  std::printf("[ stress   ] %d arrays, %llu s, %llu reader processes: %llu reads checked (%llu not a committed state, %llu "
              "failed); %llu commits, %llu %sconsolidations\n",
              narrays, static_cast<unsigned long long>(seconds), static_cast<unsigned long long>(nreaders),
              static_cast<unsigned long long>(total.reads), static_cast<unsigned long long>(total.bad),
              static_cast<unsigned long long>(total.errors), static_cast<unsigned long long>(commits),
              static_cast<unsigned long long>(consolidations), automatic ? "automatic " : "");
}

}  // namespace

// A 64x64 array and an 8x8 one: inline catalog records until an array's inline budget is
// spent (the 8x8 one's after about a thousand commits; consolidation keeps the 64x64 one
// inline), fragment files after.
TEST(Stress, ReadersSeeOnlyCommittedStatesWhileWritingAndConsolidating) { stress(2); }

// With an extent change in every commit: a reader must see each generation's data with
// that generation's extent.
TEST(Stress, ReadersSeeWholeExtentChanges) { stress(3); }

// Automatic consolidation instead of the consolidator thread: background merges publish
// and retire (retention 0: unlinked as soon as the merge is durable) while reader
// processes list, open and refresh.
TEST(Stress, ReadersSeeOnlyCommittedStatesWhileMergingAutomatically) { stress(3, true); }
