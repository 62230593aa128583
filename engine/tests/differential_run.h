// The randomized differential run (differential_test.cc): its configurations and DiffRun,
// one container with one array driven by random operations, the model following every one
// and every step ending with reads checked against it.  The operations are defined in
// differential_ops.h, which includes this: include that one.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace differential_rig {

using testutil::ArrayModel;
using testutil::IndexSets;
using testutil::Rng;
using testutil::status_str;

constexpr uint64_t kDefaultSeed = 0x7E55E7A;

struct Config {
  const char* name;
  ElementKind kind;
  uint32_t elem_size;
  Coords tile, extent, max_extent, cap;  // cap bounds set_extent (== max_extent if bounded)
  std::vector<Filter> filters;
  Order cell_order = Order::kRowMajor, tile_order = Order::kRowMajor;
  bool nonzero_fill = true;
  uint64_t sparse_capacity = 10000;
  // Consolidations also convert (Array::consolidate_layout) all fragments or a range of
  // them to a random layout, so the array holds fragments in several orders.
  bool convert = false;
};

inline Schema make_schema(const Config& c) {
  Schema s;
  s.extent = c.extent;
  s.max_extent = c.max_extent;
  s.tile_extent = c.tile;
  s.elem_size = c.elem_size;
  s.kind = c.kind;
  if (c.nonzero_fill) {
    s.fill.resize(c.elem_size);
    for (uint32_t i = 0; i < c.elem_size; ++i) s.fill[i] = static_cast<uint8_t>(0xA5 ^ (i * 0x3B));
  }
  s.filters = FilterPipeline(c.filters, c.elem_size);
  s.cell_order = c.cell_order;
  s.sparse_capacity = c.sparse_capacity;
  s.set_tile_order(c.tile_order);  // after the shape: a MultiMap cube depends on it
  return s;
}

inline uint64_t default_iters() { return testutil::env_u64("TESSERA_TEST_ITERS", testutil::kSanitized ? 200 : 400); }

// One randomized run: a container with one array, driven by random operations; the model
// follows every operation and every step ends with reads checked against the model.
class DiffRun {
 public:
  DiffRun(const Config& cfg, uint64_t seed)
      : cfg_(cfg), seed_(seed), rng_(seed), dir_("tessera_diff"),
        model_(cfg.cap, cfg.extent, cfg.elem_size, make_schema(cfg).fill) {}

  void run(uint64_t steps) {
    const std::string cpath = dir_.sub("c.tsr");
    ASSERT_TRUE(Container::create(cpath, Container::CreateMode::kExclusive, &cont_).ok());
    Status st = cont_->create_array(make_schema(cfg_), &id_);
    ASSERT_TRUE(st.ok()) << status_str(st);
    randomize_options();
    st = cont_->open_array(id_, true, opts_, &arr_);
    ASSERT_TRUE(st.ok()) << status_str(st);
    log("open " + opts_str());
    durable_now();
    for (step_ = 0; step_ < steps; ++step_) {
      do_random_op();
      if (!::testing::Test::HasFailure()) verify();
      if (::testing::Test::HasFailure()) {
        ADD_FAILURE() << "config " << cfg_.name << " seed " << seed_ << " failed at step " << step_
                      << "; last operations:\n" << history();
        return;
      }
    }
    // Everything must survive a final close and reopen.
    st = arr_->flush();
    ASSERT_TRUE(st.ok()) << status_str(st);
    arr_.reset();
    st = open_reader(&arr_);
    ASSERT_TRUE(st.ok()) << status_str(st);
    ops_ = step_;
    step_ = 0;  // also checks the long-lived reader
    verify();
    if (::testing::Test::HasFailure())
      ADD_FAILURE() << "config " << cfg_.name << " seed " << seed_ << " failed after the final reopen; last operations:\n"
                    << history();
  }

  uint64_t ops_done() const { return ops_; }
  // What the run exercised (printed with the seed; a run that takes no direct writes or no
  // spills would test much less than it claims).
  struct Stats {
    uint64_t direct = 0, buffered = 0, spills_mid_write = 0, points = 0, extents = 0, reopens = 0, consolidations = 0,
             max_fragments = 0, sparse_tiles = 0, dense_tiles = 0, conversions = 0, max_orders = 0;
  } stats_;
  std::string stats_str() const {
    const Stats& s = stats_;
    return "direct " + std::to_string(s.direct) + ", buffered " + std::to_string(s.buffered) + " (spilled mid-write " +
           std::to_string(s.spills_mid_write) + "), point writes " + std::to_string(s.points) + ", set_extent " +
           std::to_string(s.extents) + ", reopens " + std::to_string(s.reopens) + ", consolidations " +
           std::to_string(s.consolidations) + ", max fragments " + std::to_string(s.max_fragments) +
           ", max sparse/dense tiles " + std::to_string(s.sparse_tiles) + "/" + std::to_string(s.dense_tiles) +
           (s.conversions ? ", conversions " + std::to_string(s.conversions) + " (at most " +
                                std::to_string(s.max_orders) + " orders at once)"
                          : "");
  }

