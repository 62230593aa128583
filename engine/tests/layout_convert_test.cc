// Converting an array's layout by consolidation (Array::consolidate_layout,
// docs/layouts.md "Converting"): each fragment records its own tile and cell order
// (fragment format version 4), so an array may hold fragments in several orders; every
// reader takes a fragment's own order.  Checked against an independent model (a plain
// row-major grid of the values written):
//   - every pair (from, to) of the ten layouts (five tile orders x row/column-major
//     cells), ranks 2 and 3: dense, sparse and erased cells, converted, then written
//     again and reopened — full, box, strided and point reads;
//   - mixed arrays: ranges converted to different layouts, then merged without
//     --layout (into the schema's order);
//   - fragments of a development build's format without a recorded order (version 3
//     footers, built here by stripping the order from new ones): refused, named;
//   - a conversion with no fragment.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/util/checksum.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/fragment/fragment_format.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using testutil::status_str;

struct Lay {
  Order tile, cell;
};
std::vector<Lay> all_layouts() {
  std::vector<Lay> out;
  for (Order t : {Order::kRowMajor, Order::kColMajor, Order::kZOrder, Order::kHilbert, Order::kMultiMap})
    for (Order c : {Order::kRowMajor, Order::kColMajor}) out.push_back({t, c});
  return out;
}
std::string name(const Lay& l) { return layout_name(l.tile, l.cell); }

constexpr int32_t kFill = -7;

Schema schema_of(const Coords& extent, const Coords& tile, const Lay& l) {
  Schema s;
  s.extent = extent;
  s.max_extent = extent;
  s.tile_extent = tile;
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  s.fill.resize(4);
  std::memcpy(s.fill.data(), &kFill, 4);
  s.sparse_capacity = 5;  // several sparse tiles per fragment
  s.set_layout(l.tile, l.cell);
  return s;
}

// The model: every cell's value, row-major.
struct Grid {
  Coords ext;
  std::vector<int32_t> v;
  explicit Grid(const Coords& e) : ext(e) {
    uint64_t n = 1;
    for (uint64_t x : e) n *= x;
    v.assign(n, kFill);
  }
  int rank() const { return static_cast<int>(ext.size()); }
  uint64_t at(const uint64_t* c) const {
    uint64_t k = 0;
    for (int d = 0; d < rank(); ++d) k = k * ext[d] + c[d];
    return k;
  }
  // Calls f(cell) for every cell of the product of per-dimension index lists, row-major.
  template <class F>
  static void product(const std::vector<std::vector<uint64_t>>& sets, F f) {
    const int r = static_cast<int>(sets.size());
    std::vector<size_t> i(r, 0);
    Coords c(r);
    for (;;) {
      for (int d = 0; d < r; ++d) c[d] = sets[d][i[d]];
      f(c.data());
      int d = r - 1;
      for (; d >= 0; --d) {
        if (++i[d] < sets[d].size()) break;
        i[d] = 0;
      }
      if (d < 0) return;
    }
  }
};

std::vector<std::vector<uint64_t>> box_sets(const Box& b) {
  std::vector<std::vector<uint64_t>> s(b.rank());
  for (int d = 0; d < b.rank(); ++d)
    for (uint64_t x = b.lo[d]; x <= b.hi[d]; ++x) s[d].push_back(x);
  return s;
}

class ConvertRun {
 public:
  ConvertRun(const Coords& extent, const Coords& tile, const Lay& from)
      : tmp_("tessera_convert"), dir_(tmp_.sub("a")), extent_(extent), tile_(tile), model_(extent) {
    EXPECT_TRUE(Array::create(dir_, schema_of(extent, tile, from)).ok());
    reopen();
  }
  Array& a() { return *a_; }
  const std::string& dir() const { return dir_; }
  void reopen() {
    a_.reset();
    Status st = Array::open(dir_, true, ArrayOptions{}, &a_);
    ASSERT_TRUE(st.ok()) << status_str(st);
  }
  void close() { a_.reset(); }
  int rank() const { return static_cast<int>(extent_.size()); }

