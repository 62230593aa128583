// Randomized differential test of the array engine (engine/array/array.h) against a plain
// in-memory model (testutil.h): ten configurations (ranks 1-4, element sizes 1/4/8/12,
// tiles that do not divide the extent, no filter / shuffle+deflate / zstd / lz4, row- and
// column-major orders, fill values) each run a few hundred random operations — box,
// strided, interval-product and point writes, set_extent, flush, reopen, consolidation,
// refresh, a long-lived reader — with full, box, strided and point reads checked after
// every step.  The deterministic tests are in differential_fixed_test.cc.
//
// Every random run prints its seed.  Replay one configuration with
//   TESSERA_TEST_SEED=<seed> TESSERA_TEST_SEED_EXACT=1 ./engine_tests --gtest_filter='Differential.<name>'
// (without TESSERA_TEST_SEED_EXACT the value is a base seed from which each configuration
// derives its own).  TESSERA_TEST_ITERS overrides the number of operations per configuration.
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
namespace {

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

Schema make_schema(const Config& c) {
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

uint64_t default_iters() { return testutil::env_u64("TESSERA_TEST_ITERS", testutil::kSanitized ? 200 : 400); }

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

  // ---- operations ----------------------------------------------------------------------
  void do_random_op() {
    const bool empty = model_.empty();
    uint64_t r = rng_.below(100);
    if (empty && r < 55) r = 55 + rng_.below(45);  // nothing to write into: pick a non-write op
    if (r < 16) write_sel(random_box(1 + rng_.below(4)));
    else if (r < 28) write_sel(large_box());
    else if (r < 37) write_sel(hyperslab());
    else if (r < 44) write_sel(intervals());
    else if (r < 55) write_points();
    else if (r < 63) set_extent();
    else if (r < 70) flush();
    else if (r < 76) reopen();
    else if (r < 84) {
      if (cfg_.convert && rng_.chance(0.6)) convert();
      else consolidate();
    }
    else if (r < 88) refresh();
    else if (r < 93) reader_check();
    else if (r < 96) peek_durable();
    else if (!empty) write_sel(random_box(2));
    else flush();
  }

  // The durable state (what a fresh reader, or a crash, would see) is known exactly after a
  // flush; in deferred mode it then stays put until the next flush, in durable mode every
  // write or extent change makes parts of itself durable at once.
  void durable_now() {
    durable_model_ = std::make_unique<ArrayModel>(model_);
  }
  void changed() {
    if (opts_.durable_writes) durable_model_.reset();
  }

  // Deferred mode: a fresh read-only handle sees exactly the last flushed state.
  void peek_durable() {
    if (!durable_model_) return;
    log("read-only peek at the durable state");
    std::unique_ptr<Array> ro;
    Status st = open_reader(&ro);
    ASSERT_TRUE(st.ok()) << status_str(st);
    EXPECT_EQ(ro->schema().extent, durable_model_->extent()) << "unflushed extent change visible to a reader";
    if (!durable_model_->empty() && ro->schema().extent == durable_model_->extent())
      check_sel(*ro, *durable_model_, full_sel(*durable_model_), "fresh reader (durable state)", false);
  }

  void write_sel(Sel s) {
    changed();
    const uint64_t n = testutil::product_cells(s.sets);
    // Sometimes a padded source buffer with explicit strides.
    std::vector<uint64_t> strides = testutil::dense_strides(s.sets);
    bool padded = rng_.chance(0.25);
    uint64_t total = n;
    if (padded) {
      uint64_t m = 1;
      for (int d = rank() - 1; d >= 0; --d) {
        strides[d] = m;
        m *= s.sets[d].size() + rng_.below(3);
      }
      total = m;
    }
    std::vector<uint8_t> src(total * es());
    rng_.fill(src.data(), src.size());
    // Deferred mode buffers mid-size boxes whole (blob_buffer.h): no fragment of their own.
    const bool blob = s.sel.is_box() && !opts_.durable_writes && n >= opts_.blob_min_cells &&
                      n * es() <= opts_.blob_bytes;
    bool direct = !blob && s.sel.is_box() && n >= std::min(opts_.direct_cells, tile_cells());
    log("write " + s.desc + (padded ? " (padded src)" : "") + (direct ? " [direct]" : " [buffered]"));
    // A background flush still queued from an earlier buffered write would land its
    // fragment in between: let it finish first (write_budget.h).
    arr_->settle();
    size_t before = arr_->fragments().size();
    const bool blobs_before = arr_->buffered_cells() > 0;  // a direct write may spill overlapping blobs first
    Status st = arr_->write(s.sel, src.data(), padded ? strides.data() : nullptr);
    ASSERT_TRUE(st.ok()) << status_str(st);
    model_.write(s.sets, src.data(), strides.data());
    size_t after = arr_->fragments().size();
    if (direct) {
      ++stats_.direct;
      EXPECT_TRUE(after == before + 1 || (blobs_before && after == before + 2))
          << "a direct write publishes exactly one fragment (after a spill of the blobs it overlaps)";
    } else {
      ++stats_.buffered;
      stats_.spills_mid_write += after > before;
    }
  }

  void write_points() {
    changed();
    size_t n = rng_.range(1, 60);
    std::vector<uint64_t> c;
    for (size_t i = 0; i < n; ++i) {
      if (i > 0 && rng_.chance(0.2)) {  // a duplicate of an earlier point in the same call
        size_t j = rng_.below(i);
        c.insert(c.end(), c.begin() + j * rank(), c.begin() + (j + 1) * rank());
      } else {
        Coords p = random_point();
        c.insert(c.end(), p.begin(), p.end());
      }
    }
    std::vector<uint8_t> v(n * es());
    rng_.fill(v.data(), v.size());
    log("write_points n=" + std::to_string(n));
    Status st = arr_->write_points(c.data(), n, v.data());
    ASSERT_TRUE(st.ok()) << status_str(st);
    for (size_t i = 0; i < n; ++i) model_.set(&c[i * rank()], &v[i * es()]);  // later wins
    ++stats_.points;
  }

  void set_extent() {
    Coords e = model_.extent();
    for (int d = 0; d < rank(); ++d) {
      uint64_t cap = cfg_.cap[d];
      uint64_t k = rng_.below(10);
      if (k < 3) continue;                                 // keep
      if (k < 6) e[d] = rng_.range(std::min(e[d] + 1, cap), cap);  // grow
      else if (k < 9) e[d] = rng_.range(e[d] > 0 ? 1 : 0, e[d]);  // shrink (may stay)
      else e[d] = rng_.chance(0.15) ? 0 : rng_.range(1, cap);      // anything, rarely empty
    }
    log("set_extent " + coords(e));
    changed();
    Status st = arr_->set_extent(e);
    ASSERT_TRUE(st.ok()) << status_str(st);
    model_.set_extent(e);
    ++stats_.extents;
    EXPECT_EQ(arr_->schema().extent, e);
  }

  void flush() {
    log("flush");
    Status st = arr_->flush();
    ASSERT_TRUE(st.ok()) << status_str(st);
    durable_now();
    EXPECT_EQ(arr_->buffered_cells(), 0u);
  }

  void reopen() {
    bool flush_first = rng_.chance(0.5);
    bool via_container = rng_.chance(0.5);
    ++stats_.reopens;
    if (flush_first) {
      Status st = arr_->flush();
      ASSERT_TRUE(st.ok()) << status_str(st);
    }
    arr_.reset();  // the destructor flushes whatever is still buffered
    durable_now();
    randomize_options();
    log(std::string("reopen") + (via_container ? " via Container::open" : " via Array::open") +
        (flush_first ? " (flushed first)" : " (destructor flush)") + " " + opts_str());
    Status st;
    if (via_container) {
      cont_.reset();
      st = Container::open(dir_.sub("c.tsr"), true, &cont_);
      ASSERT_TRUE(st.ok()) << status_str(st);
      st = cont_->open_array(id_, true, opts_, &arr_);
    } else {
      st = cont_->open_array(id_, true, opts_, &arr_);
    }
    ASSERT_TRUE(st.ok()) << status_str(st);
    EXPECT_EQ(arr_->schema().extent, model_.extent());
    EXPECT_EQ(arr_->buffered_cells(), 0u);
  }

  void consolidate() {
    arr_->settle();  // a queued background flush would add a fragment to the count below
    size_t nfr = arr_->fragments().size() + (arr_->buffered_cells() > 0 ? 1 : 0);  // after the spill
    uint64_t k = rng_.below(3);
    Status st;
    size_t expect = SIZE_MAX;
    if (k == 0) {
      log("consolidate_all (fragments " + std::to_string(nfr) + ")");
      st = arr_->consolidate_all();
      expect = std::min<size_t>(nfr, 1);
    } else if (k == 1 && nfr >= 1) {
      size_t first = rng_.below(nfr);
      size_t last = std::min(nfr - 1, first + rng_.below(5));
      log("consolidate(" + std::to_string(first) + ", " + std::to_string(last) + ") of " + std::to_string(nfr));
      st = arr_->consolidate(first, last);
      expect = nfr - (last - first);
    } else {
      size_t min_run = rng_.range(2, 4);
      double ratio = 1.5 + static_cast<double>(rng_.below(7));
      log("consolidate_auto(" + std::to_string(min_run) + ", " + std::to_string(ratio) + ") of " + std::to_string(nfr));
      st = arr_->consolidate_auto(min_run, ratio);
    }
    ASSERT_TRUE(st.ok()) << status_str(st);
    durable_now();  // a consolidation flushes first
    ++stats_.consolidations;
    auto frags = arr_->fragments();
    if (expect != SIZE_MAX) {
      EXPECT_EQ(frags.size(), expect) << "fragment count after consolidation";
    }
    EXPECT_EQ(arr_->buffered_cells(), 0u);
    // Merged inputs are removed; nothing temporary is left behind.
    size_t tfr = 0, file_frags = 0;
    const std::string fdir = join_path(cont_->array_dir(id_), "frag");
    for (const std::string& name : is_directory(Env::posix(), fdir) ? list_dir(Env::posix(), fdir) : std::vector<std::string>()) {
      EXPECT_FALSE(name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) << "stray temp file " << name;
      tfr += name.size() > 4 && name.compare(name.size() - 4, 4, ".tfr") == 0;
    }
    for (auto& f : frags) file_frags += f.path.compare(0, fdir.size(), fdir) == 0;
    EXPECT_EQ(tfr, file_frags) << "fragment files on disk vs live file fragments";
    // Merged inline inputs are removed too: the catalog holds exactly the live ones.
    size_t records = cont_->catalog().scan(Container::array_prefix(id_) + "frag/").size();
    EXPECT_EQ(records, frags.size() - file_frags) << "inline fragment records vs live inline fragments";
    for (size_t i = 1; i < frags.size(); ++i) EXPECT_TRUE(frags[i - 1].id < frags[i].id);
  }

  // A conversion of every fragment or of a range of them to a random layout: the merged
  // fragment and the schema take it, the other fragments keep theirs.
  void convert() {
    arr_->settle();
    const size_t nfr = arr_->fragments().size() + (arr_->buffered_cells() > 0 ? 1 : 0);
    const Order tiles[] = {Order::kRowMajor, Order::kColMajor, Order::kZOrder, Order::kHilbert, Order::kMultiMap};
    const Order tile = tiles[rng_.below(5)];
    const Order cell = rng_.chance(0.5) ? Order::kRowMajor : Order::kColMajor;
    size_t first = 0, last = SIZE_MAX, expect = std::min<size_t>(nfr, 1);
    if (nfr >= 2 && rng_.chance(0.5)) {
      first = rng_.below(nfr);
      last = std::min(nfr - 1, first + rng_.below(4));
      expect = nfr - (last - first);
    }
    log("consolidate_layout(" + layout_name(tile, cell) + ", " + std::to_string(first) + ", " +
        (last == SIZE_MAX ? std::string("all") : std::to_string(last)) + ") of " + std::to_string(nfr));
    Status st = arr_->consolidate_layout(tile, cell, first, last);
    ASSERT_TRUE(st.ok()) << status_str(st);
    durable_now();
    ++stats_.consolidations;
    ++stats_.conversions;
    const auto frags = arr_->fragments();
    EXPECT_EQ(frags.size(), expect) << "fragment count after conversion";
    EXPECT_EQ(arr_->schema().tile_order, tile);
    EXPECT_EQ(arr_->schema().cell_order, cell);
    if (nfr > 0 && first < frags.size()) {
      EXPECT_EQ(frags[first].order, arr_->schema().order()) << "the merged fragment's order";
    }
    std::set<std::string> orders;
    for (auto& f : frags) orders.insert(f.order.name());
    stats_.max_orders = std::max<uint64_t>(stats_.max_orders, orders.size());
  }

  void refresh() {
    log("refresh");
    Status st = arr_->refresh();
    ASSERT_TRUE(st.ok()) << status_str(st);
  }

  // A long-lived read-only handle sees exactly what was made durable as of its last
  // refresh (or open), and keeps seeing that state until the next refresh — even when the
  // writer consolidates and unlinks the fragments it has open, or changes the extent.
  void reader_check() {
    Status st = arr_->flush();
    ASSERT_TRUE(st.ok()) << status_str(st);
    durable_now();
    if (!reader_ || rng_.chance(0.25)) {
      log("flush + open a read-only reader");
      reader_.reset();
      st = open_reader(&reader_);
    } else {
      log("flush + refresh the read-only reader");
      st = reader_->refresh();
    }
    ASSERT_TRUE(st.ok()) << status_str(st);
    reader_model_ = std::make_unique<ArrayModel>(model_);
    check_reader();
  }
  void check_reader() {
    EXPECT_EQ(reader_->schema().extent, reader_model_->extent());
    if (!reader_model_->empty()) check_sel(*reader_, *reader_model_, full_sel(*reader_model_), "reader full read", false);
  }

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

void run_config(const Config& cfg) {
  uint64_t seed = config_seed(cfg.name);
  uint64_t iters = default_iters();
  SCOPED_TRACE("Differential config " + std::string(cfg.name) + " seed " + std::to_string(seed) + " (replay: TESSERA_TEST_SEED=" +
               std::to_string(seed) + " TESSERA_TEST_SEED_EXACT=1)");
  auto t0 = std::chrono::steady_clock::now();
  DiffRun run(cfg, seed);
  run.run(iters);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ seed     ] Differential %s: seed %llu, %llu ops, %.2f s\n             %s\n", cfg.name,
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(run.ops_done()), secs,
              run.stats_str().c_str());
}

