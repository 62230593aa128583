// bench_h5_dense.cc — the dense-array workloads of issue 4 (after TileDB §6.1), the same
// unmodified HDF5 calls on native HDF5 and on tessera in one run:
//   (c) load:   a 16384x16384 int32 dataset, 2048x1024 chunks, written in chunk-sized
//               blocks (cell (i,j) = i*cols + j, as in the paper), timed to a durable close;
//               uncompressed and with deflate;
//   (d) reads:  'Tile' (one whole chunk), 'Par' (a (c0-1)x(c1-1) box inside one chunk),
//               'Col' (one full column, crossing every chunk row), 100 random 1000x1000
//               boxes; warm cache and cold cache;
//   (a) update: 100,000 distinct random single-element updates in ONE H5Dwrite with a point
//               selection, timed from the write to a durable close; warm, cold, deflate;
//   (b) single: 1,000 separate single-element H5Dwrite calls (µs per call, write calls
//               only; the durable close after them is reported separately); ± deflate.
// Afterwards each dataset is read back completely on both sides and the checksums compared.
// See bench_h5_common.h for the output format.
#include <array>
#include <random>
#include <unordered_set>

#include "bench_h5_common.h"

using namespace bench;

namespace {

struct Dims {
  hsize_t n0, n1, c0, c1, box;
  uint64_t updates, writes, boxes;
  int level = 1;               // deflate level (the issue names none; the brief says 1)
  double single_budget = 30;   // seconds of timed single writes per side before stopping
  bool skip_native_deflate_update = false;
  int load_rounds = 2;         // loads per side, which side goes first alternating
  bool reuse = false;          // --reuse: no load, the files of an earlier --keep run in --dir
};

Dims dims_for(double s) {
  auto sc = [&](double v, double lo) { return (hsize_t)std::max(lo, std::round(v * s)); };
  Dims d{};
  d.n0 = sc(16384, 8), d.n1 = sc(16384, 8), d.c0 = sc(2048, 2), d.c1 = sc(1024, 2), d.box = sc(1000, 2);
  d.updates = (uint64_t)std::max(16.0, std::round(100000 * s * s));
  d.writes = std::min<uint64_t>(1000, d.n0 * d.n1 / 4);
  d.boxes = 100;
  return d;
}

struct Open {
  Ids ids;
  hid_t file = -1, dset = -1;
  Open(Side s, const std::string& path, unsigned flags) {
    hid_t fapl = ids.add(fapl_for(s), H5Pclose);
    file = ids.add(H5Fopen(path.c_str(), flags, fapl), H5Fclose);
    dset = ids.add(H5Dopen2(file, "data", H5P_DEFAULT), H5Dclose);
  }
  // Timed by the caller: dataset close, file close, fsync for native.
  void durable_close(Side s, const std::string& path) {
    ids.release(dset);
    BCHECK(H5Dclose(dset));
    ids.release(file);
    bench::durable_close(s, file, path);
  }
};

double load(const Dims& d, Side s, const std::string& path, bool deflate) {
  remove_path(path);
  Ids ids;
  Stopwatch sw;
  sw.start();
  hid_t fapl = ids.add(fapl_for(s), H5Pclose);
  hid_t file = ids.add(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
  hid_t dcpl = ids.add(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  hsize_t chunk[2] = {d.c0, d.c1}, dims[2] = {d.n0, d.n1};
  BCHECK(H5Pset_chunk(dcpl, 2, chunk));
  if (deflate) BCHECK(H5Pset_deflate(dcpl, d.level));
  hid_t fspace = ids.add(H5Screate_simple(2, dims, nullptr), H5Sclose);
  hid_t dset = ids.add(H5Dcreate2(file, "data", H5T_STD_I32LE, fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  std::vector<int32_t> buf(d.c0 * d.c1);
  for (hsize_t r = 0; r < d.n0; r += d.c0)
    for (hsize_t c = 0; c < d.n1; c += d.c1) {
      sw.stop();  // generating the block is the application's work, not the library's
      hsize_t start[2] = {r, c}, count[2] = {std::min(d.c0, d.n0 - r), std::min(d.c1, d.n1 - c)};
      for (hsize_t i = 0; i < count[0]; ++i)
        for (hsize_t j = 0; j < count[1]; ++j) buf[i * count[1] + j] = (int32_t)((r + i) * d.n1 + c + j);
      BCHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr));
      Ids m;
      hid_t mspace = m.add(H5Screate_simple(2, count, nullptr), H5Sclose);
      sw.start();
      BCHECK(H5Dwrite(dset, H5T_NATIVE_INT32, mspace, fspace, H5P_DEFAULT, buf.data()));
    }
  ids.release(dset);
  BCHECK(H5Dclose(dset));
  ids.release(file);
  durable_close(s, file, path);
  sw.stop();
  return sw.total;
}

// A query is a list of boxes {start0, start1, count0, count1}.
using Box = std::array<hsize_t, 4>;
struct Query {
  std::string name;
  std::vector<Box> boxes;
};

std::vector<Query> make_queries(const Dims& d) {
  hsize_t r = (d.n0 / d.c0 / 2) * d.c0, c = (d.n1 / d.c1 / 2) * d.c1;  // a chunk mid-array
  std::vector<Query> q;
  q.push_back({"Tile", {{r, c, std::min(d.c0, d.n0 - r), std::min(d.c1, d.n1 - c)}}});
  q.push_back({"Par", {{r, c, std::min(d.c0, d.n0 - r) - 1, std::min(d.c1, d.n1 - c) - 1}}});
  q.push_back({"Col", {{0, c + d.c1 / 2, d.n0, 1}}});
  Query rnd{std::to_string(d.boxes) + " random " + std::to_string(d.box) + "x" + std::to_string(d.box), {}};
  std::mt19937_64 rng(777);
  for (uint64_t k = 0; k < d.boxes; ++k)
    rnd.boxes.push_back({rng() % (d.n0 - d.box + 1), rng() % (d.n1 - d.box + 1), d.box, d.box});
  q.push_back(rnd);
  return q;
}

// Runs one query; returns the seconds spent in selection + H5Dread, hashes the data.
double run_query(hid_t dset, const Query& q, std::vector<int32_t>& buf, uint64_t* hash) {
  Ids ids;
  hid_t fspace = ids.add(H5Dget_space(dset), H5Sclose);
  Stopwatch sw;
  uint64_t h = 0;
  for (const Box& b : q.boxes) {
    hsize_t start[2] = {b[0], b[1]}, count[2] = {b[2], b[3]};
    buf.resize(b[2] * b[3]);
    Ids m;
    hid_t mspace = m.add(H5Screate_simple(2, count, nullptr), H5Sclose);
    sw.start();
    BCHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr));
    BCHECK(H5Dread(dset, H5T_NATIVE_INT32, mspace, fspace, H5P_DEFAULT, buf.data()));
    sw.stop();
    h = hash_bytes(buf.data(), buf.size() * 4, h);
  }
  *hash = h;
  return sw.total;
}

void reads(const Options& o, const Dims& d, Report& r, bool cold) {
  std::vector<int32_t> buf;
  for (const Query& q : make_queries(d)) {
    uint64_t h[2] = {0, 0};
    std::string label = "read " + q.name + (cold ? ", cold" : ", warm");
    // Warm reads: two rounds, which side goes first alternating (the second side finds
    // CPU caches and the shared buffer as the first left them), 3 timed passes each.
    std::vector<double> warm_times[2];
    PerSide t;
    Options oo = o;
    for (int round = 0; round < (cold ? 1 : 2); ++round) {
      oo.sides = o.sides;
      if (round == 1) std::reverse(oo.sides.begin(), oo.sides.end());
      t = run_sides(oo, r, label, [&](Side s) {
        std::string path = path_for(o, s, "plain");
        Open f(s, path, H5F_ACC_RDONLY);
        if (cold) {
          // Dropped after the open: the timed read finds no file page in memory; what the
          // library keeps in its own memory from the open (both sides) stays.
          r.cache_methods[drop_caches(o, {path})] = "used";
          return run_query(f.dset, q, buf, &h[int(s)]) * 1e3;
        }
        warm_cache({path});
        run_query(f.dset, q, buf, &h[int(s)]);  // warm-up pass, untimed
        for (int rep = 0; rep < 3; ++rep) warm_times[int(s)].push_back(run_query(f.dset, q, buf, &h[int(s)]) * 1e3);
        return 0.0;
      });
    }
    if (!cold)
      for (int k = 0; k < 2; ++k)
        if (!t.failed[k] && !warm_times[k].empty()) t.v[k] = median(warm_times[k]);
    r.result(label, t.v, t.failed, "ms", cold ? "" : "median of 6, 2 rounds, sides alternating");
    bool have[2] = {t.ok(Side::kNative), t.ok(Side::kTessera)};
    r.check(label, have, h);
  }
}

double update(const Options& o, Report& r, Side s, const std::string& path, const Points& p, bool cold) {
  Open f(s, path, H5F_ACC_RDWR);
  hid_t fspace = f.ids.add(H5Dget_space(f.dset), H5Sclose);
  BCHECK(H5Sselect_elements(fspace, H5S_SELECT_SET, p.size(), p.coords.data()));
  hsize_t n = p.size();
  hid_t mspace = f.ids.add(H5Screate_simple(1, &n, nullptr), H5Sclose);
  if (cold) r.cache_methods[drop_caches(o, {path})] = "used";
  else warm_cache({path});
  auto t0 = Clock::now();
  BCHECK(H5Dwrite(f.dset, H5T_NATIVE_INT32, mspace, fspace, H5P_DEFAULT, p.values.data()));
  f.durable_close(s, path);
  return since(t0);
}

// 1,000 single-element H5Dwrite calls; returns µs per call (write calls only).
double single_writes(const Dims& d, Side s, const std::string& path, const Points& p, double* close_s,
                     uint64_t* done) {
  Open f(s, path, H5F_ACC_RDWR);
  hid_t fspace = f.ids.add(H5Dget_space(f.dset), H5Sclose);
  hsize_t one = 1, cnt[2] = {1, 1};
  hid_t mspace = f.ids.add(H5Screate_simple(1, &one, nullptr), H5Sclose);
  warm_cache({path});
  Stopwatch sw;
  uint64_t k = 0;
  for (; k < p.size() && sw.total < d.single_budget; ++k) {
    BCHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &p.coords[2 * k], nullptr, cnt, nullptr));
    sw.start();
    BCHECK(H5Dwrite(f.dset, H5T_NATIVE_INT32, mspace, fspace, H5P_DEFAULT, &p.values[k]));
    sw.stop();
  }
  *done = k;
  if (k < p.size()) {  // over budget: write the rest in one untimed call so the data match
    hsize_t rest = p.size() - k;
    BCHECK(H5Sselect_elements(fspace, H5S_SELECT_SET, rest, &p.coords[2 * k]));
    Ids m;
    hid_t ms = m.add(H5Screate_simple(1, &rest, nullptr), H5Sclose);
    BCHECK(H5Dwrite(f.dset, H5T_NATIVE_INT32, ms, fspace, H5P_DEFAULT, &p.values[k]));
  }
  auto t0 = Clock::now();
  f.durable_close(s, path);
  *close_s = since(t0);
  return sw.total / k * 1e6;
}