  // A dense box write of values base, base+1, ... (row-major), flushed: one fragment.
  void box(const Box& b, int32_t base) {
    std::vector<int32_t> w;
    Grid::product(box_sets(b), [&](const uint64_t* c) {
      const int32_t v = base + static_cast<int32_t>(w.size());
      w.push_back(v);
      model_.v[model_.at(c)] = v;
    });
    Status st = a_->write(Selection::from_box(b), w.data());
    ASSERT_TRUE(st.ok()) << status_str(st);
    ASSERT_TRUE(a_->flush().ok());
  }
  // Scattered point writes (sparse cells), flushed.
  void points(uint64_t n, uint64_t step, int32_t base) {
    std::vector<uint64_t> cs;
    std::vector<int32_t> vs;
    const uint64_t total = model_.v.size();
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t k = (i * step + 3) % total;
      Coords c(rank());
      for (int d = rank() - 1; d >= 0; --d) {
        c[d] = k % extent_[d];
        k /= extent_[d];
      }
      bool dup = false;
      for (size_t j = 0; j < cs.size(); j += rank()) dup = dup || std::equal(c.begin(), c.end(), &cs[j]);
      if (dup) continue;
      cs.insert(cs.end(), c.begin(), c.end());
      vs.push_back(base - static_cast<int32_t>(i));
      model_.v[model_.at(c.data())] = vs.back();
    }
    Status st = a_->write_points(cs.data(), vs.size(), vs.data());
    ASSERT_TRUE(st.ok()) << status_str(st);
    ASSERT_TRUE(a_->flush().ok());
  }
  void erase(const Box& b) {
    Grid::product(box_sets(b), [&](const uint64_t* c) { model_.v[model_.at(c)] = kFill; });
    Status st = a_->erase({b});
    ASSERT_TRUE(st.ok()) << status_str(st);
    ASSERT_TRUE(a_->flush().ok());
  }
  // A few fragments of every kind: dense boxes (partial tiles), sparse cells, erased
  // cells and a fill box.
  void fill_fragments() {
    Box all(Coords(rank(), 0), extent_);
    for (auto& h : all.hi) --h;
    box(all, 1000);
    Box mid = all;
    for (int d = 0; d < rank(); ++d) {
      mid.lo[d] = extent_[d] / 5;
      mid.hi[d] = extent_[d] * 3 / 5;
    }
    box(mid, 50000);
    points(40, 37, -100);
    Box small = mid;
    for (int d = 0; d < rank(); ++d) small.hi[d] = small.lo[d] + 1;
    erase(small);
  }

  // Full, box, strided and point reads against the model.
  void check(const std::string& what) {
    SCOPED_TRACE(what);
    Box all(Coords(rank(), 0), extent_);
    for (auto& h : all.hi) --h;
    expect_sets(Selection::from_box(all), box_sets(all), "whole");
    Box b = all;
    for (int d = 0; d < rank(); ++d) {
      b.lo[d] = extent_[d] / 3;
      b.hi[d] = extent_[d] - 2;
    }
    expect_sets(Selection::from_box(b), box_sets(b), "box");
    // Strided: start 1, stride 3, block 2 in every dimension.
    Coords start(rank(), 1), stride(rank(), 3), count(rank()), block(rank(), 2);
    std::vector<std::vector<uint64_t>> sets(rank());
    for (int d = 0; d < rank(); ++d) {
      count[d] = (extent_[d] - 1 - 2) / 3 + 1;
      for (uint64_t k = 0; k < count[d]; ++k)
        for (uint64_t j = 0; j < 2; ++j) sets[d].push_back(1 + 3 * k + j);
    }
    expect_sets(Selection::from_hyperslab(start, stride, count, block), sets, "strided");
    // Points, in a scrambled order.
    std::vector<uint64_t> cs;
    std::vector<int32_t> want;
    for (uint64_t i = 0; i < 60; ++i) {
      uint64_t k = (i * 7919 + 11) % model_.v.size();
      want.push_back(model_.v[k]);
      Coords c(rank());
      for (int d = rank() - 1; d >= 0; --d) {
        c[d] = k % extent_[d];
        k /= extent_[d];
      }
      cs.insert(cs.end(), c.begin(), c.end());
    }
    std::vector<int32_t> got(want.size());
    Status st = a_->read_points(cs.data(), want.size(), got.data());
    ASSERT_TRUE(st.ok()) << status_str(st);
    EXPECT_EQ(got, want) << "points";
  }

  Grid& model() { return model_; }

 private:
  void expect_sets(const Selection& sel, const std::vector<std::vector<uint64_t>>& sets, const char* what) {
    std::vector<int32_t> want;
    Grid::product(sets, [&](const uint64_t* c) { want.push_back(model_.v[model_.at(c)]); });
    std::vector<int32_t> got(want.size(), 0x55555555);
    Status st = a_->read(sel, got.data());
    ASSERT_TRUE(st.ok()) << what << ": " << status_str(st);
    EXPECT_EQ(got, want) << what;
  }

  testutil::TempDir tmp_;
  std::string dir_;
  Coords extent_, tile_;
  Grid model_;
  std::unique_ptr<Array> a_;
};

