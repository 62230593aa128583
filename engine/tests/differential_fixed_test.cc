// Deterministic differential tests of the array engine (engine/array/array.h) against plain
// models (testutil.h): newest-wins across fragment kinds in every order, tiles wholly
// covered by newer fragments, fill values, a huge sparse domain against a map, large
// buffered writes spilling between chunks, shrink cost, and errors that change nothing.
// The randomized configurations are in differential_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using testutil::ArrayModel;
using testutil::IndexSets;
using testutil::Rng;
using testutil::status_str;

constexpr uint64_t kDefaultSeed = 0x7E55E7A;

class DifferentialFixed : public ::testing::Test {
 protected:
  // 2-D 8x8, tiles 4x4, 4-byte elements, non-zero fill.
  void SetUp() override {
    schema_.extent = {8, 8};
    schema_.max_extent = {16, 16};
    schema_.tile_extent = {4, 4};
    schema_.elem_size = 4;
    schema_.kind = ElementKind::kUInt;
    schema_.fill = {0xEE, 0xEE, 0xEE, 0xEE};
    dir_ = tmp_.sub("a");
  }
  void create(ArrayOptions o = ArrayOptions()) {
    ASSERT_TRUE(Array::create(dir_, schema_).ok());
    reopen(o);
  }
  void reopen(ArrayOptions o = ArrayOptions()) {
    arr_.reset();
    Status st = Array::open(dir_, true, o, &arr_);
    ASSERT_TRUE(st.ok()) << status_str(st);
  }
  static std::vector<uint8_t> u32s(const std::vector<uint32_t>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  // Reads the whole 8x8 (or current extent) array as u32.
  std::vector<uint32_t> read_all() {
    const Coords& e = arr_->schema().extent;
    std::vector<uint32_t> v(e[0] * e[1]);
    Status st = arr_->read(Selection::from_box(Box({0, 0}, {e[0] - 1, e[1] - 1})), v.data());
    EXPECT_TRUE(st.ok()) << status_str(st);
    return v;
  }
  std::vector<uint32_t> model_all(const ArrayModel& m) {
    std::vector<uint32_t> v(m.extent()[0] * m.extent()[1]);
    for (uint64_t i = 0; i < m.extent()[0]; ++i)
      for (uint64_t j = 0; j < m.extent()[1]; ++j) {
        uint64_t c[2] = {i, j};
        std::memcpy(&v[i * m.extent()[1] + j], m.at(c), 4);
      }
    return v;
  }
  testutil::TempDir tmp_{"tessera_difffixed"};
  std::string dir_;
  Schema schema_;
  std::unique_ptr<Array> arr_;
};

// Newest wins between a dense (direct) fragment, a sparse fragment, a dense piece made by a
// spill, and the unflushed write buffer, in every order of three writers, each written over
// overlapping cells; checked before and after consolidation and reopen.
TEST_F(DifferentialFixed, NewestWinsAcrossFragmentKindsInAllOrders) {
  enum Kind { kDense, kSparse, kSpilledDense, kBuffer };
  const char* names[] = {"dense", "sparse", "spilled-dense", "buffer"};
  int combos = 0;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 4; ++c)
        for (int finish = 0; finish < 3; ++finish) {
          int seq[3] = {a, b, c};
          std::string desc = std::string(names[a]) + "," + names[b] + "," + names[c] + " finish " + std::to_string(finish);
          SCOPED_TRACE(desc);
          testutil::TempDir run_dir("tessera_difffixed_run");
          dir_ = run_dir.sub("a");
          struct CloseFirst {  // the array must be closed before its directory goes away
            std::unique_ptr<Array>& a;
            ~CloseFirst() { a.reset(); }
          } close_first{arr_};
          ArrayOptions o;
          o.direct_cells = 16;  // a whole 4x4 tile or more goes direct
          create(o);
          ArrayModel m({8, 8}, {8, 8}, 4, schema_.fill);
          uint32_t val = 1;
          for (int i = 0; i < 3; ++i) {
            // Each writer is shifted a little so all three overlap partly.
            uint64_t s = static_cast<uint64_t>(i);
            switch (seq[i]) {
              case kDense: {  // a 5x6 box over four tiles
                Box bx({s, s}, {s + 4, s + 5});
                std::vector<uint32_t> v(30);
                for (auto& x : v) x = val++;
                ASSERT_TRUE(arr_->write(Selection::from_box(bx), v.data()).ok());
                std::vector<uint8_t> bytes = u32s(v);
                IndexSets sets(2);
                for (uint64_t k = s; k <= s + 4; ++k) sets[0].push_back(k);
                for (uint64_t k = s; k <= s + 5; ++k) sets[1].push_back(k);
                uint64_t st[2] = {6, 1};
                m.write(sets, bytes.data(), st);
                break;
              }
              case kSparse:
              case kBuffer: {  // a diagonal band: never a full box inside a tile
                std::vector<uint64_t> pts;
                std::vector<uint32_t> v;
                for (uint64_t k = 0; k < 8; ++k)
                  for (uint64_t j : {k, (k + 1 + s) % 8}) {
                    pts.push_back(k);
                    pts.push_back(j);
                    v.push_back(val++);
                  }
                ASSERT_TRUE(arr_->write_points(pts.data(), v.size(), v.data()).ok());
                for (size_t k = 0; k < v.size(); ++k) m.set(&pts[2 * k], reinterpret_cast<uint8_t*>(&v[k]));
                if (seq[i] == kSparse) {
                  ASSERT_TRUE(arr_->flush().ok());
                }
                break;
              }
              case kSpilledDense: {  // a buffered 2x3 box that a spill stores as a dense piece
                Box bx({s + 1, s + 1}, {s + 2, s + 3});
                std::vector<uint32_t> v(6);
                for (auto& x : v) x = val++;
                ASSERT_TRUE(arr_->write(Selection::from_box(bx), v.data()).ok());
                ASSERT_GT(arr_->buffered_cells(), 0u);
                ASSERT_TRUE(arr_->flush().ok());
                std::vector<uint8_t> bytes = u32s(v);
                IndexSets sets{{s + 1, s + 2}, {s + 1, s + 2, s + 3}};
                uint64_t st[2] = {3, 1};
                m.write(sets, bytes.data(), st);
                break;
              }
            }
            ASSERT_EQ(read_all(), model_all(m)) << "after writer " << i;
          }
          if (finish == 1) {
            ASSERT_TRUE(arr_->consolidate_all().ok());
            EXPECT_LE(arr_->fragments().size(), 1u);
          } else if (finish == 2) {
            reopen(o);
          }
          ASSERT_EQ(read_all(), model_all(m));
          // Point reads agree with box reads.
          std::vector<uint64_t> pts;
          for (uint64_t i = 0; i < 8; ++i)
            for (uint64_t j = 0; j < 8; ++j) pts.insert(pts.end(), {i, j});
          std::vector<uint32_t> pv(64);
          ASSERT_TRUE(arr_->read_points(pts.data(), 64, pv.data()).ok());
          EXPECT_EQ(pv, model_all(m));
          ++combos;
        }
  EXPECT_EQ(combos, 4 * 4 * 4 * 3);
}