 private:
  // ---- bookkeeping ---------------------------------------------------------------------
  void log(std::string s) {
    hist_.push_back("#" + std::to_string(step_) + " " + s);
    if (hist_.size() > 24) hist_.erase(hist_.begin());
  }
  std::string history() const {
    std::string s;
    for (auto& h : hist_) s += "  " + h + "\n";
    return s;
  }
  std::string opts_str() const {
    return "(budget=" + std::to_string(opts_.buffer_budget) + " direct_cells=" + std::to_string(opts_.direct_cells) +
           (opts_.durable_writes ? " durable" : " deferred, max_open_writers=" + std::to_string(opts_.max_open_writers) +
                                                     " blobs " + std::to_string(opts_.blob_min_cells) + ".." +
                                                     std::to_string(opts_.blob_bytes) + " B") +
           ")";
  }
  std::string coords(const Coords& c) const { return testutil::coords_str(c.data(), rank()); }
  std::string sets_str(const IndexSets& s) const {
    std::string out = "[";
    for (int d = 0; d < rank(); ++d) {
      out += d ? " x " : "";
      out += "{";
      for (size_t i = 0; i < s[d].size() && i < 12; ++i) out += (i ? "," : "") + std::to_string(s[d][i]);
      if (s[d].size() > 12) out += ",...(" + std::to_string(s[d].size()) + ")";
      out += "}";
    }
    return out + "]";
  }
  int rank() const { return model_.rank(); }
  size_t es() const { return cfg_.elem_size; }
  uint64_t tile_cells() const {
    uint64_t n = 1;
    for (uint64_t t : cfg_.tile) n *= t;
    return n;
  }

  void randomize_options() {
    opts_ = ArrayOptions();
    switch (rng_.below(4)) {
      case 0: opts_.buffer_budget = 64 << 20; break;
      case 1: opts_.buffer_budget = 1; break;  // every buffered write spills
      case 2: opts_.buffer_budget = 2048 + rng_.below(4096); break;
      default: opts_.buffer_budget = 40000; break;
    }
    // Deferred publishing (the connector's mode) half of the time.
    opts_.durable_writes = rng_.chance(0.5);
    opts_.max_open_writers = 1 + rng_.below(4);
    switch (rng_.below(4)) {
      case 0: opts_.direct_cells = 16384; break;
      case 1: opts_.direct_cells = 1; break;
      case 2: opts_.direct_cells = 1 + rng_.below(16); break;
      default: opts_.direct_cells = 1 + rng_.below(tile_cells()); break;
    }
    // Blobs (deferred mode): box writes buffered whole — every box, mid-size ones (the
    // default), small ones only, or none.
    switch (rng_.below(4)) {
      case 0: opts_.blob_min_cells = 1; break;
      case 1: break;
      case 2: opts_.blob_bytes = 256; opts_.blob_min_cells = 2; break;
      default: opts_.blob_bytes = 0; break;
    }
    // Inline fragments (catalog records): off, small (so one flush mixes inline records
    // and files, and arrays reach their inline budget), or the default.
    switch (rng_.below(4)) {
      case 0: opts_.inline_fragment_bytes = 0; break;
      case 1:
        opts_.inline_fragment_bytes = 512 + rng_.below(4096);
        opts_.inline_array_bytes = 4096 + rng_.below(16384);
        break;
      default: break;
    }
  }

  // A reader in its own read-only container handle (another process would do the same).
  Status open_reader(std::unique_ptr<Array>* out) {
    std::unique_ptr<Container> c;
    Status st = Container::open(dir_.sub("c.tsr"), false, &c);
    if (!st.ok()) return st;
    return c->open_array(id_, false, ArrayOptions(), out);
  }

