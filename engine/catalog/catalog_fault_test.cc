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
// Then a kOnSync sync whose net record is several write buffers long (catalog.h,
// kChunkBytes; against a std::map model): a fault at each chunk's write, the header's
// write and the fdatasync keeps every commit pending and the file at the previous sync;
// a crash before each of those writes leaves a torn tail; a failed cut-back is cut by
// the next sync.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/catalog/catalog.h"
#include "engine/testing/fault_env.h"
#include "engine/util/file_io.h"
#include "engine/testing/power_loss_env.h"
#include "engine/testing/testutil.h"

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

// ---- A sync's net record larger than the write buffer (catalog.h, kChunkBytes) ----------
// The record is written a chunk at a time, its header last.  State A is synced; the
// pending commits B (overwrites, deletes of A's keys, new keys, one value of 2.5 MiB)
// make a record of ~5 MiB, several chunks.  Every check compares with a std::map model.
namespace {

using Model = std::map<std::string, std::string>;

std::string blob(testutil::Rng& rng, size_t n) {
  std::string s(n, '\0');
  for (char& ch : s) ch = static_cast<char>(rng.byte());
  return s;
}

struct BigSync {
  Model a, ab;
  // Commits A into c (kOnSync) in batches of 10; `a` is the model.
  void commit_a(Catalog& c) {
    testutil::Rng rng(0xA11CE);
    CatalogBatch b;
    for (int i = 0; i < 1500; ++i) {
      std::string k = "k/" + std::to_string(i), v = blob(rng, rng.below(3000));
      b.put(k, v);
      a[k] = v;
      if (i % 10 == 9) c.commit(std::move(b));
    }
    std::string big = blob(rng, 1536 * 1024);
    b.put("big/0", big);
    a["big/0"] = big;
    c.commit(std::move(b));
    ab = a;
  }
  void commit_b(Catalog& c) {
    testutil::Rng rng(0xB0B);
    for (int i = 0; i < 1500; ++i) {
      CatalogBatch b;
      std::string k = "k/" + std::to_string(rng.below(1500));
      if (rng.below(4) == 0) {
        b.del(k);
        ab.erase(k);
      } else {
        std::string v = blob(rng, rng.below(3000));
        b.put(k, v);
        ab[k] = v;
      }
      std::string n = "n/" + std::to_string(i), v = blob(rng, rng.below(300));
      b.put(n, v);
      ab[n] = v;
      c.commit(std::move(b));
    }
    CatalogBatch b;
    std::string big = blob(rng, 2560 * 1024);
    b.put("big/1", big);
    ab["big/1"] = big;
    b.del("big/0");
    ab.erase("big/0");
    c.commit(std::move(b));
  }
};

Model view(const Catalog& c) {
  auto all = c.scan("");
  return Model(all.begin(), all.end());
}

Model read_model(const std::string& dir) {
  std::unique_ptr<Catalog> c;
  Status st = guard([&] { c = Catalog::open(dir, Catalog::Mode::kReadOnly, false); });
  EXPECT_TRUE(st.ok()) << "reopen: " << st.message();
  return c ? view(*c) : Model{};
}

uint64_t file_size(const std::string& p) { return File::open_read(Env::posix(), p).size(); }

// Calls on catalog.log's descriptors go through `on_pwrite` first (any other file: straight
// to the base env).
class LogEnv final : public EnvWrapper {
 public:
  explicit LogEnv(Env& base = Env::posix()) : EnvWrapper(base) {}
  std::function<int(int fd, size_t n, off_t off)> on_pwrite;  // an errno fails the write
  bool fail_truncate = false;
  int open(const char* path, int flags, mode_t mode) override {
    int fd = base_.open(path, flags, mode);
    const std::string p = path;
    if (fd >= 0 && p.size() >= 12 && p.compare(p.size() - 12, 12, "/catalog.log") == 0) log_fds_.insert(fd);
    return fd;
  }
  int close(int fd) override {
    log_fds_.erase(fd);
    return base_.close(fd);
  }
  ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) override {
    if (log_fds_.count(fd) && on_pwrite) {
      if (int e = on_pwrite(fd, n, off)) {
        errno = e;
        return -1;
      }
    }
    return base_.pwrite(fd, buf, n, off);
  }
  int ftruncate(int fd, off_t size) override {
    if (fail_truncate && log_fds_.count(fd)) {
      errno = EIO;
      return -1;
    }
    return base_.ftruncate(fd, size);
  }
  // The whole file behind fd, as it is now.
  std::vector<uint8_t> image(int fd) {
    struct stat st;
    EXPECT_EQ(base_.fstat(fd, &st), 0);
    std::vector<uint8_t> out(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < out.size()) {
      ssize_t r = base_.pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
      if (r <= 0) break;
      done += static_cast<size_t>(r);
    }
    out.resize(done);
    return out;
  }

