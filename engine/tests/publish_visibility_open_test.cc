// Publish visibility (docs/reliability.md, "Concurrent readers, writer and consolidator"),
// a reader's open racing a writer: opening during an epoch's renames, an extent change
// seen with its epoch, listings overtaken by epochs, half a serial flush.  The HookEnv
// (publish_visibility_rig.h) runs the writer's step inside the reader's file-system calls.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <map>
#include <thread>
#include <string>
#include <vector>

#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/testing/test_schema.h"
#include "engine/testing/testutil.h"
#include "engine/tests/publish_visibility_rig.h"
#include "engine/testing/thread_group.h"

using namespace tessera;
using namespace tessera::publish_rig;

namespace {

// Runs on_open after every successful open() of a path (not cleared).
class OpenHookEnv final : public EnvWrapper {
 public:
  OpenHookEnv() : EnvWrapper(Env::posix()) {}
  std::function<void(const std::string&)> on_open;
  int open(const char* path, int flags, mode_t mode) override {
    int fd = base_.open(path, flags, mode);
    if (fd >= 0 && on_open) on_open(path);
    return fd;
  }
};

// A one-shot signal between two threads; wait() gives up after 20 s (a hang is a failure).
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void signal() {
    std::lock_guard<std::mutex> g(mu);
    open = true;
    cv.notify_all();
  }
  bool wait() {
    std::unique_lock<std::mutex> g(mu);
    return cv.wait_for(g, std::chrono::seconds(20), [&] { return open; });
  }
};

}  // namespace

// Found by scripts/stress_mpi_readers (outside readers of an `mpirun -n 4` job, about one
// read in a thousand): a reader opens the array after an epoch's commit point, while the
// member that changed the extent (rank 0) is still renaming its files.  The open read the
// schema file first (the old extent: rank 0 rewrites it after its renames), then the
// journals — rank 0's removed meanwhile, after it wrote the new schema — and listed the
// files, all recorded by its catalog, so nothing made it look again: the epoch's data
// with the previous epoch's extent.  The open now takes the stored schema again after the
// journals, as a refresh does (Array::take_stored_schema).
TEST(PublishVisibility, AReaderOpeningDuringAnEpochsRenamesTakesItsExtent) {
  testutil::TempDir dir("tessera_visibility");
  const std::string path = dir.sub("c");
  uint64_t id;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
    c->set_file_arrays(true);
    ASSERT_TRUE(c->create_array(int32_schema({16, 32}, {kUnlimited, 32}, {8, 16}), &id).ok());
    ASSERT_TRUE(guard([&] { c->catalog().sync(); }).ok());
  }
  auto env = std::make_shared<HookEnv>();
  std::unique_ptr<Container> wc;
  ASSERT_TRUE(Container::open(path, true, &wc, std::make_shared<Context>(EngineOptions{}, env)).ok());
  wc->set_file_arrays(true);
  std::map<uint64_t, std::shared_ptr<Array>> open;
  {
    ArrayOptions o = file_writer();
    o.collective = true;
    std::unique_ptr<Array> a;
    ASSERT_TRUE(wc->open_array(id, true, o, &a).ok());
    open[id] = std::move(a);
  }
  auto epoch = [&](uint64_t rows, int32_t g, uint64_t e) {
    testutil::ThreadGroup::Shared shared(1, /*in_turn=*/true);
    testutil::ThreadGroup grp(shared, 0);
    Array& a = *open[id];
    ASSERT_TRUE(a.set_extent({rows, 32}).ok());
    ASSERT_TRUE(write_band(a, 0, 1, g));
    Status st = commit_epoch(*wc, grp, open, {}, e);
    ASSERT_TRUE(st.ok()) << st.message();
  };
  epoch(16, 1, 1);

  // The reader (its own thread and Env) opens the container once the writer renamed its
  // first fragment of epoch 2 (the epoch is committed), reads the old schema file, and
  // stops there until the writer finished the epoch (new schema, journal removed).
  Gate at_schema, writer_done;
  std::string seen;
  int32_t seen_g = 0;
  std::thread reader;
  auto renv = std::make_shared<OpenHookEnv>();
  bool stopped_once = false;
  renv->on_open = [&](const std::string& p) {
    if (stopped_once || !ends_with(p, "/schema")) return;
    stopped_once = true;
    at_schema.signal();
    if (!writer_done.wait()) seen = "the writer never finished";
  };
  env->on_rename = [&](const std::string& to) {
    if (!ends_with(to, ".tfr") || reader.joinable()) return;
    reader = std::thread([&] {
      std::unique_ptr<Container> c;
      std::unique_ptr<Array> a;
      Status st = Container::open(path, false, &c, std::make_shared<Context>(EngineOptions{}, renv));
      if (st.ok()) st = c->open_array(id, false, ArrayOptions{}, &a);
      std::string why = whole_epoch(st, a.get(), &seen_g);
      if (seen.empty()) seen = why;
    });
    if (!at_schema.wait()) ADD_FAILURE() << "the reader never read the schema file";
  };
  epoch(24, 2, 2);
  env->on_rename = nullptr;
  writer_done.signal();
  ASSERT_TRUE(reader.joinable()) << "no fragment of epoch 2 was renamed";
  reader.join();
  EXPECT_TRUE(stopped_once);
  EXPECT_EQ(seen, "");
  EXPECT_EQ(seen_g, 2);  // opened after the epoch's commit point
}

