// Containers stored in one file (one_file.h, docs/format.md "The one-file container"):
// the same arrays, commits and reopening as a directory; one regular file at the path;
// one writer, readers following it; clear errors for what a pack does not serve.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/container/verify.h"
#include "engine/pack/pack_test_model.h"
#include "engine/testing/testutil.h"
#include "engine/util/file_io.h"

using namespace tessera;

namespace {

Schema schema_1d(uint64_t n, uint64_t tile) {
  Schema s;
  s.extent = {n};
  s.max_extent = {kUnlimited};
  s.tile_extent = {tile};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  return s;
}

Container::Form one_file(bool wrapped) {
  Container::Form f;
  f.one_file = true;
  if (wrapped) f.wrapper = pack_test::fake_wrapper();
  return f;
}

}  // namespace

TEST(OneFileContainer, ArraysSurviveReopeningAndTheContainerIsOneFile) {
  testutil::TempDir tmp("tessera_onefile");
  const std::string path = tmp.sub("c.h5");
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c, nullptr, one_file(true)).ok());
  EXPECT_TRUE(c->one_file());
  uint64_t small = 0, big = 0;
  ASSERT_TRUE(c->create_array(schema_1d(100, 10), &small).ok());
  ASSERT_TRUE(c->create_array(schema_1d(1 << 20, 1 << 16), &big).ok());
  std::vector<int32_t> v(100), w(1 << 20);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i * i);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int32_t>(i * 7 + 1);
  {
    std::unique_ptr<Array> a, b;
    ASSERT_TRUE(c->open_array(small, true, ArrayOptions{}, &a).ok());
    ASSERT_TRUE(c->open_array(big, true, ArrayOptions{}, &b).ok());
    ASSERT_TRUE(a->write(Selection::from_box(Box({0}, {99})), v.data()).ok());
    ASSERT_TRUE(b->write(Selection::from_box(Box({0}, {(1 << 20) - 1})), w.data()).ok());  // a fragment file
    ASSERT_TRUE(commit_arrays(*c, {a.get(), b.get()}).ok());
  }
  c.reset();

  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << "a one-file container is a regular file";
  EXPECT_GE(static_cast<uint64_t>(st.st_size), 4u << 20);
  EXPECT_LT(static_cast<uint64_t>(st.st_size), (4u << 20) * 6 / 5) << "no second copy of the bulk data";
  std::vector<uint8_t> head(8);
  int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_EQ(::read(fd, head.data(), 8), 8);
  ::close(fd);
  EXPECT_EQ(head[1], 'H') << "the file begins with the HDF5 wrapper";
  EXPECT_TRUE(Container::is_container(path));

  ASSERT_TRUE(Container::open(path, false, &c).ok());
  std::unique_ptr<Array> a, b;
  ASSERT_TRUE(c->open_array(small, false, ArrayOptions{}, &a).ok());
  ASSERT_TRUE(c->open_array(big, false, ArrayOptions{}, &b).ok());
  std::vector<int32_t> v2(100), w2(1 << 20);
  ASSERT_TRUE(a->read(Selection::from_box(Box({0}, {99})), v2.data()).ok());
  ASSERT_TRUE(b->read(Selection::from_box(Box({0}, {(1 << 20) - 1})), w2.data()).ok());
  EXPECT_EQ(v2, v);
  EXPECT_EQ(w2, w);
  a.reset();
  b.reset();
  c.reset();

  VerifyReport report;
  ASSERT_TRUE(verify_container(path, VerifyOptions{}, &report).ok());
  EXPECT_TRUE(report.problems.empty()) << report.problems.front();

  ASSERT_TRUE(Container::remove(path).ok());
  EXPECT_FALSE(path_exists(Env::posix(), path));
}

TEST(OneFileContainer, OneWriterAndReadersThatFollowIt) {
  testutil::TempDir tmp("tessera_onefile");
  const std::string path = tmp.sub("c.h5");
  std::unique_ptr<Container> w;
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &w, nullptr, one_file(false)).ok());
  uint64_t id = 0;
  ASSERT_TRUE(w->create_array(schema_1d(1000, 100), &id).ok());
  ASSERT_TRUE(w->sync().ok());

  std::unique_ptr<Container> second;
  Status st = Container::open(path, true, &second);
  EXPECT_EQ(st.code(), Errc::kBusy) << st.message();
  st = Container::open_shadow(path, &second);
  EXPECT_EQ(st.code(), Errc::kUnsupported) << st.message();
  EXPECT_NE(st.message().find("one-file"), std::string::npos) << st.message();

  std::unique_ptr<Container> r;
  ASSERT_TRUE(Container::open(path, false, &r).ok());
  std::unique_ptr<Array> ra;
  ASSERT_TRUE(r->open_array(id, false, ArrayOptions{}, &ra).ok());
  std::vector<int32_t> back(1000, -1), zeros(1000, 0), v(1000);
  for (int i = 0; i < 1000; ++i) v[i] = 1000 - i;
  ASSERT_TRUE(ra->read(Selection::from_box(Box({0}, {999})), back.data()).ok());
  EXPECT_EQ(back, zeros);

  std::unique_ptr<Array> wa;
  ASSERT_TRUE(w->open_array(id, true, ArrayOptions{}, &wa).ok());
  ASSERT_TRUE(wa->write(Selection::from_box(Box({0}, {999})), v.data()).ok());
  ASSERT_TRUE(commit_arrays(*w, {wa.get()}).ok());
  ASSERT_TRUE(ra->refresh().ok());
  ASSERT_TRUE(ra->read(Selection::from_box(Box({0}, {999})), back.data()).ok());
  EXPECT_EQ(back, v) << "a reader that refreshes sees the writer's commit";
}

TEST(OneFileContainer, ReplacesADirectoryContainerAndOpensEither) {
  testutil::TempDir tmp("tessera_onefile");
  const std::string path = tmp.sub("c.h5");
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c, nullptr, Container::Form{}).ok());
  EXPECT_FALSE(c->one_file());
  c.reset();
  ASSERT_TRUE(Container::open(path, true, &c).ok()) << "directory containers keep opening";
  c.reset();
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kTruncate, &c, nullptr, one_file(true)).ok());
  c.reset();
  EXPECT_FALSE(is_directory(Env::posix(), path));
  ASSERT_TRUE(Container::open(path, true, &c).ok());
  EXPECT_TRUE(c->one_file());
  c.reset();
  // And back: truncating a one-file container into a directory.
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kTruncate, &c, nullptr, Container::Form{}).ok());
  EXPECT_FALSE(c->one_file());
  c.reset();
  EXPECT_TRUE(is_directory(Env::posix(), path));

  const std::string plain = tmp.sub("plain.h5");
  {
    int fd = ::open(plain.c_str(), O_RDWR | O_CREAT, 0644);
    const std::vector<uint8_t> w = pack_test::fake_wrapper();
    ASSERT_EQ(::write(fd, w.data(), w.size()), static_cast<ssize_t>(w.size()));
    ::close(fd);
  }
  EXPECT_FALSE(Container::is_container(plain));
  Status st = Container::open(plain, false, &c);
  EXPECT_EQ(st.code(), Errc::kCorrupt);
  EXPECT_NE(st.message().find("not a tessera container"), std::string::npos) << st.message();
}
