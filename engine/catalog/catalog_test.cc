// The crash-safe key/value catalog (engine/catalog/catalog.h).
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
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using KV = std::vector<std::pair<std::string, std::string>>;

class CatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera_catalog_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { remove_tree(Env::posix(), dir_); }

  std::unique_ptr<Catalog> rw(bool create = false) { return Catalog::open(dir_, Catalog::Mode::kReadWrite, create); }
  std::unique_ptr<Catalog> ro() { return Catalog::open(dir_, Catalog::Mode::kReadOnly, false); }
  std::string log() const { return join_path(dir_, "catalog.log"); }
  uint64_t log_size() const {
    struct stat st;
    EXPECT_EQ(::stat(log().c_str(), &st), 0);
    return static_cast<uint64_t>(st.st_size);
  }
  void put(Catalog& c, const std::string& k, const std::string& v) {
    CatalogBatch b;
    b.put(k, v);
    c.commit(b);
  }
  // Three commits k1, k2, k3; returns the log size after each.
  std::vector<uint64_t> three_commits() {
    auto c = rw(true);
    std::vector<uint64_t> ends{log_size()};
    for (int i = 1; i <= 3; ++i) {
      put(*c, "k" + std::to_string(i), std::string(40, static_cast<char>('a' + i)));
      ends.push_back(log_size());
    }
    return ends;
  }
  void truncate_log(uint64_t size) { ASSERT_EQ(::truncate(log().c_str(), static_cast<off_t>(size)), 0); }
  void patch_log(uint64_t off, const std::vector<uint8_t>& bytes) {
    File f = File::open_rw(Env::posix(), log(), false);
    f.pwrite_all(bytes.data(), bytes.size(), off);
  }
  uint8_t log_byte(uint64_t off) {
    uint8_t b;
    File::open_read(Env::posix(), log()).pread_exact(&b, 1, off);
    return b;
  }
  template <class F>
  Error error_of(F&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e;
    }
    return Error(Errc::kOk, "no error");
  }

  std::string dir_;
};

TEST_F(CatalogTest, CommitGetScanDelete) {
  auto c = rw(true);
  EXPECT_TRUE(c->writable());
  EXPECT_EQ(c->log_path(), log());
  EXPECT_FALSE(c->get("a").has_value());
  CatalogBatch b;
  b.put("g/1", "one");
  b.put("g/2", "two");
  b.put("h/1", std::string("bin\0ary", 7));
  b.put("g", "root");
  c->commit(b);
  EXPECT_EQ(*c->get("g/1"), "one");
  EXPECT_EQ(c->get("h/1")->size(), 7u);
  EXPECT_EQ(c->scan("g/"), (KV{{"g/1", "one"}, {"g/2", "two"}}));
  EXPECT_EQ(c->scan("").size(), 4u);
  EXPECT_TRUE(c->scan("zz").empty());

  CatalogBatch d;
  d.del("g/1");
  d.put("g/2", "TWO");
  d.del("missing");
  c->commit(d);
  EXPECT_FALSE(c->get("g/1").has_value());
  EXPECT_EQ(c->scan("g/"), (KV{{"g/2", "TWO"}}));
  // count() agrees with scan() and stops at its limit; deleted keys do not count.
  EXPECT_EQ(c->count("g/", 10), c->scan("g/").size());
  EXPECT_EQ(c->count("", 10), c->scan("").size());
  EXPECT_EQ(c->count("", 2), 2u);
  EXPECT_EQ(c->count("zz", 10), 0u);

  uint64_t before = log_size();
  c->commit(CatalogBatch());  // empty batch: nothing written
  EXPECT_EQ(log_size(), before);
}

TEST_F(CatalogTest, ReopenPersistsAndLaterOpsWinWithinBatch) {
  {
    auto c = rw(true);
    CatalogBatch b;
    b.put("x", "1");
    b.put("x", "2");
    b.put("y", "1");
    b.del("y");
    c->commit(b);
    put(*c, "", "empty key");
    put(*c, "z", "");
  }
  for (bool writer : {true, false}) {
    auto c = writer ? rw() : ro();
    EXPECT_EQ(*c->get("x"), "2");
    EXPECT_FALSE(c->get("y").has_value());
    EXPECT_EQ(*c->get(""), "empty key");
    EXPECT_EQ(*c->get("z"), "");
  }
}