// A tile wholly covered by a newer fragment is answered from the newer one and the older
// tile is never read: damaging the older tile's bytes does not disturb the read.
TEST_F(DifferentialFixed, TileWhollyCoveredByNewerFragment) {
  ArrayOptions o;
  o.direct_cells = 1;
  create(o);
  std::vector<uint32_t> old_v(64), new_v(16);
  for (uint32_t i = 0; i < 64; ++i) old_v[i] = 1000 + i;
  for (uint32_t i = 0; i < 16; ++i) new_v[i] = 5000 + i;
  ASSERT_TRUE(arr_->write(Selection::from_box(Box({0, 0}, {7, 7})), old_v.data()).ok());
  ASSERT_TRUE(arr_->write(Selection::from_box(Box({4, 0}, {7, 3})), new_v.data()).ok());  // tile (1,0)
  auto frags = arr_->fragments();
  ASSERT_EQ(frags.size(), 2u);
  ASSERT_EQ(frags[0].dense_tiles, 4u);
  std::vector<uint32_t> want = old_v;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) want[(4 + i) * 8 + j] = new_v[i * 4 + j];
  EXPECT_EQ(read_all(), want);

  // Damage the older fragment's tile (1,0).
  std::string old_path = frags[0].path;
  auto f = Fragment::open(old_path);
  long idx = -1;
  for (size_t i = 0; i < f->meta().dense.size(); ++i)
    if (f->meta().dense[i].tile == Coords{1, 0}) idx = static_cast<long>(i);
  ASSERT_GE(idx, 0);
  uint64_t off = f->meta().dense[idx].blob.offset + 3;
  f.reset();
  testutil::flip_byte(old_path, off, 0xFF);
  {
    auto g = Fragment::open(old_path);  // the damage is real ...
    try {
      g->dense_tile(static_cast<size_t>(idx));
      ADD_FAILURE() << "damaged tile decoded without error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kCorrupt);
    }
  }
  reopen(o);  // fresh fragments: nothing cached
  EXPECT_EQ(read_all(), want);  // ... but never read
  std::vector<uint32_t> part(16);
  ASSERT_TRUE(arr_->read(Selection::from_box(Box({4, 0}, {7, 3})), part.data()).ok());
  EXPECT_EQ(part, new_v);
  // The other tiles of the old fragment are still read and fine; a read that needs the
  // damaged piece does not exist any more (it is wholly covered).
  uint64_t p[2] = {5, 2};
  uint32_t pv = 0;
  ASSERT_TRUE(arr_->read_points(p, 1, &pv).ok());
  EXPECT_EQ(pv, new_v[1 * 4 + 2]);
}