 private:
  std::set<int> log_fds_;
};

}  // namespace

// ENOSPC, EIO or a short write at every point of the sync (each chunk's pwrite, the
// header's, the fdatasync): the sync fails, the file replays to A, the writer still sees
// A+B (tombstones included), and the next sync writes all of B.
TEST(CatalogFault, FaultsAtEveryChunkOfALargeSyncKeepItPending) {
  testutil::TempDir tmp("tessera_catbig");
  FaultEnv env;
  auto setup = [&](const std::string& d, BigSync& s) {
    auto c = Catalog::open(d, Catalog::Mode::kReadWrite, true, env);
    c->set_durability(Catalog::Durability::kOnSync);
    s.commit_a(*c);
    c->sync();
    s.commit_b(*c);
    return c;
  };
  uint64_t points = 0;
  {
    BigSync s;
    const std::string d = tmp.path() + "/count";
    auto c = setup(d, s);
    env.reset_count();
    c->sync();
    points = env.points();
    EXPECT_EQ(read_model(d), s.ab);
  }
  // At least 4 chunks of payload (~3.9 MB), the header and the fdatasync.
  ASSERT_GE(points, 6u);
  std::set<std::string> hit;
  for (uint64_t k = 1; k <= points; ++k)
    for (Fault fault : kFaults) {
      SCOPED_TRACE(std::string(FaultEnv::fault_name(fault)) + " at point " + std::to_string(k) + " of " +
                   std::to_string(points));
      BigSync s;
      const std::string d = tmp.path() + "/p" + std::to_string(k) + FaultEnv::fault_name(fault);
      auto c = setup(d, s);
      env.arm(k, fault);
      Status st = guard([&] { c->sync(); });
      ASSERT_TRUE(env.fired());
      SCOPED_TRACE("fault at " + env.fired_at());
      hit.insert(env.fired_at().substr(0, env.fired_at().find(' ')));
      EXPECT_FALSE(st.ok()) << "the sync did not report the fault";
      EXPECT_TRUE(c->has_pending());
      EXPECT_TRUE(view(*c) == s.ab) << "the writer's view changed";
      EXPECT_TRUE(read_model(d) == s.a) << "the file does not replay to the last synced state";
      env.disarm();
      st = guard([&] { c->sync(); });
      ASSERT_TRUE(st.ok()) << "the sync after the fault: " << st.message();
      EXPECT_FALSE(c->has_pending());
      EXPECT_TRUE(read_model(d) == s.ab) << "the retried sync did not write everything";
      c.reset();
      EXPECT_TRUE(read_model(d) == s.ab);
      (void)guard([&] { remove_tree(Env::posix(), d); });
      if (HasFatalFailure()) return;
    }
  EXPECT_TRUE(hit.count("pwrite") && hit.count("fdatasync")) << "faults hit no write or no sync";
  std::printf("[ faults   ] catalog sync of a %zu-chunk record: %llu points x %zu faults\n",
              static_cast<size_t>(points - 2), static_cast<unsigned long long>(points), std::size(kFaults));
}

