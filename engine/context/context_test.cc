// Contexts (context.h): an array works with the pools and the tile cache of the context
// it was opened with — not another's, not the process's — keeps that context alive, and
// a forked child starts pools of its own.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <numeric>
#include <vector>

#include "engine/array/array.h"
#include "engine/context/context.h"
#include "engine/testing/testutil.h"

using namespace tessera;

namespace {

Schema deflated() {
  Schema s;
  s.extent = {256, 256};
  s.max_extent = {256, 256};
  s.tile_extent = {64, 64};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  s.filters = FilterPipeline({{FilterType::kShuffle, 0}, {FilterType::kZlib, 1}}, 4);
  return s;
}

std::shared_ptr<Context> small_context() {
  EngineOptions o;
  o.threads = 1;
  o.io_threads = 1;
  o.tile_cache_mb = 16;
  return std::make_shared<Context>(o);
}

std::vector<int32_t> ramp() {
  std::vector<int32_t> v(256 * 256);
  std::iota(v.begin(), v.end(), 7);
  return v;
}

const Selection kAll = Selection::from_box(Box({0, 0}, {255, 255}));

}  // namespace

TEST(Context, ArraysUseTheirOwnContext) {
  testutil::TempDir t("tessera_context");
  const std::string dir = t.sub("a");
  ASSERT_TRUE(Array::create(dir, deflated()).ok());
  auto mine = small_context(), other = small_context();
  const uint64_t process_before = Context::process()->tiles().used();
  ArrayOptions o;
  o.context = mine;
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(dir, true, o, &a).ok());
  EXPECT_EQ(mine->filters().size(), 1u);
  EXPECT_EQ(mine->tiles().budget(), 16u << 20);
  std::vector<int32_t> v = ramp(), back(v.size());
  ASSERT_TRUE(a->write(kAll, v.data()).ok());
  ASSERT_TRUE(a->flush().ok());
  // Reading decodes filtered tiles into this array's context's cache only.
  ASSERT_TRUE(a->read(kAll, back.data()).ok());
  EXPECT_EQ(back, v);
  EXPECT_GE(mine->tiles().used(), 256u * 256 * 4);
  EXPECT_EQ(other->tiles().used(), 0u);
  EXPECT_EQ(Context::process()->tiles().used(), process_before);
  // The array keeps its context alive.
  std::weak_ptr<Context> weak = mine;
  mine.reset();
  o.context.reset();
  EXPECT_FALSE(weak.expired());
  std::fill(back.begin(), back.end(), 0);
  ASSERT_TRUE(a->read(kAll, back.data()).ok());
  EXPECT_EQ(back, v);
  a.reset();
  EXPECT_TRUE(weak.expired());
}

// A child forked after the pools started inherits the pool objects without their
// threads: its filtering must run on pools of its own, not wait forever on the parent's.
TEST(Context, ForkedChildStartsItsOwnPools) {
  testutil::TempDir t("tessera_context_fork");
  const std::string dir = t.sub("a");
  ASSERT_TRUE(Array::create(dir, deflated()).ok());
  auto ctx = small_context();
  ctx->filters().submit([] {}).wait();  // the parent's pool is running
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ArrayOptions o;
    o.context = ctx;
    std::unique_ptr<Array> a;
    if (!Array::open(dir, true, o, &a).ok()) _exit(2);
    std::vector<int32_t> v = ramp(), back(v.size());
    if (!a->write(kAll, v.data()).ok() || !a->flush().ok()) _exit(3);
    if (!a->read(kAll, back.data()).ok() || back != v) _exit(4);
    _exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The parent's pool still works.
  EXPECT_EQ(ctx->filters().submit([] { return 5; }).get(), 5);
}
