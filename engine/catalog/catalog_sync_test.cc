// The crash-safe key/value catalog (engine/catalog/catalog.h): kOnSync durability, and
// writes in bounded chunks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/util/bytes.h"
#include "engine/catalog/catalog.h"
#include "engine/util/checksum.h"
#include "engine/util/env.h"
#include "engine/util/error.h"
#include "engine/testing/catalog_fixture.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

// kOnSync: commits are visible at once in the writer, reach the file only at sync(), and
// a process that dies before syncing leaves exactly the synced prefix of its commits.
TEST_F(CatalogTest, OnSyncDurabilityKeepsTheSyncedPrefixAcrossACrash) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto c = rw(true);
    c->set_durability(Catalog::Durability::kOnSync);
    put(*c, "a", "1");
    put(*c, "b", "2");
    if (c->get("b") != std::optional<std::string>("2")) ::_exit(3);  // visible before sync
    c->sync();
    put(*c, "c", "3");  // queued, never synced
    CatalogBatch b;
    b.del("a");
    c->commit(b);
    ::_exit(0);  // a crash: no destructor, no sync
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  auto c = ro();
  EXPECT_EQ(c->get("a"), std::optional<std::string>("1"));
  EXPECT_EQ(c->get("b"), std::optional<std::string>("2"));
  EXPECT_FALSE(c->get("c").has_value());
}

TEST_F(CatalogTest, OnSyncDestructorSyncs) {
  {
    auto c = rw(true);
    c->set_durability(Catalog::Durability::kOnSync);
    put(*c, "x", "y");
    uint64_t before = log_size();
    put(*c, "z", "w");
    EXPECT_EQ(log_size(), before);  // nothing written yet
  }
  auto c = ro();
  EXPECT_EQ(c->get("x"), std::optional<std::string>("y"));
  EXPECT_EQ(c->get("z"), std::optional<std::string>("w"));
}

// kOnSync writes the net effect of the commits since the last sync as one record: a
// random mix of puts, overwrites and deletes — few keys dirty among many (searched) and
// most keys dirty (merge walk) — must replay to exactly the in-memory map, compared with
// an independent std::map model.
TEST_F(CatalogTest, OnSyncNetRecordReplaysToTheModel) {
  using Model = std::map<std::string, std::string>;
  Model model;
  testutil::Rng rng(0x5EC0);
  {
    auto c = rw(true);
    c->set_durability(Catalog::Durability::kOnSync);
    for (int round = 0; round < 6; ++round) {
      // Round 0 fills thousands of keys; even rounds then touch a few (searched), odd
      // rounds rewrite a small key range many times (merge walk).
      const int keys = round % 2 ? 40 : 4000, ops = round == 0 || round % 2 ? 3000 : 20;
      for (int i = 0; i < ops; ++i) {
        CatalogBatch b;
        for (int k = 0, n = 1 + static_cast<int>(rng.below(4)); k < n; ++k) {
          std::string key = "k/" + std::to_string(rng.below(keys));
          if (rng.below(3) == 0) {
            b.del(key);
            model.erase(key);
          } else {
            std::string v(rng.below(64), static_cast<char>('a' + rng.below(26)));
            b.put(key, v);
            model[key] = v;
          }
        }
        if (i % 2) c->commit(std::move(b));
        else c->commit(b);
      }
      c->sync();
      auto got = ro()->scan("");
      Model seen(got.begin(), got.end());
      EXPECT_EQ(seen, model) << "round " << round;
    }
  }
  auto got = ro()->scan("");
  Model seen(got.begin(), got.end());
  EXPECT_EQ(seen, model);
}

// Records the largest single write to catalog.log or catalog.log.tmp (compaction's file).
class MaxWriteEnv final : public EnvWrapper {
 public:
  MaxWriteEnv() : EnvWrapper(Env::posix()) {}
  size_t max_write = 0;
  uint64_t writes = 0;
  int open(const char* path, int flags, mode_t mode) override {
    int fd = base_.open(path, flags, mode);
    std::string p = path;
    auto ends = [&](const std::string& t) { return p.size() >= t.size() && p.compare(p.size() - t.size(), t.size(), t) == 0; };
    if (fd >= 0 && (ends("/catalog.log") || ends("/catalog.log.tmp"))) fds_.insert(fd);
    return fd;
  }
  int close(int fd) override {
    fds_.erase(fd);
    return base_.close(fd);
  }
  ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) override {
    if (fds_.count(fd)) {
      max_write = std::max(max_write, n);
      ++writes;
    }
    return base_.pwrite(fd, buf, n, off);
  }

 private:
  std::set<int> fds_;
};

// A sync's net record and a compacted log of ~10 MiB each (values from 0 to 4 KiB and
// two of 1.5 MiB, deletes among the puts) are written through the chunk buffer: no write
// is larger than Catalog::kChunkBytes, and the log replays to the model after each sync,
// after the compaction and in a new writer.
TEST_F(CatalogTest, LargeSyncsAndCompactionWriteInBoundedChunks) {
  using Model = std::map<std::string, std::string>;
  Model model;
  testutil::Rng rng(0xC4C7);
  auto value = [&](size_t n) {
    std::string v(n, '\0');
    for (char& ch : v) ch = static_cast<char>(rng.byte());
    return v;
  };
  auto replayed = [&] {
    auto all = ro()->scan("");
    return Model(all.begin(), all.end());
  };
  MaxWriteEnv env;
  {
    auto c = Catalog::open(dir_, Catalog::Mode::kReadWrite, true, env);
    c->set_durability(Catalog::Durability::kOnSync);
    for (int round = 0; round < 4; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      for (int i = 0; i < 4000; ++i) {
        CatalogBatch b;
        std::string k = "k/" + std::to_string(i);
        if (round > 0 && rng.below(5) == 0) {
          b.del(k);
          model.erase(k);
        } else {
          std::string v = value(rng.below(4096));
          b.put(k, v);
          model[k] = v;
        }
        c->commit(std::move(b));
      }
      for (int j = 0; j < 2; ++j) {
        CatalogBatch b;
        std::string k = "big/" + std::to_string(j), v = value(1536 * 1024 + rng.below(1000));
        b.put(k, v);
        model[k] = v;
        c->commit(std::move(b));
      }
      env.max_write = 0;
      env.writes = 0;
      c->sync();
      EXPECT_GT(env.writes, 8u) << "the record was not written in chunks";
      EXPECT_LE(env.max_write, Catalog::kChunkBytes) << "a write larger than the chunk buffer";
      EXPECT_TRUE(replayed() == model);
    }
    EXPECT_TRUE(is_directory(Env::posix(), join_path(dir_, Catalog::kHistoryDir))) << "no compaction happened";
  }
  EXPECT_TRUE(replayed() == model);
  auto c = rw();
  auto all = c->scan("");
  EXPECT_TRUE(Model(all.begin(), all.end()) == model);
}
}  // namespace
}  // namespace tessera