using F = FilterType;
const std::vector<Filter> kNone = {};
const std::vector<Filter> kShuffleDeflate = {{F::kShuffle, 0}, {F::kDeflate, 4}};
const std::vector<Filter> kZstd = {{F::kZstd, 0}};
const std::vector<Filter> kLz4 = {{F::kLz4, 0}};
constexpr uint64_t U = kUnlimited;

// Regression: a schema without an explicit fill value (zeros, the HDF5 default) used to
// hit undefined behaviour on open (memcpy to the null data() of the empty fill vector in
// ByteReader), which aborts sanitizer builds.  Runs before the random configurations so a
// sanitizer abort names it.
TEST(Differential, ZeroFillSchemaOpens) {
  testutil::TempDir t("tessera_diff_zerofill");
  Schema s;
  s.extent = {10};
  s.max_extent = {10};
  s.tile_extent = {4};
  s.elem_size = 4;
  ASSERT_TRUE(s.fill.empty());
  ASSERT_TRUE(Array::create(t.sub("a"), s).ok());
  std::unique_ptr<Array> a;
  Status st = Array::open(t.sub("a"), false, ArrayOptions(), &a);
  ASSERT_TRUE(st.ok()) << status_str(st);
  std::vector<uint32_t> v(10, 1);
  ASSERT_TRUE(a->read(Selection::from_box(Box({0}, {9})), v.data()).ok());
  EXPECT_EQ(v, std::vector<uint32_t>(10, 0));
}

