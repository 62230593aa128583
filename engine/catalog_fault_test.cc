// Faults and power losses during the catalog log's own compaction (docs/reliability.md):
// when the log grows past twice its live data, a commit rewrites it (a new log synced,
// the old one linked into catalog.history/, the new one renamed over it).  Commits that
// returned must survive whatever happens to that rewrite:
//   - ENOSPC, EIO or a short write at every point of a few commits around a compaction
//     (FaultEnv): a commit either fails and leaves no trace, or returns; a reopen holds
//     exactly the commits that returned; after the fault the catalog goes on committing;
//   - a power loss after every point (PowerLossEnv): a reopen holds every commit that
//     returned, and at most the one in flight besides;
//   - EIO at every point, the writer going on, then a power loss: every commit that
//     returned survives (a failed directory sync after the rename must not leave later
//     commits in a log whose name is not durable).
// The model: commit j puts "seq" = j and "v/<j mod 8>" = value(j).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine/catalog.h"
#include "engine/fault_env.h"
#include "engine/file_io.h"
#include "engine/power_loss_env.h"
#include "engine/testutil.h"

using namespace tessera;

namespace {

std::string value(uint64_t j) {
  std::string v(600, 'a');
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<char>('a' + (j * 7 + i) % 26);
  return v;
}

void commit_one(Catalog& c, uint64_t j) {
  CatalogBatch b;
  b.put("seq", std::to_string(j));
  b.put("v/" + std::to_string(j % 8), value(j));
  c.commit(b);
}

// The commit the catalog at `dir` holds (0: none), checked against the model: every value
// is that of the last commit up to it.
uint64_t held(const std::string& dir) {
  std::unique_ptr<Catalog> c;
  Status st = guard([&] { c = Catalog::open(dir, Catalog::Mode::kReadOnly, false); });
  EXPECT_TRUE(st.ok()) << "reopen: " << st.message();
  if (!c) return 0;
  auto s = c->get("seq");
  if (!s) return 0;
  const uint64_t seq = std::strtoull(s->c_str(), nullptr, 10);
  for (uint64_t i = 0; i < 8 && i <= seq; ++i) {
    uint64_t j = seq - ((seq - i) % 8);  // the last commit up to seq that wrote v/i
    if (j == 0 || j > seq || (j % 8) != i) continue;
    EXPECT_EQ(c->get("v/" + std::to_string(i)).value_or("(none)"), value(j)) << "v/" << i << " at seq " << seq;
  }
  return seq;
}

void copy_dir(const std::string& from, const std::string& to) {
  make_dir(Env::posix(), to);
  for (const std::string& n : list_dir(Env::posix(), from)) {
    const std::string p = join_path(from, n);
    if (is_directory(Env::posix(), p)) continue;
    auto b = read_file(Env::posix(), p);
    File f = File::open_rw(Env::posix(), join_path(to, n), true);
    f.pwrite_all(b.data(), b.size(), 0);
  }
}

// A catalog whose next commit compacts its log: `first` is that commit's number.
struct Template {
  testutil::TempDir tmp{"tessera_catfault"};
  std::string root = tmp.path();
  std::string dir = root + "/template";
  uint64_t first = 0;
  static constexpr uint64_t kOps = 4;  // the commits under test: first .. first + kOps - 1

  Template() {
    // Find the commit that compacts (catalog.history/ appears), then build the template
    // with the commits before it.
    const std::string probe = root + "/probe";
    {
      auto c = Catalog::open(probe, Catalog::Mode::kReadWrite, true);
      for (uint64_t j = 1; j < 10000 && !first; ++j) {
        commit_one(*c, j);
        if (is_directory(Env::posix(), join_path(probe, Catalog::kHistoryDir))) first = j;
      }
    }
    remove_tree(Env::posix(), probe);
    EXPECT_GT(first, 1u);
    auto c = Catalog::open(dir, Catalog::Mode::kReadWrite, true);
    for (uint64_t j = 1; j < first; ++j) commit_one(*c, j);
  }
  // A copy of the template for one trial.
  std::string trial(const std::string& name) const {
    const std::string d = root + "/" + name;
    copy_dir(dir, d);
    return d;
  }
};

using Fault = FaultEnv::Fault;
const Fault kFaults[] = {Fault::kNoSpace, Fault::kIo, Fault::kShortWrite};

}  // namespace

