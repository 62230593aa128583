// The publish journal (publish_journal.h): its bytes as docs/format.md lays them out
// (built here by hand, independently of the encoder), round trips of serial and epoch
// journals, the roll-forward rule, and every truncation and flipped byte refused as
// corrupt — recovery drops such a journal, since no rename began before it was whole.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/util/checksum.h"
#include "engine/util/error.h"
#include "engine/util/file_io.h"
#include "engine/publish/publish_journal.h"
#include "engine/testing/testutil.h"

using namespace tessera;

namespace {

void put(std::vector<uint8_t>& b, const void* p, size_t n) {
  const uint8_t* c = static_cast<const uint8_t*>(p);
  b.insert(b.end(), c, c + n);
}
template <class T>
void put_le(std::vector<uint8_t>& b, T v) {
  for (size_t i = 0; i < sizeof v; ++i) b.push_back(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
}
void put_str(std::vector<uint8_t>& b, const std::string& s) {
  put_le<uint32_t>(b, static_cast<uint32_t>(s.size()));
  put(b, s.data(), s.size());
}

// docs/format.md: "TSRAJRNL", u32 version, [u64 epoch], u64 count, (str, str)* (u32
// length + bytes), u8 flag, [u64-length blob], u64 XXH3-64 of everything before.
std::vector<uint8_t> by_hand(uint64_t epoch, const std::vector<std::pair<std::string, std::string>>& moves,
                             const std::vector<uint8_t>& schema) {
  std::vector<uint8_t> b;
  put(b, "TSRAJRNL", 8);
  put_le<uint32_t>(b, epoch ? 2 : 1);
  if (epoch) put_le<uint64_t>(b, epoch);
  put_le<uint64_t>(b, moves.size());
  for (auto& [f, t] : moves) {
    put_str(b, f);
    put_str(b, t);
  }
  put_le<uint8_t>(b, schema.empty() ? 0 : 1);
  if (!schema.empty()) {
    put_le<uint64_t>(b, schema.size());
    put(b, schema.data(), schema.size());
  }
  put_le<uint64_t>(b, checksum64(b.data(), b.size()));
  return b;
}

PublishJournal sample(uint64_t epoch, bool schema) {
  PublishJournal j;
  j.epoch = epoch;
  j.moves = {{"/a/frag/.x.1.tmp", "/a/frag/x.tfr"}, {"/a/frag/.y.2.tmp", "/a/frag/y.tfr"}};
  if (schema) j.schema = {1, 2, 3, 4, 5};
  return j;
}

}  // namespace

TEST(PublishJournal, BytesAreTheDocumentedLayout) {
  for (uint64_t epoch : {uint64_t{0}, uint64_t{7}})
    for (bool schema : {false, true}) {
      PublishJournal j = sample(epoch, schema);
      EXPECT_EQ(j.encode(), by_hand(epoch, j.moves, j.schema)) << epoch << schema;
      PublishJournal d = PublishJournal::decode(by_hand(epoch, j.moves, j.schema), "test");
      EXPECT_EQ(d.epoch, epoch);
      EXPECT_EQ(d.moves, j.moves);
      EXPECT_EQ(d.schema, j.schema);
    }
}

TEST(PublishJournal, WrittenAndReadBack) {
  testutil::TempDir t("tessera_journal");
  const std::string p = t.sub("publish.journal");
  for (bool durable : {false, true}) {
    PublishJournal j = sample(3, true);
    j.write(Env::posix(), p, durable);
    PublishJournal r = PublishJournal::read(Env::posix(), p);
    EXPECT_EQ(r.epoch, 3u);
    EXPECT_EQ(r.moves, j.moves);
    EXPECT_EQ(r.schema, j.schema);
  }
  PublishJournal empty;
  empty.write(Env::posix(), p, true);
  EXPECT_TRUE(PublishJournal::read(Env::posix(), p).moves.empty());
}

TEST(PublishJournal, SerialRollsForwardEpochsOnlyWhenCommitted) {
  EXPECT_TRUE(sample(0, false).forward(0));
  EXPECT_TRUE(sample(0, false).forward(9));
  EXPECT_FALSE(sample(5, false).forward(4));
  EXPECT_TRUE(sample(5, false).forward(5));
  EXPECT_TRUE(sample(5, false).forward(6));
}

TEST(PublishJournal, DamageIsCorruptNeverACrash) {
  const std::vector<uint8_t> b = sample(2, true).encode();
  for (size_t n = 0; n < b.size(); ++n) {
    std::vector<uint8_t> c(b.begin(), b.begin() + static_cast<long>(n));
    try {
      (void)PublishJournal::decode(c, "test");
      ADD_FAILURE() << "a journal cut at " << n << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kCorrupt) << n;
    }
  }
  for (size_t i = 0; i < b.size(); ++i) {
    std::vector<uint8_t> c = b;
    c[i] ^= 0x5a;
    try {
      (void)PublishJournal::decode(c, "test");
      ADD_FAILURE() << "a journal with byte " << i << " flipped was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kCorrupt) << i;
    }
  }
  // A well-formed checksum over a bad structure is refused too.
  std::vector<uint8_t> bad = by_hand(0, {}, {});
  bad[8] = 3;  // version 3
  put_le<uint64_t>(bad, 0);
  bad.resize(bad.size() - 16);
  put_le<uint64_t>(bad, checksum64(bad.data(), bad.size()));
  EXPECT_THROW((void)PublishJournal::decode(bad, "test"), Error);
}

// Recovery's file side: forward renames what is left (a crash may have done some),
// a reader reads through the temporary files instead, back removes them, and a move
// naming another directory is never followed.
TEST(PublishJournal, RollForwardBackAndReadThrough) {
  for (int mode = 0; mode < 3; ++mode) {  // 0 forward writer, 1 forward reader, 2 back
    testutil::TempDir t("tessera_journal_roll");
    const std::string frag = t.sub("frag"), other = t.sub("other");
    make_dir(Env::posix(), frag);
    make_dir(Env::posix(), other);
    auto touch = [](const std::string& p) { write_file_atomic(Env::posix(), p, "x", 1, false); };
    touch(frag + "/.a.tmp");
    touch(frag + "/b.tfr");  // already renamed before the crash
    touch(other + "/.c.tmp");
    PublishJournal j;
    j.moves = {{frag + "/.a.tmp", frag + "/a.tfr"},
               {frag + "/.b.tmp", frag + "/b.tfr"},
               {other + "/.c.tmp", frag + "/c.tfr"}};
    std::vector<std::string> through;
    j.roll(Env::posix(), frag, /*forward=*/mode != 2, /*writable=*/mode != 1, &through);
    if (mode == 0) {
      EXPECT_TRUE(path_exists(Env::posix(), frag + "/a.tfr"));
      EXPECT_FALSE(path_exists(Env::posix(), frag + "/.a.tmp"));
      EXPECT_TRUE(through.empty());
    } else if (mode == 1) {
      EXPECT_TRUE(path_exists(Env::posix(), frag + "/.a.tmp"));
      EXPECT_EQ(through, std::vector<std::string>{frag + "/.a.tmp"});
    } else {
      EXPECT_FALSE(path_exists(Env::posix(), frag + "/.a.tmp"));
      EXPECT_FALSE(path_exists(Env::posix(), frag + "/a.tfr"));
    }
    EXPECT_TRUE(path_exists(Env::posix(), frag + "/b.tfr"));
    EXPECT_TRUE(path_exists(Env::posix(), other + "/.c.tmp"));  // outside the array: untouched
    EXPECT_FALSE(path_exists(Env::posix(), frag + "/c.tfr"));
  }
}
