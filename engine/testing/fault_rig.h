// Generations of three arrays, written and committed under injected faults
// (fault_test.cc, power_loss_test.cc): the arrays of commit_test.cc — a small one (inline
// catalog records), a large one (several fragment files: a journal) and one whose extent
// grows with each generation — each holding generation g in every cell, committed by a
// serial flush (commit_arrays) or an epoch (commit_epoch, parallel-file arrays); and the
// checks that a container holds one whole committed generation.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "engine/testing/test_schema.h"
#include "engine/container/verify.h"

namespace tessera {
namespace fault_rig {

// The arrays of commit_test.cc: a small one (inline catalog records), a large one
// (several fragment files: a journal) and one whose extent grows with each generation.
enum Which { kSmall, kLarge, kGrowing, kArrays };

inline Schema schema_of(int which) {
  switch (which) {
    case kSmall: return int32_schema({8, 8}, {8, 8}, {8, 8});
    case kLarge: return int32_schema({128, 128}, {128, 128}, {32, 32});
    default: return int32_schema({32, 64}, {kUnlimited, 64}, {16, 16});
  }
}

inline uint64_t rows_of(int which, int g) {
  return which == kGrowing ? 32 + 16 * static_cast<uint64_t>(g) : schema_of(which).extent[0];
}

// Writes generation g (g in every cell); false if a call failed (the fault).
inline bool write_generation(Array& a, int which, int g) {
  const uint64_t cols = a.schema().extent[1];
  if (which == kGrowing && !a.set_extent({rows_of(which, g), cols}).ok()) return false;
  const uint64_t rows = a.schema().extent[0];
  std::vector<int32_t> v(rows * cols, g);
  if (which == kLarge) {
    for (uint64_t q = 0; q < 4; ++q) {
      Box b({q * 32, 0}, {q * 32 + 31, cols - 1});
      if (!a.write(Selection::from_box(b), v.data()).ok()) return false;
    }
    uint64_t pts[6] = {3, 5, 100, 20, 127, 127};
    return a.write_points(pts, 3, v.data()).ok();
  }
  return a.write(Selection::from_box(Box({0, 0}, {rows - 1, cols - 1})), v.data()).ok();
}

// The generation the array holds, or -1 (with a failure) if it is not one whole one.
inline int generation_of(Array& a, int which) {
  const Coords& e = a.schema().extent;
  std::vector<int32_t> v(e[0] * e[1], -7);
  Status st = a.read(Selection::from_box(Box({0, 0}, {e[0] - 1, e[1] - 1})), v.data());
  if (!st.ok()) {
    ADD_FAILURE() << "array " << which << " unreadable: " << st.message();
    return -1;
  }
  for (int32_t x : v)
    if (x != v[0]) {
      ADD_FAILURE() << "array " << which << " mixes generations " << v[0] << " and " << x;
      return -1;
    }
  if (e[0] != rows_of(which, v[0])) {
    ADD_FAILURE() << "array " << which << " has " << e[0] << " rows with generation " << v[0] << "'s data";
    return -1;
  }
  return v[0];
}

inline ArrayOptions options(bool epochs) {
  ArrayOptions o;
  o.durable_writes = false;  // the connector's mode: published by a commit
  o.blob_bytes = 0;
  o.collective = epochs;
  return o;
}

// An open writer: the container (with the rig's Context) and its arrays.
struct Writer {
  std::unique_ptr<Container> c;
  std::map<uint64_t, std::shared_ptr<Array>> open;
  std::vector<Array*> list;
  uint64_t ids[kArrays] = {};
};

// The two sync routes of a commit (commit.h): one fdatasync per file, one syncfs per step.
inline const SyncPolicy kPerFile{1000}, kSyncfs{0};

inline bool open_writer(const std::shared_ptr<Context>& ctx, const std::string& path, const uint64_t* ids, bool epochs,
                        Writer* w) {
  if (!Container::open(path, true, &w->c, ctx).ok()) return false;
  for (int i = 0; i < kArrays; ++i) {
    std::unique_ptr<Array> a;
    if (!w->c->open_array(ids[i], true, options(epochs), &a).ok()) return false;
    w->ids[i] = ids[i];
    w->list.push_back(a.get());
    w->open[ids[i]] = std::move(a);
  }
  return true;
}

inline Status commit(Writer& w, bool epochs, SyncPolicy sync) {
  CommitOptions co;
  co.sync = sync;
  if (!epochs) return commit_arrays(*w.c, w.list, co);
  SoloGroup solo;
  uint64_t epoch = 0;
  Status st = guard([&] { epoch = w.c->committed_epoch() + 1; });
  if (!st.ok()) return st;
  return commit_epoch(*w.c, solo, w.open, {}, epoch, {}, co);
}

inline bool write_all(Writer& w, int g) {
  for (int i = 0; i < kArrays; ++i)
    if (!write_generation(*w.open[w.ids[i]], i, g)) return false;
  return true;
}

// A fresh container at `path` holding generation 1 of the three arrays, committed.
// file_arrays: a parallel file's arrays (schema files, publish logs) even when a serial
// writer commits them (an h5py program opening an MPI job's file without MPI).
inline void make_committed(const std::shared_ptr<Context>& ctx, const std::string& path, bool epochs, SyncPolicy sync,
                           uint64_t* ids, bool file_arrays = false) {
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kTruncate, &c, ctx).ok());
  c->set_file_arrays(epochs || file_arrays);
  for (int i = 0; i < kArrays; ++i) ASSERT_TRUE(c->create_array(schema_of(i), &ids[i]).ok());
  ASSERT_TRUE(guard([&] { c->catalog().sync(); }).ok());
  c.reset();
  Writer w;
  ASSERT_TRUE(open_writer(ctx, path, ids, epochs, &w));
  ASSERT_TRUE(write_all(w, 1));
  Status st = commit(w, epochs, sync);
  ASSERT_TRUE(st.ok()) << st.message();
}

