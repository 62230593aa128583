// Fault injection (docs/reliability.md, "Fault injection"): ENOSPC, EIO and short writes
// at every write and sync call of (a) a flush that publishes three arrays (commit_arrays:
// inline catalog records, several fragment files under a journal, an extent change),
// (b) a consolidation and (c) an epoch commit (commit_epoch, the engine's part of an MPI
// flush).  The calls go through a FaultEnv (fault_env.h) in the Context the container was
// opened with.  For each operation the test first counts its points, then, for every
// point k and every fault, starts again from the same committed state, fails the k-th
// call, and checks against a model:
//   - a reader opened right after the failure (the writer still open) sees one whole
//     committed state: every array one generation, old or new (an epoch: the same for
//     all arrays; a consolidation: the model's values) — never a mix, never an error;
//   - then either the writer retries (the fault gone) and the retry succeeds and reads
//     back as the new state, or (odd k) the writer closes with the fault still there (a
//     full disk stays full) and a reopen reads one whole committed state and
//     verify_container finds no problem.
// TESSERA_FAULT_STRIDE=n injects at every n-th point only (quick runs); the number of
// points injected is printed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/test_schema.h"
#include "engine/commit.h"
#include "engine/container.h"
#include "engine/fault_env.h"
#include "engine/file_io.h"
#include "engine/testutil.h"
#include "engine/verify.h"

using namespace tessera;