// Cells nobody wrote read as the fill value: in untouched tiles, around sparse cells, in
// partially written tiles, after growing the extent, and after shrink + regrow.
TEST_F(DifferentialFixed, FillValueWhereNothingWasWritten) {
  const uint32_t fill = 0xEEEEEEEE;
  ArrayOptions o;
  o.direct_cells = 4;
  create(o);
  ArrayModel m({16, 16}, {8, 8}, 4, schema_.fill);
  EXPECT_EQ(read_all(), std::vector<uint32_t>(64, fill));  // nothing at all written
  uint32_t v4[4] = {1, 2, 3, 4};
  ASSERT_TRUE(arr_->write(Selection::from_box(Box({1, 1}, {2, 2})), v4).ok());  // direct, part of a tile
  uint64_t pts[4] = {6, 6, 7, 1};
  uint32_t pv[2] = {7, 8};
  ASSERT_TRUE(arr_->write_points(pts, 2, pv).ok());
  ASSERT_TRUE(arr_->flush().ok());
  std::vector<uint32_t> want(64, fill);
  want[1 * 8 + 1] = 1, want[1 * 8 + 2] = 2, want[2 * 8 + 1] = 3, want[2 * 8 + 2] = 4;
  want[6 * 8 + 6] = 7, want[7 * 8 + 1] = 8;
  EXPECT_EQ(read_all(), want);
  uint64_t q[6] = {0, 0, 6, 5, 6, 6};
  uint32_t qv[3];
  ASSERT_TRUE(arr_->read_points(q, 3, qv).ok());
  EXPECT_EQ(qv[0], fill);
  EXPECT_EQ(qv[1], fill);
  EXPECT_EQ(qv[2], 7u);

  // Grow: the new cells are fill.
  ASSERT_TRUE(arr_->set_extent({12, 10}).ok());
  std::vector<uint32_t> big(120);
  ASSERT_TRUE(arr_->read(Selection::from_box(Box({0, 0}, {11, 9})), big.data()).ok());
  for (uint64_t i = 0; i < 12; ++i)
    for (uint64_t j = 0; j < 10; ++j)
      EXPECT_EQ(big[i * 10 + j], i < 8 && j < 8 ? want[i * 8 + j] : fill) << i << "," << j;

  // Shrink over written cells, then regrow: the cut cells are fill again, like HDF5.
  ASSERT_TRUE(arr_->set_extent({2, 10}).ok());
  for (int reopen_between = 0; reopen_between < 2; ++reopen_between) {
    if (reopen_between) reopen(o);
    ASSERT_TRUE(arr_->set_extent({8, 8}).ok());
    std::vector<uint32_t> w2(64, fill);
    w2[1 * 8 + 1] = 1, w2[1 * 8 + 2] = 2;
    EXPECT_EQ(read_all(), w2);
    ASSERT_TRUE(arr_->consolidate_all().ok());
    EXPECT_EQ(read_all(), w2);
    ASSERT_TRUE(arr_->set_extent({2, 10}).ok());
  }
}