// An epoch that grows the extent while rank 0 publishes no fragment of the array: rank 0
// rewrites the schema file (the epoch's new extent) before rank 1 renames its fragments.
// A reader whose catalog is one epoch older — an array opened through a container opened
// before the epoch — read the new schema file, found no file its catalog lacked (rank 1's
// were not renamed yet), so it did not reload: the new extent over the old epoch's data
// (rows 16..23 the fill value, where epoch 2 wrote generation 2).  A schema file newer than
// the reader's last commit is from a commit it lacks: it now reloads its catalog first.
TEST(PublishVisibility, AnExtentChangeWithoutRankZerosFragmentsIsSeenWithItsEpoch) {
  testutil::TempDir dir("tessera_visibility");
  const std::string path = dir.sub("c");
  uint64_t id;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
    c->set_file_arrays(true);
    ASSERT_TRUE(c->create_array(int32_schema({16, 32}, {kUnlimited, 32}, {8, 16}), &id).ok());
    ASSERT_TRUE(guard([&] { c->catalog().sync(); }).ok());
  }
  constexpr uint32_t n = 2;
  auto env = std::make_shared<HookEnv>();
  std::vector<std::unique_ptr<Container>> cs(n);
  std::vector<std::map<uint64_t, std::shared_ptr<Array>>> open(n);
  for (uint32_t r = 0; r < n; ++r) {
    auto ctx = std::make_shared<Context>(EngineOptions{}, env);
    ASSERT_TRUE((r == 0 ? Container::open(path, true, &cs[r], ctx) : Container::open_shadow(path, &cs[r], ctx)).ok());
    if (r == 0) cs[r]->set_file_arrays(true);
    ArrayOptions o = file_writer();
    o.collective = true;
    o.writer_rank = r;
    std::unique_ptr<Array> a;
    ASSERT_TRUE(cs[r]->open_array(id, true, o, &a).ok());
    open[r][id] = std::move(a);
  }
  // Epoch 1: both members write generation 1 (16 rows).  Epoch 2: both grow the extent
  // to 24 rows, only rank 1 writes: generation 2 into rows 12..23.
  auto epoch = [&](uint64_t rows, int32_t g, uint64_t e, bool rank0_writes) {
    testutil::ThreadGroup::Shared shared(static_cast<int>(n), /*in_turn=*/true);
    std::vector<std::string> failed(n);
    auto member = [&](uint32_t r) {
      testutil::ThreadGroup grp(shared, static_cast<int>(r));
      testutil::ThreadGroup::Turn turn(grp);
      Array& a = *open[r][id];
      if (!a.set_extent({rows, 32}).ok() || ((r != 0 || rank0_writes) && !write_band(a, r, n, g))) failed[r] = "write";
      Status st = commit_epoch(*cs[r], grp, open[r], {}, e);
      if (!st.ok()) failed[r] = st.message();
    };
    std::thread other(member, 1);
    member(0);
    other.join();
    for (uint32_t r = 0; r < n; ++r) EXPECT_EQ(failed[r], "") << "member " << r << ", epoch " << e;
  };
  epoch(16, 1, 1, true);
  // "" when the array is one whole epoch: 16 rows of generation 1, or 24 rows with
  // generation 1 above row 12 and 2 from it.
  auto whole = [](Status st, Array* a) -> std::string {
    if (!st.ok()) return "error: " + st.message();
    const Coords e = a->schema().extent;
    std::vector<int32_t> v(e[0] * e[1], -7);
    st = a->read(Selection::from_box(Box({0, 0}, {e[0] - 1, e[1] - 1})), v.data());
    if (!st.ok()) return "read error: " + st.message();
    for (uint64_t i = 0; i < e[0]; ++i) {
      const int32_t want = e[0] == 24 && i >= 12 ? 2 : 1;
      if (v[i * 32] != want || v[i * 32 + 31] != want)
        return std::to_string(e[0]) + " rows, row " + std::to_string(i) + " holds " + std::to_string(v[i * 32]) +
               " (epoch " + (e[0] == 24 ? "2" : "1") + " has " + std::to_string(want) + ")";
    }
    return e[0] == 16 || e[0] == 24 ? "" : "extent of " + std::to_string(e[0]) + " rows";
  };

  std::unique_ptr<Container> stale_c;
  ASSERT_TRUE(Container::open(path, false, &stale_c).ok());
  size_t schemas = 0;
  std::vector<std::string> bad;
  env->on_rename = [&](const std::string& to) {
    const bool schema = ends_with(to, "/schema");
    if (!schema && !ends_with(to, ".tfr")) return;
    schemas += schema;
    const std::string at = "after the rename to " + to.substr(to.rfind('/') + 1) + ": ";
    std::unique_ptr<Array> a;
    Status st = stale_c->open_array(id, false, ArrayOptions{}, &a);
    std::string why = whole(st, a.get());
    if (!why.empty()) bad.push_back(at + "array opened through a container opened before the epoch: " + why);
    std::unique_ptr<Container> c;
    a.reset();
    st = Container::open(path, false, &c);
    if (st.ok()) st = c->open_array(id, false, ArrayOptions{}, &a);
    why = whole(st, a.get());
    if (!why.empty()) bad.push_back(at + "new reader: " + why);
  };
  epoch(24, 2, 2, false);
  env->on_rename = nullptr;
  EXPECT_EQ(schemas, 1u) << "rank 0 rewrites the schema file once";
  for (auto& b : bad) ADD_FAILURE() << b;
  std::unique_ptr<Array> a;
  const Status st = stale_c->open_array(id, false, ArrayOptions{}, &a);
  EXPECT_EQ(whole(st, a.get()), "");
  EXPECT_EQ(a ? a->schema().extent[0] : 0u, 24u);
}