TEST(CatalogFault, CompactionFaultsLoseNoCommit) {
  Template t;
  if (HasFatalFailure()) return;
  FaultEnv env;
  uint64_t points = 0;
  {
    const std::string d = t.trial("count");
    auto c = Catalog::open(d, Catalog::Mode::kReadWrite, false, env);
    env.reset_count();
    for (uint64_t j = t.first; j < t.first + Template::kOps; ++j) commit_one(*c, j);
    points = env.points();
    ASSERT_TRUE(is_directory(Env::posix(), join_path(d, Catalog::kHistoryDir))) << "no compaction happened";
  }
  uint64_t injected = 0, failed = 0;
  for (uint64_t k = 1; k <= points; ++k)
    for (Fault fault : kFaults) {
      SCOPED_TRACE(std::string(FaultEnv::fault_name(fault)) + " at point " + std::to_string(k) + " of " +
                   std::to_string(points));
      const std::string d = t.trial("p" + std::to_string(k) + FaultEnv::fault_name(fault));
      uint64_t last = t.first - 1;
      {
        auto c = Catalog::open(d, Catalog::Mode::kReadWrite, false, env);
        env.arm(k, fault);
        for (uint64_t j = t.first; j < t.first + Template::kOps; ++j) {
          Status st = guard([&] { commit_one(*c, j); });
          if (st.ok()) last = j;
          else ++failed;
          if (!st.ok()) break;  // the writer sees the failure; what it did is in `last`
        }
        if (env.fired()) ++injected;
        SCOPED_TRACE("fault at " + env.fired_at());
        EXPECT_EQ(held(d), last) << "a reader does not see exactly the commits that returned";
        env.disarm();
        // The catalog goes on once the fault is gone.
        Status st = guard([&] { commit_one(*c, last + 1); });
        ASSERT_TRUE(st.ok()) << "commit after the fault: " << st.message();
        last = last + 1;
      }
      EXPECT_EQ(held(d), last);
      (void)guard([&] { remove_tree(Env::posix(), d); });
      if (HasFatalFailure()) return;
    }
  std::printf("[ faults   ] catalog compaction: %llu points x %zu faults: %llu injected, %llu commits failed\n",
              static_cast<unsigned long long>(points), std::size(kFaults), static_cast<unsigned long long>(injected),
              static_cast<unsigned long long>(failed));
}

TEST(CatalogFault, PowerLossDuringCompactionKeepsEveryReturnedCommit) {
  Template t;
  if (HasFatalFailure()) return;
  PowerLossEnv env(t.root);
  uint64_t points = 0;
  {
    const std::string d = t.trial("count");
    env.settle();
    auto c = Catalog::open(d, Catalog::Mode::kReadWrite, false, env);
    env.stop_after(0);
    for (uint64_t j = t.first; j < t.first + Template::kOps; ++j) commit_one(*c, j);
    points = env.points();
    c.reset();
    env.power_loss();
    EXPECT_EQ(held(d), t.first + Template::kOps - 1) << "commits that returned were lost";
  }
  for (uint64_t k = 1; k <= points; ++k) {
    SCOPED_TRACE("power loss after point " + std::to_string(k) + " of " + std::to_string(points));
    const std::string d = t.trial("p" + std::to_string(k));
    env.settle();
    uint64_t last = t.first - 1;
    {
      auto c = Catalog::open(d, Catalog::Mode::kReadWrite, false, env);
      env.stop_after(k);
      for (uint64_t j = t.first; j < t.first + Template::kOps; ++j)
        if (guard([&] { commit_one(*c, j); }).ok()) last = j;
        else break;
    }
    env.power_loss();
    const uint64_t h = held(d);
    EXPECT_TRUE(h == last || h == last + 1) << "holds commit " << h << ", the last that returned is " << last;
    (void)guard([&] { remove_tree(Env::posix(), d); });
  }
  std::printf("[ power    ] catalog compaction: %llu points: %llu power losses\n",
              static_cast<unsigned long long>(points), static_cast<unsigned long long>(points + 1));
}

TEST(CatalogFault, PowerLossAfterAFailedSyncKeepsEveryReturnedCommit) {
  Template t;
  if (HasFatalFailure()) return;
  FaultEnv faults;
  PowerLossEnv env(t.root, faults);
  uint64_t points = 0;
  {
    const std::string d = t.trial("count");
    auto c = Catalog::open(d, Catalog::Mode::kReadWrite, false, env);
    faults.reset_count();
    for (uint64_t j = t.first; j < t.first + Template::kOps; ++j) commit_one(*c, j);
    points = faults.points();
  }
  for (uint64_t k = 1; k <= points; ++k) {
    SCOPED_TRACE("EIO at point " + std::to_string(k) + " of " + std::to_string(points) + ", then a power loss");
    const std::string d = t.trial("p" + std::to_string(k));
    env.settle();
    uint64_t last = t.first - 1;
    std::string at;
    {
      auto c = Catalog::open(d, Catalog::Mode::kReadWrite, false, env);
      faults.arm(k, Fault::kIo);
      for (uint64_t j = t.first; j < t.first + Template::kOps + 2; ++j) {
        if (!guard([&] { commit_one(*c, j); }).ok()) {
          // Failed: tried again (EIO is once).
          ASSERT_TRUE(guard([&] { commit_one(*c, j); }).ok()) << "the retry failed";
        }
        last = j;
      }
      at = faults.fired_at();
      faults.disarm();
    }
    env.power_loss();
    SCOPED_TRACE("EIO at " + at);
    EXPECT_EQ(held(d), last) << "a commit that returned was lost";
    (void)guard([&] { remove_tree(Env::posix(), d); });
    if (HasFatalFailure()) return;
  }
}
