// Deferred publishing (ArrayOptions::durable_writes = false, the connector's mode): writes
// are readable at once, published only by flush(), and a crash before the flush leaves
// exactly the state of the last flush.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/util/file_io.h"

using namespace tessera;

namespace {

Schema schema() {
  Schema s;
  s.extent = {64, 64};
  s.max_extent = {64, 64};
  s.tile_extent = {16, 16};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  s.filters = FilterPipeline({{FilterType::kShuffle, 0}, {FilterType::kDeflate, 1}}, 4);
  return s;
}

ArrayOptions deferred() {
  ArrayOptions o;
  o.durable_writes = false;
  o.blob_bytes = 0;  // a box write is a fragment of its own here
  o.max_open_writers = 2;
  return o;
}

size_t published(const std::string& dir) {
  size_t n = 0;
  for (auto& name : list_dir(Env::posix(), dir + "/frag"))
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tfr") == 0 && name[0] != '.') ++n;
  return n;
}

std::vector<int32_t> read_all(Array& a) {
  std::vector<int32_t> v(64 * 64);
  EXPECT_TRUE(a.read(Selection::from_box(Box({0, 0}, {63, 63})), v.data()).ok());
  return v;
}

}  // namespace

TEST(Deferred, WritesAreReadableAtOncePublishedAtFlush) {
  char tmpl[] = "/tmp/tessera_deferred_XXXXXX";
  std::string dir = std::string(mkdtemp(tmpl)) + "/a";
  ASSERT_TRUE(Array::create(dir, schema()).ok());
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(dir, true, deferred(), &a).ok());
  std::vector<int32_t> model(64 * 64, 0);
  // Tile-sized writes go to a dense fragment that keeps filtering in the background; as
  // they come in tile order, they are appended to one fragment (Array::write_dense).
  for (int k = 0; k < 8; ++k) {
    std::vector<int32_t> v(16 * 16, k + 1);
    uint64_t r0 = (k / 4) * 16, c0 = (k % 4) * 16;
    ASSERT_TRUE(a->write(Selection::from_box(Box({r0, c0}, {r0 + 15, c0 + 15})), v.data()).ok());
    for (uint64_t i = r0; i < r0 + 16; ++i)
      for (uint64_t j = c0; j < c0 + 16; ++j) model[i * 64 + j] = k + 1;
  }
  std::vector<uint64_t> pts = {1, 1, 40, 40};
  std::vector<int32_t> vals = {-5, -6};
  ASSERT_TRUE(a->write_points(pts.data(), 2, vals.data()).ok());
  model[1 * 64 + 1] = -5;
  model[40 * 64 + 40] = -6;
  EXPECT_EQ(read_all(*a), model);
  EXPECT_EQ(published(dir), 0u) << "nothing may be published before flush";
  ASSERT_TRUE(a->flush().ok());
  EXPECT_EQ(published(dir), 2u) << "the eight tile writes in one fragment, the points in another";
  EXPECT_EQ(read_all(*a), model);
  a.reset();
  ASSERT_TRUE(Array::open(dir, false, ArrayOptions(), &a).ok());
  EXPECT_EQ(read_all(*a), model);
  a.reset();
  std::system(("rm -rf " + dir.substr(0, dir.size() - 2)).c_str());
}

TEST(Deferred, CrashBeforeFlushKeepsTheLastFlushedState) {
  char tmpl[] = "/tmp/tessera_deferred_XXXXXX";
  std::string dir = std::string(mkdtemp(tmpl)) + "/a";
  ASSERT_TRUE(Array::create(dir, schema()).ok());
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::unique_ptr<Array> a;
    if (!Array::open(dir, true, deferred(), &a).ok()) _exit(2);
    std::vector<int32_t> ones(16 * 16, 1), twos(16 * 16, 2);
    if (!a->write(Selection::from_box(Box({0, 0}, {15, 15})), ones.data()).ok()) _exit(3);
    if (!a->flush().ok()) _exit(4);
    if (!a->write(Selection::from_box(Box({0, 0}, {15, 15})), twos.data()).ok()) _exit(5);
    std::vector<int32_t> v(16 * 16);
    if (!a->read(Selection::from_box(Box({0, 0}, {15, 15})), v.data()).ok() || v[0] != 2) _exit(6);
    _exit(0);  // crash: no destructor, no flush
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(dir, false, ArrayOptions(), &a).ok());
  std::vector<int32_t> v(16 * 16);
  ASSERT_TRUE(a->read(Selection::from_box(Box({0, 0}, {15, 15})), v.data()).ok());
  EXPECT_EQ(v, std::vector<int32_t>(16 * 16, 1));
  a.reset();
  std::system(("rm -rf " + dir.substr(0, dir.size() - 2)).c_str());
}