  // ---- random selections (inside the current extent, which must be non-empty) ----------
  struct Sel {
    Selection sel;
    IndexSets sets;
    std::string desc;
  };
  Sel random_box(uint64_t max_len) {
    Coords lo(rank()), hi(rank());
    for (int d = 0; d < rank(); ++d) {
      uint64_t e = model_.extent()[d];
      lo[d] = rng_.below(e);
      hi[d] = lo[d] + rng_.range(1, std::min(max_len, e - lo[d])) - 1;
    }
    return box_sel(lo, hi);
  }
  Sel large_box() {
    Coords lo(rank()), hi(rank());
    for (int d = 0; d < rank(); ++d) {
      uint64_t e = model_.extent()[d];
      uint64_t len = rng_.chance(0.3) ? e : rng_.range(std::max<uint64_t>(1, e / 2), e);
      lo[d] = rng_.below(e - len + 1);
      hi[d] = lo[d] + len - 1;
    }
    return box_sel(lo, hi);
  }
  Sel box_sel(const Coords& lo, const Coords& hi) {
    Sel s;
    s.sel = Selection::from_box(Box(lo, hi));
    std::vector<std::vector<Interval>> iv(rank());
    for (int d = 0; d < rank(); ++d) iv[d].push_back({lo[d], hi[d]});
    s.sets = testutil::index_sets_of_intervals(iv);
    s.desc = "box " + Box(lo, hi).to_string();
    return s;
  }
  Sel hyperslab() {
    Coords start(rank()), stride(rank()), count(rank()), block(rank());
    for (int d = 0; d < rank(); ++d) {
      uint64_t e = model_.extent()[d];
      block[d] = rng_.range(1, std::min<uint64_t>(3, e));
      stride[d] = block[d] + rng_.below(4);
      start[d] = rng_.below(e - block[d] + 1);
      uint64_t maxc = (e - start[d] - block[d]) / stride[d] + 1;
      count[d] = rng_.range(1, std::min<uint64_t>(maxc, 12));
      if (count[d] == 1 && rng_.chance(0.3)) stride[d] = rng_.range(1, block[d]);  // stride < block is fine for count 1
    }
    Sel s;
    s.sel = Selection::from_hyperslab(start, stride, count, block);
    s.sets = testutil::index_sets_of_hyperslab(start, stride, count, block);
    s.desc = "hyperslab start" + coords(start) + " stride" + coords(stride) + " count" + coords(count) + " block" +
             coords(block);
    return s;
  }
  Sel intervals() {
    std::vector<std::vector<Interval>> iv(rank());
    for (int d = 0; d < rank(); ++d) {
      uint64_t e = model_.extent()[d];
      size_t k = rng_.range(1, 4);
      for (size_t i = 0; i < k; ++i) {
        uint64_t lo = rng_.below(e);
        uint64_t hi = std::min(e - 1, lo + rng_.below(4));
        iv[d].push_back({lo, hi});  // unsorted, overlapping and adjacent intervals are all allowed
      }
    }
    Sel s;
    s.sets = testutil::index_sets_of_intervals(iv);
    s.sel = Selection::from_intervals(iv);
    s.desc = "intervals " + sets_str(s.sets);
    return s;
  }
  Sel random_read_sel() {
    switch (rng_.below(3)) {
      case 0: return random_box(1 + rng_.below(12));
      case 1: return hyperslab();
      default: return intervals();
    }
  }
  Coords random_point() {
    Coords c(rank());
    for (int d = 0; d < rank(); ++d) c[d] = rng_.below(model_.extent()[d]);
    return c;
  }

  // ---- operations (differential_ops.h) ---------------------------------------------------
  void do_random_op();
  void durable_now();
  void changed();
  void peek_durable();
  void write_sel(Sel s);
  void write_points();
  void set_extent();
  void flush();
  void reopen();
  void consolidate();
  void convert();
  void refresh();
  void reader_check();
  void check_reader();

  // ---- verification --------------------------------------------------------------------
  Sel full_sel(const ArrayModel& m) {
    Coords lo(rank(), 0), hi(rank());
    for (int d = 0; d < rank(); ++d) hi[d] = m.extent()[d] - 1;
    return box_sel(lo, hi);
  }

