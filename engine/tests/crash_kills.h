// The crash tests' parent side (crash_test.cc): running the child (crash_rig.h) and
// killing it at a random moment, the states an array may be found in, and the checks that
// it holds exactly the last durable reported state or the one in flight.
#pragma once
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/container/one_file.h"
#include "engine/pack/pack_env.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/tests/crash_rig.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace crash_rig {

// ---- the parent ------------------------------------------------------------------------

struct Outcome {
  std::vector<uint64_t> reports;
  int status = 0;
};

// Starts the child, kills it per `plan`, collects its reports.
inline Outcome run_child(const std::string& cpath, uint64_t id, uint64_t seed, Mode mode, Rng& plan,
                         std::string* plan_desc) {
  Outcome out;
  int p[2];
  if (::pipe(p) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return out;
  }
  std::fflush(nullptr);  // nothing buffered may be written twice
  pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return out;
  }
  if (pid == 0) {
    ::close(p[0]);
    _exit(child_main(cpath, id, seed, mode, p[1]));
  }
  ::close(p[1]);
  auto read_report = [&](uint64_t* v) {
    size_t got = 0;
    while (got < sizeof *v) {
      ssize_t r = ::read(p[0], reinterpret_cast<char*>(v) + got, sizeof *v - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  };
  // Wait until the child has the array open, then kill it at a random moment.
  uint64_t v;
  bool alive = read_report(&v);
  if (alive) out.reports.push_back(v);
  if (alive && v == kReady) {
    if (plan.chance(0.5)) {
      uint64_t us = plan.below(50000);
      *plan_desc = "kill after " + std::to_string(us) + " us";
      std::this_thread::sleep_for(std::chrono::microseconds(us));
    } else {
      uint64_t k = plan.range(1, 25), extra_us = plan.chance(0.5) ? plan.below(3000) : 0;
      *plan_desc = "kill after report " + std::to_string(k) + " + " + std::to_string(extra_us) + " us";
      while (out.reports.size() <= k && read_report(&v)) out.reports.push_back(v);
      if (extra_us) std::this_thread::sleep_for(std::chrono::microseconds(extra_us));
    }
  }
  ::kill(pid, SIGKILL);
  while (read_report(&v)) out.reports.push_back(v);  // reports sent before death are kept by the pipe
  ::close(p[0]);
  while (::waitpid(pid, &out.status, 0) < 0 && errno == EINTR) {
  }
  return out;
}

inline bool is_temp_name(const std::string& n) {
  return n.size() > 5 && n[0] == '.' && n.compare(n.size() - 4, 4, ".tmp") == 0;
}

// What a reader sees: the extent and the cells inside it (row-major).
struct State {
  Coords extent;
  std::vector<uint8_t> data;
  bool operator==(const State& o) const { return extent == o.extent && data == o.data; }
};

inline State engine_state(Array& a) {
  State s;
  s.extent = a.schema().extent;
  s.data.resize(s.extent[0] * s.extent[1] * kElem);
  Status st = a.read(Selection::from_box(Box({0, 0}, {s.extent[0] - 1, s.extent[1] - 1})), s.data.data());
  EXPECT_TRUE(st.ok()) << status_str(st);
  return s;
}

inline State model_state(const ArrayModel& m) {
  State s;
  s.extent = m.extent();
  s.data.resize(s.extent[0] * s.extent[1] * kElem);
  for (uint64_t i = 0; i < s.extent[0]; ++i)
    for (uint64_t j = 0; j < s.extent[1]; ++j) {
      uint64_t c[2] = {i, j};
      std::memcpy(&s.data[(i * s.extent[1] + j) * kElem], m.at(c), kElem);
    }
  return s;
}

inline std::string describe_state(const State& got, const State& want) {
  if (got.extent != want.extent)
    return "extent " + testutil::coords_str(got.extent.data(), 2) + ", want " + testutil::coords_str(want.extent.data(), 2);
  for (size_t i = 0; i < got.data.size(); i += kElem)
    if (std::memcmp(&got.data[i], &want.data[i], kElem) != 0) {
      uint64_t g, w;
      std::memcpy(&g, &got.data[i], 8);
      std::memcpy(&w, &want.data[i], 8);
      size_t cell = i / kElem;
      auto val = [](uint64_t v) {
        if (v == 0xF1F1F1F1F1F1F1F1ull) return std::string("the fill value");
        char b[64];
        std::snprintf(b, sizeof b, "op %llu's value %#llx", static_cast<unsigned long long>(v >> 32),
                      static_cast<unsigned long long>(v));
        return std::string(b);
      };
      char buf[64];
      std::snprintf(buf, sizeof buf, "(%zu,%zu)", cell / got.extent[1], cell % got.extent[1]);
      return std::string("first difference at ") + buf + ": got " + val(g) + ", want " + val(w);
    }
  return "identical";
}

struct Tally {
  uint64_t total_ops = 0, in_flight_seen = 0, temp_files_seen = 0, leftovers_seen = 0, inline_seen = 0;
  // SIGKILLs (not children that ran out of ops), by the op in flight (CrashOp::Kind), and
  // those of children whose write buffer spills in background flushes.
  uint64_t kills = 0, by_kind[8] = {}, background = 0;
};

// The array's fragment directory, which a catalog-bound array creates only for a file,
// through the container's Env (a one-file container's pack, or POSIX).
inline std::vector<std::string> frag_names(Env& env, const std::string& adir) {
  const std::string d = join_path(adir, "frag");
  return is_directory(env, d) ? list_dir(env, d) : std::vector<std::string>();
}

// A context whose Env sees the container at `path` as the engine does: a reader of its
// pack when it is one file (docs/format.md, "The one-file container"), else POSIX.
inline std::shared_ptr<Context> inspection_context(const std::string& path) {
  if (!is_regular_file(Env::posix(), path)) return Context::process();
  return std::make_shared<Context>(Context::process(), PackEnv::open(nullptr, path, false));
}

// Inline fragment records: each must be a complete fragment whose every tile decodes.
inline size_t check_inline_records(Container& c, uint64_t id, const Schema& schema) {
  auto recs = c.catalog().scan(Container::array_prefix(id) + "frag/");
  for (auto& [key, value] : recs) {
    try {
      auto f = Fragment::open_inline(key, std::make_shared<const std::vector<uint8_t>>(value.begin(), value.end()));
      const Layout& layout = f->layout(schema);  // its own order (a conversion may have changed the schema's)
      for (size_t i = 0; i < f->meta().dense.size(); ++i)
        if (f->meta().dense[i].kind == DenseEntry::kData) f->dense_tile(i);
      for (size_t i = 0; i < f->meta().sparse.size(); ++i) f->sparse_tile(i, layout);
    } catch (const Error& e) {
      ADD_FAILURE() << "inline fragment " << key << " is not complete: " << e.what();
    }
  }
  return recs.size();
}

// One child: start, kill, check.  Failures return early (the caller stops at the first).
inline void kill_once(uint64_t seed, Mode mode, Tally* tally) {
  testutil::TempDir dir("tessera_crash");
  const std::string cpath = dir.sub("c");
  uint64_t id = 0;
  std::string adir;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(cpath, Container::CreateMode::kExclusive, &c).ok());
    Status st = c->create_array(crash_schema(seed), &id);
    ASSERT_TRUE(st.ok()) << status_str(st);
    adir = c->array_dir(id);
  }  // closed: the child takes the container's writer lock

  Rng plan(seed * 7919 + 17);
  std::string plan_desc = "kill at once";
  Outcome out = run_child(cpath, id, seed, mode, plan, &plan_desc);
  SCOPED_TRACE(plan_desc);
  ASSERT_FALSE(out.reports.empty()) << "the child never reported (exec failed?), status " << out.status;
  ASSERT_EQ(out.reports[0], kReady) << "child failed before its loop; status " << out.status;
  uint64_t last = 0;
  for (size_t i = 1; i < out.reports.size(); ++i) {
    ASSERT_NE(out.reports[i], kFailed) << "an operation failed in the child (see its stderr)";
    ASSERT_EQ(out.reports[i], i) << "reports out of sequence";
    last = out.reports[i];
  }
  ASSERT_TRUE((WIFSIGNALED(out.status) && WTERMSIG(out.status) == SIGKILL) ||
              (WIFEXITED(out.status) && WEXITSTATUS(out.status) == 0))
      << "child status " << out.status << (WIFSIGNALED(out.status) && WTERMSIG(out.status) == SIGALRM ? " (it hung)" : "");
  tally->total_ops += last;

  // The model after the last durable op reported, and after op `last + 1` (the one in
  // flight) if that one makes things durable.
  const Schema schema = crash_schema(seed);
  State want_last = model_state(ArrayModel(kExtent, kExtent, kElem, schema.fill));
  uint64_t durable_op = 0;
  ArrayModel m(kExtent, kExtent, kElem, schema.fill);
  OpGen gen(seed, mode);
  CrashOp::Kind in_flight_kind = CrashOp::kConsolidate;
  for (uint64_t k = 1; k <= last + 1; ++k) {
    CrashOp op = gen.next();
    in_flight_kind = op.kind;
    apply(m, op, k);
    if (k <= last && durable_point(mode, op.kind)) {
      want_last = model_state(m);
      durable_op = k;
    }
  }
  const bool next_durable = durable_point(mode, in_flight_kind);
  const State want_next = next_durable ? model_state(m) : want_last;
  const char* kind_names[] = {"dense box write", "point write + flush", "consolidation", "set_extent",
                              "point write (buffered)", "flush", "erase", "write_boxes (irregular write)"};
  const std::string in_flight = kind_names[in_flight_kind];
  if (WIFSIGNALED(out.status)) {
    ++tally->kills;
    ++tally->by_kind[in_flight_kind];
    if ((seed / 9) % 2) ++tally->background;  // child_main: buffer_budget 2048
  }

  // Every file in the fragment directory is a complete fragment, an ignorable temp file,
  // or the publish journal of a flush the crash interrupted (the next writer finishes it;
  // a read-only reopen reads the batch through it).
  size_t tfr_files = 0;
  const std::shared_ptr<Context> look = inspection_context(cpath);
  for (const std::string& name : frag_names(look->env(), adir)) {
    std::string path = join_path(join_path(adir, "frag"), name);
    if (is_temp_name(name) || name.rfind("publish.journal", 0) == 0) {  // incl. its own temp
      ++tally->temp_files_seen;
      continue;
    }
    ++tfr_files;
    ASSERT_TRUE(name.size() == 47 && name.compare(43, 4, ".tfr") == 0) << "unexpected file " << name;
    try {
      testutil::read_every_tile(path, schema, look);
    } catch (const Error& e) {
      ADD_FAILURE() << "fragment " << name << " is not complete: " << e.what();
    }
  }

  // Read-only first (changes nothing on disk), then as the next writer would (which
  // finishes an interrupted publish); both must see the same state.
  State seen_read_only;
  for (bool writable : {false, true}) {
    SCOPED_TRACE(writable ? "reopened writable" : "reopened read-only");
    std::unique_ptr<Container> c;
    Status st = Container::open(cpath, writable, &c);
    ASSERT_TRUE(st.ok()) << status_str(st);
    ASSERT_EQ(c->array_dir(id), adir);
    std::unique_ptr<Array> a;
    st = c->open_array(id, writable, ArrayOptions(), &a);
    ASSERT_TRUE(st.ok()) << status_str(st);
    const size_t records = check_inline_records(*c, id, schema);
    State got = engine_state(*a);
    bool is_last = got == want_last, is_next = got == want_next;
    ASSERT_TRUE(is_last || is_next) << "after " << last << " reported ops the array holds neither the state after op "
                                    << durable_op << " (the last durable one: " << describe_state(got, want_last)
                                    << ") nor the state after op " << last + 1 << " (in flight, a " << in_flight
                                    << (next_durable ? "" : ", not durable by itself") << ": "
                                    << describe_state(got, want_next) << ")";
    if (writable) {
      EXPECT_TRUE(got == seen_read_only) << "a writable reopen sees another state than the read-only one";
    } else {
      seen_read_only = got;
    }
    if (!writable) {
      tally->in_flight_seen += !is_last;
      // Inputs of a consolidation killed between publish and unlink stay on disk, hidden.
      tally->leftovers_seen += tfr_files + records > a->fragments().size();
      tally->inline_seen += records;
      for (auto& f : a->fragments()) {
        if (f.path.compare(0, adir.size(), adir) != 0) continue;  // inline: checked above
        auto fr = Fragment::open(f.path, c->context());  // visible fragments open fine
        EXPECT_EQ(fr->meta().id, f.id);
      }
    } else {
      // The hidden inputs of an interrupted consolidation stay until a vacuum removes
      // them.  (Records are counted again after it.  A catalog-bound array keeps the
      // journal of its last extent change; it is not a fragment.)
      const size_t hidden = a->replaced_fragments().size();
      VacuumResult vr;
      ASSERT_TRUE(a->vacuum(&vr).ok());
      EXPECT_EQ(vr.fragments, hidden) << "vacuum removed other fragments than the replaced ones listed at open";
      EXPECT_TRUE(a->replaced_fragments().empty());
      size_t on_disk = 0;
      for (const std::string& name : frag_names(c->env(), adir))
        on_disk += !is_temp_name(name) && name.rfind("publish.journal", 0) != 0;
      const size_t live_records = c->catalog().scan(Container::array_prefix(id) + "frag/").size();
      EXPECT_EQ(on_disk + live_records, a->fragments().size()) << "replaced fragments left behind after a vacuum";
      // The recovered array accepts writes again.
      std::vector<uint64_t> v(4, 0xABCDEFull);
      ASSERT_TRUE(a->write(Selection::from_box(Box({0, 0}, {1, 1})), v.data()).ok());
      ASSERT_TRUE(a->consolidate_all().ok());
      std::vector<uint64_t> r(4);
      ASSERT_TRUE(a->read(Selection::from_box(Box({0, 0}, {1, 1})), r.data()).ok());
      EXPECT_EQ(r, v);
    }
  }
}

