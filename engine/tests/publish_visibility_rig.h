// What the publish visibility tests share (publish_visibility_test.cc,
// publish_visibility_open_test.cc): the HookEnv that runs a step of the other party inside
// one file-system call, a file-publishing writer's options, fresh whole reads, and the
// checks that a reader saw one whole generation or epoch.
#pragma once
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <map>
#include <thread>
#include <string>
#include <vector>

#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/testing/test_schema.h"
#include "engine/testing/testutil.h"
#include "engine/testing/thread_group.h"

namespace tessera {
namespace publish_rig {

// Forwards every call to the POSIX Env; a hook may run after a rename (given the
// destination) or before a directory listing (given the directory).  Each hook runs
// once: it is cleared before it is called.
class HookEnv final : public EnvWrapper {
 public:
  HookEnv() : EnvWrapper(Env::posix()) {}
  std::function<void(const std::string&)> after_rename, before_list;
  // Runs after every rename, before every listing (not cleared).
  std::function<void(const std::string&)> on_rename, on_list;

  int rename(const char* from, const char* to) override {
    int r = base_.rename(from, to);
    if (r == 0 && after_rename) std::exchange(after_rename, nullptr)(to);
    if (r == 0 && on_rename) on_rename(to);
    return r;
  }
  int list_dir(const char* p, std::vector<std::string>* names) override {
    if (before_list) std::exchange(before_list, nullptr)(p);
    if (on_list) on_list(p);
    return base_.list_dir(p, names);
  }
};

inline ArrayOptions file_writer() {
  ArrayOptions o;
  o.durable_writes = false;  // the connector's: published at commit
  o.blob_bytes = 0;
  o.inline_fragment_bytes = 0;  // fragment files (renamed into place), not inline records
  return o;
}

inline bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Reads array `id` of `path` whole in a fresh read-only open: every cell, or an error.
inline std::vector<int32_t> read_fresh(const std::string& path, uint64_t id, Coords* extent, std::string* err) {
  std::unique_ptr<Container> c;
  std::unique_ptr<Array> a;
  Status st = Container::open(path, false, &c);
  if (st.ok()) st = c->open_array(id, false, ArrayOptions{}, &a);
  if (!st.ok()) {
    *err = st.message();
    return {};
  }
  *extent = a->schema().extent;
  std::vector<int32_t> v((*extent)[0] * (*extent)[1], -7);
  st = a->read(Selection::from_box(Box({0, 0}, {(*extent)[0] - 1, (*extent)[1] - 1})), v.data());
  if (!st.ok()) *err = st.message();
  return v;
}

inline bool all_equal(const std::vector<int32_t>& v, int32_t g) {
  for (int32_t x : v)
    if (x != g) return false;
  return !v.empty();
}

// Member r of n writes generation g into its band of rows: two fragments (the lower half
// of the band first: writes in tile order would be appended to one fragment).
inline bool write_band(Array& a, uint32_t r, uint32_t n, int32_t g) {
  const uint64_t rows = a.schema().extent[0], lo = rows * r / n, hi = rows * (r + 1) / n, mid = (lo + hi) / 2;
  std::vector<int32_t> v(rows * 32, g);
  return a.write(Selection::from_box(Box({mid, 0}, {hi - 1, 31})), v.data()).ok() &&
         a.write(Selection::from_box(Box({lo, 0}, {mid - 1, 31})), v.data()).ok();
}

// What a reader saw: "" for one whole generation g of an array 32 columns wide, with the
// extent of g (rows_of(g) rows), else what was wrong.
inline std::string whole_generation(Status st, Array* a, int32_t* g, const std::function<uint64_t(int32_t)>& rows_of) {
  if (!st.ok()) return "error: " + st.message();
  const Coords e = a->schema().extent;
  std::vector<int32_t> v(e[0] * e[1], -7);
  st = a->read(Selection::from_box(Box({0, 0}, {e[0] - 1, e[1] - 1})), v.data());
  if (!st.ok()) return "read error: " + st.message();
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != v[0])
      return "mixes generations " + std::to_string(v[0]) + " and " + std::to_string(v[i]) + " (row " +
             std::to_string(i / e[1]) + " of " + std::to_string(e[0]) + ")";
  if (e[0] != rows_of(v[0])) return "generation " + std::to_string(v[0]) + " with " + std::to_string(e[0]) + " rows";
  *g = v[0];
  return "";
}

// A reader outside the job: one whole committed epoch (the extent of epoch 1 is 16 rows,
// of epoch 2 24).
inline std::string whole_epoch(Status st, Array* a, int32_t* g) {
  return whole_generation(st, a, g, [](int32_t gen) { return gen == 2 ? uint64_t{24} : uint64_t{16}; });
}

}  // namespace publish_rig
}  // namespace tessera
