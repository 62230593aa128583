// The pack under crashes: a power loss after every write, sync and name change of the
// pack file (PowerLossEnv beneath the pack: what survives is exactly what the last
// successful fdatasync of the pack covered), a fault (ENOSPC, EIO, a short write) at
// every such point (FaultEnv beneath), and a writer killed without closing.  The model
// is the same script run on a real directory: after a power loss the tree must equal the
// directory as of the last sync the script saw succeed; after faults, the directory with
// only the calls that succeeded on the pack.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/pack/pack_env.h"
#include "engine/pack/pack_test_model.h"
#include "engine/testing/fault_env.h"
#include "engine/testing/power_loss_env.h"
#include "engine/testing/testutil.h"
#include "engine/util/error.h"

using namespace tessera;
using pack_test::diff;
using pack_test::Snapshot;
using pack_test::snapshot;

namespace {

// One call of the script: on `env` under `root`, descriptors by name; false when the call
// failed.  `sync`: a call after which what came before is durable.
struct Op {
  std::string what;
  bool sync;
  std::function<bool(Env&, const std::string&, std::map<std::string, int>&)> run;
};

std::vector<Op> script(uint64_t seed) {
  testutil::Rng rng(seed);
  std::vector<Op> ops;
  auto add = [&](std::string what, bool sync, auto f) { ops.push_back(Op{std::move(what), sync, f}); };
  auto mkdir = [&](std::string p) {
    add("mkdir " + p, false, [p](Env& e, const std::string& r, auto&) { return e.mkdir((r + "/" + p).c_str(), 0755) == 0; });
  };
  auto create = [&](std::string p) {
    add("create " + p, false, [p](Env& e, const std::string& r, auto& fds) {
      int fd = e.open((r + "/" + p).c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) return false;
      fds[p] = fd;
      return true;
    });
  };
  auto append = [&](std::string p, size_t n) {
    auto bytes = std::make_shared<std::string>(n, '\0');
    rng.fill(reinterpret_cast<uint8_t*>(&(*bytes)[0]), n);
    add("append " + std::to_string(n) + " to " + p, false, [p, bytes](Env& e, const std::string&, auto& fds) {
      auto it = fds.find(p);
      struct stat st;
      if (it == fds.end() || e.fstat(it->second, &st) != 0) return false;
      return e.pwrite(it->second, bytes->data(), bytes->size(), st.st_size) == static_cast<ssize_t>(bytes->size());
    });
  };
  auto datasync = [&](std::string p) {
    add("fdatasync " + p, true, [p](Env& e, const std::string&, auto& fds) {
      auto it = fds.find(p);
      return it != fds.end() && e.fdatasync(it->second) == 0;
    });
  };
  auto dirsync = [&](std::string p) {
    add("fsync dir " + p, true, [p](Env& e, const std::string& r, auto&) {
      int fd = e.open((p.empty() ? r : r + "/" + p).c_str(), O_RDONLY | O_DIRECTORY, 0);
      if (fd < 0) return false;
      const bool ok = e.fsync(fd) == 0;
      e.close(fd);
      return ok;
    });
  };
  auto close = [&](std::string p) {
    add("close " + p, false, [p](Env& e, const std::string&, auto& fds) {
      auto it = fds.find(p);
      if (it == fds.end()) return false;
      e.close(it->second);
      fds.erase(it);
      return true;
    });
  };
  auto rename = [&](std::string a, std::string b) {
    add("rename " + a + " " + b, false,
        [a, b](Env& e, const std::string& r, auto&) { return e.rename((r + "/" + a).c_str(), (r + "/" + b).c_str()) == 0; });
  };
  mkdir("arrays");
  mkdir("arrays/1");
  mkdir("arrays/1/frag");
  create("catalog.log");
  append("catalog.log", 16);
  datasync("catalog.log");
  dirsync("");
  for (int i = 0; i < 4; ++i) {
    const std::string tmp = "arrays/1/frag/." + std::to_string(i) + ".tmp";
    create(tmp);
    for (int c = 0; c < 3; ++c) append(tmp, rng.range(1, 300000));
    datasync(tmp);
    rename(tmp, "arrays/1/frag/" + std::to_string(i) + ".tfr");
    dirsync("arrays/1/frag");
    close(tmp);
    append("catalog.log", rng.range(20, 3000));
    datasync("catalog.log");
    if (i == 1) {
      add("ftruncate catalog.log", false, [](Env& e, const std::string&, auto& fds) {
        struct stat st;
        auto it = fds.find("catalog.log");
        return it != fds.end() && e.fstat(it->second, &st) == 0 && e.ftruncate(it->second, st.st_size - 10) == 0;
      });
      append("catalog.log", 50);
      datasync("catalog.log");
    }
    if (i == 2) {
      add("unlink 0.tfr", false, [](Env& e, const std::string& r, auto&) { return e.unlink((r + "/arrays/1/frag/0.tfr").c_str()) == 0; });
      add("link 1.tfr", false, [](Env& e, const std::string& r, auto&) {
        return e.link((r + "/arrays/1/frag/1.tfr").c_str(), (r + "/arrays/1/frag/1.keep").c_str()) == 0;
      });
      dirsync("arrays/1/frag");
    }
  }
  rename("arrays/1", "arrays/2");
  dirsync("arrays");
  // Most of the data goes: the clean close moves what is left down and cuts the file.
  for (const char* f : {"arrays/2/frag/2.tfr", "arrays/2/frag/3.tfr"}) {
    const std::string p = f;
    add("unlink " + p, false, [p](Env& e, const std::string& r, auto&) { return e.unlink((r + "/" + p).c_str()) == 0; });
  }
  dirsync("arrays/2/frag");
  // Never synced: a power loss takes these away.
  create("late");
  append("late", 5000);
  rename("late", "arrays/late");
  return ops;
}

// The model: the script on a real directory, its tree after each call (0: before any);
// with `only`, the calls it marks alone, and the final tree alone.
std::vector<Snapshot> model_states(const std::vector<Op>& ops, const std::vector<bool>* only = nullptr) {
  testutil::TempDir tmp("tessera_pack_model");
  const std::string dir = tmp.sub("d");
  ::mkdir(dir.c_str(), 0755);
  std::map<std::string, int> fds;
  std::vector<Snapshot> states{snapshot(Env::posix(), dir)};
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!only || (*only)[i]) {
      EXPECT_TRUE(ops[i].run(Env::posix(), dir, fds)) << "model: " << ops[i].what;
    }
    if (!only) states.push_back(snapshot(Env::posix(), dir));
  }
  if (only) states.push_back(snapshot(Env::posix(), dir));
  for (auto& kv : fds) ::close(kv.second);
  return states;
}