TEST_F(CatalogTest, OpenErrors) {
  Error e = error_of([&] { rw(false); });
  EXPECT_EQ(e.code(), Errc::kNotFound);
  EXPECT_NE(std::string(e.what()).find("errno = 2"), std::string::npos) << e.what();
  EXPECT_EQ(error_of([&] { Catalog::open(dir_, Catalog::Mode::kReadOnly, true); }).code(), Errc::kNotFound);
  EXPECT_EQ(error_of([&] { ro(); }).code(), Errc::kNotFound);

  // create=true also makes the directory.
  std::string sub = join_path(dir_, "a/b");
  Catalog::open(sub, Catalog::Mode::kReadWrite, true);
  EXPECT_TRUE(path_exists(Env::posix(), join_path(sub, "catalog.log")));

  auto r = Catalog::open(sub, Catalog::Mode::kReadOnly, false);
  CatalogBatch b;
  b.put("k", "v");
  EXPECT_EQ(error_of([&] { r->commit(b); }).code(), Errc::kInvalidArgument);
  EXPECT_FALSE(r->writable());
}

TEST_F(CatalogTest, BadMagicAndNewerVersion) {
  rw(true);
  patch_log(0, {'X'});
  Error e = error_of([&] { ro(); });
  EXPECT_EQ(e.code(), Errc::kCorrupt);
  EXPECT_NE(std::string(e.what()).find(log()), std::string::npos);
  patch_log(0, {'T'});
  patch_log(8, {2, 0, 0, 0});
  e = error_of([&] { rw(); });
  EXPECT_EQ(e.code(), Errc::kUnsupported);
  EXPECT_NE(std::string(e.what()).find(log()), std::string::npos);
}

TEST_F(CatalogTest, WriterLockExcludesSecondWriterNotReaders) {
  auto w = rw(true);
  Error e = error_of([&] { rw(); });
  EXPECT_EQ(e.code(), Errc::kBusy);
  EXPECT_EQ(std::string(e.what()), "container '" + dir_ + "' is open for writing by another process");
  auto r = ro();  // readers take no lock
  w.reset();
  auto w2 = rw();
  EXPECT_TRUE(w2->writable());
}

TEST_F(CatalogTest, ReaderReloadSeesLaterCommits) {
  auto w = rw(true);
  put(*w, "a", "1");
  auto r = ro();
  EXPECT_EQ(*r->get("a"), "1");
  put(*w, "b", "2");
  CatalogBatch d;
  d.del("a");
  w->commit(d);
  EXPECT_EQ(*r->get("a"), "1");  // a snapshot until reload
  r->reload();
  EXPECT_FALSE(r->get("a").has_value());
  EXPECT_EQ(*r->get("b"), "2");
  r->reload();  // nothing new
  EXPECT_EQ(r->scan(""), (KV{{"b", "2"}}));
  w->reload();  // harmless on the writer
  EXPECT_EQ(*w->get("b"), "2");
}

TEST_F(CatalogTest, ReaderOfFreshlyCreatedEmptyFile) {
  // A writer that crashed right after creating the file leaves it empty.
  File::open_rw(Env::posix(), log(), true);
  auto r = ro();
  EXPECT_TRUE(r->scan("").empty());
  auto w = rw();
  put(*w, "k", "v");
  r->reload();
  EXPECT_EQ(*r->get("k"), "v");
}

TEST_F(CatalogTest, TornTailIsDroppedAtEveryCutPoint) {
  std::vector<uint64_t> ends = three_commits();
  std::vector<uint8_t> full = read_file(Env::posix(), log());
  for (uint64_t cut = ends[2] + 1; cut < ends[3]; ++cut) {
    write_file_atomic(Env::posix(), log(), full.data(), cut);
    {
      auto r = ro();  // a reader stops before the torn record and leaves it alone
      EXPECT_EQ(r->scan("").size(), 2u);
      EXPECT_EQ(log_size(), cut);
    }
    auto c = rw();
    EXPECT_EQ(log_size(), ends[2]) << "writer cuts the torn tail";
    EXPECT_EQ(*c->get("k1"), std::string(40, 'b'));
    EXPECT_EQ(*c->get("k2"), std::string(40, 'c'));
    EXPECT_FALSE(c->get("k3").has_value()) << "a torn batch is invisible";
  }
  // A new commit after recovery lands right after the last good record.
  {
    auto c = rw();
    put(*c, "k4", "four");
  }
  auto c = ro();
  EXPECT_EQ(c->scan(""), (KV{{"k1", std::string(40, 'b')}, {"k2", std::string(40, 'c')}, {"k4", "four"}}));
}

