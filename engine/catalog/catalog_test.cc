// The crash-safe key/value catalog (engine/catalog/catalog.h): commits, reopening, locks,
// torn tails and corruption, compaction.
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

using KV = std::vector<std::pair<std::string, std::string>>;

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