uint64_t checksum(const Dims& d, Side s, const std::string& path) {
  Open f(s, path, H5F_ACC_RDONLY);
  std::vector<int32_t> buf;
  Query band{"band", {}};
  for (hsize_t r = 0; r < d.n0; r += d.c0) band.boxes.push_back({r, 0, std::min(d.c0, d.n0 - r), d.n1});
  uint64_t h;
  run_query(f.dset, band, buf, &h);
  return h;
}

void verify(const Options& o, const Dims& d, Report& r, const std::string& name, const std::string& label) {
  uint64_t h[2] = {0, 0};
  PerSide t = run_sides(o, r, "checksum " + name, [&](Side s) {
    h[int(s)] = checksum(d, s, path_for(o, s, name));
    return 0.0;
  });
  bool have[2] = {t.ok(Side::kNative), t.ok(Side::kTessera)};
  r.check(label, have, h);
}

void flow(const Options& o, const Dims& d, Report& r, bool deflate, const std::vector<std::string>& wl) {
  auto want = [&](const char* w) { return std::find(wl.begin(), wl.end(), w) != wl.end(); };
  const std::string name = deflate ? "deflate" : "plain";
  const std::string tag = deflate ? ", deflate " + std::to_string(d.level) : std::string(", uncompressed");
  // The side that loads second finds the disk still busy with the first side's gigabyte
  // (the host's write cache draining): rounds alternate which side goes first, and each
  // side's times are averaged (every round rewrites the same file with the same data).
  PerSide t;
  double sum[2] = {0, 0};
  int n[2] = {0, 0};
  Options oo = o;
  for (int round = 0; round < (d.reuse ? 0 : d.load_rounds); ++round) {
    oo.sides = o.sides;
    if (round % 2 == 1) std::reverse(oo.sides.begin(), oo.sides.end());
    PerSide one = run_sides(oo, r, "load", [&](Side s) {
      const double t = load(d, s, path_for(o, s, name), deflate);
      std::printf("# load%s, round %d, %s: %.3f s\n", tag.c_str(), round + 1, side_name(s), t);
      return t;
    });
    for (int k = 0; k < 2; ++k) {
      t.failed[k] = t.failed[k] || one.failed[k];
      if (!std::isnan(one.v[k])) sum[k] += one.v[k], ++n[k];
    }
  }
  for (int k = 0; k < 2; ++k) t.v[k] = n[k] ? sum[k] / n[k] : NAN;
  if (!d.reuse)
    r.result("load (c)" + tag + ", to durable", t.v, t.failed, "s",
             d.load_rounds > 1 ? "mean of " + std::to_string(d.load_rounds) + ", sides alternating" : "");

  if (!deflate && want("read")) {
    reads(o, d, r, false);
    reads(o, d, r, true);
  }
  if (want("update")) {
    std::vector<bool> colds = deflate ? std::vector<bool>{false} : std::vector<bool>{false, true};
    uint64_t seed = 1000;
    for (bool cold : colds) {
      Points p = make_points(d.n0, d.n1, d.updates, seed++);
      std::string label = "update (a) " + std::to_string(d.updates) + " points, one H5Dwrite" + tag +
                          (cold ? ", cold" : ", warm");
      Options oo = o;
      std::string note;
      if (deflate && d.skip_native_deflate_update) {
        oo.sides.erase(std::remove(oo.sides.begin(), oo.sides.end(), Side::kNative), oo.sides.end());
        note = "native skipped (--skip-native-deflate-update)";
      }
      t = run_sides(oo, r, label, [&](Side s) { return update(o, r, s, path_for(o, s, name), p, cold); });
      r.result(label + ", to durable", t.v, t.failed, "s", note);
    }
  }
  if (want("single")) {
    Points p = make_points(d.n0, d.n1, d.writes, 2000);
    double close_s[2] = {NAN, NAN};
    uint64_t done[2] = {0, 0};
    t = run_sides(o, r, "single", [&](Side s) {
      return single_writes(d, s, path_for(o, s, name), p, &close_s[int(s)], &done[int(s)]);
    });
    std::string note;
    for (Side s : o.sides)
      if (done[int(s)] && done[int(s)] < p.size())
        note += std::string(side_name(s)) + ": " + std::to_string(done[int(s)]) + " of " +
                std::to_string(p.size()) + " calls timed (time budget), the rest written in one untimed call; ";
    r.result("single (b) " + std::to_string(d.writes) + " separate 1-element H5Dwrite" + tag, t.v, t.failed,
             "us/call", note);
    bool f2[2] = {t.failed[0], t.failed[1]};
    r.result("single (b)" + tag + ": the durable close after them", close_s, f2, "s");
  }
  verify(o, d, r, name, "dataset content after all writes" + tag);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  Dims d{};
  std::vector<std::string> workloads = {"load", "read", "update", "single", "deflate", "plain"};
  try {
    double scale = 1;
    std::vector<std::pair<std::string, std::string>> later;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (parse_common(o, argc, argv, i)) continue;
      if (a == "-h" || a == "--help") {
        std::printf("usage: bench_h5_dense [options]\n%s"
                    "  --workloads LIST  comma list of plain,deflate,read,update,single (load always runs)\n"
                    "  --deflate-level N (default 1)\n"
                    "  --updates N / --writes N   override the counts\n"
                    "  --single-budget SEC   stop timing single writes after SEC per side (default 30)\n"
                    "  --skip-native-deflate-update\n"
                    "  --load-rounds N  loads per side, the side going first alternating (default 2)\n"
                    "  --reuse      no load: the files an earlier --keep run left in --dir (with\n"
                    "               --workloads plain,read: read-path changes compared run against run)\n",
                    common_usage());
        return 0;
      }
      if (a == "--skip-native-deflate-update" || a == "--reuse") later.push_back({a, ""});
      else if (i + 1 < argc && (a == "--workloads" || a == "--deflate-level" || a == "--updates" || a == "--load-rounds" ||
                                a == "--writes" || a == "--single-budget"))
        later.push_back({a, argv[++i]});
      else throw std::invalid_argument("unknown argument " + a + " (try --help)");
    }
    scale = o.scale;
    d = dims_for(scale);
    for (auto& [k, v] : later) {
      if (k == "--workloads") {
        workloads = split_list(v);
      } else if (k == "--deflate-level") d.level = std::atoi(v.c_str());
      else if (k == "--updates") d.updates = std::strtoull(v.c_str(), nullptr, 10);
      else if (k == "--writes") d.writes = std::strtoull(v.c_str(), nullptr, 10);
      else if (k == "--single-budget") d.single_budget = std::atof(v.c_str());
      else if (k == "--skip-native-deflate-update") d.skip_native_deflate_update = true;
      else if (k == "--load-rounds") d.load_rounds = std::max(1, std::atoi(v.c_str()));
      else if (k == "--reuse") d.reuse = o.keep = true;
    }
    bool any_flow = std::count(workloads.begin(), workloads.end(), "plain") ||
                    std::count(workloads.begin(), workloads.end(), "deflate");
    if (!any_flow) workloads.push_back("plain");
    if (d.reuse && o.dir.empty()) throw std::invalid_argument("--reuse needs the --dir of a --keep run");
    prepare_dir(o, "bench-dense");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_h5_dense: %s\n", e.what());
    return 2;
  }
  try {
    load_connectors(o);
  } catch (const std::exception&) {  // reported by the first side that needs it, as before
  }
  Report r;
  r.info("bench_h5_dense: %llux%llu int32 (%.3f GiB), chunks %llux%llu, %llu updates, %llu single writes, "
         "%llu boxes of %llux%llu, deflate level %d, dir %s",
         (unsigned long long)d.n0, (unsigned long long)d.n1, d.n0 * d.n1 * 4.0 / (1 << 30),
         (unsigned long long)d.c0, (unsigned long long)d.c1, (unsigned long long)d.updates,
         (unsigned long long)d.writes, (unsigned long long)d.boxes, (unsigned long long)d.box,
         (unsigned long long)d.box, d.level, o.dir.c_str());
  auto want = [&](const char* w) { return std::find(workloads.begin(), workloads.end(), w) != workloads.end(); };
  if (want("plain")) flow(o, d, r, false, workloads);
  if (want("deflate")) flow(o, d, r, true, workloads);
  for (auto& [m, _] : r.cache_methods) std::printf("INFO\tcache_drop\t%s\n", m.c_str());
  if (!o.keep)
    for (Side s : {Side::kNative, Side::kTessera})
      for (const char* n : {"plain", "deflate"}) remove_path(path_for(o, s, n));
  if (!o.keep) ::rmdir(o.dir.c_str());
  std::printf("# %d failure(s)\n", r.failures);
  return r.failures ? 1 : 0;
}
