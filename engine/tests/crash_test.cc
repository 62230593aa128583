// Crash safety with real processes: a child process writes to an array in a loop and
// reports over a pipe each operation it has completed; the parent SIGKILLs it at a random
// moment, reopens the array (read-only, then writable) and checks that it holds exactly
// the state after the last durable reported operation or after the one in flight — never
// anything else — and that every fragment file is complete (temp files and an interrupted
// flush's publish journal are allowed).  Four workloads: durable writes (direct dense
// writes, irregular writes of several boxes, point writes + flush, consolidations), the
// same with set_extent, and deferred
// publishing (durable at flush only) without and with set_extent.  Values encode the
// number of the op that wrote them, so a failure says which op's data is seen.  Then
// deterministic crash points between the steps of a deferred flush.
//
// The child is fork()ed inside the test body; it runs only the write loop and leaves with
// _exit(), so it never returns into GoogleTest (no other test runs in it, no atexit
// handlers, no gtest output).  This relies on the engine being usable in a forked child
// (its compression thread pool is rebuilt there; Crash.ForkedChildCanWriteFilteredTiles).
//
// TESSERA_TEST_SEED sets the base seed (run i uses base + i), TESSERA_CRASH_KILLS the
// number of kills per test.
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
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using testutil::ArrayModel;
using testutil::Rng;
using testutil::status_str;

constexpr uint64_t kDefaultSeed = 0xC4A54;
constexpr uint64_t kReady = 0;                       // child report: array open, loop starts
constexpr uint64_t kFailed = ~uint64_t{0};           // child report: an operation failed
constexpr uint64_t kMaxOps = 100000;                 // the child stops (exit 0) after this many
const Coords kExtent = {40, 36};  // the maximum extent; the current one varies (>= 8 x 8)
const Coords kTile = {8, 8};
constexpr uint32_t kElem = 8;

Schema crash_schema(uint64_t seed) {
  Schema s;
  s.extent = kExtent;
  s.max_extent = kExtent;
  s.tile_extent = kTile;
  s.elem_size = kElem;
  s.kind = ElementKind::kUInt;
  s.fill.assign(kElem, 0xF1);
  switch (seed % 3) {
    case 0: break;
    case 1: s.filters = FilterPipeline({{FilterType::kShuffle, 0}, {FilterType::kZstd, 1}}, kElem); break;
    default: s.filters = FilterPipeline({{FilterType::kLz4, 0}}, kElem); break;
  }
  s.sparse_capacity = 16;
  return s;
}

// One operation of the child's sequence.  The sequence is a pure function of the seed, so
// the parent regenerates it to build the model after any prefix.  Values encode the op
// number (high 32 bits) and the cell or point index.
// The three workloads.  kDurable / kDurableExtent: ArrayOptions::durable_writes (every
// operation is durable when it returns).  kDeferred: durable_writes = false (the
// connector's mode): writes become durable only at flush() (or a consolidation, which
// flushes first), and a crash must leave exactly the state of the last flush.
enum class Mode { kDurable, kDurableExtent, kDeferred, kDeferredExtent };
const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kDurable: return "Crash";
    case Mode::kDurableExtent: return "Crash with set_extent";
    case Mode::kDeferred: return "Crash deferred";
    default: return "Crash deferred with set_extent";
  }
}
bool deferred(Mode m) { return m == Mode::kDeferred || m == Mode::kDeferredExtent; }
bool with_extent(Mode m) { return m == Mode::kDurableExtent || m == Mode::kDeferredExtent; }