// Coordinates far apart in a huge (unlimited) domain: global-order keys no longer pack into
// 64 bits (another sort path), tiles are scattered, and a dense model is impossible — the
// model here is a map of written cells.
TEST(Differential, HugeSparseDomain) {
  const uint64_t seed = testutil::named_seed("HugeSparseDomain", kDefaultSeed);
  SCOPED_TRACE("seed " + std::to_string(seed) + " (replay: TESSERA_TEST_SEED=" + std::to_string(seed) +
               " TESSERA_TEST_SEED_EXACT=1)");
  Rng rng(seed);
  testutil::TempDir t("tessera_diff_huge");
  Schema s;
  s.extent = {uint64_t{1} << 40, uint64_t{1} << 36};
  s.max_extent = {kUnlimited, kUnlimited};
  s.tile_extent = {1 << 12, 1 << 10};
  s.elem_size = 8;
  s.kind = ElementKind::kUInt;
  s.fill.assign(8, 0xCD);
  s.filters = FilterPipeline({{FilterType::kZstd, 1}}, 8);
  s.sparse_capacity = 6;
  ASSERT_TRUE(Array::create(t.sub("a"), s).ok());
  ArrayOptions o;
  o.direct_cells = 9;  // boxes of >= 9 cells go direct
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(t.sub("a"), true, o, &a).ok());
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> model;
  std::vector<std::pair<uint64_t, uint64_t>> anchors;  // places data was written near
  uint64_t next_val = 1;
  auto far = [&](int d) { return rng.below(s.extent[d] - 8); };
  auto want = [&](uint64_t i, uint64_t j) {
    auto it = model.find({i, j});
    return it == model.end() ? 0xCDCDCDCDCDCDCDCDull : it->second;
  };
  const uint64_t steps = testutil::kSanitized ? 60 : 200;
  for (uint64_t step = 0; step < steps && !HasFailure(); ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    uint64_t r = rng.below(100);
    if (r < 40) {  // points: fresh far coordinates, near earlier data, duplicates
      size_t n = rng.range(1, 30);
      std::vector<uint64_t> c;
      std::vector<uint64_t> v;
      for (size_t i = 0; i < n; ++i) {
        uint64_t x, y;
        if (!anchors.empty() && rng.chance(0.5)) {
          auto an = anchors[rng.below(anchors.size())];
          x = an.first + rng.below(6), y = an.second + rng.below(6);
        } else {
          x = far(0), y = far(1);
          anchors.push_back({x, y});
        }
        c.insert(c.end(), {x, y});
        v.push_back(next_val++);
        if (rng.chance(0.2)) {  // a duplicate: the later one wins
          c.insert(c.end(), {x, y});
          v.push_back(next_val++);
        }
      }
      ASSERT_TRUE(a->write_points(c.data(), v.size(), v.data()).ok());
      for (size_t i = 0; i < v.size(); ++i) model[{c[2 * i], c[2 * i + 1]}] = v[i];
    } else if (r < 65) {  // small boxes (buffered below 9 cells, direct from 9)
      uint64_t x, y;
      if (!anchors.empty() && rng.chance(0.6)) {
        auto an = anchors[rng.below(anchors.size())];
        x = an.first, y = an.second;
      } else {
        x = far(0), y = far(1);
        anchors.push_back({x, y});
      }
      uint64_t h = rng.range(1, 5), w = rng.range(1, 5);
      std::vector<uint64_t> v(h * w);
      for (auto& e : v) e = next_val++;
      ASSERT_TRUE(a->write(Selection::from_box(Box({x, y}, {x + h - 1, y + w - 1})), v.data()).ok());
      for (uint64_t i = 0; i < h; ++i)
        for (uint64_t j = 0; j < w; ++j) model[{x + i, y + j}] = v[i * w + j];
    } else if (r < 75) {
      ASSERT_TRUE(a->flush().ok());
    } else if (r < 83) {
      Status st = rng.chance(0.5) ? a->consolidate_all() : a->consolidate_auto(2, 4.0);
      ASSERT_TRUE(st.ok()) << status_str(st);
    } else if (r < 90) {
      a.reset();
      ASSERT_TRUE(Array::open(t.sub("a"), true, o, &a).ok());
    } else {  // grow the extent (a shrink would cost time proportional to the data's bounding box)
      Coords e = a->schema().extent;
      e[rng.below(2)] += rng.range(1, 1000);
      ASSERT_TRUE(a->set_extent(e).ok());
      s.extent = e;
    }
    // Written cells (all of them every 25 steps, else a sample), plus random unwritten
    // ones, by point read ...
    std::vector<uint64_t> c;
    const bool all = step % 25 == 24 || step + 1 == steps;
    for (auto& [k, v] : model)
      if (all || rng.chance(100.0 / static_cast<double>(model.size()))) c.insert(c.end(), {k.first, k.second});
    for (int i = 0; i < 20; ++i) c.insert(c.end(), {far(0), far(1)});
    std::vector<uint64_t> got(c.size() / 2);
    ASSERT_TRUE(a->read_points(c.data(), got.size(), got.data()).ok());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], want(c[2 * i], c[2 * i + 1])) << "point (" << c[2 * i] << "," << c[2 * i + 1] << ")";
    // ... and boxes and strided selections around data.
    for (int k = 0; k < 3 && !anchors.empty(); ++k) {
      auto an = anchors[rng.below(anchors.size())];
      uint64_t x0 = an.first >= 2 ? an.first - 2 : 0, y0 = an.second >= 2 ? an.second - 2 : 0;
      Selection sel = k == 2 ? Selection::from_hyperslab({x0, y0}, {2, 3}, {5, 4}, {1, 2})
                             : Selection::from_box(Box({x0, y0}, {x0 + 9, y0 + 9}));
      std::vector<uint64_t> v(sel.cells());
      ASSERT_TRUE(a->read(sel, v.data()).ok());
      size_t idx = 0;
      for (const Interval& iv : sel.dim(0).ivs)
        for (uint64_t i = iv.lo; i <= iv.hi; ++i)
          for (const Interval& jv : sel.dim(1).ivs)
            for (uint64_t j = jv.lo; j <= jv.hi; ++j, ++idx)
              ASSERT_EQ(v[idx], want(i, j)) << "cell (" << i << "," << j << ") of a read near an anchor";
    }
  }
  std::printf("[ seed     ] Differential HugeSparseDomain: seed %llu, %zu cells written, %zu fragments\n",
              static_cast<unsigned long long>(seed), model.size(), a->fragments().size());
}

