// DiffRun's random operations (differential_run.h): writes of every selection kind,
// set_extent, flush, reopen, consolidation and conversion, refresh and the long-lived
// reader, each followed by the model.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/tests/differential_run.h"
#include "engine/util/file_cache.h"

namespace tessera {
namespace differential_rig {

inline void DiffRun::do_random_op() {
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
inline void DiffRun::durable_now() {
  durable_model_ = std::make_unique<ArrayModel>(model_);
}
inline void DiffRun::changed() {
  if (opts_.durable_writes) durable_model_.reset();
}

// Deferred mode: a fresh read-only handle sees exactly the last flushed state.
inline void DiffRun::peek_durable() {
  if (!durable_model_) return;
  log("read-only peek at the durable state");
  std::unique_ptr<Array> ro;
  Status st = open_reader(&ro);
  ASSERT_TRUE(st.ok()) << status_str(st);
  EXPECT_EQ(ro->schema().extent, durable_model_->extent()) << "unflushed extent change visible to a reader";
  if (!durable_model_->empty() && ro->schema().extent == durable_model_->extent())
    check_sel(*ro, *durable_model_, full_sel(*durable_model_), "fresh reader (durable state)", false);
}

inline void DiffRun::write_sel(Sel s) {
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

inline void DiffRun::write_points() {
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

inline void DiffRun::set_extent() {
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

inline void DiffRun::flush() {
  log("flush");
  Status st = arr_->flush();
  ASSERT_TRUE(st.ok()) << status_str(st);
  durable_now();
  EXPECT_EQ(arr_->buffered_cells(), 0u);
}

inline void DiffRun::reopen() {
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

inline void DiffRun::consolidate() {
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
  for (const std::string& name : is_directory(cont_->env(), fdir) ? list_dir(cont_->env(), fdir) : std::vector<std::string>()) {
    // The long-lived reader's fragments are renamed away until it lets go of them
    // (file_cache.h); anything else temporary is a stray.
    if (reader_ && FileCache::hidden_name(name)) continue;
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
inline void DiffRun::convert() {
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

inline void DiffRun::refresh() {
  log("refresh");
  Status st = arr_->refresh();
  ASSERT_TRUE(st.ok()) << status_str(st);
}

// A long-lived read-only handle sees exactly what was made durable as of its last
// refresh (or open), and keeps seeing that state until the next refresh — even when the
// writer consolidates and unlinks the fragments it has open, or changes the extent.
inline void DiffRun::reader_check() {
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
  // Nothing holds the fragments consolidations removed any more: their renamed-away
  // files went with the reader's old listing (file_cache.h).
  const std::string fdir = join_path(cont_->array_dir(id_), "frag");
  if (is_directory(Env::posix(), fdir)) {
    for (const std::string& name : list_dir(Env::posix(), fdir)) {
      EXPECT_FALSE(FileCache::hidden_name(name)) << "a removed fragment outlived its readers: " << name;
    }
  }
  reader_model_ = std::make_unique<ArrayModel>(model_);
  check_reader();
}
inline void DiffRun::check_reader() {
  EXPECT_EQ(reader_->schema().extent, reader_model_->extent());
  if (!reader_model_->empty()) check_sel(*reader_, *reader_model_, full_sel(*reader_model_), "reader full read", false);
}


}  // namespace differential_rig
}  // namespace tessera
