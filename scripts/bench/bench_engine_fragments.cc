// Engine benchmark after TileDB §6 (Fig. 10 random updates, Fig. 12 fragments and
// consolidation), scaled to this machine:
//   * a 16384 x 16384 int32 array (1 GiB) with 2048 x 1024 tiles, loaded in one write;
//   * 100 random 1000 x 1000 box reads after 1, 1+10, 1+100 and 1+1000 sparse fragments
//     (each fragment: 1000 random cells), then after consolidating everything;
//   * 100,000 random single-cell writes in one call followed by a durable flush.
// Every phase is timed to durability (fragments are fsync'ed before they are published).
// Usage: bench_engine_fragments [dir] [--side N] [--reads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/container/container.h"

using namespace tessera;
using Clock = std::chrono::steady_clock;

static double secs(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }

static void check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s failed: %s\n", what, s.message().c_str());
    std::exit(1);
  }
}

int main(int argc, char** argv) {
  std::string dir = "/tmp/tessera_bench_engine";
  uint64_t side = 16384, reads = 100, box = 1000;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--side") && i + 1 < argc) side = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--reads") && i + 1 < argc) reads = std::strtoull(argv[++i], nullptr, 10);
    else dir = argv[i];
  }
  if (box > side) box = side / 2;
  std::mt19937_64 rng(12345);
  std::unique_ptr<Container> c;
  check(Container::create(dir, Container::CreateMode::kTruncate, &c), "create container");
  Schema s;
  s.extent = {side, side};
  s.max_extent = {side, side};
  s.tile_extent = {std::min<uint64_t>(2048, side), std::min<uint64_t>(1024, side)};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  s.filters = FilterPipeline({}, 4);
  uint64_t id;
  check(c->create_array(s, &id), "create array");
  std::unique_ptr<Array> a;
  check(c->open_array(id, true, ArrayOptions::from_env(), &a), "open array");

  std::printf("array %llux%llu int32 (%.2f GiB), tiles %llux%llu\n", (unsigned long long)side,
              (unsigned long long)side, side * side * 4.0 / (1 << 30), (unsigned long long)s.tile_extent[0],
              (unsigned long long)s.tile_extent[1]);
  double load;
  {
    std::vector<int32_t> data(side * side);
    for (uint64_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>(i);
    auto t = Clock::now();
    check(a->write(Selection::from_box(Box({0, 0}, {side - 1, side - 1})), data.data()), "load");
    load = secs(t);
  }
  std::printf("%-34s %10.3f s\n", "initial load (to durable)", load);

  std::vector<int32_t> out(box * box);
  // The same `reads` random boxes each time: one untimed pass (warm cache), then the
  // median of three timed passes — single passes on a shared machine are noisy.
  auto read_bench = [&](const char* label) {
    double ms = 0;
    std::vector<double> timed;
    for (int pass = 0; pass < 4; ++pass) {
      std::mt19937_64 r2(777);
      auto t = Clock::now();
      for (uint64_t i = 0; i < reads; ++i) {
        uint64_t r0 = r2() % (side - box + 1), c0 = r2() % (side - box + 1);
        check(a->read(Selection::from_box(Box({r0, c0}, {r0 + box - 1, c0 + box - 1})), out.data()), "read");
      }
      if (pass > 0) timed.push_back(secs(t) * 1000 / reads);
    }
    std::sort(timed.begin(), timed.end());
    ms = timed[1];
    std::printf("%-34s %10.3f ms\n", label, ms);
    return ms;
  };
  auto add_fragments = [&](int n) {
    std::vector<uint64_t> coords(2000);
    std::vector<int32_t> vals(1000);
    for (int f = 0; f < n; ++f) {
      for (int k = 0; k < 1000; ++k) {
        coords[2 * k] = rng() % side;
        coords[2 * k + 1] = rng() % side;
        vals[k] = -static_cast<int32_t>(rng() % 1000000);
      }
      check(a->write_points(coords.data(), 1000, vals.data()), "points");
      check(a->flush(), "flush");
    }
  };
  double r1 = read_bench("read 1000x1000, 1 fragment");
  add_fragments(10);
  double r10 = read_bench("read 1000x1000, 1+10 fragments");
  add_fragments(90);
  double r100 = read_bench("read 1000x1000, 1+100 fragments");
  add_fragments(900);
  double r1000 = read_bench("read 1000x1000, 1+1000 fragments");
  auto t = Clock::now();
  check(a->consolidate_all(), "consolidate");
  double cons = secs(t);
  std::printf("%-34s %10.3f s  (%.2fx the initial load)\n", "consolidate 1+1000 -> 1", cons, cons / load);
  double rc = read_bench("read 1000x1000, after consolidation");

  // 100K random single-cell writes in one call, then a durable flush.
  std::vector<uint64_t> coords(200000);
  std::vector<int32_t> vals(100000);
  for (int k = 0; k < 100000; ++k) {
    coords[2 * k] = rng() % side;
    coords[2 * k + 1] = rng() % side;
    vals[k] = k;
  }
  t = Clock::now();
  check(a->write_points(coords.data(), 100000, vals.data()), "100K points");
  check(a->flush(), "flush");
  double upd = secs(t);
  std::printf("%-34s %10.3f ms\n", "100K random cell writes + flush", upd * 1000);
  std::printf("\nratios: 1+10 %.3f, 1+100 %.3f, 1+1000 %.3f, consolidated %.3f (vs 1 fragment); "
              "consolidation/load %.2f\n",
              r10 / r1, r100 / r1, r1000 / r1, rc / r1, cons / load);
  a.reset();
  c.reset();
  Container::remove(dir);
  return 0;
}
