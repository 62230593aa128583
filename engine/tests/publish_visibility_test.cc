// Publish visibility (docs/reliability.md, "Concurrent readers, writer and consolidator"):
// deterministic versions of the interleavings the stress test (stress_test.cc) can only
// hit by chance.  A HookEnv runs a step of the other party inside one file-system call —
// the writer's commit inside a reader's directory listing, a reader's whole open and
// read inside a writer's rename — and the reader must see exactly one committed state.
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


// A reader's refresh lists the directory; a fragment its catalog records has just been
// consolidated away, so it reloads the catalog and lists again.  Meanwhile a commit grew
// the extent and wrote new data: the reader must take that commit's extent along with its
// fragments.  (It kept the extent of the first catalog state: the new data with the old
// extent, half of two commits.)
TEST(PublishVisibility, ARefreshThatListsAgainTakesTheExtentOfTheSameCommit) {
  testutil::TempDir dir("tessera_visibility");
  const std::string path = dir.sub("c");
  std::unique_ptr<Container> w;
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &w).ok());
  uint64_t id;
  ASSERT_TRUE(w->create_array(int32_schema({16, 32}, {kUnlimited, 32}, {16, 16}), &id).ok());
  std::unique_ptr<Array> wa;
  ASSERT_TRUE(w->open_array(id, true, file_writer(), &wa).ok());
  auto generation = [&](uint64_t rows, int32_t g) {
    ASSERT_TRUE(wa->set_extent({rows, 32}).ok());
    std::vector<int32_t> v(rows * 32, g);
    // Two fragments: the lower half first (not in tile order, so not appended).
    ASSERT_TRUE(wa->write(Selection::from_box(Box({rows / 2, 0}, {rows - 1, 31})), v.data()).ok());
    ASSERT_TRUE(wa->write(Selection::from_box(Box({0, 0}, {rows / 2 - 1, 31})), v.data()).ok());
    ASSERT_TRUE(commit_arrays(*w, {wa.get()}).ok());
  };
  generation(16, 1);

  auto env = std::make_shared<HookEnv>();
  auto ctx = std::make_shared<Context>(EngineOptions{}, env);
  std::unique_ptr<Container> r;
  ASSERT_TRUE(Container::open(path, false, &r, ctx).ok());
  std::unique_ptr<Array> ra;
  ASSERT_TRUE(r->open_array(id, false, ArrayOptions{}, &ra).ok());
  ASSERT_EQ(ra->schema().extent[0], 16u);

  // Inside the reader's first listing: the writer consolidates (generation 1's files go)
  // and commits generation 2 with 24 rows.
  bool ran = false;
  env->before_list = [&](const std::string& d) {
    ran = ends_with(d, "/frag");
    ASSERT_TRUE(wa->consolidate_all().ok());
    generation(24, 2);
  };
  ASSERT_TRUE(ra->refresh().ok());
  ASSERT_TRUE(ran);
  const Coords e = ra->schema().extent;
  std::vector<int32_t> v(e[0] * e[1], -7);
  ASSERT_TRUE(ra->read(Selection::from_box(Box({0, 0}, {e[0] - 1, e[1] - 1})), v.data()).ok());
  EXPECT_TRUE(all_equal(v, v[0])) << "mixes generations";
  EXPECT_EQ(e[0], v[0] == 2 ? 24u : 16u) << "generation " << v[0] << " with the extent of another";
}

// A catalog-bound array a parallel job wrote (rank 0 replaced its complete-records mark,
// arr/<id>/files, by arr/<id>/logged) is marked again by its next serial writer, which
// then publishes without a journal: renames first, the catalog batch recording the files
// after.  A reader opening between the two must neither read the renamed files nor fail
// on them: the mark must be durable before the first rename (a catalog that syncs only at
// flush, as the connector's does, would leave it in memory, and the reader would find
// files neither recorded nor logged).
TEST(PublishVisibility, AReaderNeverSeesRenamedFilesOfARemarkedArrayBeforeTheirCommit) {
  testutil::TempDir dir("tessera_visibility");
  const std::string path = dir.sub("c");
  uint64_t id;
  auto generation = [&](Container& c, Array& a, int32_t g) {
    std::vector<int32_t> v(16 * 32, g);
    ASSERT_TRUE(a.write(Selection::from_box(Box({8, 0}, {15, 31})), v.data()).ok());
    ASSERT_TRUE(a.write(Selection::from_box(Box({0, 0}, {7, 31})), v.data()).ok());
    ASSERT_TRUE(commit_arrays(c, {&a}).ok());
  };
  {
    std::unique_ptr<Container> w;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &w).ok());
    ASSERT_TRUE(w->create_array(int32_schema({16, 32}, {16, 32}, {8, 16}), &id).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(w->open_array(id, true, file_writer(), &a).ok());
    generation(*w, *a, 1);
    a.reset();
    // As rank 0's parallel open leaves it (array_listing.cc): file records, the logged
    // mark instead of the complete one.
    CatalogBatch b;
    b.del(Container::array_prefix(id) + "files");
    b.put(Container::array_prefix(id) + "logged", "1");
    w->catalog().commit(b);
    w->catalog().sync();
  }
  auto env = std::make_shared<HookEnv>();
  auto ctx = std::make_shared<Context>(EngineOptions{}, env);
  std::unique_ptr<Container> w;
  ASSERT_TRUE(Container::open(path, true, &w, ctx).ok());
  w->catalog().set_durability(Catalog::Durability::kOnSync);  // the connector's
  std::unique_ptr<Array> a;
  ASSERT_TRUE(w->open_array(id, true, file_writer(), &a).ok());
  std::vector<int32_t> seen;
  Coords extent;
  std::string err;
  env->after_rename = [&](const std::string& to) {
    ASSERT_TRUE(ends_with(to, ".tfr")) << to;
    seen = read_fresh(path, id, &extent, &err);
  };
  generation(*w, *a, 2);
  ASSERT_FALSE(seen.empty()) << "no rename: " << err;
  EXPECT_EQ(err, "");
  EXPECT_TRUE(all_equal(seen, 1)) << "a reader saw generation 2 before its commit (cell 0: " << seen[0]
                                  << ", cell 511: " << seen[511] << ")";
  Coords e2;
  EXPECT_TRUE(all_equal(read_fresh(path, id, &e2, &err), 2)) << err;
}


