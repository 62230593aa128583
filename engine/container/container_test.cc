// Containers (container.h): create/open/remove, what is and is not a container, arrays by
// id that survive reopening, exclusive creation, read-only opens.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/container/container.h"
#include "engine/util/checksum.h"
#include "engine/util/file_io.h"

using namespace tessera;

namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/tessera_container_XXXXXX";
  return mkdtemp(tmpl);
}

Schema small_schema() {
  Schema s;
  s.extent = {100};
  s.max_extent = {kUnlimited};
  s.tile_extent = {10};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  return s;
}

}  // namespace

TEST(Container, CreateOpenRemove) {
  const std::string root = temp_dir(), path = root + "/c.h5";
  EXPECT_FALSE(Container::is_container(path));
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
  EXPECT_TRUE(Container::is_container(path));
  uint64_t a = 0, b = 0;
  ASSERT_TRUE(c->create_array(small_schema(), &a).ok());
  ASSERT_TRUE(c->create_array(small_schema(), &b).ok());
  EXPECT_NE(a, b) << "array ids are unique";
  std::unique_ptr<Array> arr;
  ASSERT_TRUE(c->open_array(a, true, ArrayOptions{}, &arr).ok());
  std::vector<int32_t> v(100);
  for (int i = 0; i < 100; ++i) v[i] = i * i;
  ASSERT_TRUE(arr->write(Selection::from_box(Box({0}, {99})), v.data()).ok());
  ASSERT_TRUE(arr->flush().ok());
  arr.reset();
  c.reset();

  // Exclusive creation of an existing container fails; truncation empties it.
  std::unique_ptr<Container> again;
  EXPECT_FALSE(Container::create(path, Container::CreateMode::kExclusive, &again).ok());
  ASSERT_TRUE(Container::open(path, false, &again).ok());
  EXPECT_FALSE(again->writable());
  ASSERT_TRUE(again->open_array(a, false, ArrayOptions{}, &arr).ok());
  std::vector<int32_t> back(100, -1);
  ASSERT_TRUE(arr->read(Selection::from_box(Box({0}, {99})), back.data()).ok());
  EXPECT_EQ(back, v) << "the array survives reopening";
  EXPECT_FALSE(arr->write(Selection::from_box(Box({0}, {0})), v.data()).ok()) << "read-only";
  arr.reset();
  again.reset();

  ASSERT_TRUE(Container::remove(path).ok());
  EXPECT_FALSE(Container::is_container(path));
  EXPECT_FALSE(is_directory(Env::posix(), path));
}

// A new array's records put into the caller's batch (a connector creating a dataset):
// nothing reaches the catalog until that batch commits, with the caller's own records,
// and an abandoned creation gives back its inline room and leaves its id unused.
TEST(Container, ArrayCreatedIntoTheCallersBatch) {
  const std::string root = temp_dir(), path = root + "/c.h5";
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
  Schema s = small_schema();
  s.max_extent = {100};
  s.tile_extent = {100};
  s.compact = true;
  const uint64_t used0 = c->inline_budget()->used.load();

  CatalogBatch b1;
  b1.put("test/abandoned", "a");
  uint64_t id1 = 0;
  std::unique_ptr<Array> a1;
  ASSERT_TRUE(c->create_and_open_array_into(s, true, ArrayOptions{}, &b1, &id1, &a1).ok());
  EXPECT_GT(c->inline_budget()->used.load(), used0) << "a compact array's room is taken at creation";
  EXPECT_FALSE(c->catalog().contains(Container::array_prefix(id1) + "schema")) << "nothing committed yet";
  a1.reset();
  c->abandon_array(id1);
  EXPECT_EQ(c->inline_budget()->used.load(), used0) << "the room is given back";

  CatalogBatch b2;
  b2.put("test/object", "b");
  uint64_t id2 = 0;
  std::unique_ptr<Array> a2;
  ASSERT_TRUE(c->create_and_open_array_into(s, true, ArrayOptions{}, &b2, &id2, &a2).ok());
  EXPECT_EQ(id2, id1) << "the abandoned id was never handed out";
  c->catalog().commit(b2);
  EXPECT_TRUE(c->catalog().contains(Container::array_prefix(id2) + "schema"));
  EXPECT_TRUE(c->catalog().contains("test/object")) << "one commit: the caller's records and the array's";
  std::vector<int32_t> v(100);
  for (int i = 0; i < 100; ++i) v[i] = 7 * i - 3;
  ASSERT_TRUE(a2->write(Selection::from_box(Box({0}, {99})), v.data()).ok());
  ASSERT_TRUE(a2->flush().ok());
  a2.reset();
  uint64_t id3 = 0;
  ASSERT_TRUE(c->create_array(small_schema(), &id3).ok());
  EXPECT_NE(id3, id2) << "the counter moved with the caller's commit";
  c.reset();

  ASSERT_TRUE(Container::open(path, false, &c).ok());
  EXPECT_TRUE(c->catalog().contains("test/object"));
  EXPECT_FALSE(c->catalog().contains("test/abandoned"));
  std::unique_ptr<Array> back;
  ASSERT_TRUE(c->open_array(id2, false, ArrayOptions{}, &back).ok());
  std::vector<int32_t> got(100, -1);
  ASSERT_TRUE(back->read(Selection::from_box(Box({0}, {99})), got.data()).ok());
  EXPECT_EQ(got, v) << "written through the array opened before its records committed";
}