struct CrashOp {
  // kPoints (deferred mode only): buffered, no flush.  kFlush: deferred mode only.
  // kErase: erases `box` and the points (an erase fragment, durable like a dense write
  // in durable mode, at the next flush in deferred mode).
  // kBoxes: one write_boxes call of disjoint strips that share tiles (an irregular
  // H5Dwrite): several fragments, which must become durable together or not at all.
  enum Kind { kDenseBox, kPointsFlush, kConsolidate, kSetExtent, kPoints, kFlush, kErase, kBoxes } kind;
  Box box;                  // kDenseBox, kErase
  std::vector<Box> boxes;   // kBoxes
  Coords extent;            // kSetExtent
  std::vector<uint64_t> pts;  // kPointsFlush: n * 2 coordinates, duplicates allowed
  uint64_t r1 = 0, r2 = 0;  // kConsolidate: raw random numbers for the range choice
  std::vector<uint8_t> values(uint64_t k) const {
    size_t n = kind == kDenseBox ? box.cells() : kind == kErase ? 0 : pts.size() / 2;  // 0: ops without values
    if (kind == kBoxes) {
      n = 0;
      for (const Box& b : boxes) n += b.cells();
    }
    std::vector<uint8_t> v(n * kElem);
    for (size_t i = 0; i < n; ++i) {
      uint64_t x = (k << 32) | (kind == kDenseBox || kind == kBoxes ? i : (0x80000000u | i));
      std::memcpy(&v[i * kElem], &x, 8);
    }
    return v;
  }
};

// Generates the op sequence; tracks the extent so writes stay inside it.
struct OpGen {
  OpGen(uint64_t seed, Mode m) : rng(seed), mode(m) {}
  Rng rng;
  Mode mode;
  Coords extent = kExtent;
  CrashOp next();
};

CrashOp OpGen::next() {
  CrashOp op;
  uint64_t r = rng.below(100);
  if (r < 10) {  // erase a box (small ones become erased cells) or scattered points
    op.kind = CrashOp::kErase;
    Coords lo(2), hi(2);
    for (int d = 0; d < 2; ++d) {
      uint64_t len = rng.range(1, extent[d]);
      lo[d] = rng.below(extent[d] - len + 1);
      hi[d] = lo[d] + len - 1;
    }
    op.box = Box(lo, hi);
    if (rng.chance(0.5)) {
      for (size_t i = 0, n = rng.range(1, 40); i < n; ++i) {
        op.pts.push_back(rng.below(extent[0]));
        op.pts.push_back(rng.below(extent[1]));
      }
    }
  } else if (r < 25 && extent[1] >= 16) {
    // Two or three column strips of one row band, cut at random (mostly inside tiles), each
    // at least a tile's worth of cells so each goes to a fragment, not the buffer.
    op.kind = CrashOp::kBoxes;
    const uint64_t rows = rng.range(8, extent[0]), r0 = rng.below(extent[0] - rows + 1);
    const uint64_t width = rng.range(16, extent[1]), c0 = rng.below(extent[1] - width + 1);
    const uint64_t strips = width >= 24 && rng.chance(0.5) ? 3 : 2;
    uint64_t c = c0, left = width;
    for (uint64_t k = 0; k < strips; ++k) {
      const uint64_t w = k + 1 == strips ? left : rng.range(8, left - 8 * (strips - k - 1));
      op.boxes.push_back(Box({r0, c}, {r0 + rows - 1, c + w - 1}));
      c += w;
      left -= w;
    }
    if (rng.chance(0.5)) std::swap(op.boxes.front(), op.boxes.back());  // any order
  } else if (r < 45) {
    op.kind = CrashOp::kDenseBox;
    // At least one full tile's worth of cells, so with direct_cells = tile cells it always
    // bypasses the buffer and publishes its own fragment.
    Coords lo(2), hi(2);
    for (int d = 0; d < 2; ++d) {
      uint64_t len = rng.range(8, extent[d]);
      lo[d] = rng.below(extent[d] - len + 1);
      hi[d] = lo[d] + len - 1;
    }
    op.box = Box(lo, hi);
  } else if (r < 77) {
    op.kind = deferred(mode) ? CrashOp::kPoints : CrashOp::kPointsFlush;
    size_t n = rng.range(1, 80);
    for (size_t i = 0; i < n; ++i) {
      if (i > 0 && rng.chance(0.15)) {
        size_t j = rng.below(i);
        op.pts.push_back(op.pts[2 * j]);
        op.pts.push_back(op.pts[2 * j + 1]);
      } else if (rng.chance(0.5)) {  // a small clustered run: spills make dense pieces too
        op.pts.push_back(rng.below(8));
        op.pts.push_back(rng.below(8));
      } else {
        op.pts.push_back(rng.below(extent[0]));
        op.pts.push_back(rng.below(extent[1]));
      }
    }
  } else if (deferred(mode) && r < 86) {
    op.kind = CrashOp::kFlush;
  } else if (r < 90 || !with_extent(mode)) {
    op.kind = CrashOp::kConsolidate;
    op.r1 = rng.gen()();
    op.r2 = rng.gen()();
  } else {
    op.kind = CrashOp::kSetExtent;
    op.extent = {rng.range(8, kExtent[0]), rng.range(8, kExtent[1])};
    extent = op.extent;
  }
  return op;
}