TEST_F(CatalogTest, ZeroFilledTailIsTorn) {
  std::vector<uint64_t> ends = three_commits();
  // Crash with the size extended but blocks never written: zeros over the last record
  // and beyond.
  patch_log(ends[2], std::vector<uint8_t>(ends[3] - ends[2] + 4096, 0));
  {
    auto c = rw();
    EXPECT_EQ(c->scan("").size(), 2u);
    EXPECT_EQ(log_size(), ends[2]);
    put(*c, "k5", "five");
  }
  EXPECT_EQ(*ro()->get("k5"), "five");
}

TEST_F(CatalogTest, PartlyZeroedLastPayloadIsTorn) {
  std::vector<uint64_t> ends = three_commits();
  patch_log(ends[3] - 10, std::vector<uint8_t>(10, 0));          // payload damaged ...
  patch_log(ends[3], std::vector<uint8_t>(100, 0));                // ... only zeros follow
  auto c = rw();
  EXPECT_EQ(c->scan("").size(), 2u);
  EXPECT_EQ(log_size(), ends[2]);
}

TEST_F(CatalogTest, FlippedByteInMiddleRecordIsCorruption) {
  std::vector<uint64_t> ends = three_commits();
  std::vector<uint8_t> full = read_file(Env::posix(), log());
  // Every byte of the middle record: header (length, checksums) and payload.
  for (uint64_t off = ends[1]; off < ends[2]; ++off) {
    write_file_atomic(Env::posix(), log(), full.data(), full.size());
    patch_log(off, {static_cast<uint8_t>(full[off] ^ 0x10)});
    for (bool writer : {false, true}) {
      Error e = error_of([&] { writer ? rw() : ro(); });
      ASSERT_EQ(e.code(), Errc::kCorrupt) << "flip at " << off;
      EXPECT_EQ(std::string(e.what()).rfind("catalog '" + log() + "': corrupt record at offset " +
                                                std::to_string(ends[1]), 0), 0u) << e.what();
    }
    EXPECT_EQ(log_size(), full.size()) << "a corrupt log must not be truncated";
  }
}

TEST_F(CatalogTest, GarbageAfterBadLastRecordIsCorruption) {
  std::vector<uint64_t> ends = three_commits();
  patch_log(ends[3] - 1, {static_cast<uint8_t>(log_byte(ends[3] - 1) ^ 1)});
  patch_log(ends[3], {1, 2, 3});
  EXPECT_EQ(error_of([&] { rw(); }).code(), Errc::kCorrupt);
}

TEST_F(CatalogTest, IntactRecordWithBadOpIsCorruption) {
  std::vector<uint64_t> ends = three_commits();
  ByteWriter payload;
  payload.u32(1);
  payload.u8(7);  // no such op
  payload.str("k");
  ByteWriter rec;
  rec.u32(static_cast<uint32_t>(payload.size()));
  rec.u64(checksum64(payload.buf().data(), payload.size()));
  rec.u32(static_cast<uint32_t>(checksum64(rec.buf().data(), 12)));
  rec.bytes(payload.buf().data(), payload.size());
  patch_log(ends[3], rec.buf());
  Error e = error_of([&] { ro(); });
  EXPECT_EQ(e.code(), Errc::kCorrupt);
  EXPECT_NE(std::string(e.what()).find("corrupt record at offset " + std::to_string(ends[3])),
            std::string::npos) << e.what();
}

TEST_F(CatalogTest, CompactionKeepsContents) {
  auto w = rw(true);
  put(*w, "keep", "this");
  auto r = ro();
  std::string big(1000, 'v');
  for (int i = 0; i < 300; ++i) {
    CatalogBatch b;
    b.put("hot", big + std::to_string(i));
    b.put("tmp" + std::to_string(i), "x");
    b.del("tmp" + std::to_string(i));
    w->commit(b);
  }
  // 300 records of ~1 KB would be ~300 KB without compaction.
  EXPECT_LT(log_size(), 2 * 1100 + 64 * 1024 + 2048);
  EXPECT_FALSE(path_exists(Env::posix(), log() + ".tmp"));
  EXPECT_EQ(*w->get("hot"), big + "299");
  EXPECT_EQ(w->scan(""), (KV{{"hot", big + "299"}, {"keep", "this"}}));

  r->reload();  // follows the renamed-in file
  EXPECT_EQ(r->scan(""), w->scan(""));
  put(*w, "after", "compaction");
  r->reload();
  EXPECT_EQ(*r->get("after"), "compaction");
  w.reset();
  auto again = rw();
  EXPECT_EQ(again->scan("").size(), 3u);
  EXPECT_EQ(*again->get("hot"), big + "299");
}

