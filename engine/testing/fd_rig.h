// fd_rig.h — what the descriptor-bound tests share (engine/tests/descriptor_*_test.cc,
// engine/util/file_cache.h): an Env without syncs, the process's open descriptors, a
// forked child under a real RLIMIT_NOFILE.
#pragma once
#include <gtest/gtest.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <memory>

#include "engine/context/context.h"
#include "engine/util/env.h"
#include "engine/util/file_cache.h"

namespace tessera {
namespace fd_rig {

// Durability is not under test there: thousands of fdatasyncs would be most of a run.
class NoSyncEnv final : public EnvWrapper {
 public:
  NoSyncEnv() : EnvWrapper(Env::posix()) {}
  int fdatasync(int) override { return 0; }
  int fsync(int) override { return 0; }
  int syncfs(int) override { return 0; }
};

inline std::shared_ptr<Context> nosync_context() {
  static auto env = std::make_shared<NoSyncEnv>();
  return std::make_shared<Context>(EngineOptions{}, env);
}

// Entries of /proc/self/fd: every descriptor the process holds.
inline size_t open_descriptors() {
  size_t n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return 0;
  while (struct dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n - 1;  // the listing's own
}

// The process's file cache at bound n for a scope; the automatic bound again after.
class CacheBound {
 public:
  explicit CacheBound(size_t n) {
    FileCache::process().set_capacity(n);
    FileCache::process().reset_peak();
  }
  ~CacheBound() { FileCache::process().set_capacity(0); }
  CacheBound(const CacheBound&) = delete;
  CacheBound& operator=(const CacheBound&) = delete;
};

// Runs body in a forked child whose RLIMIT_NOFILE (soft and hard) is `limit`, the file
// cache at its automatic bound (half of it); the test fails with the child (whose
// failures gtest printed).
inline void in_child(rlim_t limit, const std::function<void()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    struct rlimit rl = {limit, limit};
    if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) ::_exit(3);
    FileCache::process().set_capacity(0);
    FileCache::process().reset_peak();
    body();
    std::fflush(nullptr);
    ::_exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died (signal " << WTERMSIG(status) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's failures are above";
}

}  // namespace fd_rig
}  // namespace tessera