void sync_parent(Env& env, const std::string& dir) {
  int fd = env.open(dir.c_str(), O_RDONLY | O_DIRECTORY, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(env.fsync(fd), 0);
  env.close(fd);
}

uint64_t stride() { return testutil::env_u64("TESSERA_FAULT_STRIDE", 1); }

void power_loss_at_every_point(bool wrapped) {
  const auto ops = script(testutil::named_seed("pack_power_loss", 3));
  const auto states = model_states(ops);
  const auto wrapper = wrapped ? pack_test::fake_wrapper() : std::vector<uint8_t>{};
  uint64_t points = 0;
  for (uint64_t k = 1; points == 0 || k <= points; k += stride()) {
    testutil::TempDir tmp("tessera_pack_power");
    const std::string file = tmp.sub("c.tsr");
    auto pl = std::make_shared<PowerLossEnv>(tmp.path());
    std::shared_ptr<PackEnv> env;
    try {
      env = PackEnv::create(pl, file, wrapper, true);
      sync_parent(*pl, tmp.path());
    } catch (const Error&) {
      ASSERT_NE(points, 0u) << "creating the pack failed without a power loss";
      continue;  // the power went during the creation: nothing was promised
    }
    pl->settle();
    if (points) pl->stop_after(k);
    std::map<std::string, int> fds;
    size_t durable = 0, attempted = 0;
    for (size_t i = 0; i < ops.size() && !pl->stopped(); ++i) {
      const bool ok = ops[i].run(*env, file, fds);
      if (ops[i].sync && !pl->stopped()) attempted = i + 1;
      if (ops[i].sync && ok) durable = i + 1;
      if (!points) {
        ASSERT_TRUE(ok) << ops[i].what;
      }
    }
    // The clean close (compaction, checkpoint, cut) counts too: if the power goes during
    // it, the tree is the last synced one or, once the close synced, the final one.
    for (auto& kv : fds) env->close(kv.second);
    fds.clear();
    env.reset();
    if (!points) {  // the first run counts the points
      uint64_t live = 0;
      for (auto& kv : states.back()) live += (kv.second.size() + 4095) / 4096 * 4096;
      struct stat st;
      ASSERT_EQ(::stat(file.c_str(), &st), 0);
      EXPECT_LE(static_cast<uint64_t>(st.st_size), live * 6 / 5 + (256 << 10)) << "the close compacted the pack";
      points = pl->points();
      ASSERT_GT(points, 50u);
      k = 0;
      continue;
    }
    pl->power_loss();
    SCOPED_TRACE("power lost after point " + std::to_string(k) + " of " + std::to_string(points));
    std::shared_ptr<PackEnv> back;
    ASSERT_NO_THROW(back = PackEnv::open(nullptr, file, true));
    const Snapshot got = snapshot(*back, file);
    const std::string d1 = diff(got, states[durable]), d2 = diff(got, states[attempted]),
                      d3 = diff(got, states.back());
    EXPECT_TRUE(d1.empty() || d2.empty() || d3.empty())
        << "the tree is not the one of the last sync (" << ops[durable ? durable - 1 : 0].what << "): " << d1;
  }
}

TEST(PackCrash, PowerLossAtEveryPointLeavesTheLastSyncedTree) { power_loss_at_every_point(false); }
TEST(PackCrash, PowerLossAtEveryPointWithAWrapper) { power_loss_at_every_point(true); }

TEST(PackCrash, FaultAtEveryPointLeavesWhatSucceeded) {
  const auto ops = script(testutil::named_seed("pack_faults", 5));
  uint64_t points = 0;
  {
    testutil::TempDir tmp("tessera_pack_fault");
    auto fe = std::make_shared<FaultEnv>();
    auto env = PackEnv::create(fe, tmp.sub("c.tsr"), {}, true);
    fe->reset_count();
    std::map<std::string, int> fds;
    for (const Op& op : ops) ASSERT_TRUE(op.run(*env, tmp.sub("c.tsr"), fds)) << op.what;
    points = fe->points();
  }
  for (FaultEnv::Fault fault : {FaultEnv::Fault::kNoSpace, FaultEnv::Fault::kIo, FaultEnv::Fault::kShortWrite}) {
    for (uint64_t k = 1; k <= points; k += stride()) {
      SCOPED_TRACE(std::string(FaultEnv::fault_name(fault)) + " at point " + std::to_string(k) + " of " +
                   std::to_string(points));
      testutil::TempDir tmp("tessera_pack_fault");
      const std::string file = tmp.sub("c.tsr");
      auto fe = std::make_shared<FaultEnv>();
      auto env = PackEnv::create(fe, file, k % 2 ? pack_test::fake_wrapper() : std::vector<uint8_t>{}, true);
      fe->arm(k, fault);
      std::map<std::string, int> fds;
      std::vector<bool> ok(ops.size());
      for (size_t i = 0; i < ops.size(); ++i) ok[i] = ops[i].run(*env, file, fds);
      fe->disarm();
      for (auto& kv : fds) env->close(kv.second);
      env.reset();
      const auto states = model_states(ops, &ok);
      std::shared_ptr<PackEnv> back;
      ASSERT_NO_THROW(back = PackEnv::open(nullptr, file, true));
      EXPECT_EQ(diff(snapshot(*back, file), states.back()), "");
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// A writer killed without closing (no checkpoint, no cut): the next writer replays the
// journal, starts past whatever the dead one left, and goes on.
TEST(PackCrash, KilledWriterLeavesEveryCallItMade) {
  const auto ops = script(testutil::named_seed("pack_kill", 9));
  const auto states = model_states(ops);
  testutil::TempDir tmp("tessera_pack_kill");
  const std::string file = tmp.sub("c.tsr");
  pid_t pid = ::fork();
  if (pid == 0) {
    int code = 0;
    try {
      auto env = PackEnv::create(nullptr, file, pack_test::fake_wrapper(), true);
      std::map<std::string, int> fds;
      for (const Op& op : ops)
        if (!op.run(*env, file, fds)) code = 1;
      ::_exit(code);  // no destructor runs: the pack is left as a killed process leaves it
    } catch (...) {
      ::_exit(2);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  auto env = PackEnv::open(nullptr, file, true);
  EXPECT_EQ(diff(snapshot(*env, file), states.back()), "");
  int fd = env->open((file + "/after").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_EQ(env->pwrite(fd, "x", 1, 0), 1);
  env->close(fd);
  env.reset();
  auto again = PackEnv::open(nullptr, file, false);
  Snapshot want = states.back();
  want["after"] = "Fx";
  EXPECT_EQ(diff(snapshot(*again, file), want), "");
}

}  // namespace
