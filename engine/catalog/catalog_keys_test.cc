// The crash-safe key/value catalog (engine/catalog/catalog.h): key order and lookups
// (every byte and length, the inline limit, hinted positions).
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
