// Publish visibility (docs/reliability.md, "Concurrent readers, writer and consolidator"):
// deterministic versions of the interleavings the stress test (stress_test.cc) can only
// hit by chance.  A HookEnv runs a step of the other party inside one file-system call —
// the writer's commit inside a reader's directory listing, a reader's whole open and
// read inside a writer's rename — and the reader must see exactly one committed state.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/commit.h"
#include "engine/container.h"
#include "engine/test_schema.h"
#include "engine/testutil.h"

using namespace tessera;

namespace {

// Forwards every call to the POSIX Env; a hook may run after a rename (given the
// destination) or before a directory listing (given the directory).  Each hook runs
// once: it is cleared before it is called.
class HookEnv final : public EnvWrapper {
 public:
  HookEnv() : EnvWrapper(Env::posix()) {}
  std::function<void(const std::string&)> after_rename, before_list;

  int rename(const char* from, const char* to) override {
    int r = base_.rename(from, to);
    if (r == 0 && after_rename) std::exchange(after_rename, nullptr)(to);
    return r;
  }
  int list_dir(const char* p, std::vector<std::string>* names) override {
    if (before_list) std::exchange(before_list, nullptr)(p);
    return base_.list_dir(p, names);
  }
};

ArrayOptions file_writer() {
  ArrayOptions o;
  o.durable_writes = false;  // the connector's: published at commit
  o.blob_bytes = 0;
  o.inline_fragment_bytes = 0;  // fragment files (renamed into place), not inline records
  return o;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Reads array `id` of `path` whole in a fresh read-only open: every cell, or an error.
std::vector<int32_t> read_fresh(const std::string& path, uint64_t id, Coords* extent, std::string* err) {
  std::unique_ptr<Container> c;
  std::unique_ptr<Array> a;
  Status st = Container::open(path, false, &c);
  if (st.ok()) st = c->open_array(id, false, ArrayOptions{}, &a);
  if (!st.ok()) {
    *err = st.message();
    return {};
  }
  *extent = a->schema().extent;
  std::vector<int32_t> v((*extent)[0] * (*extent)[1], -7);
  st = a->read(Selection::from_box(Box({0, 0}, {(*extent)[0] - 1, (*extent)[1] - 1})), v.data());
  if (!st.ok()) *err = st.message();
  return v;
}

bool all_equal(const std::vector<int32_t>& v, int32_t g) {
  for (int32_t x : v)
    if (x != g) return false;
  return !v.empty();
}

}  // namespace

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

// An array of an older container (no complete-records mark, arr/<id>/files) is marked by
// its first writer, which then publishes without a journal: renames first, the catalog
// batch recording the files after.  A reader opening between the two must not read the
// renamed files: the mark must be durable before the first rename (a catalog that syncs
// only at flush, as the connector's does, left it in memory, and the reader followed the
// older rule: every file present is read).
TEST(PublishVisibility, AReaderNeverSeesRenamedFilesOfAnUpgradedArrayBeforeTheirCommit) {
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
    // As an older container left it: file records, no mark.
    CatalogBatch b;
    b.del(Container::array_prefix(id) + "files");
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