TEST(Differential, Rank1Elem1NoFilter) {
  run_config({"Rank1Elem1NoFilter", ElementKind::kUInt, 1, {7}, {50}, {300}, {300}, kNone});
}
TEST(Differential, Rank1Elem8ZstdUnlimitedSmallSparseTiles) {
  Config c{"Rank1Elem8ZstdUnlimitedSmallSparseTiles", ElementKind::kFloat, 8, {64}, {100}, {U}, {500}, kZstd};
  c.sparse_capacity = 5;
  run_config(c);
}
TEST(Differential, Rank2Elem4ShuffleDeflate) {
  Config c{"Rank2Elem4ShuffleDeflate", ElementKind::kInt, 4, {5, 7}, {23, 31}, {40, U}, {40, 48}, kShuffleDeflate};
  c.sparse_capacity = 13;
  run_config(c);
}
TEST(Differential, Rank2Elem12Lz4ColMajor) {
  run_config({"Rank2Elem12Lz4ColMajor", ElementKind::kOpaque, 12, {4, 6}, {17, 19}, {30, 30}, {30, 30}, kLz4,
              Order::kColMajor, Order::kColMajor});
}
TEST(Differential, Rank2Elem1MixedOrdersZstd) {
  Config c{"Rank2Elem1MixedOrdersZstd", ElementKind::kOpaque, 1, {8, 3}, {20, 25}, {U, 33}, {45, 33}, kZstd,
           Order::kRowMajor, Order::kColMajor};
  c.sparse_capacity = 17;
  run_config(c);
}
TEST(Differential, Rank2TileLargerThanExtent) {
  Config c{"Rank2TileLargerThanExtent", ElementKind::kUInt, 4, {64, 48}, {30, 20}, {U, U}, {60, 40}, kNone,
           Order::kColMajor, Order::kRowMajor};
  c.nonzero_fill = false;
  c.sparse_capacity = 20;
  run_config(c);
}
TEST(Differential, Rank3Elem4Zstd) {
  Config c{"Rank3Elem4Zstd", ElementKind::kUInt, 4, {3, 4, 5}, {10, 9, 11}, {16, 16, 16}, {16, 16, 16}, kZstd,
           Order::kColMajor, Order::kRowMajor};
  c.sparse_capacity = 7;
  run_config(c);
}
TEST(Differential, Rank3Elem12ShuffleDeflate) {
  Config c{"Rank3Elem12ShuffleDeflate", ElementKind::kOpaque, 12, {4, 4, 4}, {8, 7, 9}, {U, 12, 13}, {14, 12, 13},
           kShuffleDeflate, Order::kRowMajor, Order::kColMajor};
  c.sparse_capacity = 9;
  run_config(c);
}
TEST(Differential, Rank4Elem8Lz4ColMajor) {
  Config c{"Rank4Elem8Lz4ColMajor", ElementKind::kInt, 8, {2, 3, 2, 3}, {5, 6, 4, 7}, {8, 8, 8, 8}, {8, 8, 8, 8},
           kLz4, Order::kColMajor, Order::kColMajor};
  c.sparse_capacity = 32;
  run_config(c);
}
TEST(Differential, Rank4Elem1NoFilter) {
  run_config({"Rank4Elem1NoFilter", ElementKind::kUInt, 1, {3, 3, 3, 3}, {7, 5, 6, 4}, {U, 9, 9, U}, {9, 9, 9, 8},
              kNone});
}