namespace {

// A parallel file's array (one member, epoch 1 committed); a reader opens the container,
// then the array, while the member commits the next epoch inside each of the reader's
// listings of the array's fragment directory, `overtaking` epochs in all.  Returns the
// open's status; *committed: the last epoch committed, *listings: the reader's listings.
Status open_overtaken(const std::string& path, int overtaking, std::unique_ptr<Array>* ra, int32_t* committed,
                      int* listings) {
  uint64_t id;
  {
    std::unique_ptr<Container> c;
    EXPECT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
    c->set_file_arrays(true);  // a parallel file's: schema file, epoch journals, publish logs
    EXPECT_TRUE(c->create_array(int32_schema({16, 32}, {kUnlimited, 32}, {8, 16}), &id).ok());
    EXPECT_TRUE(guard([&] { c->catalog().sync(); }).ok());
  }
  std::unique_ptr<Container> wc;
  EXPECT_TRUE(Container::open(path, true, &wc).ok());
  wc->set_file_arrays(true);
  std::map<uint64_t, std::shared_ptr<Array>> open;
  {
    ArrayOptions o = file_writer();
    o.collective = true;  // a job of one member: it marks the array's files logged
    std::unique_ptr<Array> a;
    EXPECT_TRUE(wc->open_array(id, true, o, &a).ok());
    open[id] = std::move(a);
  }
  *committed = 0;
  auto epoch = [&] {
    testutil::ThreadGroup::Shared shared(1, /*in_turn=*/true);
    testutil::ThreadGroup grp(shared, 0);
    EXPECT_TRUE(write_band(*open[id], 0, 1, *committed + 1));  // two fragment files
    Status st = commit_epoch(*wc, grp, open, {}, static_cast<uint64_t>(*committed + 1));
    EXPECT_TRUE(st.ok()) << st.message();
    ++*committed;
  };
  epoch();
  auto env = std::make_shared<HookEnv>();
  std::unique_ptr<Container> rc;
  EXPECT_TRUE(Container::open(path, false, &rc, std::make_shared<Context>(EngineOptions{}, env)).ok());
  *listings = 0;
  env->on_list = [&](const std::string& d) {
    if (!ends_with(d, "/frag")) return;
    if ((*listings)++ < overtaking) epoch();
  };
  Status st = rc->open_array(id, false, ArrayOptions{}, ra);
  env->on_list = nullptr;
  return st;
}

}  // namespace