// Every array's generation as a new process would see it (POSIX, read-only: recovery
// reads journals through; with `writable`, it runs).
inline std::vector<int> generations(const std::string& path, const uint64_t* ids, bool writable) {
  std::unique_ptr<Container> c;
  Status st = Container::open(path, writable, &c);
  EXPECT_TRUE(st.ok()) << "reopen: " << st.message();
  std::vector<int> out;
  for (int i = 0; i < kArrays && c; ++i) {
    std::unique_ptr<Array> a;
    st = c->open_array(ids[i], false, options(false), &a);
    EXPECT_TRUE(st.ok()) << "open array " << i << ": " << st.message();
    out.push_back(a ? generation_of(*a, i) : -1);
  }
  return out;
}

inline void expect_whole(const std::vector<int>& g, bool epochs, bool succeeded) {
  ASSERT_EQ(g.size(), size_t{kArrays});
  for (int x : g) {
    EXPECT_TRUE(x == 1 || x == 2) << "generation " << x;
    if (succeeded) {
      EXPECT_EQ(x, 2) << "the operation reported success";
    }
    if (epochs) {
      EXPECT_EQ(x, g[0]) << "an epoch is all arrays or none";
    }
  }
}

inline void expect_verified(const std::string& path) {
  VerifyReport r;
  Status st = verify_container(path, VerifyOptions{}, &r);
  ASSERT_TRUE(st.ok()) << st.message();
  for (const auto& p : r.problems) ADD_FAILURE() << "verify: " << p;
}

// Consolidation: one array of five fragments (four quarters and a strip of points over
// them, committed one by one), merged by consolidate_all with a fault at every point.
// The model: quarter q holds 1000 q + its cell index, the strip overrides row 0 with -1.
inline const Schema kConsSchema = int32_schema({64, 64}, {64, 64}, {16, 16});

inline std::vector<int32_t> cons_model() {
  std::vector<int32_t> m(64 * 64);
  for (uint64_t i = 0; i < 64; ++i)
    for (uint64_t j = 0; j < 64; ++j) m[i * 64 + j] = static_cast<int32_t>(1000 * (i / 16) + i * 64 + j);
  for (uint64_t j = 0; j < 64; j += 3) m[j] = -1;
  return m;
}

inline void make_fragments(const std::shared_ptr<Context>& ctx, const std::string& path, uint64_t* id) {
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kTruncate, &c, ctx).ok());
  ASSERT_TRUE(c->create_array(kConsSchema, id).ok());
  std::unique_ptr<Array> a;
  ArrayOptions o = options(false);
  o.inline_fragment_bytes = 0;  // files, so the consolidation writes and removes files
  ASSERT_TRUE(c->open_array(*id, true, o, &a).ok());
  const std::vector<int32_t> m = cons_model();
  for (uint64_t q = 0; q < 4; ++q) {
    ASSERT_TRUE(a->write(Selection::from_box(Box({16 * q, 0}, {16 * q + 15, 63})), &m[16 * q * 64]).ok());
    // In order, so the strip is newest.
    std::vector<uint64_t> pts;
    std::vector<int32_t> vals;
    if (q == 3)
      for (uint64_t j = 0; j < 64; j += 3) {
        pts.insert(pts.end(), {0, j});
        vals.push_back(-1);
      }
    Array* list[] = {a.get()};
    ASSERT_TRUE(commit_arrays(*c, {list[0]}).ok());
    if (!pts.empty()) {
      ASSERT_TRUE(a->write_points(pts.data(), vals.size(), vals.data()).ok());
      ASSERT_TRUE(commit_arrays(*c, {list[0]}).ok());
    }
  }
  ASSERT_EQ(a->fragments().size(), 5u);
}

// The array's cells as a new process sees them equal the model (else a failure).
inline void expect_model(const std::string& path, uint64_t id, bool writable, size_t* fragments = nullptr) {
  std::unique_ptr<Container> c;
  Status st = Container::open(path, writable, &c);
  ASSERT_TRUE(st.ok()) << "reopen: " << st.message();
  std::unique_ptr<Array> a;
  st = c->open_array(id, false, options(false), &a);
  ASSERT_TRUE(st.ok()) << "open array: " << st.message();
  std::vector<int32_t> v(64 * 64, -7);
  st = a->read(Selection::from_box(Box({0, 0}, {63, 63})), v.data());
  ASSERT_TRUE(st.ok()) << "read: " << st.message();
  const std::vector<int32_t> m = cons_model();
  size_t bad = 0;
  for (size_t i = 0; i < v.size(); ++i) bad += v[i] != m[i];
  EXPECT_EQ(bad, 0u) << "cells differing from the model";
  if (fragments) *fragments = a->fragments().size();
}

}  // namespace fault_rig
}  // namespace tessera
