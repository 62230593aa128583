// Damaged inline fragments: catalog records holding a damaged fragment inside a valid
// catalog frame must be caught by the fragment's own checks (corruption_test.cc damages
// the files themselves).
//
// TESSERA_TEST_SEED sets the seed that picks offsets.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_format.h"
#include "engine/tests/corruption_fixture.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using namespace corruption_rig;

// Inline fragments are catalog records holding the bytes of a fragment file.  On disk the
// catalog's record checksum guards them (the test above flips catalog.log bytes); here a
// record is rewritten with a damaged fragment inside a valid catalog frame (a bug, or
// damage in memory), and the fragment's own checks must still catch it when the array is
// opened and read: an error naming the record, or identical data — never wrong data.
TEST(CorruptionInline, DamagedInlineRecordsAreDetected) {
  testutil::TempDir tmp("tessera_corrupt_inline");
  const std::string path = tmp.sub("c");
  Rng rng(testutil::base_seed(kDefaultSeed) ^ 0x1F1);
  std::vector<uint64_t> ids;
  std::map<uint64_t, std::vector<uint8_t>> truth;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
    // A dense fragment (zstd tiles) and a sparse one (unfiltered), both inline.
    for (int k = 0; k < 2; ++k) {
      Schema s;
      s.extent = {12, 10};
      s.max_extent = s.extent;
      s.tile_extent = {4, 8};
      s.elem_size = 4;
      s.kind = ElementKind::kInt;
      s.fill.assign(4, 0x3C);
      if (k == 0) s.filters = FilterPipeline({{FilterType::kZstd, 0}}, 4);
      uint64_t id;
      ASSERT_TRUE(c->create_array(s, &id).ok());
      std::unique_ptr<Array> a;
      ASSERT_TRUE(c->open_array(id, true, ArrayOptions(), &a).ok());
      if (k == 0) {
        std::vector<uint8_t> v(120 * 4);
        rng.fill(v.data(), v.size());
        ASSERT_TRUE(a->write(Selection::from_box(Box({0, 0}, {11, 9})), v.data()).ok());
      } else {
        std::vector<uint64_t> pts = {0, 0, 3, 7, 5, 2, 11, 9};
        std::vector<uint8_t> v(4 * 4);
        rng.fill(v.data(), v.size());
        ASSERT_TRUE(a->write_points(pts.data(), 4, v.data()).ok());
      }
      ASSERT_TRUE(a->flush().ok());
      ASSERT_EQ(a->fragments().size(), 1u);
      EXPECT_FALSE(is_directory(Env::posix(), c->array_dir(id))) << "a small array must not create a directory";
      truth[id] = Corruption::read_all_public(*a);
      ids.push_back(id);
    }
  }
  size_t mutations = 0, silent = 0;
  for (uint64_t id : ids) {
    std::string key, orig;
    {
      std::unique_ptr<Container> c;
      ASSERT_TRUE(Container::open(path, false, &c).ok());
      auto recs = c->catalog().scan(Container::array_prefix(id) + "frag/");
      ASSERT_EQ(recs.size(), 1u) << "the flushed fragment must be one inline record";
      key = recs[0].first;
      orig = recs[0].second;
    }
    auto put = [&](const std::string& v) {
      std::unique_ptr<Container> c;
      ASSERT_TRUE(Container::open(path, true, &c).ok());
      CatalogBatch b;
      b.put(key, v);
      c->catalog().commit(b);
    };
    // Returns true if the damage was noticed (an error naming the record).
    auto check = [&](const std::string& what) -> bool {
      std::unique_ptr<Container> c;
      Status st = Container::open(path, false, &c);
      EXPECT_TRUE(st.ok()) << what << ": " << status_str(st);
      if (!st.ok()) return true;
      std::unique_ptr<Array> a;
      st = c->open_array(id, false, ArrayOptions(), &a);
      std::vector<uint8_t> got;
      if (st.ok()) {
        const Schema& s = a->schema();
        got.resize(s.domain().cells() * s.elem_size);
        st = a->read(Selection::from_box(Box({0, 0}, {11, 9})), got.data());
      }
      if (!st.ok()) {
        EXPECT_NE(st.message().find(key), std::string::npos) << what << ": error does not name the record: " << status_str(st);
        EXPECT_NE(st.code(), Errc::kInternal) << what << ": " << status_str(st);
        return true;
      }
      EXPECT_EQ(got, truth[id]) << what << ": WRONG DATA without an error";
      return false;
    };
    const uint64_t size = orig.size();
    for (uint64_t off = 0; off < size; ++off) {
      std::string bad = orig;
      bad[off] = static_cast<char>(bad[off] ^ static_cast<char>(rng.range(1, 255)));
      put(bad);
      ++mutations;
      const std::string what = key + ": byte " + std::to_string(off) + " of " + std::to_string(size) + " flipped";
      if (!check(what)) {
        ++silent;
        const uint64_t t = size - kFragTrailerSize;
        // The documented unchecked fields of a fragment (see Corruption::unchecked_ok).
        EXPECT_TRUE((off >= 12 && off < kFragHeaderSize) || (off >= t + 24 && off < t + 32))
            << what << ": the damage went unnoticed";
      }
      if (::testing::Test::HasFailure()) break;
    }
    for (uint64_t len : {uint64_t{0}, uint64_t{kFragHeaderSize}, size / 2, size - kFragTrailerSize, size - 1}) {
      put(orig.substr(0, len));
      ++mutations;
      EXPECT_TRUE(check(key + ": truncated to " + std::to_string(len))) << "a truncated inline fragment went unnoticed";
    }
    put(orig);
    EXPECT_FALSE(check(key + ": restored"));
  }
  std::printf("[ seed     ] CorruptionInline: %zu mutations of %zu inline records, %zu silent (reserved fields)\n",
              mutations, ids.size(), silent);
}

}  // namespace
}  // namespace tessera