TEST(Container, NotAContainer) {
  const std::string root = temp_dir();
  std::unique_ptr<Container> c;
  EXPECT_FALSE(Container::is_container(root)) << "a plain directory";
  Status st = Container::open(root + "/missing.h5", false, &c);
  EXPECT_EQ(st.code(), Errc::kNotFound) << st.message();
  const std::string file = root + "/plain.h5";
  const char junk[] = "not a container";
  write_file_atomic(Env::posix(), file, junk, sizeof junk);
  EXPECT_FALSE(Container::is_container(file));
  EXPECT_FALSE(Container::open(file, false, &c).ok());
  EXPECT_FALSE(Container::remove(file).ok()) << "remove refuses what is not a container";
  EXPECT_TRUE(path_exists(Env::posix(), file) && !is_directory(Env::posix(), file)) << "and leaves it alone";
}

// docs/format.md "Format versions": the header says version 2; a container of version 1
// (a development build's, whose other formats this build does not read) is refused on
// open, naming it and both versions, and H5Fcreate's truncation may replace it.
TEST(Container, DevelopmentVersionsAreRefusedAndMayBeRecreated) {
  const std::string path = temp_dir() + "/c";
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
  c.reset();
  const std::string header = path + "/tessera.container";
  std::vector<uint8_t> h = read_file(Env::posix(), header);
  ASSERT_EQ(h.size(), 24u);
  uint32_t ver;
  std::memcpy(&ver, h.data() + 8, 4);
  EXPECT_EQ(ver, 2u);
  ver = 1;
  std::memcpy(h.data() + 8, &ver, 4);
  const uint64_t ck = checksum64(h.data(), 16);
  std::memcpy(h.data() + 16, &ck, 8);
  write_file_atomic(Env::posix(), header, h.data(), h.size());
  for (bool writable : {false, true}) {
    Status st = Container::open(path, writable, &c);
    ASSERT_FALSE(st.ok()) << "a version 1 container opened";
    EXPECT_EQ(st.code(), Errc::kUnsupported) << st.message();
    EXPECT_NE(st.message().find("container '" + path + "': format version 1 is not supported (this build reads "
                                "version 2 only)"),
              std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("development build of tessera"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("re-create it"), std::string::npos) << st.message();
  }
  EXPECT_TRUE(Container::is_container(path)) << "still a tessera container, only not one this build reads";
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kTruncate, &c).ok());
  c.reset();
  EXPECT_TRUE(Container::open(path, false, &c).ok()) << "the re-created container";
}