// The space-filling tile orders (docs/layouts.md), each against the model with every
// operation above: box, strided, interval-product and point writes and reads, extents,
// spills, blobs, reopen and consolidation.
TEST(Differential, Rank1ZOrder) {
  run_config({"Rank1ZOrder", ElementKind::kUInt, 2, {5}, {40}, {U}, {90}, kNone, Order::kRowMajor, Order::kZOrder});
}
TEST(Differential, Rank2ZOrderUnlimitedZstd) {
  Config c{"Rank2ZOrderUnlimitedZstd", ElementKind::kInt, 4, {5, 7}, {23, 31}, {40, U}, {40, 48}, kZstd,
           Order::kRowMajor, Order::kZOrder};
  c.sparse_capacity = 13;
  run_config(c);
}
TEST(Differential, Rank2HilbertColMajorCells) {
  run_config({"Rank2HilbertColMajorCells", ElementKind::kOpaque, 12, {4, 6}, {17, 19}, {30, 30}, {30, 30}, kLz4,
              Order::kColMajor, Order::kHilbert});
}
TEST(Differential, Rank2MultiMapUnlimited) {
  Config c{"Rank2MultiMapUnlimited", ElementKind::kOpaque, 1, {8, 3}, {20, 25}, {U, 33}, {45, 33}, kNone,
           Order::kRowMajor, Order::kMultiMap};
  c.sparse_capacity = 17;
  run_config(c);
}
TEST(Differential, Rank3ZOrderNoFilter) {
  Config c{"Rank3ZOrderNoFilter", ElementKind::kUInt, 4, {3, 4, 5}, {10, 9, 11}, {16, 16, 16}, {16, 16, 16}, kNone,
           Order::kRowMajor, Order::kZOrder};
  c.sparse_capacity = 7;
  run_config(c);
}
TEST(Differential, Rank3HilbertShuffleDeflate) {
  Config c{"Rank3HilbertShuffleDeflate", ElementKind::kOpaque, 12, {4, 4, 4}, {8, 7, 9}, {U, 12, 13}, {14, 12, 13},
           kShuffleDeflate, Order::kRowMajor, Order::kHilbert};
  c.sparse_capacity = 9;
  run_config(c);
}
TEST(Differential, Rank3MultiMapZstd) {
  Config c{"Rank3MultiMapZstd", ElementKind::kFloat, 4, {2, 3, 2}, {10, 9, 11}, {U, 16, U}, {16, 16, 16}, kZstd,
           Order::kRowMajor, Order::kMultiMap};
  c.sparse_capacity = 7;
  run_config(c);
}
TEST(Differential, Rank3MultiMapColMajorCellsNoFilter) {
  Config c{"Rank3MultiMapColMajorCellsNoFilter", ElementKind::kUInt, 2, {3, 2, 4}, {9, 10, 7}, {16, 16, 16},
           {16, 16, 16}, kNone, Order::kColMajor, Order::kMultiMap};
  run_config(c);
}
TEST(Differential, Rank4HilbertNoFilter) {
  run_config({"Rank4HilbertNoFilter", ElementKind::kUInt, 1, {3, 3, 3, 3}, {7, 5, 6, 4}, {U, 9, 9, U}, {9, 9, 9, 8},
              kNone, Order::kRowMajor, Order::kHilbert});
}