// Writes box b of the model from row-major values.
void write_box(ArrayModel& m, const Box& b, const uint8_t* values) {
  testutil::IndexSets sets(2);
  for (int d = 0; d < 2; ++d)
    for (uint64_t x = b.lo[d]; x <= b.hi[d]; ++x) sets[d].push_back(x);
  std::vector<uint64_t> st = testutil::dense_strides(sets);
  m.write(sets, values, st.data());
}

void apply(ArrayModel& m, const CrashOp& op, uint64_t k) {
  std::vector<uint8_t> v = op.values(k);
  if (op.kind == CrashOp::kDenseBox) {
    write_box(m, op.box, v.data());
  } else if (op.kind == CrashOp::kBoxes) {
    size_t off = 0;
    for (const Box& b : op.boxes) {
      write_box(m, b, v.data() + off * kElem);
      off += b.cells();
    }
  } else if (op.kind == CrashOp::kPointsFlush || op.kind == CrashOp::kPoints) {
    for (size_t i = 0; i < op.pts.size() / 2; ++i) m.set(&op.pts[2 * i], &v[i * kElem]);
  } else if (op.kind == CrashOp::kSetExtent) {
    m.set_extent(op.extent);  // cut cells read as fill if the extent grows back
  } else if (op.kind == CrashOp::kErase) {  // erased cells read as fill
    if (op.pts.empty()) {
      for (uint64_t x = op.box.lo[0]; x <= op.box.hi[0]; ++x)
        for (uint64_t y = op.box.lo[1]; y <= op.box.hi[1]; ++y) {
          const uint64_t c[2] = {x, y};
          m.set(c, m.fill().data());
        }
    }
    for (size_t i = 0; i < op.pts.size() / 2; ++i) m.set(&op.pts[2 * i], m.fill().data());
  }
}

// ---- the child -------------------------------------------------------------------------

// Whether a completed op makes everything before it durable.
bool durable_point(Mode mode, CrashOp::Kind k) {
  return !deferred(mode) || k == CrashOp::kFlush || k == CrashOp::kConsolidate;
}