// A process that dies during a large sync leaves whatever it wrote so far: an image of the
// log taken before each write of the sync is a crash there.  Every image replays to A,
// and a writer opening it cuts the tail and goes on.  The last image holds the whole
// payload and no header: it must read as a torn tail, not as corruption.
TEST(CatalogFault, ACrashBeforeEachWriteOfALargeSyncLeavesATornTail) {
  testutil::TempDir tmp("tessera_catbig");
  LogEnv env;
  BigSync s;
  const std::string d = tmp.path() + "/w";
  std::vector<std::vector<uint8_t>> images;
  uint64_t size_a = 0;
  {
    auto c = Catalog::open(d, Catalog::Mode::kReadWrite, true, env);
    c->set_durability(Catalog::Durability::kOnSync);
    s.commit_a(*c);
    c->sync();
    size_a = file_size(join_path(d, "catalog.log"));
    s.commit_b(*c);
    env.on_pwrite = [&](int fd, size_t n, off_t) {
      EXPECT_LE(n, Catalog::kChunkBytes) << "a write larger than the chunk buffer";
      images.push_back(env.image(fd));
      return 0;
    };
    c->sync();
    env.on_pwrite = nullptr;
  }
  const uint64_t size_ab = file_size(join_path(d, "catalog.log"));
  EXPECT_TRUE(read_model(d) == s.ab);
  ASSERT_GE(images.size(), 5u) << "the record was not written in chunks";
  const std::vector<uint8_t>& last = images.back();
  ASSERT_EQ(last.size(), size_ab) << "the last write is not the header's";
  EXPECT_TRUE(std::all_of(last.begin() + size_a, last.begin() + size_a + 16, [](uint8_t b) { return b == 0; }))
      << "the header's place is not zero before the header is written";
  for (size_t i = 0; i < images.size(); ++i) {
    SCOPED_TRACE("crash before write " + std::to_string(i + 1) + " of " + std::to_string(images.size()));
    const std::string di = tmp.path() + "/img" + std::to_string(i);
    make_dir(Env::posix(), di);
    {
      File f = File::open_rw(Env::posix(), join_path(di, "catalog.log"), true);
      f.pwrite_all(images[i].data(), images[i].size(), 0);
    }
    EXPECT_TRUE(read_model(di) == s.a) << "a reader does not see the last synced state";
    std::unique_ptr<Catalog> c;
    Status st = guard([&] { c = Catalog::open(di, Catalog::Mode::kReadWrite, false); });
    ASSERT_TRUE(st.ok()) << "a writer cannot open the crash image: " << st.message();
    EXPECT_TRUE(view(*c) == s.a);
    EXPECT_EQ(file_size(join_path(di, "catalog.log")), size_a) << "the torn tail was not cut";
    CatalogBatch b;
    b.put("after", "crash");
    c->commit(b);
    c.reset();
    Model want = s.a;
    want["after"] = "crash";
    EXPECT_TRUE(read_model(di) == want);
    (void)guard([&] { remove_tree(Env::posix(), di); });
  }
}

