// Compact arrays (engine/array/compact_cells.h): every cell in one catalog record.  Random
// hyperslab, box and point writes and reads are checked against a plain row-major model
// (cell (i, j) at i * cols + j, computed here, not by the engine), across deferred and
// durable writes, a reopen, a damaged record and a container without inline room.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using testutil::TempDir;

constexpr uint64_t kRows = 9, kCols = 13;
constexpr int32_t kFill = -7;

Schema compact_schema() {
  Schema s;
  s.extent = {kRows, kCols};
  s.max_extent = s.extent;
  s.tile_extent = s.extent;
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  s.fill.resize(4);
  std::memcpy(s.fill.data(), &kFill, 4);
  s.compact = true;
  return s;
}

struct Model {
  std::vector<int32_t> cells = std::vector<int32_t>(kRows * kCols, kFill);
  int32_t& at(uint64_t i, uint64_t j) { return cells[i * kCols + j]; }
};

// A random regular hyperslab (start, stride, count, block) inside the extent.
Selection random_slab(std::mt19937_64& rng, Coords* lo, Coords* st, Coords* cnt, Coords* blk) {
  const uint64_t ext[2] = {kRows, kCols};
  lo->assign(2, 0), st->assign(2, 1), cnt->assign(2, 1), blk->assign(2, 1);
  for (int d = 0; d < 2; ++d) {
    (*blk)[d] = 1 + rng() % 2;
    (*st)[d] = (*blk)[d] + rng() % 3;
    (*lo)[d] = rng() % ext[d];
    uint64_t room = ext[d] - (*lo)[d];
    if (room < (*blk)[d]) (*blk)[d] = room;
    (*cnt)[d] = 1 + (room - (*blk)[d]) / (*st)[d];
    (*cnt)[d] = 1 + rng() % (*cnt)[d];
  }
  return Selection::from_hyperslab(*lo, *st, *cnt, *blk);
}

// The cells of a hyperslab in row-major selection order, computed from its parameters.
std::vector<std::pair<uint64_t, uint64_t>> slab_cells(const Coords& lo, const Coords& st, const Coords& cnt,
                                                      const Coords& blk) {
  std::vector<uint64_t> rows, cols;
  for (uint64_t c = 0; c < cnt[0]; ++c)
    for (uint64_t b = 0; b < blk[0]; ++b) rows.push_back(lo[0] + c * st[0] + b);
  for (uint64_t c = 0; c < cnt[1]; ++c)
    for (uint64_t b = 0; b < blk[1]; ++b) cols.push_back(lo[1] + c * st[1] + b);
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (uint64_t i : rows)
    for (uint64_t j : cols) out.push_back({i, j});
  return out;
}

void expect_all(Array& a, Model& m, const char* when) {
  std::vector<int32_t> got(kRows * kCols);
  ASSERT_TRUE(a.read(Selection::from_box(Box({0, 0}, {kRows - 1, kCols - 1})), got.data()).ok());
  EXPECT_EQ(got, m.cells) << when;
}

void random_ops(Array& a, Model& m, std::mt19937_64& rng, int n) {
  for (int op = 0; op < n; ++op) {
    Coords lo, st, cnt, blk;
    Selection sel = random_slab(rng, &lo, &st, &cnt, &blk);
    auto cells = slab_cells(lo, st, cnt, blk);
    ASSERT_EQ(cells.size(), sel.cells());
    if (rng() % 3 == 0) {  // points
      std::vector<uint64_t> coords;
      std::vector<int32_t> vals;
      for (int k = 0; k < 5; ++k) {
        uint64_t i = rng() % kRows, j = rng() % kCols;
        coords.insert(coords.end(), {i, j});
        vals.push_back(static_cast<int32_t>(rng()));
        m.at(i, j) = vals.back();
      }
      ASSERT_TRUE(a.write_points(coords.data(), vals.size(), vals.data()).ok());
      std::vector<int32_t> back(vals.size());
      ASSERT_TRUE(a.read_points(coords.data(), vals.size(), back.data()).ok());
      for (size_t k = 0; k < vals.size(); ++k) EXPECT_EQ(back[k], m.at(coords[2 * k], coords[2 * k + 1]));
    } else if (rng() % 2 == 0) {  // write the slab
      std::vector<int32_t> vals(cells.size());
      for (size_t k = 0; k < cells.size(); ++k) {
        vals[k] = static_cast<int32_t>(rng());
        m.at(cells[k].first, cells[k].second) = vals[k];
      }
      ASSERT_TRUE(a.write(sel, vals.data()).ok());
    } else {  // read the slab
      std::vector<int32_t> got(cells.size());
      ASSERT_TRUE(a.read(sel, got.data()).ok());
      for (size_t k = 0; k < cells.size(); ++k)
        ASSERT_EQ(got[k], m.at(cells[k].first, cells[k].second)) << "op " << op << " cell " << k;
    }
  }
}