void report(int fd, uint64_t v) {
  // 8-byte writes to a pipe are atomic; a failed write means the parent is gone.
  if (::write(fd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) _exit(4);
}

// Fragments up to this size are inline catalog records: all of them (the default), some
// (so flushes mix records and files, and consolidation turns one kind into the other), or
// none.
uint64_t inline_limit(uint64_t seed) {
  switch ((seed / 3) % 3) {
    case 0: return ArrayOptions().inline_fragment_bytes;
    case 1: return 2048;
    default: return 0;
  }
}

// The child's loop; returns its exit status.
int child_main(const std::string& cpath, uint64_t id, uint64_t seed, Mode mode, int fd, uint64_t max_ops = kMaxOps) {
  auto fail = [&](const char* what, const Status& st) {
    std::fprintf(stderr, "crash child (seed %llu): %s failed: %s\n", static_cast<unsigned long long>(seed), what,
                 status_str(st).c_str());
    report(fd, kFailed);
    return 3;
  };
  ::alarm(120);  // a hung child dies (SIGALRM) instead of blocking the parent forever
  std::unique_ptr<Container> cont;
  Status st = Container::open(cpath, true, &cont);
  if (!st.ok()) return fail("Container::open", st);
  ArrayOptions opts;
  opts.direct_cells = kTile[0] * kTile[1];
  // Half the seeds: only flush() spills (a point batch becomes durable at once); the other
  // half spill every few batches, in the background (write_budget.h), so kills land in
  // the middle of background flushes too.
  opts.buffer_budget = (seed / 9) % 2 ? 2048 : 64 << 20;
  opts.durable_writes = !deferred(mode);
  opts.max_open_writers = 1 + seed % 3;
  opts.inline_fragment_bytes = inline_limit(seed);
  std::unique_ptr<Array> arr;
  st = cont->open_array(id, true, opts, &arr);
  if (!st.ok()) return fail("open_array", st);
  report(fd, kReady);
  OpGen gen(seed, mode);
  for (uint64_t k = 1; k <= max_ops; ++k) {
    CrashOp op = gen.next();
    std::vector<uint8_t> v = op.values(k);
    if (op.kind == CrashOp::kDenseBox) {
      st = arr->write(Selection::from_box(op.box), v.data());
      if (!st.ok()) return fail("dense write", st);
    } else if (op.kind == CrashOp::kBoxes) {
      st = arr->write_boxes(op.boxes, v.data());
      if (!st.ok()) return fail("write_boxes", st);
    } else if (op.kind == CrashOp::kPointsFlush) {
      st = arr->write_points(op.pts.data(), op.pts.size() / 2, v.data());
      if (!st.ok()) return fail("write_points", st);
      st = arr->flush();
      if (!st.ok()) return fail("flush", st);
    } else if (op.kind == CrashOp::kPoints) {
      st = arr->write_points(op.pts.data(), op.pts.size() / 2, v.data());
      if (!st.ok()) return fail("write_points", st);
    } else if (op.kind == CrashOp::kFlush) {
      st = arr->flush();
      if (!st.ok()) return fail("flush", st);
    } else if (op.kind == CrashOp::kSetExtent) {
      st = arr->set_extent(op.extent);
      if (!st.ok()) return fail("set_extent", st);
    } else if (op.kind == CrashOp::kErase) {
      st = op.pts.empty() ? arr->erase({op.box}) : arr->erase_points(op.pts.data(), op.pts.size() / 2);
      if (!st.ok()) return fail("erase", st);
    } else {
      size_t n = arr->fragments().size();
      switch (op.r1 % 3) {
        case 0: {
          // A quarter of them convert to a layout named by the op (docs/layouts.md): the
          // merged fragment and the schema's new order are one commit point.
          const Order tiles[] = {Order::kRowMajor, Order::kZOrder, Order::kHilbert, Order::kMultiMap, Order::kColMajor};
          if ((op.r2 & 3) == 0)
            st = arr->consolidate_layout(tiles[(op.r2 >> 2) % 5],
                                         (op.r2 >> 8) & 1 ? Order::kColMajor : Order::kRowMajor);
          else
            st = arr->consolidate_all();
          break;
        }
        case 1: st = arr->consolidate_auto(2 + op.r2 % 3, 4.0); break;
        default: {
          if (n == 0) {  // nothing to pick, but the op still counts as a commit point
            st = arr->consolidate_all();
            break;
          }
          size_t first = op.r2 % n, last = std::min(n - 1, first + (op.r2 >> 32) % 6);
          st = arr->consolidate(first, last);
        }
      }
      if (!st.ok()) return fail("consolidate", st);
    }
    report(fd, k);
  }
  return 0;
}

// ---- the parent ------------------------------------------------------------------------

struct Outcome {
  std::vector<uint64_t> reports;
  int status = 0;
};

// Starts the child, kills it per `plan`, collects its reports.
Outcome run_child(const std::string& cpath, uint64_t id, uint64_t seed, Mode mode, Rng& plan,
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

bool is_temp_name(const std::string& n) {
  return n.size() > 5 && n[0] == '.' && n.compare(n.size() - 4, 4, ".tmp") == 0;
}

// What a reader sees: the extent and the cells inside it (row-major).
struct State {
  Coords extent;
  std::vector<uint8_t> data;
  bool operator==(const State& o) const { return extent == o.extent && data == o.data; }
};

State engine_state(Array& a) {
  State s;
  s.extent = a.schema().extent;
  s.data.resize(s.extent[0] * s.extent[1] * kElem);
  Status st = a.read(Selection::from_box(Box({0, 0}, {s.extent[0] - 1, s.extent[1] - 1})), s.data.data());
  EXPECT_TRUE(st.ok()) << status_str(st);
  return s;
}

State model_state(const ArrayModel& m) {
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

std::string describe_state(const State& got, const State& want) {
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

// The array's fragment directory, which a catalog-bound array creates only for a file.
std::vector<std::string> frag_names(const std::string& adir) {
  const std::string d = join_path(adir, "frag");
  return is_directory(Env::posix(), d) ? list_dir(Env::posix(), d) : std::vector<std::string>();
}

// Inline fragment records: each must be a complete fragment whose every tile decodes.
size_t check_inline_records(Container& c, uint64_t id, const Schema& schema) {
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
void kill_once(uint64_t seed, Mode mode, Tally* tally) {
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
  for (const std::string& name : frag_names(adir)) {
    std::string path = join_path(join_path(adir, "frag"), name);
    if (is_temp_name(name) || name.rfind("publish.journal", 0) == 0) {  // incl. its own temp
      ++tally->temp_files_seen;
      continue;
    }
    ++tfr_files;
    ASSERT_TRUE(name.size() == 47 && name.compare(43, 4, ".tfr") == 0) << "unexpected file " << name;
    try {
      testutil::read_every_tile(path, schema);
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
        auto fr = Fragment::open(f.path);  // visible fragments open fine
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
      for (const std::string& name : frag_names(adir))
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

void run_kills(Mode mode) {
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

// Dense box writes (direct fragments), point writes + flush, consolidations.
TEST(Crash, KillDuringWritesLeavesAPublishedState) { run_kills(Mode::kDurable); }

// Dense writes, point writes + flush, consolidations and extent changes.  Regression: a
// shrink used to publish its fill fragment before rewriting the schema, so a crash in
// between left the old extent with the cut cells already reading as fill.
TEST(Crash, KillDuringSetExtentLeavesAPublishedState) { run_kills(Mode::kDurableExtent); }

// Deferred mode (durable_writes = false): dense writes, buffered point writes, flushes and
// consolidations; a crash must leave exactly the state of the last completed flush, or of
// the flush in flight (array.h: "a crash loses everything since the last flush and
// nothing before it").
// A flush publishes several fragments; without a single commit point a crash between two
// renames exposed a state that never existed (found by this test with base seeds 1000,
// 2000, 4002, 5000).  The publish journal (Array::stage_publish) is that commit point.
TEST(Crash, DeferredKillLeavesTheLastFlushedState) { run_kills(Mode::kDeferred); }

// Deferred mode with extent changes, which it makes durable at flush together with the data.
TEST(Crash, DeferredKillWithSetExtentLeavesTheLastFlushedState) { run_kills(Mode::kDeferredExtent); }

// Every mode's op sequence run to its end without a kill, then reopened: no op may fail
// and the array must hold the model's state.  The kill tests reach only a random prefix
// of a sequence (a few hundred ops at most), so an op that fails deterministically late
// in one shows there only when a loaded machine delays the kill.  Regression: a dense
// write appended to the open dense fragment under a Hilbert tile order took the box's hi
// corner tile for its last one and its lo corner tile for its first, and failed with
// "dense tiles must be added in ascending tile order" (seed 900072, op 221).
TEST(Crash, OpSequencesRunToTheEndAndMatchTheModel) {
  const uint64_t base = testutil::base_seed(kDefaultSeed);
  const uint64_t seeds = testutil::env_u64("TESSERA_CRASH_KILLS", testutil::kSanitized ? 4 : 8);
  const uint64_t ops = testutil::env_u64("TESSERA_CRASH_OPS", 400);
  std::vector<uint64_t> list = {900072};  // the regression's seed, then the run's own
  for (uint64_t k = 0; k < seeds; ++k) list.push_back(base + k);
  for (Mode mode : {Mode::kDurable, Mode::kDurableExtent, Mode::kDeferred, Mode::kDeferredExtent})
  for (uint64_t seed : list) {
    if (::testing::Test::HasFailure()) return;
    SCOPED_TRACE(std::string(mode_name(mode)) + " seed " + std::to_string(seed) + " (replay: TESSERA_TEST_SEED=" +
                 std::to_string(seed) + " TESSERA_CRASH_KILLS=1)");
    testutil::TempDir dir("tessera_crash_seq");
    const std::string cpath = dir.sub("c");
    uint64_t id = 0;
    {
      std::unique_ptr<Container> c;
      ASSERT_TRUE(Container::create(cpath, Container::CreateMode::kExclusive, &c).ok());
      ASSERT_TRUE(c->create_array(crash_schema(seed), &id).ok());
    }
    const int fd = ::open("/dev/null", O_WRONLY);
    ASSERT_GE(fd, 0);
    const int rc = child_main(cpath, id, seed, mode, fd, ops);  // closes the array: a last flush
    ::close(fd);
    ASSERT_EQ(rc, 0) << "an operation failed (see stderr)";
    const Schema schema = crash_schema(seed);
    ArrayModel m(kExtent, kExtent, kElem, schema.fill);
    OpGen gen(seed, mode);
    for (uint64_t k = 1; k <= ops; ++k) apply(m, gen.next(), k);
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(cpath, false, &c).ok());
    std::unique_ptr<Array> a;
    Status st = c->open_array(id, false, ArrayOptions(), &a);
    ASSERT_TRUE(st.ok()) << status_str(st);
    const State want = model_state(m), got = engine_state(*a);
    EXPECT_TRUE(got == want) << describe_state(got, want);
  }
}

// Deterministic crash points inside a deferred flush, using its three steps (prepare_flush,
// stage_prepared, publish_prepared): the child stops dead after a step; the reopened array
// must hold the state before the flush or after it, the extent changes made since the last
// flush included or excluded together with the data.
// Regression: a crash after stage_prepared, with extent changes in the batch (shrink to
// 8 x 8, grow to 20 x 20, write in the grown region), reopened with the extent of the
// intermediate shrink's fill fragment and the write invisible; the batch's final schema
// now travels in the publish journal.
TEST(Crash, DeferredFlushWithExtentChangesIsAtomic) {
  for (bool extent_changes : {false, true})
  for (int crash_after = 0; crash_after <= 2; ++crash_after) {
    const char* step_names[] = {"prepare_flush", "stage_prepared", "publish_prepared"};
    SCOPED_TRACE(std::string("child dies after ") + step_names[crash_after] +
                 (extent_changes ? ", batch with extent changes" : ", batch without extent changes"));
    testutil::TempDir dir("tessera_crash_steps");
    const std::string adir = dir.sub("a");
    Schema s = crash_schema(0);
    ASSERT_TRUE(Array::create(adir, s).ok());
    ArrayOptions o;
    o.durable_writes = false;
    o.direct_cells = 64;
    ArrayModel m(kExtent, kExtent, kElem, s.fill);
    auto box_write = [&](Array& a, const Box& b, uint64_t k) {
      std::vector<uint64_t> v(b.cells());
      for (size_t i = 0; i < v.size(); ++i) v[i] = (k << 32) | i;
      if (!a.write(Selection::from_box(b), v.data()).ok()) return false;
      testutil::IndexSets sets(2);
      for (int d = 0; d < 2; ++d)
        for (uint64_t x = b.lo[d]; x <= b.hi[d]; ++x) sets[d].push_back(x);
      std::vector<uint64_t> st = testutil::dense_strides(sets);
      m.write(sets, reinterpret_cast<uint8_t*>(v.data()), st.data());
      return true;
    };
    // The flushed state, then the batch (the child repeats the same calls).
    {
      std::unique_ptr<Array> a;
      ASSERT_TRUE(Array::open(adir, true, o, &a).ok());
      ASSERT_TRUE(box_write(*a, Box({0, 0}, {15, 15}), 1));
      ASSERT_TRUE(a->flush().ok());
    }
    const State before = model_state(m);
    if (extent_changes) {
      m.set_extent({8, 8});
      m.set_extent({20, 20});
    }
    {
      testutil::IndexSets sets{{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, {10, 11, 12, 13, 14, 15, 16, 17, 18, 19}};
      std::vector<uint64_t> v(100);
      for (size_t i = 0; i < v.size(); ++i) v[i] = (uint64_t{2} << 32) | i;
      std::vector<uint64_t> st = testutil::dense_strides(sets);
      m.write(sets, reinterpret_cast<uint8_t*>(v.data()), st.data());
    }
    const State after = model_state(m);
    std::fflush(nullptr);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::alarm(60);
      std::unique_ptr<Array> a;
      if (!Array::open(adir, true, o, &a).ok()) _exit(2);
      if (extent_changes && (!a->set_extent({8, 8}).ok() || !a->set_extent({20, 20}).ok())) _exit(3);
      std::vector<uint64_t> v(100);
      for (size_t i = 0; i < v.size(); ++i) v[i] = (uint64_t{2} << 32) | i;
      if (!a->write(Selection::from_box(Box({10, 10}, {19, 19})), v.data()).ok()) _exit(4);
      if (!a->prepare_flush().ok()) _exit(5);
      if (crash_after >= 1 && !a->stage_prepared(false).ok()) _exit(6);
      if (crash_after >= 2 && !a->publish_prepared(false).ok()) _exit(7);
      _exit(0);  // dies: no destructor, no further flush
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    for (bool writable : {false, true}) {
      SCOPED_TRACE(writable ? "reopened writable" : "reopened read-only");
      std::unique_ptr<Array> a;
      Status st = Array::open(adir, writable, ArrayOptions(), &a);
      ASSERT_TRUE(st.ok()) << status_str(st);
      State got = engine_state(*a);
      // Before the commit point (inside stage_prepared or publish_prepared: a single
      // fragment needs no journal) the old state, after publish_prepared the new one.
      if (crash_after == 0) {
        EXPECT_TRUE(got == before) << "want the state before the flush: " << describe_state(got, before);
      } else if (crash_after == 2) {
        EXPECT_TRUE(got == after) << "want the state after the flush: " << describe_state(got, after);
      } else {
        EXPECT_TRUE(got == before || got == after)
            << "neither the state before the flush (" << describe_state(got, before) << ") nor after it ("
            << describe_state(got, after) << ")";
      }
    }
  }
}

// The process context's compression thread pool's workers exist only in the process that
// started them; a forked child (Python multiprocessing with h5py, this test's children)
// must get its own pool, or every filtered write in it blocks forever.  Regression test
// (the child is killed by the alarm if it hangs).
TEST(Crash, ForkedChildCanWriteFilteredTiles) {
  testutil::TempDir dir("tessera_crash_fork");
  std::string adir = dir.sub("a");
  Schema s = crash_schema(1);  // shuffle + zstd
  ASSERT_TRUE(Array::create(adir, s).ok());
  {
    std::unique_ptr<Array> a;
    ASSERT_TRUE(Array::open(adir, true, ArrayOptions(), &a).ok());
    std::vector<uint64_t> v(64, 7);
    ASSERT_TRUE(a->write(Selection::from_box(Box({0, 0}, {7, 7})), v.data()).ok());  // the pool is running now
    ASSERT_TRUE(a->flush().ok());
  }
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(5);
    std::unique_ptr<Array> a;
    if (!Array::open(adir, true, ArrayOptions(), &a).ok()) _exit(2);
    std::vector<uint64_t> v(64, 9);
    if (!a->write(Selection::from_box(Box({8, 8}, {15, 15})), v.data()).ok()) _exit(3);
    if (!a->flush().ok()) _exit(4);
    _exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "forked child did not finish a filtered write: "
      << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status)) + " (14 = SIGALRM: it hung)"
                              : "exit status " + std::to_string(WEXITSTATUS(status)));
}

}  // namespace
}  // namespace tessera