void every_pair(const Coords& extent, const Coords& tile) {
  for (const Lay& from : all_layouts())
    for (const Lay& to : all_layouts()) {
      SCOPED_TRACE(name(from) + " -> " + name(to));
      ConvertRun r(extent, tile, from);
      r.fill_fragments();
      if (::testing::Test::HasFailure()) return;
      r.check("before");
      Status st = r.a().consolidate_layout(to.tile, to.cell);
      ASSERT_TRUE(st.ok()) << status_str(st);
      ASSERT_EQ(r.a().fragments().size(), 1u);
      EXPECT_EQ(r.a().fragments()[0].order.name(), name(to));
      EXPECT_EQ(r.a().schema().order().name(), name(to));
      r.check("converted");
      // New writes take the new order; a reopen reads the schema's new order.
      Box b(Coords(r.rank(), 1), Coords(r.rank(), 3));
      r.box(b, 700000);
      r.reopen();
      EXPECT_EQ(r.a().schema().order().name(), name(to));
      for (auto& f : r.a().fragments()) EXPECT_EQ(f.order.name(), name(to));
      r.check("written after and reopened");
      if (::testing::Test::HasFailure()) return;
    }
}

TEST(LayoutConvert, EveryPairRank2) { every_pair({37, 29}, {8, 6}); }
TEST(LayoutConvert, EveryPairRank3) { every_pair({13, 11, 9}, {4, 3, 5}); }

// Ranges converted to different layouts leave fragments in three orders at once; a
// consolidation without --layout merges them into the schema's order.
TEST(LayoutConvert, MixedOrders) {
  ConvertRun r({41, 23}, {7, 5}, {Order::kRowMajor, Order::kRowMajor});
  r.fill_fragments();  // 4 fragments, row-major
  r.box(Box({3, 2}, {30, 9}), 90000);
  ASSERT_EQ(r.a().fragments().size(), 5u);
  ASSERT_TRUE(r.a().consolidate_layout(Order::kHilbert, Order::kColMajor, 1, 2).ok());
  ASSERT_EQ(r.a().fragments().size(), 4u);
  ASSERT_TRUE(r.a().consolidate_layout(Order::kMultiMap, Order::kRowMajor, 3, 3).ok());
  r.points(25, 101, -5000);  // in multimap:row-major, the schema's order now
  auto frags = r.a().fragments();
  ASSERT_EQ(frags.size(), 5u);
  EXPECT_EQ(frags[0].order.name(), "row-major");
  EXPECT_EQ(frags[1].order.name(), "hilbert:column-major");
  EXPECT_EQ(frags[2].order.name(), "row-major");
  EXPECT_EQ(frags[3].order.name(), "multimap:row-major");
  EXPECT_EQ(frags[4].order.name(), "multimap:row-major");
  r.check("three orders");
  r.reopen();
  r.check("three orders, reopened");
  // Merged without --layout: into the schema's order.
  ASSERT_TRUE(r.a().consolidate(0, 2).ok());
  frags = r.a().fragments();
  ASSERT_EQ(frags.size(), 3u);
  EXPECT_EQ(frags[0].order.name(), "multimap:row-major");
  r.check("merged into the schema's order");
  ASSERT_TRUE(r.a().consolidate_all().ok());
  r.check("all merged");
}