// Buffered writes larger than the write buffer's 64K-cell chunks, with budgets that make it
// spill between chunks of one call, in both cell orders; overwritten by later writes.
TEST(Differential, LargeBufferedWritesSpillBetweenChunks) {
  for (Order order : {Order::kRowMajor, Order::kColMajor})
    for (uint64_t budget : {uint64_t{64} << 20, uint64_t{300000}, uint64_t{1}}) {
      SCOPED_TRACE("budget " + std::to_string(budget) + (order == Order::kRowMajor ? " row-major" : " col-major"));
      testutil::TempDir t("tessera_diff_large");
      Schema s;
      s.extent = {400, 410};
      s.max_extent = {400, 410};
      s.tile_extent = {32, 48};
      s.elem_size = 4;
      s.fill = {1, 2, 3, 4};
      s.cell_order = order;
      s.tile_order = order;
      s.filters = FilterPipeline({{FilterType::kLz4, 0}}, 4);
      ASSERT_TRUE(Array::create(t.sub("a"), s).ok());
      ArrayOptions o;
      o.buffer_budget = budget;
      std::unique_ptr<Array> a;
      ASSERT_TRUE(Array::open(t.sub("a"), true, o, &a).ok());
      ArrayModel m({400, 410}, {400, 410}, 4, s.fill);
      Rng rng(budget + static_cast<uint64_t>(order));
      // 1. A strided write of 400 x 205 = 82000 cells (two chunks).
      Coords start{0, 1}, stride{1, 2}, count{400, 205}, block{1, 1};
      std::vector<uint32_t> v(400 * 205);
      for (auto& x : v) x = static_cast<uint32_t>(rng.gen()());
      ASSERT_TRUE(a->write(Selection::from_hyperslab(start, stride, count, block), v.data()).ok());
      IndexSets sets = testutil::index_sets_of_hyperslab(start, stride, count, block);
      std::vector<uint64_t> st = testutil::dense_strides(sets);
      m.write(sets, reinterpret_cast<uint8_t*>(v.data()), st.data());
      // 2. 70000 points, many repeated (later wins), over the same region.
      std::vector<uint64_t> c;
      std::vector<uint32_t> pv(70000);
      for (size_t i = 0; i < pv.size(); ++i) {
        if (i > 0 && rng.chance(0.3)) {
          size_t j = rng.below(i);
          c.insert(c.end(), {c[2 * j], c[2 * j + 1]});
        } else {
          c.insert(c.end(), {rng.below(400), rng.below(410)});
        }
        pv[i] = static_cast<uint32_t>(rng.gen()());
      }
      ASSERT_TRUE(a->write_points(c.data(), pv.size(), pv.data()).ok());
      for (size_t i = 0; i < pv.size(); ++i) m.set(&c[2 * i], reinterpret_cast<uint8_t*>(&pv[i]));
      // 3. An interval product of 300 x 250 = 75000 cells.
      std::vector<std::vector<Interval>> iv = {{{0, 99}, {150, 349}}, {{5, 104}, {200, 349}}};
      IndexSets isets = testutil::index_sets_of_intervals(iv);
      std::vector<uint32_t> w(testutil::product_cells(isets));
      for (auto& x : w) x = static_cast<uint32_t>(rng.gen()());
      ASSERT_TRUE(a->write(Selection::from_intervals(iv), w.data()).ok());
      std::vector<uint64_t> ist = testutil::dense_strides(isets);
      m.write(isets, reinterpret_cast<uint8_t*>(w.data()), ist.data());

      for (int pass = 0; pass < 3; ++pass) {
        SCOPED_TRACE(pass == 0 ? "before flush" : pass == 1 ? "after flush" : "after consolidate_all + reopen");
        if (pass == 1) {
          ASSERT_TRUE(a->flush().ok());
        }
        if (pass == 2) {
          ASSERT_TRUE(a->consolidate_all().ok());
          a.reset();
          ASSERT_TRUE(Array::open(t.sub("a"), false, o, &a).ok());
        }
        std::vector<uint32_t> got(400 * 410);
        ASSERT_TRUE(a->read(Selection::from_box(Box({0, 0}, {399, 409})), got.data()).ok());
        IndexSets all = testutil::index_sets_of_intervals({{{0, 399}}, {{0, 409}}});
        std::vector<uint32_t> want(400 * 410);
        std::vector<uint64_t> ast = testutil::dense_strides(all);
        m.read(all, reinterpret_cast<uint8_t*>(want.data()), ast.data());
        size_t bad = 0;
        while (bad < got.size() && got[bad] == want[bad]) ++bad;
        ASSERT_EQ(bad, got.size()) << "first difference at (" << bad / 410 << "," << bad % 410 << ")";
      }
    }
}

