// ThreadPool (thread_pool.h): every task runs once, results and exceptions come back
// through the futures, and destroying the pool finishes the tasks still queued.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "engine/util/thread_pool.h"

using namespace tessera;

TEST(ThreadPool, RunsEveryTaskAndReturnsResults) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3u);
  std::vector<std::future<int>> f;
  for (int i = 0; i < 200; ++i) f.push_back(pool.submit([i] { return i * i; }));
  for (int i = 0; i < 200; ++i) EXPECT_EQ(f[i].get(), i * i);
  auto bad = pool.submit([]() -> int { throw std::runtime_error("boom"); });
  EXPECT_THROW(bad.get(), std::runtime_error);
  EXPECT_EQ(pool.submit([] { return 7; }).get(), 7);  // a throwing task leaves the pool working
}

TEST(ThreadPool, DestructionFinishesQueuedTasks) {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(2);
    for (int i = 0; i < 500; ++i) pool.submit([&ran] { ran.fetch_add(1); });
  }
  EXPECT_EQ(ran.load(), 500);
  ThreadPool zero(0);  // asked for none: one worker all the same
  EXPECT_EQ(zero.size(), 1u);
  EXPECT_EQ(zero.submit([] { return 1; }).get(), 1);
}
