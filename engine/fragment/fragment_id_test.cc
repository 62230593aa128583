// FragmentId's file-name stem: parse accepts exactly the names name() writes.
#include "engine/fragment/fragment_id.h"

#include <gtest/gtest.h>

#include <random>

namespace tessera {
namespace {

TEST(FragmentId, NameAndParseRoundTripAndSortAlike) {
  std::mt19937_64 rng(20);
  std::vector<FragmentId> ids = {{0, 0, 0, 0}, {~0ull, ~0u, ~0u, ~0u}};
  for (int i = 0; i < 2000; ++i)
    ids.push_back({rng(), static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng())});
  for (const FragmentId& id : ids) {
    FragmentId back;
    ASSERT_TRUE(FragmentId::parse(id.name(), &back)) << id.name();
    EXPECT_EQ(back, id) << id.name();
  }
  for (size_t i = 1; i < ids.size(); ++i)
    EXPECT_EQ(ids[i - 1] < ids[i], ids[i - 1].name() < ids[i].name()) << ids[i - 1].name() << " " << ids[i].name();
}

TEST(FragmentId, ParseRejectsEveryOtherSpelling) {
  const std::string good = FragmentId{0x0123456789abcdefull, 1, 2, 3}.name();
  ASSERT_EQ(good, "0123456789abcdef-00000001-00000002-00000003");
  FragmentId id;
  ASSERT_TRUE(FragmentId::parse(good, &id));
  // What sscanf("%16llx") took as well: a leading space, a sign, a 0x prefix, upper case.
  const char* bad[] = {
      " 123456789abcdef-00000001-00000002-00000003", "+123456789abcdef-00000001-00000002-00000003",
      "0x23456789abcdef-00000001-00000002-00000003", "0123456789ABCDEF-00000001-00000002-00000003",
      "0123456789abcdef- 0000001-00000002-00000003", "0123456789abcdef-0x000001-00000002-00000003",
      "0123456789abcdef-00000001-+0000002-00000003", "0123456789abcdef-00000001-00000002-0000000g",
      "0123456789abcdef_00000001-00000002-00000003", "0123456789abcdef-00000001-00000002-0000003",
      "0123456789abcdef-00000001-00000002-000000034", ""};
  for (const char* b : bad) EXPECT_FALSE(FragmentId::parse(b, &id)) << '"' << b << '"';
  // Every single-character change of the canonical name either fails or names another id
  // whose name() is exactly the changed string (no two spellings of one id).
  for (size_t at = 0; at < good.size(); ++at)
    for (int c = 0; c < 256; ++c) {
      std::string s = good;
      if (static_cast<char>(c) == s[at]) continue;
      s[at] = static_cast<char>(c);
      if (FragmentId::parse(s, &id)) {
        EXPECT_EQ(id.name(), s);
      }
    }
}

}  // namespace
}  // namespace tessera