// Regression: shrinking the extent used to write fill pieces over every tile of the data's
// bounding box inside the cut region (two cells 10^7 apart: 900k fill entries, a 74 MB
// fragment, 700 MB of memory); it must follow the tiles that hold data.
TEST(Differential, ShrinkCostFollowsDataNotBoundingBox) {
  testutil::TempDir t("tessera_diff_shrink");
  Schema s;
  s.extent = {100001};
  s.max_extent = {kUnlimited};
  s.tile_extent = {10};
  s.elem_size = 8;
  s.fill.assign(8, 0xEE);
  ASSERT_TRUE(Array::create(t.sub("a"), s).ok());
  std::unique_ptr<Array> a;
  ASSERT_TRUE(Array::open(t.sub("a"), true, ArrayOptions(), &a).ok());
  uint64_t pts[2] = {0, 100000}, v[2] = {1, 2};
  ASSERT_TRUE(a->write_points(pts, 2, v).ok());
  ASSERT_TRUE(a->flush().ok());
  ASSERT_TRUE(a->set_extent({10000}).ok());
  ASSERT_TRUE(a->set_extent({100001}).ok());
  uint64_t got[2];
  ASSERT_TRUE(a->read_points(pts, 2, got).ok());
  EXPECT_EQ(got[0], 1u);
  EXPECT_EQ(got[1], 0xEEEEEEEEEEEEEEEEull);  // cut, then regrown: fill
  auto frags = a->fragments();
  ASSERT_GE(frags.size(), 2u);
  const FragmentInfo& fill = frags.back();
  EXPECT_LE(fill.dense_tiles, 16u) << "a shrink over 2 written cells wrote " << fill.dense_tiles
                                   << " fill entries (" << fill.file_size << " bytes)";
  EXPECT_LE(a->storage_bytes(), 64u * 1024) << "2 cells of data take " << a->storage_bytes() << " bytes";
}