// Strips the order from a version-4 fragment file: the file a development build before
// per-fragment orders wrote (footer without its last field, version 3).
void downgrade_to_v3(const std::string& path) {
  std::shared_ptr<Fragment> f = Fragment::open(path);
  const size_t order_bytes = 2 + 8 * f->meta().order.cube.size();
  f.reset();
  File in = File::open_read(Env::posix(), path);
  std::vector<uint8_t> b(in.size());
  in.pread_exact(b.data(), b.size(), 0);
  uint64_t foff, fsz;
  std::memcpy(&foff, &b[b.size() - kFragTrailerSize], 8);
  std::memcpy(&fsz, &b[b.size() - kFragTrailerSize + 8], 8);
  ASSERT_GT(fsz, order_bytes);
  const uint64_t nsz = fsz - order_bytes;
  std::vector<uint8_t> out(b.begin(), b.begin() + static_cast<long>(foff + nsz));
  const uint32_t v3 = 3;
  std::memcpy(&out[8], &v3, 4);
  uint8_t trailer[kFragTrailerSize] = {};
  const uint64_t ck = checksum64(&out[foff], nsz);
  std::memcpy(trailer, &foff, 8);
  std::memcpy(trailer + 8, &nsz, 8);
  std::memcpy(trailer + 16, &ck, 8);
  std::memcpy(trailer + 24, &v3, 4);
  std::memcpy(trailer + 32, kFragEndMagic, 8);
  out.insert(out.end(), trailer, trailer + sizeof trailer);
  write_file_atomic(Env::posix(), path, out.data(), out.size());
}

// A fragment without a recorded order (version 3, a development build's format) is
// refused, naming the file and both versions: reading it in any assumed order could
// return cells in the wrong places.
TEST(LayoutConvert, FragmentsWithoutARecordedOrderAreRefused) {
  ConvertRun r({31, 26}, {6, 8}, {Order::kZOrder, Order::kColMajor});
  r.fill_fragments();
  ASSERT_EQ(r.a().fragments().size(), 4u);
  r.close();
  const std::string fdir = join_path(r.dir(), "frag");
  std::string old;
  for (const std::string& name : list_dir(Env::posix(), fdir))
    if (old.empty() && name.size() > 4 && name.compare(name.size() - 4, 4, ".tfr") == 0) old = join_path(fdir, name);
  ASSERT_FALSE(old.empty());
  downgrade_to_v3(old);
  if (::testing::Test::HasFailure()) return;
  for (bool writable : {false, true}) {
    std::unique_ptr<Array> a;
    Status st = Array::open(r.dir(), writable, ArrayOptions(), &a);
    ASSERT_FALSE(st.ok()) << "a version 3 fragment was read";
    EXPECT_EQ(st.code(), Errc::kUnsupported) << status_str(st);
    EXPECT_NE(st.message().find("fragment '" + old + "': format version 3 is not supported"), std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("reads version 4 only"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("development build of tessera"), std::string::npos) << st.message();
  }
}

TEST(LayoutConvert, NoFragmentsChangesTheOrderOfNewOnes) {
  ConvertRun r({20, 20}, {5, 5}, {Order::kRowMajor, Order::kRowMajor});
  ASSERT_TRUE(r.a().consolidate_layout(Order::kZOrder, Order::kColMajor).ok());
  r.reopen();
  EXPECT_EQ(r.a().schema().order().name(), "z-order:column-major");
  r.box(Box({2, 3}, {17, 11}), 10);
  ASSERT_EQ(r.a().fragments().size(), 1u);
  EXPECT_EQ(r.a().fragments()[0].order.name(), "z-order:column-major");
  r.check("written after");
}

// A conversion rewrites the schema in the one schema version: the new order, nothing
// kept of the old one (every fragment records its own).
TEST(LayoutConvert, AConvertedSchemaIsTheOneVersionWithTheNewOrder) {
  ConvertRun r({20, 20}, {5, 5}, {Order::kHilbert, Order::kRowMajor});
  r.box(Box({2, 3}, {17, 11}), 10);
  ASSERT_TRUE(r.a().consolidate_layout(Order::kMultiMap, Order::kColMajor).ok());
  r.close();
  std::vector<uint8_t> b = read_file(Env::posix(), join_path(r.dir(), "schema"));
  uint32_t ver;
  std::memcpy(&ver, &b[4 + 8], 4);  // after the record's length and magic
  EXPECT_EQ(ver, 5u);
  r.reopen();
  EXPECT_EQ(r.a().schema().order().name(), "multimap");
  EXPECT_EQ(r.a().fragments().at(0).order.name(), "multimap");
  r.check("converted, reopened");
}

}  // namespace
}  // namespace tessera