// A failed sync whose cut-back fails too leaves part of its record past the last good
// one.  The next, shorter record (the big value deleted in between) must not leave those
// bytes after it: the file ends where its last record does.
TEST(CatalogFault, AFailedCutBackIsCutByTheNextSync) {
  testutil::TempDir tmp("tessera_catbig");
  LogEnv env;
  BigSync s;
  const std::string d = tmp.path() + "/w";
  std::vector<size_t> sizes;
  size_t n = 0;
  auto c = Catalog::open(d, Catalog::Mode::kReadWrite, true, env);
  c->set_durability(Catalog::Durability::kOnSync);
  s.commit_a(*c);
  {  // live data enough that the shorter record does not make the log compact
    testutil::Rng rng(0x4EE9);
    CatalogBatch b;
    std::string v = blob(rng, 4 << 20);
    b.put("keep", v);
    s.a["keep"] = s.ab["keep"] = v;
    c->commit(std::move(b));
  }
  c->sync();
  s.commit_b(*c);
  // Count the writes of the sync, then fail the one before the header's (the last chunk).
  env.on_pwrite = [&](int, size_t n, off_t) {
    sizes.push_back(n);
    return 0;
  };
  {
    BigSync s2;
    const std::string d2 = tmp.path() + "/count";
    auto c2 = Catalog::open(d2, Catalog::Mode::kReadWrite, true, env);
    c2->set_durability(Catalog::Durability::kOnSync);
    s2.commit_a(*c2);
    c2->sync();
    s2.commit_b(*c2);
    sizes.clear();
    c2->sync();
  }
  ASSERT_GE(sizes.size(), 5u);
  const size_t fail_at = sizes.size() - 1;  // 1-based: the last chunk
  env.on_pwrite = [&](int, size_t, off_t) { return ++n == fail_at ? EIO : 0; };
  env.fail_truncate = true;
  EXPECT_FALSE(guard([&] { c->sync(); }).ok());
  env.on_pwrite = nullptr;
  env.fail_truncate = false;
  const std::string log = join_path(d, "catalog.log");
  const uint64_t junk_end = file_size(log);
  EXPECT_TRUE(read_model(d) == s.a) << "the failed record's bytes do not read as a torn tail";
  CatalogBatch b;
  b.del("big/1");
  s.ab.erase("big/1");
  c->commit(b);
  ASSERT_TRUE(guard([&] { c->sync(); }).ok());
  EXPECT_TRUE(read_model(d) == s.ab);
  const uint64_t end = file_size(log);
  EXPECT_LT(end, junk_end) << "the file still ends where the failed record's bytes did";
  ASSERT_FALSE(is_directory(Env::posix(), join_path(d, Catalog::kHistoryDir))) << "the log was compacted";
  // A writer reopening a copy cuts any torn tail: nothing to cut.
  const std::string d2 = tmp.path() + "/copy";
  copy_dir(d, d2);
  (void)Catalog::open(d2, Catalog::Mode::kReadWrite, false);
  EXPECT_EQ(file_size(join_path(d2, "catalog.log")), end) << "bytes of the failed record follow the last record";
}

// kOnSync's early write, past 64 MiB of commits, goes through the same buffer: it makes
// them durable before any sync(); when it fails (EIO at its first point), the commit still
// returns, every commit stays pending and sync() writes them all.
TEST(CatalogFault, TheEarlyWritePast64MiBFailsIntoTheNextSync) {
  testutil::TempDir tmp("tessera_catearly");
  for (bool fail : {false, true}) {
    SCOPED_TRACE(fail ? "EIO at the early write" : "no fault");
    FaultEnv env;
    const std::string d = tmp.path() + (fail ? "/fail" : "/ok");
    auto c = Catalog::open(d, Catalog::Mode::kReadWrite, true, env);
    c->set_durability(Catalog::Durability::kOnSync);
    Model model;
    if (fail) env.arm(1, Fault::kIo);
    for (int i = 0; i < 66; ++i) {
      CatalogBatch b;
      std::string k = "v/" + std::to_string(i), v(1 << 20, static_cast<char>('a' + i % 26));
      b.put(k, v);
      model[k] = v;
      ASSERT_TRUE(guard([&] { c->commit(std::move(b)); }).ok()) << "commit " << i;
    }
    EXPECT_TRUE(c->has_pending());
    const size_t durable = read_model(d).size();
    if (fail) {
      EXPECT_TRUE(env.fired());
      EXPECT_EQ(durable, 0u) << "the failed early write left commits in the log";
    } else {
      EXPECT_TRUE(durable >= 63 && durable < 66) << durable << " commits durable before sync()";
    }
    env.disarm();
    ASSERT_TRUE(guard([&] { c->sync(); }).ok());
    EXPECT_FALSE(c->has_pending());
    EXPECT_TRUE(read_model(d) == model);
  }
}