TEST(CompactArray, RandomSlabsAndPointsMatchTheModelAcrossReopen) {
  TempDir dir;
  const std::string path = dir.path() + "/c.tsra";
  std::mt19937_64 rng(testutil::base_seed(17));
  Model m;
  uint64_t id = 0;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
    ASSERT_TRUE(c->create_array(compact_schema(), &id).ok());
    ArrayOptions o;
    o.durable_writes = false;  // the connector's mode: published by flush
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, true, o, &a).ok());
    ASSERT_TRUE(a->schema().compact);
    EXPECT_EQ(a->storage_bytes(), 0u);
    expect_all(*a, m, "never written: the fill value");
    random_ops(*a, m, rng, 200);
    EXPECT_EQ(a->storage_bytes(), kRows * kCols * 4);
    EXPECT_TRUE(a->fragments().empty());
    EXPECT_FALSE(a->set_extent({kRows + 1, kCols}).ok());
    EXPECT_TRUE(a->set_extent({kRows, kCols}).ok());
    ASSERT_TRUE(a->flush().ok());
    random_ops(*a, m, rng, 50);  // published by the destructor's flush
  }
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(path, false, &c).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, false, ArrayOptions{}, &a).ok());
    expect_all(*a, m, "after reopen");
    EXPECT_FALSE(a->write(Selection::from_box(Box({0, 0}, {0, 0})), &kFill).ok());  // read-only
  }
  {  // durable writes (the engine's default): each write is committed at once
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(path, true, &c).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, true, ArrayOptions{}, &a).ok());
    random_ops(*a, m, rng, 50);
    std::unique_ptr<Container> r;
    ASSERT_TRUE(Container::open(path, false, &r).ok());
    std::unique_ptr<Array> ra;
    ASSERT_TRUE(r->open_array(id, false, ArrayOptions{}, &ra).ok());
    expect_all(*ra, m, "durable writes seen by a second reader");
  }
}

TEST(CompactArray, DamagedRecordIsReportedNotRead) {
  TempDir dir;
  const std::string path = dir.path() + "/c.tsra";
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
  uint64_t id = 0;
  ASSERT_TRUE(c->create_array(compact_schema(), &id).ok());
  CatalogBatch b;
  b.put(Container::array_prefix(id) + "cells", "TSRACELL" + std::string(10, 'x'));  // wrong size
  c->catalog().commit(b);
  std::unique_ptr<Array> a;
  ASSERT_TRUE(c->open_array(id, true, ArrayOptions{}, &a).ok());
  int32_t v = 0;
  Status st = a->read(Selection::from_box(Box({0, 0}, {0, 0})), &v);
  EXPECT_EQ(st.code(), Errc::kCorrupt);
  EXPECT_NE(st.message().find("compact array"), std::string::npos) << st.message();
}

TEST(CompactArray, WithoutInlineRoomTheArrayIsOrdinaryAndStillCorrect) {
  TempDir dir;
  const std::string path = dir.path() + "/c.tsra";
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kExclusive, &c).ok());
  c->inline_budget()->cap = 16;  // less than the array's 468 bytes
  uint64_t id = 0;
  ASSERT_TRUE(c->create_array(compact_schema(), &id).ok());
  std::unique_ptr<Array> a;
  ASSERT_TRUE(c->open_array(id, true, ArrayOptions{}, &a).ok());
  EXPECT_FALSE(a->schema().compact);
  Model m;
  std::mt19937_64 rng(testutil::base_seed(5));
  random_ops(*a, m, rng, 60);
  expect_all(*a, m, "ordinary array");
}

TEST(CompactArray, SchemaRejectsWhatCannotBeCompact) {
  Schema s = compact_schema();
  s.max_extent = {kRows * 2, kCols};
  EXPECT_THROW(s.validate(), Error);
  s = compact_schema();
  s.extent = s.max_extent = s.tile_extent = {128, 129};  // 66,048 bytes
  EXPECT_THROW(s.validate(), Error);
  s = compact_schema();
  std::vector<uint8_t> bytes = s.serialize();
  Schema back = Schema::deserialize(bytes.data(), bytes.size(), "test");
  EXPECT_TRUE(back.compact);
  s.compact = false;
  bytes = s.serialize();
  EXPECT_FALSE(Schema::deserialize(bytes.data(), bytes.size(), "test").compact);
}

}  // namespace
}  // namespace tessera
