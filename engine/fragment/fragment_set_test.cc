// FragmentSet (fragment_set.h): total order by id whatever the order of arrival,
// replacement by consolidation, snapshots that later changes leave whole, find and swap.
#include <gtest/gtest.h>

#include "engine/context/context.h"
#include "engine/fragment/fragment_set.h"
#include "engine/fragment/fragment_writer.h"

using namespace tessera;

namespace {

// An inline fragment with id (ts, seq) holding one sparse cell; `replaces` as
// consolidation records it.
std::shared_ptr<Fragment> frag(uint64_t ts, uint32_t seq = 0, std::vector<FragmentId> replaces = {}) {
  Schema s;
  s.extent = {16};
  s.max_extent = {16};
  s.tile_extent = {4};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  FragmentId id;
  id.ts = ts;
  id.seq = seq;
  FragmentWriter w(*Context::process(), "/nonexistent", id, s, /*inline_limit=*/1 << 20);
  w.set_replaces(replaces);
  uint64_t c = ts % 16;
  int32_t v = static_cast<int32_t>(ts);
  w.add_sparse_cells(&c, reinterpret_cast<const uint8_t*>(&v), 1);
  EXPECT_EQ(w.finish(), "");
  return Fragment::open_inline("f" + std::to_string(ts) + "." + std::to_string(seq),
                               std::make_shared<const std::vector<uint8_t>>(w.take_inline()));
}

std::vector<uint64_t> ts_of(const FragmentList& l) {
  std::vector<uint64_t> out;
  for (auto& f : l) out.push_back(f->meta().id.ts);
  return out;
}

}  // namespace

TEST(FragmentSet, OrderedByIdNotByArrival) {
  FragmentSet s;
  EXPECT_TRUE(s.empty());
  s.assign({frag(30), frag(10), frag(20)});
  EXPECT_EQ(ts_of(s.list()), (std::vector<uint64_t>{10, 20, 30}));
  s.add(frag(15), {});
  EXPECT_EQ(ts_of(s.list()), (std::vector<uint64_t>{10, 15, 20, 30}));
  EXPECT_EQ(s.version(), 2u);
  EXPECT_EQ(s[1]->meta().id.ts, 15u);
  EXPECT_EQ(s.find("f20.0")->meta().id.ts, 20u);
  EXPECT_EQ(s.find("nope"), nullptr);
}

TEST(FragmentSet, ConsolidationReplacesItsInputs) {
  FragmentSet s;
  auto a = frag(10), b = frag(20), c = frag(30);
  s.assign({a, b, c});
  // A merge of 10 and 20 sorts where its newest input was.
  s.add(frag(20, 1, {a->meta().id, b->meta().id}), {a->meta().id, b->meta().id});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0]->meta().id.ts, 20u);
  EXPECT_EQ(s[0]->meta().id.seq, 1u);
  EXPECT_EQ(s[1], c);
}

TEST(FragmentSet, SnapshotsStayWhole) {
  FragmentSet s;
  auto a = frag(10), b = frag(20);
  s.assign({a, b});
  auto snap = s.snapshot();
  s.add(frag(30), {a->meta().id});
  auto c2 = frag(25);
  s.swap(b, c2);
  EXPECT_EQ(ts_of(*snap), (std::vector<uint64_t>{10, 20}));
  EXPECT_EQ((*snap)[0], a);
  EXPECT_EQ(ts_of(s.list()), (std::vector<uint64_t>{25, 30}));
}