  void verify() {
    auto frags = arr_->fragments();
    stats_.max_fragments = std::max<uint64_t>(stats_.max_fragments, frags.size());
    for (auto& f : frags) {
      stats_.sparse_tiles = std::max(stats_.sparse_tiles, f.sparse_tiles);
      stats_.dense_tiles = std::max(stats_.dense_tiles, f.dense_tiles);
    }
    if (reader_ && step_ % 4 == 0) check_reader();
    if (model_.empty()) {
      // Nothing can be selected; any point is out of the extent.
      uint64_t p[kMaxRank] = {};
      uint8_t v[64];
      EXPECT_FALSE(arr_->read_points(p, 1, v).ok());
      return;
    }
    check_sel(*arr_, model_, full_sel(model_), "full read", false);
    check_sel(*arr_, model_, random_box(1 + rng_.below(8)), "box read", false);
    check_sel(*arr_, model_, random_read_sel(), "strided read", rng_.chance(0.5));
    check_points();
  }

  void check_sel(Array& a, const ArrayModel& model, Sel s, const char* what, bool strided_dst) {
    const uint64_t n = testutil::product_cells(s.sets);
    std::vector<uint64_t> strides = testutil::dense_strides(s.sets);
    uint64_t total = n, base = 0;
    if (strided_dst) {  // into a sub-region of a larger buffer
      uint64_t m = 1;
      for (int d = rank() - 1; d >= 0; --d) {
        strides[d] = m;
        m *= s.sets[d].size() + rng_.below(3);
      }
      base = rng_.below(5);
      total = m + base;
    }
    std::vector<uint8_t> got(total * es()), want;
    for (size_t i = 0; i < got.size(); ++i) got[i] = static_cast<uint8_t>(0x5C + i * 7);  // sentinel
    want = got;
    model.read(s.sets, want.data() + base * es(), strides.data());
    Status st = a.read(s.sel, got.data() + base * es(), strided_dst ? strides.data() : nullptr);
    ASSERT_TRUE(st.ok()) << what << " " << s.desc << ": " << status_str(st);
    if (got == want) return;
    // Locate the first bad cell for the message.
    std::string where = "(outside the selection: a sentinel was overwritten)";
    testutil::for_each_product(s.sets, [&](const uint64_t* c, const uint64_t* rk) {
      if (where[0] != '(') return;
      uint64_t o = base;
      for (int d = 0; d < rank(); ++d) o += rk[d] * strides[d];
      if (std::memcmp(&got[o * es()], &want[o * es()], es()) != 0)
        where = "cell " + testutil::coords_str(c, rank()) + ": got " + testutil::hex(&got[o * es()], es()) +
                ", want " + testutil::hex(&want[o * es()], es());
    });
    ADD_FAILURE() << what << " " << s.desc << (strided_dst ? " (strided dst)" : "") << " differs from the model at "
                  << where << "; extent " << coords(model.extent()) << ", " << a.fragments().size()
                  << " fragments, " << a.buffered_cells() << " buffered cells";
  }

  void check_points() {
    size_t n = rng_.range(1, 40);
    std::vector<uint64_t> c;
    for (size_t i = 0; i < n; ++i) {
      if (i > 0 && rng_.chance(0.2)) {
        size_t j = rng_.below(i);
        c.insert(c.end(), c.begin() + j * rank(), c.begin() + (j + 1) * rank());
      } else {
        Coords p = random_point();
        c.insert(c.end(), p.begin(), p.end());
      }
    }
    std::vector<uint8_t> got(n * es(), 0x77);
    Status st = arr_->read_points(c.data(), n, got.data());
    ASSERT_TRUE(st.ok()) << "read_points: " << status_str(st);
    for (size_t i = 0; i < n; ++i) {
      const uint8_t* want = model_.at(&c[i * rank()]);
      if (std::memcmp(&got[i * es()], want, es()) != 0) {
        ADD_FAILURE() << "read_points: point " << i << " " << testutil::coords_str(&c[i * rank()], rank()) << ": got "
                      << testutil::hex(&got[i * es()], es()) << ", want " << testutil::hex(want, es());
        return;
      }
    }
  }

  const Config cfg_;
  const uint64_t seed_;
  Rng rng_;
  testutil::TempDir dir_;
  ArrayModel model_;
  std::unique_ptr<Container> cont_;
  std::unique_ptr<Array> arr_;
  std::unique_ptr<Array> reader_;              // long-lived read-only handle
  std::unique_ptr<ArrayModel> reader_model_;  // what it must see
  std::unique_ptr<ArrayModel> durable_model_;  // the durable state, when known
  uint64_t id_ = 0;
  ArrayOptions opts_;
  uint64_t step_ = 0, ops_ = 0;
  std::vector<std::string> hist_;
};

uint64_t config_seed(const char* name) { return testutil::named_seed(name, kDefaultSeed); }

}  // namespace differential_rig
}  // namespace tessera