inline void run_kills(Mode mode) {
  const char* name = mode_name(mode);
  const uint64_t base = testutil::base_seed(kDefaultSeed);
  const uint64_t kills = testutil::env_u64("TESSERA_CRASH_KILLS", testutil::kSanitized ? 32 : 40);
  std::printf("[ seed     ] %s: base seed %llu, %llu kills\n", name, static_cast<unsigned long long>(base),
              static_cast<unsigned long long>(kills));
  auto t0 = std::chrono::steady_clock::now();
  Tally t;
  for (uint64_t run = 0; run < kills && !::testing::Test::HasFailure(); ++run) {
    const uint64_t seed = base + run;
    SCOPED_TRACE(std::string(name) + " run " + std::to_string(run) + " seed " + std::to_string(seed) +
                 " (replay: TESSERA_TEST_SEED=" + std::to_string(seed) +
                 " TESSERA_CRASH_KILLS=1; the kill moment is random, so a replay may need a few tries)");
    kill_once(seed, mode, &t);
  }
  EXPECT_GT(t.total_ops, 0u) << "no child ever made an operation durable: the test tested nothing";
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ seed     ] %s: %llu durable ops in total; %llu kills caught an op published but not reported, "
              "%llu left temp files, %llu left replaced fragments; %llu inline fragments checked; %.1f s\n",
              name, static_cast<unsigned long long>(t.total_ops), static_cast<unsigned long long>(t.in_flight_seen),
              static_cast<unsigned long long>(t.temp_files_seen), static_cast<unsigned long long>(t.leftovers_seen),
              static_cast<unsigned long long>(t.inline_seen), secs);
  // scripts/kill_loops sums these lines (docs/reliability.md, "Kill loops").
  std::printf("[ kills    ] %s: %llu SIGKILLs, each followed by a reopen checked against the model; in flight: "
              "%llu consolidations, %llu flushes, %llu writes, %llu extent changes or erases; %llu with background "
              "flushes; failures %d\n",
              name, static_cast<unsigned long long>(t.kills), static_cast<unsigned long long>(t.by_kind[CrashOp::kConsolidate]),
              static_cast<unsigned long long>(t.by_kind[CrashOp::kFlush] + t.by_kind[CrashOp::kPointsFlush]),
              static_cast<unsigned long long>(t.by_kind[CrashOp::kDenseBox] + t.by_kind[CrashOp::kBoxes] +
                                              t.by_kind[CrashOp::kPoints]),
              static_cast<unsigned long long>(t.by_kind[CrashOp::kSetExtent] + t.by_kind[CrashOp::kErase]),
              static_cast<unsigned long long>(t.background), ::testing::Test::HasFailure() ? 1 : 0);
}

}  // namespace crash_rig
}  // namespace tessera