// Found by scripts/stress_mpi_readers (a fresh open by an outside reader of an `mpirun -n 4`
// job that commits epochs back to back, about one open in 2,500): every listing of the
// array's files found files of an epoch that had committed after the reader's catalog
// was (re)loaded — the reload comes before the listing, and a listing of thousands of
// files on a busy machine is long enough for the next epoch to rename its files in
// between.  Four reloads, each overtaken so, and the open failed with "was not published
// in this container", a foreign file's error, for files every later catalog records.
// A reload that now records the file is the writer moving on, not a lasting
// inconsistency: it does not count against the four.  Here the writer commits an epoch
// inside every one of the reader's listings, a dozen in a row.
TEST(PublishVisibility, AReaderOvertakenByAnEpochInEveryListingStillOpens) {
  testutil::TempDir dir("tessera_visibility");
  std::unique_ptr<Array> ra;
  int32_t committed = 0;
  int listings = 0;
  const Status st = open_overtaken(dir.sub("c"), 12, &ra, &committed, &listings);
  EXPECT_GT(listings, 12) << "the reader listed the directory only " << listings << " times";
  ASSERT_TRUE(st.ok()) << st.message();
  // The last epoch: committed before the listing that found the array consistent.
  std::vector<int32_t> v(16 * 32, -7);
  ASSERT_TRUE(ra->read(Selection::from_box(Box({0, 0}, {15, 31})), v.data()).ok());
  EXPECT_TRUE(all_equal(v, committed)) << "cell 0 holds generation " << v[0] << ", cell 511 " << v[511]
                                       << "; the last epoch committed is " << committed;
}

// The bound: a writer that overtakes every listing stops the open after
// Array::kMaxOvertaken overtaken listings with an error that says so (busy), never a
// foreign file's error, and never an open that waits for as long as the writer goes on.
TEST(PublishVisibility, AReaderOvertakenByEveryListingGivesUpSayingSo) {
  testutil::TempDir dir("tessera_visibility");
  std::unique_ptr<Array> ra;
  int32_t committed = 0;
  int listings = 0;
  const Status st = open_overtaken(dir.sub("c"), 100000, &ra, &committed, &listings);
  EXPECT_EQ(st.code(), Errc::kBusy) << st.message();
  EXPECT_NE(st.message().find("each time overtaken by a newer commit"), std::string::npos) << st.message();
  // Two listings per retry (the journals', the files'), the open's own, and the last.
  EXPECT_LE(listings, 2 * (Array::kMaxOvertaken + 2)) << "listed " << listings << " times";
  EXPECT_GE(listings, Array::kMaxOvertaken) << "listed " << listings << " times";
}

