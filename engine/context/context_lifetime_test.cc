// A Context outlives every file opened through its Env: an array (or a fragment) may
// hold the last reference to its Context once its container is closed, and its members'
// files close through that Env when the array goes.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>

#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/testing/test_schema.h"
#include "engine/testing/testutil.h"

using namespace tessera;

namespace {

// Counts the descriptors open through it; its destructor records how many were still
// open (a file closed after that would call into a destroyed Env).
std::atomic<int> g_open_at_env_end{-1};
class CountingEnv final : public EnvWrapper {
 public:
  CountingEnv() : EnvWrapper(Env::posix()) {}
  ~CountingEnv() override { g_open_at_env_end = open_.load(); }
  int open(const char* p, int flags, mode_t mode) override {
    int fd = base_.open(p, flags, mode);
    if (fd >= 0) ++open_;
    return fd;
  }
  int close(int fd) override {
    --open_;
    return base_.close(fd);
  }

 private:
  std::atomic<int> open_{0};
};

}  // namespace

TEST(ContextLifetime, AnArrayHoldingTheLastReferenceClosesItsFilesBeforeTheEnvGoes) {
  testutil::TempDir dir("tessera_ctx_lifetime");
  const std::string path = dir.sub("c");
  uint64_t id;
  std::vector<int32_t> v(16 * 32);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i);
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
    ASSERT_TRUE(c->create_array(int32_schema({16, 32}, {kUnlimited, 32}, {8, 16}), &id).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, true, ArrayOptions{}, &a).ok());
    ASSERT_TRUE(a->write(Selection::from_box(Box({0, 0}, {15, 31})), v.data()).ok());
    ASSERT_TRUE(commit_arrays(*c, {a.get()}).ok());
  }
  for (bool writable : {false, true}) {
    g_open_at_env_end = -1;
    std::unique_ptr<Array> a;
    {
      std::unique_ptr<Container> c;
      ASSERT_TRUE(Container::open(path, writable, &c, std::make_shared<Context>(EngineOptions{}, std::make_shared<CountingEnv>())).ok());
      ASSERT_TRUE(c->open_array(id, writable, ArrayOptions{}, &a).ok());
    }  // the container is gone: the array holds the Context
    std::vector<int32_t> back(v.size(), -1);
    ASSERT_TRUE(a->read(Selection::from_box(Box({0, 0}, {15, 31})), back.data()).ok());
    EXPECT_EQ(back, v);
    a.reset();
    EXPECT_EQ(g_open_at_env_end.load(), 0) << (writable ? "writable" : "read-only")
                                           << ": files still open when the Context's Env was destroyed";
  }
}