TEST_F(CatalogTest, CompactionOfEmptyMap) {
  auto w = rw(true);
  std::string big(5000, 'q');
  for (int i = 0; i < 40; ++i) {
    CatalogBatch b;
    b.put("k", big);
    b.del("k");
    w->commit(b);
  }
  EXPECT_LT(log_size(), 64u * 1024);
  EXPECT_TRUE(w->scan("").empty());
  w.reset();
  EXPECT_TRUE(rw()->scan("").empty());
}

}  // namespace
}  // namespace tessera

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

// The map's comparator works eight bytes at a time: keys with long shared prefixes, every
// byte value (0x00, 0x7f/0x80, 0xff) at every position and every length around a word
// boundary must come back in std::string's order, and each must be found again.
TEST_F(CatalogTest, KeyOrderIsBytewiseForEveryLengthAndByte) {
  std::map<std::string, std::string> model;
  testutil::Rng rng(0x0DE4);
  const char bytes[] = {'\0', '\x01', '0', '7', 'a', '\x7f', '\x80', '\xfe', '\xff'};
  const std::string prefixes[] = {"", "a/", "a/000000000000", "a/0000000000001", "l/00000000000000ff/"};
  CatalogBatch b;
  for (int i = 0; i < 3000; ++i) {
    std::string key = prefixes[rng.below(5)];
    for (int k = 0, n = static_cast<int>(rng.below(19)); k < n; ++k) key += bytes[rng.below(sizeof bytes)];
    if (key.empty()) key = "e";
    std::string v = std::to_string(i);
    b.put(key, v);
    model[key] = v;
  }
  {
    auto c = rw(true);
    c->commit(b);
    auto got = c->scan("");
    ASSERT_EQ(KV(model.begin(), model.end()), got);
    for (const auto& [k, v] : model) EXPECT_EQ(c->get(k), v) << testing::PrintToString(k);
    const std::string absent("a/000000000000\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 24);
    EXPECT_EQ(c->get(absent).has_value(), model.count(absent) > 0);
    KV want;
    for (const auto& kv : model)
      if (kv.first.compare(0, 14, "a/000000000000") == 0) want.push_back(kv);
    EXPECT_EQ(c->scan("a/000000000000"), want);
  }
  EXPECT_EQ(ro()->scan(""), KV(model.begin(), model.end()));  // replayed in the same order
}

// Keys live inside the map's nodes up to 36 bytes and in the pool beyond (catalog.h
// Catalog::Key): keys of every length around that boundary (and long ones), rewritten,
// deleted as kOnSync tombstones and as kEachCommit erasures, compacted, replayed, and
// followed by a reader across the compaction's rename: always the model's pairs and order.
TEST_F(CatalogTest, KeysOfEveryLengthAroundTheInlineLimit) {
  std::map<std::string, std::string> model;
  testutil::Rng rng(0x1A71);
  auto key_of = [&](size_t len, int salt) {
    std::string k = "k" + std::to_string(salt) + "/";
    while (k.size() < len) k += static_cast<char>('a' + rng.below(3));
    return k.substr(0, len);
  };
  std::vector<std::string> keys;
  for (size_t len = 3; len <= 48; ++len)
    for (int salt = 0; salt < 4; ++salt) keys.push_back(key_of(len, salt));
  keys.push_back(key_of(200, 5));
  keys.push_back(key_of(5000, 6));
  keys.push_back(std::string(36, '\xff'));
  keys.push_back(std::string(37, '\xff'));
  keys.push_back(std::string(37, '\0'));
  auto r = [&] {
    auto c = rw(true);
    put(*c, "first", "1");
    model["first"] = "1";
    return ro();
  }();
  for (int round = 0; round < 6; ++round) {
    auto c = rw();
    if (round % 2 == 1) c->set_durability(Catalog::Durability::kOnSync);
    for (int i = 0; i < 400; ++i) {
      const std::string& k = keys[rng.below(keys.size())];
      CatalogBatch b;
      if (rng.below(4) == 0) {
        b.del(k);
        model.erase(k);
      } else {
        std::string v(rng.below(64), static_cast<char>('A' + round));
        b.put(k, v);
        model[k] = v;
      }
      c->commit(b);
      const std::string& probe = keys[rng.below(keys.size())];  // right after the commit
      auto m = model.find(probe);
      ASSERT_EQ(c->get(probe), m == model.end() ? std::nullopt : std::optional<std::string>(m->second));
    }
    ASSERT_EQ(c->scan(""), KV(model.begin(), model.end())) << "round " << round;
    for (const std::string& k : keys) {
      auto m = model.find(k);
      EXPECT_EQ(c->get(k), m == model.end() ? std::nullopt : std::optional<std::string>(m->second));
      EXPECT_EQ(c->contains(k), m != model.end());
    }
    c->sync();
    r->reload();  // across compactions (a renamed log) as well as appends
    ASSERT_EQ(r->scan(""), KV(model.begin(), model.end())) << "reader, round " << round;
    KV want;
    for (const auto& kv : model)
      if (kv.first.compare(0, 3, "k2/") == 0) want.push_back(kv);
    EXPECT_EQ(r->scan("k2/"), want);
  }
  EXPECT_EQ(ro()->scan(""), KV(model.begin(), model.end()));
}

// The position hints (catalog.h Catalog::seek): keys of a few kinds, each kind rising
// in runs that go down inside an object (as the connector writes "a/<oid>/units",
// ".../scale", ".../index"), some deleted, some rewritten, lookups of absent keys
// between hinted neighbours; committed one by one and in one kOnSync record, then
// replayed: the model's pairs, and every present and absent key answered as the model.
TEST_F(CatalogTest, HintedPositionsForInterleavedRisingRuns) {
  std::map<std::string, std::string> model;
  testutil::Rng rng(0x5EE4);
  auto hex = [](uint64_t id) {
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(id));
    return std::string(b);
  };
  auto check = [&](Catalog& c, const std::string& what) {
    ASSERT_EQ(c.scan(""), KV(model.begin(), model.end())) << what;
    for (int id = 0; id <= 301; ++id) {
      for (const char* k : {"o/", "a/", "arr/", "b/"}) {
        for (const char* tail : {"", "/units", "/scale", "/index", "/cells", "/files", "/schema", "/zz"}) {
          std::string key = std::string(k) + hex(static_cast<uint64_t>(id)) + tail;
          auto m = model.find(key);
          ASSERT_EQ(c.get(key), m == model.end() ? std::nullopt : std::optional<std::string>(m->second))
              << what << " " << key;
          ASSERT_EQ(c.contains(key), m != model.end()) << what << " " << key;
        }
      }
    }
  };
  for (int durable = 0; durable < 2; ++durable) {
    model.clear();
    remove_tree(Env::posix(), dir_);
    auto c = rw(true);
    if (durable == 1) c->set_durability(Catalog::Durability::kOnSync);
    for (int id = 1; id <= 300; ++id) {
      const std::string h = hex(static_cast<uint64_t>(id));
      std::vector<std::pair<std::string, std::string>> ops = {
          {"o/" + h, "obj"},          {"arr/" + h + "/schema", "s"}, {"arr/" + h + "/files", "1"},
          {"a/" + h + "/units", "u"}, {"a/" + h + "/scale", "c"},    {"a/" + h + "/index", "i"},
          {"a/" + h + "/units", "U"}, {"arr/" + h + "/cells", "x"}};
      for (auto& [k, v] : ops) {
        CatalogBatch b;
        b.put(k, v);
        model[k] = v;
        if (rng.below(10) == 0) {  // now and then a deletion of an earlier key
          std::string gone = "a/" + hex(rng.below(static_cast<uint64_t>(id)) + 1) + "/scale";
          b.del(gone);
          model.erase(gone);
        }
        c->commit(b);
        std::string probe = "a/" + hex(rng.below(static_cast<uint64_t>(id) + 2)) + "/scale";
        auto m = model.find(probe);
        ASSERT_EQ(c->get(probe), m == model.end() ? std::nullopt : std::optional<std::string>(m->second));
      }
    }
    check(*c, durable ? "kOnSync writer" : "writer");
    c->sync();
    check(*c, "after sync");
    c.reset();
    check(*ro(), durable ? "replayed kOnSync record" : "replayed commits");
  }
}

}  // namespace
}  // namespace tessera