namespace {

using Fault = FaultEnv::Fault;
const Fault kFaults[] = {Fault::kNoSpace, Fault::kIo, Fault::kShortWrite};

// The arrays of commit_test.cc: a small one (inline catalog records), a large one
// (several fragment files: a journal) and one whose extent grows with each generation.
enum Which { kSmall, kLarge, kGrowing, kArrays };

Schema schema_of(int which) {
  switch (which) {
    case kSmall: return int32_schema({8, 8}, {8, 8}, {8, 8});
    case kLarge: return int32_schema({128, 128}, {128, 128}, {32, 32});
    default: return int32_schema({32, 64}, {kUnlimited, 64}, {16, 16});
  }
}

uint64_t rows_of(int which, int g) {
  return which == kGrowing ? 32 + 16 * static_cast<uint64_t>(g) : schema_of(which).extent[0];
}

// Writes generation g (g in every cell); false if a call failed (the fault).
bool write_generation(Array& a, int which, int g) {
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
int generation_of(Array& a, int which) {
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

ArrayOptions options(bool epochs) {
  ArrayOptions o;
  o.durable_writes = false;  // the connector's mode: published by a commit
  o.blob_bytes = 0;
  o.collective = epochs;
  return o;
}

struct Rig {
  std::shared_ptr<FaultEnv> env = std::make_shared<FaultEnv>();
  std::shared_ptr<Context> ctx = std::make_shared<Context>(EngineOptions{}, env);
  testutil::TempDir tmp{"tessera_fault"};
  std::string root = tmp.path();
  uint64_t injected = 0, failed_ops = 0, new_state = 0, lost_reported = 0;
};

// An open writer: the container (with the rig's Context) and its arrays.
struct Writer {
  std::unique_ptr<Container> c;
  std::map<uint64_t, std::shared_ptr<Array>> open;
  std::vector<Array*> list;
  uint64_t ids[kArrays] = {};
};

bool open_writer(Rig& rig, const std::string& path, const uint64_t* ids, bool epochs, Writer* w) {
  if (!Container::open(path, true, &w->c, rig.ctx).ok()) return false;
  for (int i = 0; i < kArrays; ++i) {
    std::unique_ptr<Array> a;
    if (!w->c->open_array(ids[i], true, options(epochs), &a).ok()) return false;
    w->ids[i] = ids[i];
    w->list.push_back(a.get());
    w->open[ids[i]] = std::move(a);
  }
  return true;
}

Status commit(Writer& w, bool epochs, SyncPolicy sync) {
  CommitOptions co;
  co.sync = sync;
  if (!epochs) return commit_arrays(*w.c, w.list, co);
  SoloGroup solo;
  uint64_t epoch = 0;
  Status st = guard([&] { epoch = w.c->committed_epoch() + 1; });
  if (!st.ok()) return st;
  return commit_epoch(*w.c, solo, w.open, {}, epoch, {}, co);
}

bool write_all(Writer& w, int g) {
  for (int i = 0; i < kArrays; ++i)
    if (!write_generation(*w.open[w.ids[i]], i, g)) return false;
  return true;
}

// A fresh container at `path` holding generation 1 of the three arrays, committed.
void make_committed(Rig& rig, const std::string& path, bool epochs, SyncPolicy sync, uint64_t* ids) {
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kTruncate, &c, rig.ctx).ok());
  c->set_file_arrays(epochs);
  for (int i = 0; i < kArrays; ++i) ASSERT_TRUE(c->create_array(schema_of(i), &ids[i]).ok());
  ASSERT_TRUE(guard([&] { c->catalog().sync(); }).ok());
  c.reset();
  Writer w;
  ASSERT_TRUE(open_writer(rig, path, ids, epochs, &w));
  ASSERT_TRUE(write_all(w, 1));
  Status st = commit(w, epochs, sync);
  ASSERT_TRUE(st.ok()) << st.message();
}

// Every array's generation as a new process would see it (POSIX, read-only: recovery
// reads journals through; with `writable`, it runs).
std::vector<int> generations(const std::string& path, const uint64_t* ids, bool writable) {
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

void expect_whole(const std::vector<int>& g, bool epochs, bool succeeded) {
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

void expect_verified(const std::string& path) {
  VerifyReport r;
  Status st = verify_container(path, VerifyOptions{}, &r);
  ASSERT_TRUE(st.ok()) << st.message();
  for (const auto& p : r.problems) ADD_FAILURE() << "verify: " << p;
}

uint64_t first_point() {
  const char* s = std::getenv("TESSERA_FAULT_FIRST");
  return s && std::atoi(s) > 0 ? static_cast<uint64_t>(std::atoi(s)) : 1;
}

uint64_t stride() {
  const char* s = std::getenv("TESSERA_FAULT_STRIDE");
  return s && std::atoi(s) > 0 ? static_cast<uint64_t>(std::atoi(s)) : 1;
}

// The flush (serial or epoch) of generation 2 with a fault at every point.
void flush_with_faults(bool epochs, SyncPolicy sync, const char* label) {
  Rig rig;
  uint64_t ids[kArrays];
  // Count the points of a clean run.
  const std::string count_path = rig.root + "/count";
  make_committed(rig, count_path, epochs, sync, ids);
  if (::testing::Test::HasFatalFailure()) return;
  uint64_t points = 0;
  {
    Writer w;
    ASSERT_TRUE(open_writer(rig, count_path, ids, epochs, &w));
    rig.env->reset_count();
    ASSERT_TRUE(write_all(w, 2));
    ASSERT_TRUE(commit(w, epochs, sync).ok());
    points = rig.env->points();
  }
  ASSERT_GT(points, 0u);
  for (uint64_t k = first_point(); k <= points; k += stride())
    for (Fault fault : kFaults) {
      SCOPED_TRACE(std::string(label) + ": " + FaultEnv::fault_name(fault) + " at point " + std::to_string(k) +
                   " of " + std::to_string(points));
      const std::string path = rig.root + "/p" + std::to_string(k) + FaultEnv::fault_name(fault);
      make_committed(rig, path, epochs, sync, ids);
      if (::testing::Test::HasFatalFailure()) return;
      std::string at;
      {
        Writer w;
        ASSERT_TRUE(open_writer(rig, path, ids, epochs, &w));
        rig.env->arm(k, fault);
        const bool ok = write_all(w, 2) && commit(w, epochs, sync).ok();
        at = rig.env->fired_at();
        SCOPED_TRACE("fault at " + at);
        if (rig.env->fired()) ++rig.injected;
        if (!ok) ++rig.failed_ops;
        expect_whole(generations(path, ids, false), epochs, ok);
        if (k % 2 == 0) {
          // The writer goes on: the fault is gone, it writes again and commits.
          rig.env->disarm();
          ASSERT_TRUE(write_all(w, 2)) << "rewrite after the fault";
          Status st = commit(w, epochs, sync);
          if (!st.ok() && st.message().find("were lost") != std::string::npos) {
            // Writes that went into a fragment whose file failed are reported lost by
            // the next flush, once (never a flush that says success over them).
            ++rig.lost_reported;
            st = commit(w, epochs, sync);
          }
          ASSERT_TRUE(st.ok()) << "retry: " << st.message();
        }
        // else: the writer closes with the disk still full (destructors; errors lost).
      }
      rig.env->disarm();
      SCOPED_TRACE("after closing; the fault was at " + at);
      std::vector<int> g = generations(path, ids, true);
      expect_whole(g, epochs, k % 2 == 0);
      if (!g.empty() && g[0] == 2) ++rig.new_state;
      expect_verified(path);
      (void)guard([&] { remove_tree(Env::posix(), path); });
      if (::testing::Test::HasFatalFailure()) return;
    }
  std::printf("[ faults   ] %s: %llu points x %zu faults: %llu injected, %llu operations failed\n", label,
              static_cast<unsigned long long>(points), std::size(kFaults),
              static_cast<unsigned long long>(rig.injected), static_cast<unsigned long long>(rig.failed_ops));
}

const SyncPolicy kPerFile{1000}, kSyncfs{0};

// Consolidation: one array of five fragments (four quarters and a strip of points over
// them, committed one by one), merged by consolidate_all with a fault at every point.
// The model: quarter q holds 1000 q + its cell index, the strip overrides row 0 with -1.
const Schema kConsSchema = int32_schema({64, 64}, {64, 64}, {16, 16});

std::vector<int32_t> cons_model() {
  std::vector<int32_t> m(64 * 64);
  for (uint64_t i = 0; i < 64; ++i)
    for (uint64_t j = 0; j < 64; ++j) m[i * 64 + j] = static_cast<int32_t>(1000 * (i / 16) + i * 64 + j);
  for (uint64_t j = 0; j < 64; j += 3) m[j] = -1;
  return m;
}

void make_fragments(Rig& rig, const std::string& path, uint64_t* id) {
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(path, Container::CreateMode::kTruncate, &c, rig.ctx).ok());
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
void expect_model(const std::string& path, uint64_t id, bool writable, size_t* fragments = nullptr) {
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

}  // namespace

TEST(Fault, EnvCountsAndFailsTheArmedPoint) {
  // The env itself, against plain POSIX results: the k-th point fails, a short write
  // writes half, a full disk stays full until disarmed, removals still work.
  FaultEnv env;
  testutil::TempDir tmp("tessera_faultenv");
  const std::string dir = tmp.path();
  const std::string p = dir + "/f";
  File f = File::open_rw(env, p, true);
  env.arm(2, Fault::kShortWrite);
  const char data[] = "0123456789";
  f.pwrite_all(data, 10, 0);  // point 1: whole
  EXPECT_FALSE(env.fired());
  try {
    f.pwrite_all(data, 10, 10);  // point 2: 5 bytes, then ENOSPC on the retry
    ADD_FAILURE() << "a full disk did not fail the write";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
  EXPECT_TRUE(env.fired());
  EXPECT_EQ(f.size(), 15u);
  EXPECT_THROW(f.sync(), Error);
  f.close();
  EXPECT_NO_THROW(remove_file(env, p));  // freeing space works on a full disk
  EXPECT_FALSE(path_exists(Env::posix(), p));
  env.disarm();
  File g = File::open_rw(env, p, true);
  g.pwrite_all(data, 10, 0);
  g.sync();
  EXPECT_EQ(read_file(Env::posix(), p), std::vector<uint8_t>(data, data + 10));
  env.arm(1, Fault::kIo);  // once
  EXPECT_THROW(g.sync(), Error);
  EXPECT_NO_THROW(g.sync());
}

TEST(Fault, SerialFlushPerFileSyncs) { flush_with_faults(false, kPerFile, "serial flush, per-file syncs"); }
TEST(Fault, SerialFlushSyncfs) { flush_with_faults(false, kSyncfs, "serial flush, syncfs"); }
TEST(Fault, EpochCommit) { flush_with_faults(true, kPerFile, "epoch commit"); }

TEST(Fault, Consolidation) {
  Rig rig;
  uint64_t id = 0;
  ArrayOptions o = options(false);
  o.inline_fragment_bytes = 0;
  const std::string count_path = rig.root + "/count";
  make_fragments(rig, count_path, &id);
  if (HasFatalFailure()) return;
  uint64_t points = 0;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(count_path, true, &c, rig.ctx).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, true, o, &a).ok());
    rig.env->reset_count();
    ASSERT_TRUE(a->consolidate_all().ok());
    points = rig.env->points();
    ASSERT_EQ(a->fragments().size(), 1u);
  }
  ASSERT_GT(points, 0u);
  for (uint64_t k = first_point(); k <= points; k += stride())
    for (Fault fault : kFaults) {
      SCOPED_TRACE(std::string("consolidation: ") + FaultEnv::fault_name(fault) + " at point " + std::to_string(k) +
                   " of " + std::to_string(points));
      const std::string path = rig.root + "/p" + std::to_string(k) + FaultEnv::fault_name(fault);
      make_fragments(rig, path, &id);
      if (HasFatalFailure()) return;
      {
        std::unique_ptr<Container> c;
        ASSERT_TRUE(Container::open(path, true, &c, rig.ctx).ok());
        std::unique_ptr<Array> a;
        ASSERT_TRUE(c->open_array(id, true, o, &a).ok());
        rig.env->arm(k, fault);
        const bool ok = a->consolidate_all().ok();
        SCOPED_TRACE("fault at " + rig.env->fired_at());
        if (rig.env->fired()) ++rig.injected;
        if (!ok) ++rig.failed_ops;
        expect_model(path, id, false);
        if (k % 2 == 0) {
          rig.env->disarm();
          Status st = a->consolidate_all();
          ASSERT_TRUE(st.ok()) << "retry: " << st.message();
          EXPECT_EQ(a->fragments().size(), 1u);
        }
      }
      rig.env->disarm();
      size_t frags = 0;
      expect_model(path, id, true, &frags);
      if (k % 2 == 0) {
        EXPECT_EQ(frags, 1u);
      }
      expect_verified(path);
      (void)guard([&] { remove_tree(Env::posix(), path); });
      if (HasFatalFailure()) return;
    }
  std::printf("[ faults   ] consolidation: %llu points x %zu faults: %llu injected, %llu operations failed\n",
              static_cast<unsigned long long>(points), std::size(kFaults),
              static_cast<unsigned long long>(rig.injected), static_cast<unsigned long long>(rig.failed_ops));
}