// A serial writer (an h5py program without MPI) flushing a parallel file's array: two
// fragment files and an extent change.  A reader looks for a journal (none yet), then the
// writer flushes and renames its first file, then the reader lists the directory.  The
// flush published through its publish log, a journal and renames, and the catalog batch
// recording the files came after: the reader read the renamed, logged file and not the
// other one — half a flush ("mixes generations").  The flush now commits through its
// catalog batch first, as an epoch does (Array::record_staged), and renames after: the
// reader finds a file its catalog neither records nor a log names, reloads its catalog
// and reads the rest through the journal.  Each reader is paused between its journal
// look and its listing at each rename of the flush: one opening the array through a
// container opened before the flush, and one refreshing an array held since then.
TEST(PublishVisibility, AReaderNeverSeesHalfASerialFlushOfAParallelFilesArray) {
  testutil::TempDir dir("tessera_visibility");
  const std::string path = dir.sub("c");
  uint64_t id;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
    c->set_file_arrays(true);  // a parallel file's array: schema file, publish logs
    ASSERT_TRUE(c->create_array(int32_schema({16, 32}, {kUnlimited, 32}, {8, 16}), &id).ok());
    ASSERT_TRUE(guard([&] { c->catalog().sync(); }).ok());
  }
  auto rows_of = [](int32_t g) { return uint64_t{8} + 8 * static_cast<uint64_t>(g); };
  auto wenv = std::make_shared<HookEnv>();
  std::unique_ptr<Container> w;
  ASSERT_TRUE(Container::open(path, true, &w, std::make_shared<Context>(EngineOptions{}, wenv)).ok());
  std::unique_ptr<Array> wa;
  ASSERT_TRUE(w->open_array(id, true, file_writer(), &wa).ok());  // serial: not collective
  // Generation g over rows_of(g) rows, in two fragment files.
  auto generation = [&](int32_t g) -> Status {
    Status st = wa->set_extent({rows_of(g), 32});
    if (st.ok() && !write_band(*wa, 0, 1, g)) st = Status(Errc::kIo, "write");
    return st.ok() ? commit_arrays(*w, {wa.get()}) : st;
  };
  ASSERT_TRUE(generation(1).ok());
  auto whole = [&](Status st, Array* a, int32_t* g) { return whole_generation(st, a, g, rows_of); };
  auto renv = std::make_shared<HookEnv>();
  auto rctx = std::make_shared<Context>(EngineOptions{}, renv);
  std::unique_ptr<Container> stale_c, held_c;
  std::unique_ptr<Array> held;
  ASSERT_TRUE(Container::open(path, false, &stale_c, rctx).ok());
  ASSERT_TRUE(Container::open(path, false, &held_c, rctx).ok());
  ASSERT_TRUE(held_c->open_array(id, false, ArrayOptions{}, &held).ok());

  int32_t g = 1, held_g = 1;
  size_t paused = 0;
  for (int at = 1; at <= 2; ++at)
    for (bool refresh : {false, true}) {
      ++g;
      const std::string who = std::string(refresh ? "a reader refreshing an array held since generation 1"
                                                  : "a reader opening the array through a container opened before") +
                              ", its listing after rename " + std::to_string(at) + " of generation " +
                              std::to_string(g) + "'s flush: ";
      Gate looked, renamed, done;
      std::string result;
      int32_t seen = 0;
      std::thread reader([&] {
        int lists = 0;
        // The reader's first listing of frag/ looks for journals; its second lists the
        // fragments: between the two, the writer flushes up to rename `at`.
        renv->on_list = [&](const std::string& p) {
          if (!ends_with(p, "/frag") || ++lists != 2) return;
          looked.signal();
          if (!renamed.wait()) result = "the writer never reached rename " + std::to_string(at) + "; ";
        };
        std::unique_ptr<Array> a;
        Status st = refresh ? held->refresh() : stale_c->open_array(id, false, ArrayOptions{}, &a);
        result += whole(st, refresh ? held.get() : a.get(), &seen);
        renv->on_list = nullptr;
        done.signal();
      });
      ASSERT_TRUE(looked.wait());
      int renames = 0;
      wenv->on_rename = [&](const std::string& to) {
        if (!ends_with(to, ".tfr") || ++renames != at) return;
        ++paused;
        renamed.signal();
        done.wait();
      };
      Status st = generation(g);
      wenv->on_rename = nullptr;
      renamed.signal();  // if the flush renamed fewer files
      reader.join();
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_EQ(renames, 2) << "the flush renames two fragment files";
      EXPECT_EQ(result, "") << who;
      if (result.empty() && refresh) {
        EXPECT_GE(seen, held_g) << who << "went back";
        held_g = seen;
      }
    }
  EXPECT_EQ(paused, 4u);
  int32_t last = 0;
  EXPECT_EQ(whole(held->refresh(), held.get(), &last), "");
  EXPECT_EQ(last, g);
}