// Conversions (docs/layouts.md): consolidations that rewrite every fragment or a range of
// them into a random layout, so reads, consolidations, extent changes, the write buffer
// and the long-lived reader meet arrays whose fragments are in several orders.
TEST(Differential, Rank2ConvertingLayouts) {
  Config c{"Rank2ConvertingLayouts", ElementKind::kInt, 4, {5, 7}, {23, 31}, {40, U}, {40, 48}, kNone,
           Order::kRowMajor, Order::kRowMajor};
  c.sparse_capacity = 13;
  c.convert = true;
  run_config(c);
}
TEST(Differential, Rank3ConvertingLayoutsZstd) {
  Config c{"Rank3ConvertingLayoutsZstd", ElementKind::kOpaque, 12, {3, 4, 5}, {10, 9, 11}, {U, 16, 16},
           {16, 16, 16}, kZstd, Order::kColMajor, Order::kHilbert};
  c.sparse_capacity = 7;
  c.convert = true;
  run_config(c);
}
TEST(Differential, Rank3ConvertingLayoutsMultiMapNoFilter) {
  Config c{"Rank3ConvertingLayoutsMultiMapNoFilter", ElementKind::kUInt, 2, {3, 2, 4}, {9, 10, 7}, {16, 16, 16},
           {16, 16, 16}, kNone, Order::kColMajor, Order::kMultiMap};
  c.convert = true;
  run_config(c);
}

}  // namespace
}  // namespace tessera