// Misuse returns a Status, never crashes, and leaves the data alone.
TEST_F(DifferentialFixed, ErrorsAreStatusesAndChangeNothing) {
  create();
  std::vector<uint32_t> v(64);
  for (uint32_t i = 0; i < 64; ++i) v[i] = i * 3 + 1;
  ASSERT_TRUE(arr_->write(Selection::from_box(Box({0, 0}, {7, 7})), v.data()).ok());
  ASSERT_TRUE(arr_->flush().ok());
  std::vector<uint32_t> buf(512, 0);
  auto expect_err = [&](const Status& st, Errc code, const char* what) {
    EXPECT_FALSE(st.ok()) << what;
    EXPECT_EQ(st.code(), code) << what << ": " << status_str(st);
    EXPECT_FALSE(st.message().empty()) << what;
  };
  // Out of extent (the maximum extent is 16, the current 8).
  expect_err(arr_->write(Selection::from_box(Box({0, 0}, {8, 7})), buf.data()), Errc::kInvalidArgument, "write box");
  expect_err(arr_->write(Selection::from_box(Box({7, 7}, {7, 20})), buf.data()), Errc::kInvalidArgument, "write box 2");
  expect_err(arr_->read(Selection::from_box(Box({0, 8}, {0, 8})), buf.data()), Errc::kInvalidArgument, "read box");
  expect_err(arr_->write(Selection::from_hyperslab({0, 0}, {4, 1}, {3, 1}, {1, 1}), buf.data()),
             Errc::kInvalidArgument, "write hyperslab");
  expect_err(arr_->read(Selection::from_intervals({{{0, 1}, {9, 9}}, {{0, 0}}}), buf.data()), Errc::kInvalidArgument,
             "read intervals");
  uint64_t pts[6] = {1, 1, 2, 8, 3, 3};
  expect_err(arr_->write_points(pts, 3, buf.data()), Errc::kInvalidArgument, "write_points");
  expect_err(arr_->read_points(pts, 3, buf.data()), Errc::kInvalidArgument, "read_points");
  uint64_t huge[2] = {UINT64_MAX, 0};
  expect_err(arr_->read_points(huge, 1, buf.data()), Errc::kInvalidArgument, "read_points max");
  // Wrong rank.
  expect_err(arr_->write(Selection::from_box(Box({0}, {3})), buf.data()), Errc::kInvalidArgument, "write rank 1");
  expect_err(arr_->read(Selection::from_box(Box({0, 0, 0}, {1, 1, 1})), buf.data()), Errc::kInvalidArgument,
             "read rank 3");
  expect_err(arr_->set_extent({8}), Errc::kInvalidArgument, "set_extent rank");
  // Beyond the maximum extent.
  expect_err(arr_->set_extent({17, 8}), Errc::kInvalidArgument, "set_extent > max");
  EXPECT_EQ(arr_->schema().extent, (Coords{8, 8}));
  // Bad consolidation ranges.
  expect_err(arr_->consolidate(0, 5), Errc::kInvalidArgument, "consolidate range");
  expect_err(arr_->consolidate(1, 0), Errc::kInvalidArgument, "consolidate first > last");
  EXPECT_EQ(read_all(), v);
  EXPECT_EQ(arr_->buffered_cells(), 0u);

  // A read-only array refuses every mutation.
  std::unique_ptr<Array> ro;
  ASSERT_TRUE(Array::open(dir_, false, ArrayOptions(), &ro).ok());
  expect_err(ro->write(Selection::from_box(Box({0, 0}, {0, 0})), buf.data()), Errc::kInvalidArgument, "ro write");
  expect_err(ro->write(Selection::from_box(Box({0, 0}, {7, 7})), buf.data()), Errc::kInvalidArgument, "ro write big");
  expect_err(ro->write_points(pts, 1, buf.data()), Errc::kInvalidArgument, "ro write_points");
  expect_err(ro->set_extent({4, 4}), Errc::kInvalidArgument, "ro set_extent");
  expect_err(ro->consolidate_all(), Errc::kInvalidArgument, "ro consolidate_all");
  expect_err(ro->consolidate(0, 0), Errc::kInvalidArgument, "ro consolidate");
  expect_err(ro->consolidate_auto(), Errc::kInvalidArgument, "ro consolidate_auto");
  EXPECT_TRUE(ro->flush().ok());
  EXPECT_EQ(ro->buffered_cells(), 0u);
  std::vector<uint32_t> rv(64);
  ASSERT_TRUE(ro->read(Selection::from_box(Box({0, 0}, {7, 7})), rv.data()).ok());
  EXPECT_EQ(rv, v);
  ro.reset();

  // So does an array opened writable through a read-only container.
  testutil::TempDir t2("tessera_difffixed_c");
  std::string cpath = t2.sub("c");
  uint64_t id = 0;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(cpath, Container::CreateMode::kExclusive, &c).ok());
    ASSERT_TRUE(c->create_array(schema_, &id).ok());
  }
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::open(cpath, false, &c).ok());
  expect_err(c->create_array(schema_, &id), Errc::kInvalidArgument, "ro container create_array");
  ASSERT_TRUE(c->open_array(id, true, ArrayOptions(), &ro).ok());
  expect_err(ro->write(Selection::from_box(Box({0, 0}, {7, 7})), buf.data()), Errc::kInvalidArgument,
             "write via ro container");
  // Missing arrays / containers.
  std::unique_ptr<Array> missing;
  EXPECT_EQ(c->open_array(id + 100, false, ArrayOptions(), &missing).code(), Errc::kNotFound);
  std::unique_ptr<Container> c2;
  EXPECT_EQ(Container::open(t2.sub("nope"), false, &c2).code(), Errc::kNotFound);
  // An invalid schema.
  Schema bad = schema_;
  bad.tile_extent = {0, 4};
  std::unique_ptr<Container> cw;
  ASSERT_TRUE(Container::create(t2.sub("c2"), Container::CreateMode::kExclusive, &cw).ok());
  expect_err(cw->create_array(bad, &id), Errc::kInvalidArgument, "bad schema");
}

}  // namespace
}  // namespace tessera