// What a power loss during a creation that committed nothing leaves (the header's bytes
// and names are synced only before the catalog's first record, pending_names.h): a create
// must be able to replace it; anything holding a record or a foreign name it must not.
TEST(Container, TruncateReplacesWhatAnUnfinishedCreationLeft) {
  Env& env = Env::posix();
  const std::string root = temp_dir();
  auto leftover = [&](const std::string& p, const std::string& header, uint64_t log_bytes) {
    make_dir(env, p);
    make_dir(env, p + "/arrays");
    File h = File::open_rw(env, p + "/tessera.container", true);
    h.pwrite_all(header.data(), header.size(), 0);
    File l = File::open_rw(env, p + "/catalog.log", true);
    const std::vector<uint8_t> zeros(log_bytes, 0);
    l.pwrite_all(zeros.data(), zeros.size(), 0);
  };
  // Empty header, empty catalog (both names made, no bytes durable).
  const std::string a = root + "/a.h5";
  leftover(a, "", 0);
  EXPECT_FALSE(Container::is_container(a));
  EXPECT_TRUE(Container::is_unfinished(env, a));
  std::unique_ptr<Container> c;
  Status st = Container::create(a, Container::CreateMode::kTruncate, &c);
  ASSERT_TRUE(st.ok()) << st.message();
  c.reset();
  EXPECT_TRUE(Container::is_container(a));
  // A torn header and a catalog holding at most its own 16-byte header.
  const std::string b = root + "/b.h5";
  leftover(b, "TSRAC", 16);
  EXPECT_TRUE(Container::is_unfinished(env, b));
  EXPECT_TRUE(Container::create(b, Container::CreateMode::kTruncate, &c).ok());
  c.reset();
  // Exclusive creation still refuses it: the name exists.
  const std::string b2 = root + "/b2.h5";
  leftover(b2, "", 0);
  EXPECT_FALSE(Container::create(b2, Container::CreateMode::kExclusive, &c).ok());
  // A catalog holding more than its header is not a leftover of a creation: refused.
  const std::string d = root + "/d.h5";
  leftover(d, "", 40);
  EXPECT_FALSE(Container::is_unfinished(env, d));
  EXPECT_FALSE(Container::create(d, Container::CreateMode::kTruncate, &c).ok());
  EXPECT_TRUE(path_exists(env, d + "/catalog.log")) << "left alone";
  // A name the container never makes: someone else's directory, refused.
  const std::string e = root + "/e.h5";
  leftover(e, "", 0);
  File(File::open_rw(env, e + "/notes.txt", true));
  EXPECT_FALSE(Container::is_unfinished(env, e));
  EXPECT_FALSE(Container::create(e, Container::CreateMode::kTruncate, &c).ok());
  EXPECT_TRUE(path_exists(env, e + "/notes.txt")) << "left alone";
  // An empty directory stays refused, as before.
  const std::string f = root + "/f.h5";
  make_dir(env, f);
  EXPECT_FALSE(Container::is_unfinished(env, f));
  EXPECT_FALSE(Container::create(f, Container::CreateMode::kTruncate, &c).ok());
  remove_tree(env, root);
}

// H5Ocopy of a dataset (copy_array): the copy reads what the source array stored, in
// another container and in the same one, and the source is left as it was.
TEST(Container, CopyArray) {
  const std::string root = temp_dir();
  std::unique_ptr<Container> src, dst;
  ASSERT_TRUE(Container::create(root + "/src.h5", Container::CreateMode::kExclusive, &src).ok());
  ASSERT_TRUE(Container::create(root + "/dst.h5", Container::CreateMode::kExclusive, &dst).ok());
  uint64_t a = 0;
  ASSERT_TRUE(src->create_array(small_schema(), &a).ok());
  std::vector<int32_t> v(100);
  for (int i = 0; i < 100; ++i) v[i] = 3 * i + 1;
  {
    std::unique_ptr<Array> arr;
    ASSERT_TRUE(src->open_array(a, true, ArrayOptions{}, &arr).ok());
    ASSERT_TRUE(arr->write(Selection::from_box(Box({0}, {99})), v.data()).ok());
    ASSERT_TRUE(arr->flush().ok());
  }
  for (Container* to : {dst.get(), src.get()}) {
    uint64_t b = 0;
    ASSERT_TRUE(to->create_array(small_schema(), &b).ok());
    ASSERT_TRUE(to->copy_array(*src, a, b).ok());
    std::unique_ptr<Array> copy;
    ASSERT_TRUE(to->open_array(b, false, ArrayOptions{}, &copy).ok());
    std::vector<int32_t> back(100, -1);
    ASSERT_TRUE(copy->read(Selection::from_box(Box({0}, {99})), back.data()).ok());
    EXPECT_EQ(back, v) << (to == src.get() ? "within the container" : "between containers");
  }
  std::unique_ptr<Array> orig;
  ASSERT_TRUE(src->open_array(a, false, ArrayOptions{}, &orig).ok());
  std::vector<int32_t> back(100, -1);
  ASSERT_TRUE(orig->read(Selection::from_box(Box({0}, {99})), back.data()).ok());
  EXPECT_EQ(back, v) << "the source is unchanged";
  src.reset();
  dst.reset();
  remove_tree(Env::posix(), root);
}
