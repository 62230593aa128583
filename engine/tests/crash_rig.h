// The crash tests' child side (crash_test.cc): the schema, the four workloads (modes), the
// random op sequence both the child and the parent's model replay, and the child's write loop
// that reports each completed op over a pipe (crash_kills.h kills it).
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
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace crash_rig {

using testutil::ArrayModel;
using testutil::Rng;
using testutil::status_str;

constexpr uint64_t kDefaultSeed = 0xC4A54;
constexpr uint64_t kReady = 0;                       // child report: array open, loop starts
constexpr uint64_t kFailed = ~uint64_t{0};           // child report: an operation failed
constexpr uint64_t kMaxOps = 100000;                 // the child stops (exit 0) after this many
inline const Coords kExtent = {40, 36};  // the maximum extent; the current one varies (>= 8 x 8)
inline const Coords kTile = {8, 8};
constexpr uint32_t kElem = 8;

inline Schema crash_schema(uint64_t seed) {
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
// kDeferredAuto: kDeferred with automatic consolidation (ArrayOptions::auto_merge): every
// flush may start a background merge, so kills land in merges and retirements too.
enum class Mode { kDurable, kDurableExtent, kDeferred, kDeferredExtent, kDeferredAuto };
inline const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kDurable: return "Crash";
    case Mode::kDurableExtent: return "Crash with set_extent";
    case Mode::kDeferred: return "Crash deferred";
    case Mode::kDeferredAuto: return "Crash deferred with automatic consolidation";
    default: return "Crash deferred with set_extent";
  }
}
inline bool deferred(Mode m) { return m == Mode::kDeferred || m == Mode::kDeferredExtent || m == Mode::kDeferredAuto; }
inline bool with_extent(Mode m) { return m == Mode::kDurableExtent || m == Mode::kDeferredExtent; }

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

inline CrashOp OpGen::next() {
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
inline void write_box(ArrayModel& m, const Box& b, const uint8_t* values) {
  testutil::IndexSets sets(2);
  for (int d = 0; d < 2; ++d)
    for (uint64_t x = b.lo[d]; x <= b.hi[d]; ++x) sets[d].push_back(x);
  std::vector<uint64_t> st = testutil::dense_strides(sets);
  m.write(sets, values, st.data());
}

inline void apply(ArrayModel& m, const CrashOp& op, uint64_t k) {
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
inline bool durable_point(Mode mode, CrashOp::Kind k) {
  return !deferred(mode) || k == CrashOp::kFlush || k == CrashOp::kConsolidate;
}

inline void report(int fd, uint64_t v) {
  // 8-byte writes to a pipe are atomic; a failed write means the parent is gone.
  if (::write(fd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) _exit(4);
}

// Fragments up to this size are inline catalog records: all of them (the default), some
// (so flushes mix records and files, and consolidation turns one kind into the other), or
// none.
inline uint64_t inline_limit(uint64_t seed) {
  switch ((seed / 3) % 3) {
    case 0: return ArrayOptions().inline_fragment_bytes;
    case 1: return 2048;
    default: return 0;
  }
}

// The child's loop; returns its exit status.
inline int child_main(const std::string& cpath, uint64_t id, uint64_t seed, Mode mode, int fd, uint64_t max_ops = kMaxOps) {
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
  if (mode == Mode::kDeferredAuto) {
    // Small runs merge often; half the seeds retire replaced files at once, the others
    // keep them (retire records) for an hour.
    opts.auto_merge.on = true;
    opts.auto_merge.fanin = 2 + static_cast<uint32_t>(seed % 3);
    opts.auto_merge.retain_ns = (seed / 3) % 2 ? 0 : 3600ull * 1000000000ull;
  }
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
      // Automatic merges change the fragments' positions: settled first, so the range
      // below is one of the fragments it names.
      if (mode == Mode::kDeferredAuto) arr->settle_merges();
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

}  // namespace crash_rig
}  // namespace tessera