namespace {

void outside_readers_see_whole_epochs(uint32_t n) {
  testutil::TempDir dir("tessera_visibility");
  const std::string path = dir.sub("c");
  uint64_t id;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
    c->set_file_arrays(true);  // a parallel file's: schema file, epoch journals, publish logs
    ASSERT_TRUE(c->create_array(int32_schema({16, 32}, {kUnlimited, 32}, {8, 16}), &id).ok());
    ASSERT_TRUE(guard([&] { c->catalog().sync(); }).ok());
  }
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
  auto epoch = [&](uint64_t rows, int32_t g, uint64_t e) {
    testutil::ThreadGroup::Shared shared(static_cast<int>(n), /*in_turn=*/true);
    std::vector<std::string> failed(n);
    auto member = [&](uint32_t r) {
      testutil::ThreadGroup grp(shared, static_cast<int>(r));
      testutil::ThreadGroup::Turn turn(grp);
      Array& a = *open[r][id];
      if (!a.set_extent({rows, 32}).ok() || !write_band(a, r, n, g)) failed[r] = "write";
      Status st = commit_epoch(*cs[r], grp, open[r], {}, e);
      if (!st.ok()) failed[r] = st.message();
    };
    std::vector<std::thread> others;
    for (uint32_t r = 1; r < n; ++r) others.emplace_back(member, r);
    member(0);
    for (auto& t : others) t.join();
    for (uint32_t r = 0; r < n; ++r) EXPECT_EQ(failed[r], "") << "member " << r << ", epoch " << e;
  };
  epoch(16, 1, 1);

  std::unique_ptr<Container> held_c, stale_c;
  std::unique_ptr<Array> held;
  ASSERT_TRUE(Container::open(path, false, &held_c).ok());
  ASSERT_TRUE(held_c->open_array(id, false, ArrayOptions{}, &held).ok());
  ASSERT_TRUE(Container::open(path, false, &stale_c).ok());
  int32_t held_g = 0;
  ASSERT_EQ(whole_epoch(Status(), held.get(), &held_g), "");
  ASSERT_EQ(held_g, 1);

  size_t renames = 0;
  std::vector<std::string> bad;
  env->on_rename = [&](const std::string& to) {
    if (!ends_with(to, ".tfr")) return;  // a journal's own rename
    ++renames;
    const std::string at = "after rename " + std::to_string(renames) + " (" + to.substr(to.rfind('/') + 1) + "): ";
    int32_t g = 0;
    // Refreshed: never older than what it read before.
    Status refreshed = held->refresh();
    std::string why = whole_epoch(refreshed, held.get(), &g);
    if (!why.empty()) bad.push_back(at + "refreshed reader: " + why);
    else if (g < held_g) bad.push_back(at + "refreshed reader went back to generation " + std::to_string(g));
    else held_g = g;
    std::unique_ptr<Array> a;
    Status st = stale_c->open_array(id, false, ArrayOptions{}, &a);
    why = whole_epoch(st, a.get(), &g);
    if (!why.empty()) bad.push_back(at + "array opened through a container opened before the epoch: " + why);
    std::unique_ptr<Container> c;
    a.reset();
    st = Container::open(path, false, &c);
    if (st.ok()) st = c->open_array(id, false, ArrayOptions{}, &a);
    why = whole_epoch(st, a.get(), &g);
    if (!why.empty()) bad.push_back(at + "new reader: " + why);
  };
  epoch(24, 2, 2);
  env->on_rename = nullptr;
  EXPECT_EQ(renames, 2 * n) << "each member renames its two fragments";
  for (auto& b : bad) ADD_FAILURE() << b;
  int32_t g = 0;
  EXPECT_EQ(whole_epoch(held->refresh(), held.get(), &g), "");
  EXPECT_EQ(g, 2);
}

}  // namespace

// A reader outside an MPI job (a serial process reading a parallel file) while the job
// commits an epoch: the epoch record is durable before the members rename their files
// into place, one after the other.  A reader whose catalog was reloaded in between (a
// refresh, or a listing that found a renamed file its catalog did not record) read the
// renamed files and looked for the others under their final names only: "is missing: the
// catalog records it as published", after four reloads (a false loss), or with luck the
// epoch whole.  It now reads the epoch's journals again and the files not renamed yet
// through them.
TEST(PublishVisibility, AReaderOutsideTheJobSeesAnEpochWhole) { outside_readers_see_whole_epochs(1); }

// The same with two members: between the renames of one member, and with one member's
// files renamed and the other's not yet.
TEST(PublishVisibility, AReaderOutsideTheJobSeesEveryMembersPartOfAnEpoch) { outside_readers_see_whole_epochs(2); }
