// Variable-length cells: random writes of strings through every write path, checked
// against a plain model after each step, across flushes, reopen and consolidation.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "engine/container/container.h"

using namespace tessera;

namespace {

std::string tmpdir() {
  char tmpl[] = "/tmp/tessera_var_XXXXXX";
  return mkdtemp(tmpl);
}

std::string random_string(std::mt19937_64& rng) {
  std::string s(rng() % 5 == 0 ? 0 : rng() % 40, 'x');
  for (auto& c : s) c = static_cast<char>('a' + rng() % 26);
  return s;
}

}  // namespace

TEST(VarLength, RandomOpsMatchModel) {
  const uint64_t seed = std::getenv("TESSERA_TEST_SEED") ? std::strtoull(std::getenv("TESSERA_TEST_SEED"), nullptr, 10) : 99;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::string dir = tmpdir();
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(dir + "/c", Container::CreateMode::kExclusive, &c).ok());
  Schema s;
  s.extent = {30, 20};
  s.max_extent = {kUnlimited, 20};
  s.tile_extent = {7, 6};
  s.elem_size = kVarDescriptorSize;
  s.var = true;
  s.filters = FilterPipeline({{FilterType::kZstd, 1}}, kVarDescriptorSize);
  uint64_t id;
  ASSERT_TRUE(c->create_array(s, &id).ok());
  ArrayOptions opts;
  opts.direct_cells = 30;
  opts.buffer_budget = 4096;  // spills mid-run
  std::unique_ptr<Array> a;
  ASSERT_TRUE(c->open_array(id, true, opts, &a).ok());
  std::vector<std::string> model(30 * 20);
  for (int step = 0; step < 300; ++step) {
    int op = static_cast<int>(rng() % 6);
    if (op <= 1) {  // box (small boxes buffer, larger ones go direct)
      uint64_t r0 = rng() % 30, c0 = rng() % 20;
      uint64_t r1 = r0 + rng() % (30 - r0), c1 = c0 + rng() % (20 - c0);
      std::vector<uint64_t> len;
      std::string data;
      for (uint64_t i = r0; i <= r1; ++i)
        for (uint64_t j = c0; j <= c1; ++j) {
          std::string v = random_string(rng);
          model[i * 20 + j] = v;
          len.push_back(v.size());
          data += v;
        }
      ASSERT_TRUE(a->write_var(Selection::from_box(Box({r0, c0}, {r1, c1})), len.data(), data.data()).ok());
    } else if (op == 2) {  // points with a duplicate: the later wins
      std::vector<uint64_t> co, len;
      std::string data;
      for (int k = 0; k < 5; ++k) {
        uint64_t i = rng() % 30, j = rng() % 20;
        std::string v = random_string(rng);
        co.insert(co.end(), {i, j});
        len.push_back(v.size());
        data += v;
        model[i * 20 + j] = v;
      }
      ASSERT_TRUE(a->write_points_var(co.data(), 5, len.data(), data.data()).ok());
    } else if (op == 3) {
      ASSERT_TRUE(a->flush().ok());
    } else if (op == 4) {
      a.reset();
      ASSERT_TRUE(c->open_array(id, true, opts, &a).ok());
    } else {
      ASSERT_TRUE(a->consolidate_all().ok());
    }
    std::vector<uint64_t> len;
    std::vector<uint8_t> data;
    ASSERT_TRUE(a->read_var(Selection::from_box(Box({0, 0}, {29, 19})), &len, &data).ok()) << "step " << step;
    ASSERT_EQ(len.size(), model.size());
    size_t at = 0;
    for (size_t k = 0; k < model.size(); ++k) {
      ASSERT_EQ(std::string(data.begin() + at, data.begin() + at + len[k]), model[k]) << "step " << step << " cell " << k;
      at += len[k];
    }
    std::vector<uint64_t> pts = {3, 4, 29, 19, 3, 4};
    ASSERT_TRUE(a->read_points_var(pts.data(), 3, &len, &data).ok());
    std::string expect = model[3 * 20 + 4] + model[29 * 20 + 19] + model[3 * 20 + 4];
    ASSERT_EQ(std::string(data.begin(), data.end()), expect);
  }
  // Fixed-size calls are refused on a variable-length array.
  int32_t v = 0;
  EXPECT_FALSE(a->write(Selection::from_box(Box({0, 0}, {0, 0})), &v).ok());
  a.reset();
  c.reset();
  std::system(("rm -rf " + dir).c_str());
}

TEST(VarLength, CorruptHeapIsDetected) {
  std::string dir = tmpdir();
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(dir + "/c", Container::CreateMode::kExclusive, &c).ok());
  Schema s;
  s.extent = {4};
  s.max_extent = {4};
  s.tile_extent = {4};
  s.elem_size = kVarDescriptorSize;
  s.var = true;
  uint64_t id;
  ASSERT_TRUE(c->create_array(s, &id).ok());
  std::unique_ptr<Array> a;
  ASSERT_TRUE(c->open_array(id, true, ArrayOptions(), &a).ok());
  std::vector<uint64_t> len = {5, 5, 5, 5};
  ASSERT_TRUE(a->write_var(Selection::from_box(Box({0}, {3})), len.data(), "aaaaabbbbbcccccddddd").ok());
  ASSERT_TRUE(a->flush().ok());
  a.reset();
  // Flip a byte of the heap's data.
  std::string heap_dir = c->array_dir(id) + "/heap";
  std::string cmd = "f=$(ls " + heap_dir + "/*.thp | head -1); printf 'Z' | dd of=$f bs=1 seek=20 conv=notrunc 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  ASSERT_TRUE(c->open_array(id, false, ArrayOptions(), &a).ok());
  std::vector<uint64_t> out_len;
  std::vector<uint8_t> out;
  Status st = a->read_var(Selection::from_box(Box({0}, {3})), &out_len, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find(".thp"), std::string::npos) << st.message();
  a.reset();
  c.reset();
  std::system(("rm -rf " + dir).c_str());
}
