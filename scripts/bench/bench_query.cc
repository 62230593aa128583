// bench_query.cc — value queries with bitmap indexes vs a full scan (issue 16; the
// FastQuery paper's Fig. 7 grid and Table 1, ../shared/seeds/fastquery-parallel-indexing.txt).
//
// A climate-like float32 variable T(time, lat, lon) — by default 100 frames of the
// 0.25-degree 720 x 1440 grid, 103.7 M elements, 415 MB: a smooth field (latitude
// gradient, waves moving with time) plus noise of a fifth of a degree — is written through
// HDF5 into a tessera container, one frame per H5Dwrite, an H5Fflush every 10 frames (10
// fragments of 10 frames; chunks of one frame).  Then, each step in a fresh process (the
// engine's pools and caches are per process):
//   build    the index, cold (the container's pages evicted first), on 1 and on 2 filter
//            threads (TESSERA_THREADS), and under `mpirun -n 2` with 1 thread each
//            (every rank indexes its share of the fragments); the index's size;
//   query    for coverages 25/50/75/100 % (T[0:k], the first k frames) and selectivities
//            1/10/50 % (the threshold: that quantile of a sample, rounded to 3 significant
//            digits as FastQuery's precision=3 queries are): `T[0:k] < t`, cold,
//              scan      H5Dread of the subarray + a C loop counting v < t,
//              count     tessera_Fquery_count,
//              selection tessera_Fquery: the hits as an HDF5 hyperslab selection;
//            the median of --reps runs; every count is checked against the scan's.
// The decoded-tile cache is off in the query process (TESSERA_TILE_CACHE_MB=0) so that
// nothing survives a cache drop in memory.
//
// Output: TIME/INFO/CHECK lines, then a markdown table.  Exit status 0 when every check
// passed.  Use --cache-drop fadvise on a shared machine (evicts only these files).
#define OMPI_SKIP_MPICXX 1  // the C API only (Open MPI's C++ bindings need their own library)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "tessera/tessera.h"
#include "bench_h5_common.h"

namespace {

using namespace bench;

struct Params {
  Options o;
  uint64_t frames = 100, lat = 720, lon = 1440;
  int reps = 3;
  bool mpi = true;
  std::string phase;  // empty: the driver
  std::string path;
  std::string expr;
  std::string only;  // query phase: one way only (profiling)
};

// The field: smooth large scales plus noise, in Kelvin.
float value(uint64_t t, uint64_t i, uint64_t j, const Params& p) {
  const double phi = (static_cast<double>(i) + 0.5) / static_cast<double>(p.lat) * M_PI - M_PI / 2;
  const double lam = static_cast<double>(j) / static_cast<double>(p.lon) * 2 * M_PI;
  const double td = static_cast<double>(t);
  uint64_t h = (t * 0x9E3779B97F4A7C15ull) ^ (i * 0xC2B2AE3D27D4EB4Full) ^ (j * 0x165667B19E3779F9ull);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  const double noise = static_cast<double>(h % 2001) / 1000.0 - 1.0;
  return static_cast<float>(255 + 35 * std::cos(phi) + 8 * std::sin(3 * lam + 0.05 * td) * std::cos(phi) +
                            4 * std::sin(7 * lam - 5 * phi + 0.11 * td) + 2 * std::sin(17 * lam + 13 * phi + 0.3 * td) +
                            0.2 * noise);
}

void frame(uint64_t t, const Params& p, std::vector<float>& out) {
  out.resize(p.lat * p.lon);
  for (uint64_t i = 0; i < p.lat; ++i)
    for (uint64_t j = 0; j < p.lon; ++j) out[i * p.lon + j] = value(t, i, j, p);
}

// ------------------------------------------------------------------ phases (children)

void phase_write(const Params& p) {
  hid_t fapl = fapl_for(Side::kTessera);
  auto t0 = Clock::now();
  hid_t f = H5Fcreate(p.path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  BCHECK(f);
  hsize_t dims[3] = {p.frames, p.lat, p.lon}, chunk[3] = {1, p.lat, p.lon};
  hid_t space = H5Screate_simple(3, dims, nullptr), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  BCHECK(H5Pset_chunk(dcpl, 3, chunk));
  hid_t d = H5Dcreate2(f, "T", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  BCHECK(d);
  std::vector<float> buf;
  Stopwatch gen;
  for (uint64_t t = 0; t < p.frames; ++t) {
    gen.start();
    frame(t, p, buf);
    gen.stop();
    hsize_t start[3] = {t, 0, 0}, count[3] = {1, p.lat, p.lon};
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(3, count, nullptr);
    BCHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, count, nullptr));
    BCHECK(H5Dwrite(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, buf.data()));
    H5Sclose(fs);
    H5Sclose(ms);
    if ((t + 1) % 10 == 0) BCHECK(H5Fflush(f, H5F_SCOPE_GLOBAL));
  }
  H5Dclose(d);
  H5Sclose(space);
  H5Pclose(dcpl);
  BCHECK(H5Fclose(f));
  H5Pclose(fapl);
  std::printf("TIME\twrite\t%.6f\n", since(t0) - gen.total);
}

void phase_build(const Params& p) {
  const std::string how = drop_caches(p.o, {p.path});
  hid_t fapl = fapl_for(Side::kTessera);
  hid_t f = H5Fopen(p.path.c_str(), H5F_ACC_RDONLY, fapl);
  BCHECK(f);
  hid_t d = H5Dopen2(f, "T", H5P_DEFAULT);
  BCHECK(d);
  tessera_index_config_t cfg = {0, 0, 1, nullptr, nullptr};
  auto t0 = Clock::now();
  BCHECK(tessera_Dbuild_index(d, &cfg, H5P_DEFAULT));
  const double s = since(t0);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  tessera_index_info_t info;
  BCHECK(tessera_Dget_index_info(d, &info));
  std::printf("TIME\tbuild\t%.6f\nTIME\tcpu\t%.6f\nINFO\tindex\t%llu\t%llu\t%llu\t%llu\nINFO\tcache\t%s\n", s, cpu,
              (unsigned long long)info.fragments, (unsigned long long)info.indexed,
              (unsigned long long)info.data_bytes, (unsigned long long)info.index_bytes, how.c_str());
  H5Dclose(d);
  H5Fclose(f);
  H5Pclose(fapl);
}

void phase_mpi_build(const Params& p) {
  MPI_Init(nullptr, nullptr);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  hid_t fapl = fapl_for(Side::kTessera);
  BCHECK(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
  hid_t f = H5Fopen(p.path.c_str(), H5F_ACC_RDONLY, fapl);
  BCHECK(f);
  hid_t d = H5Dopen2(f, "T", H5P_DEFAULT);
  BCHECK(d);
  std::string how;
  if (rank == 0) how = drop_caches(p.o, {p.path});
  MPI_Barrier(MPI_COMM_WORLD);
  tessera_index_config_t cfg = {0, 0, 1, nullptr, nullptr};
  auto t0 = Clock::now();
  BCHECK(tessera_Dbuild_index(d, &cfg, H5P_DEFAULT));
  MPI_Barrier(MPI_COMM_WORLD);
  const double s = since(t0);
  if (rank == 0) std::printf("TIME\tbuild\t%.6f\nINFO\tcache\t%s\n", s, how.c_str());
  H5Dclose(d);
  H5Fclose(f);
  H5Pclose(fapl);
  MPI_Finalize();
}

// One query measurement: T[0:k] < t by `how` (scan, count, selection), cold.
void phase_query(const Params& p) {
  hid_t fapl = fapl_for(Side::kTessera);
  hid_t f = H5Fopen(p.path.c_str(), H5F_ACC_RDONLY, fapl);
  BCHECK(f);
  hid_t d = H5Dopen2(f, "T", H5P_DEFAULT);
  BCHECK(d);
  // expr is "<dim> <k> <threshold text>": T[0:k] < t (dim 0, frames) or T[:, 0:k] < t
  // (dim 1, a band of latitudes: every chunk only partly covered).
  unsigned long long dim = 0, k = 0;
  char thr[64] = "";
  if (std::sscanf(p.expr.c_str(), "%llu %llu %63s", &dim, &k, thr) != 3) throw Failure("bad --expr");
  const std::string expr = (dim == 0 ? "T[0:" : "T[:, 0:") + std::to_string(k) + "] < " + thr;
  const unsigned long long frames = dim == 0 ? k : p.frames, rows = dim == 0 ? p.lat : k;
  const float t = std::strtof(thr, nullptr);
  for (int rep = 0; rep < p.reps; ++rep)
    for (const char* how : {"scan", "count", "positions", "selection"}) {
      if (!p.only.empty() && p.only != how) continue;
      drop_caches(p.o, {p.path});
      unsigned long long n = 0;
      auto t0 = Clock::now();
      if (std::strcmp(how, "scan") == 0) {
        // The subarray, a frame at a time (bounded memory, as the query), compared in C.
        std::vector<float> buf(rows * p.lon);
        hsize_t count[3] = {1, rows, p.lon};
        hid_t ms = H5Screate_simple(3, count, nullptr), fs = H5Dget_space(d);
        for (unsigned long long fr = 0; fr < frames; ++fr) {
          hsize_t start[3] = {fr, 0, 0};
          BCHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, count, nullptr));
          BCHECK(H5Dread(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, buf.data()));
          for (float v : buf) n += static_cast<double>(v) < static_cast<double>(t);
        }
        H5Sclose(ms);
        H5Sclose(fs);
      } else if (std::strcmp(how, "positions") == 0) {
        tessera_query_result_t r;
        BCHECK(tessera_Fquery_positions(f, expr.c_str(), H5P_DEFAULT, &r));
        n = r.count;
        tessera_query_result_free(&r);
      } else if (std::strcmp(how, "count") == 0) {
        hssize_t c = tessera_Fquery_count(f, expr.c_str(), H5P_DEFAULT);
        BCHECK(c);
        n = static_cast<unsigned long long>(c);
      } else {
        hid_t sel = tessera_Fquery(f, expr.c_str(), H5P_DEFAULT);
        BCHECK(sel);
        n = static_cast<unsigned long long>(H5Sget_select_npoints(sel));
        H5Sclose(sel);
      }
      std::printf("TIME\t%s\t%.6f\t%llu\n", how, since(t0), n);
    }
  H5Dclose(d);
  H5Fclose(f);
  H5Pclose(fapl);
}

// ------------------------------------------------------------------ the driver

struct Lines {
  std::vector<std::vector<std::string>> rows;
  std::string raw;
};

// Runs this program with `args` (and `env` before it), collecting its output lines.
Lines child(const Params& p, const std::string& env, const std::string& args, const std::string& launcher = "") {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) throw Failure("cannot find /proc/self/exe");
  self[n] = '\0';
  std::string cmd = env + " " + launcher + " '" + self + "' --path '" + p.path + "' --cache-drop " + p.o.cache +
                    " --frames " + std::to_string(p.frames) + " --lat " + std::to_string(p.lat) + " --lon " +
                    std::to_string(p.lon) + " --reps " + std::to_string(p.reps) + " " + args + " 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) throw Failure("cannot run " + cmd);
  Lines out;
  char line[4096];
  while (std::fgets(line, sizeof line, pipe)) {
    out.raw += line;
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    std::vector<std::string> fields;
    size_t at = 0;
    for (size_t tab; (tab = s.find('\t', at)) != std::string::npos; at = tab + 1) fields.push_back(s.substr(at, tab - at));
    fields.push_back(s.substr(at));
    out.rows.push_back(fields);
  }
  const int rc = ::pclose(pipe);
  if (rc != 0) throw Failure("'" + args + "' failed (status " + std::to_string(rc) + "):\n" + out.raw);
  return out;
}

double time_of(const Lines& l, const std::string& what) {
  for (const auto& r : l.rows)
    if (r.size() >= 3 && r[0] == "TIME" && r[1] == what) return std::atof(r[2].c_str());
  throw Failure("no TIME " + what + " in:\n" + l.raw);
}

// The median time and the (common) count of `how` over the reps.
std::pair<double, unsigned long long> measured(const Lines& l, const std::string& how) {
  std::vector<double> ts;
  unsigned long long n = 0;
  for (const auto& r : l.rows)
    if (r.size() >= 4 && r[0] == "TIME" && r[1] == how) {
      ts.push_back(std::atof(r[2].c_str()));
      n = std::strtoull(r[3].c_str(), nullptr, 10);
    }
  if (ts.empty()) throw Failure("no TIME " + how + " in:\n" + l.raw);
  return {median(ts), n};
}

int driver(Params& p) {
  prepare_dir(p.o, "query");
  p.path = p.o.dir + "/climate.h5";
  const uint64_t cells = p.frames * p.lat * p.lon;
  std::printf("# bench_query: T(%llu, %llu, %llu) float32, %.1f M elements, %.0f MB; %s\n",
              (unsigned long long)p.frames, (unsigned long long)p.lat, (unsigned long long)p.lon, cells / 1e6,
              cells * 4 / 1e6, p.o.dir.c_str());
  std::fflush(stdout);
  int failures = 0;
  const double write_s = time_of(child(p, "", "--phase write"), "write");
  std::printf("TIME\twrite\t%.3f\n", write_s);
  // Thresholds: per subarray, the quantile of a sample of it, rounded to 3 significant
  // digits (a band of southern latitudes is colder than the whole globe).
  auto threshold = [&](int dim, uint64_t k, int sel) {
    std::vector<float> sample;
    const uint64_t frames = dim == 0 ? k : p.frames, rows = dim == 0 ? p.lat : k;
    for (uint64_t t = 0; t < frames; t += std::max<uint64_t>(1, frames / 30))
      for (uint64_t i = 0; i < rows; i += 5)
        for (uint64_t j = 0; j < p.lon; j += 11) sample.push_back(value(t, i, j, p));
    std::sort(sample.begin(), sample.end());
    char b[32];
    std::snprintf(b, sizeof b, "%.3g", static_cast<double>(sample[sample.size() * sel / 100]));
    return std::string(b);
  };
  // Index builds, --reps times each (alternating, so that a busy moment of a shared
  // machine hits all of them alike); the fastest run is the least disturbed one.
  Lines b1, b2;
  std::vector<double> t1s, t2s, mpis, cpu1s, cpu2s;
  for (int r = 0; r < p.reps; ++r) {
    b1 = child(p, "TESSERA_THREADS=1", "--phase build");
    b2 = child(p, "TESSERA_THREADS=2", "--phase build");
    t1s.push_back(time_of(b1, "build"));
    t2s.push_back(time_of(b2, "build"));
    cpu1s.push_back(time_of(b1, "cpu"));
    cpu2s.push_back(time_of(b2, "cpu"));
    if (p.mpi) {
      try {
        mpis.push_back(time_of(child(p, "TESSERA_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                     "--phase mpi-build", "mpirun --allow-run-as-root --oversubscribe -n 2"),
                               "build"));
      } catch (const Failure& e) {
        std::printf("# mpirun -n 2 build failed: %s\n", e.what());
        ++failures;
      }
    }
  }
  auto fastest = [](const std::vector<double>& v) { return v.empty() ? NAN : *std::min_element(v.begin(), v.end()); };
  const double mpi_s = fastest(mpis);
  unsigned long long data_bytes = 0, index_bytes = 0, frags = 0, indexed = 0;
  std::string cache_how;
  for (const auto& r : b2.rows) {
    if (r.size() >= 6 && r[0] == "INFO" && r[1] == "index") {
      frags = std::strtoull(r[2].c_str(), nullptr, 10);
      indexed = std::strtoull(r[3].c_str(), nullptr, 10);
      data_bytes = std::strtoull(r[4].c_str(), nullptr, 10);
      index_bytes = std::strtoull(r[5].c_str(), nullptr, 10);
    }
    if (r.size() >= 3 && r[0] == "INFO" && r[1] == "cache") cache_how = r[2];
  }
  const double t1 = fastest(t1s), t2 = fastest(t2s);
  std::printf("TIME\tbuild_1_thread\t%.3f\t(median %.3f, cpu %.3f)\nTIME\tbuild_2_threads\t%.3f\t(median %.3f, cpu %.3f)\n"
              "TIME\tbuild_mpirun_2\t%.3f\t(median %.3f)\n",
              t1, median(t1s), median(cpu1s), t2, median(t2s), median(cpu2s), mpi_s, median(mpis));
  std::printf("INFO\tindex\t%llu of %llu fragments, %llu bytes for %llu bytes of data (%.1f %%)\n", indexed, frags,
              index_bytes, data_bytes, 100.0 * index_bytes / std::max<unsigned long long>(1, data_bytes));
  // Queries.
  struct Row {
    int dim, coverage, sel;
    double actual, scan, count, positions, selection;
    std::string thr;
  };
  std::vector<Row> rows;
  for (int dim : {0, 1})
  for (int cov : {25, 50, 75, 100})
    for (int s : {1, 10, 50}) {
      const uint64_t extent = dim == 0 ? p.frames : p.lat;
      const uint64_t k = std::max<uint64_t>(1, extent * cov / 100);
      const uint64_t region = (dim == 0 ? k * p.lat : p.frames * k) * p.lon;
      const std::string thr = threshold(dim, k, s);
      const Lines q = child(p, "TESSERA_TILE_CACHE_MB=0",
                            "--phase query --expr '" + std::to_string(dim) + " " + std::to_string(k) + " " + thr + "'");
      auto [scan_s, scan_n] = measured(q, "scan");
      auto [count_s, count_n] = measured(q, "count");
      auto [pos_s, pos_n] = measured(q, "positions");
      auto [sel_s, sel_n] = measured(q, "selection");
      const bool ok = count_n == scan_n && sel_n == scan_n && pos_n == scan_n;
      failures += !ok;
      std::printf("CHECK\t%s%llu] < %s\t%llu\t%llu\t%s\n", dim == 0 ? "T[0:" : "T[:, 0:", (unsigned long long)k,
                  thr.c_str(), scan_n, count_n, ok ? "ok" : "MISMATCH");
      rows.push_back({dim, cov, s, 100.0 * scan_n / region, scan_s, count_s, pos_s, sel_s, thr});
      std::fflush(stdout);
    }
  for (int dim : {0, 1}) {
    std::printf("\n%s\n\n| coverage | selectivity (actual) | threshold | scan (read + compare) | count | speed-up | positions | speed-up | selection | speed-up |\n"
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
                dim == 0 ? "T[0:k] < t (the first k frames: whole chunks)" : "T[:, 0:k] < t (a band of latitudes: every chunk in part)");
    for (const Row& r : rows)
      if (r.dim == dim)
        std::printf("| %d %% | %d %% (%.2f %%) | %s | %.3f s | %.4f s | %.1f x | %.4f s | %.1f x | %.4f s | %.1f x |\n",
                    r.coverage, r.sel, r.actual, r.thr.c_str(), r.scan, r.count, r.scan / r.count, r.positions,
                    r.scan / r.positions, r.selection, r.scan / r.selection);
  }
  std::printf("\n| index build (cold, fastest of %d) | time | speed-up | median |\n| --- | --- | --- | --- |\n"
              "| 1 thread | %.2f s | 1.00 | %.2f s |\n| 2 threads | %.2f s | %.2f | %.2f s |\n"
              "| mpirun -n 2, 1 thread each | %.2f s | %.2f | %.2f s |\n",
              p.reps, t1, median(t1s), t2, t1 / t2, median(t2s), mpi_s, t1 / mpi_s, median(mpis));
  std::printf("\nindex: %.1f MB for %.1f MB of data (%.1f %%); write %.2f s; page cache dropped by %s\n",
              index_bytes / 1e6, data_bytes / 1e6, 100.0 * index_bytes / std::max<unsigned long long>(1, data_bytes),
              write_s, cache_how.c_str());
  if (!p.o.keep) remove_path(p.o.dir);
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Params p;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (parse_common(p.o, argc, argv, i)) continue;
      if (a == "--frames") p.frames = std::stoull(value());
      else if (a == "--lat") p.lat = std::stoull(value());
      else if (a == "--lon") p.lon = std::stoull(value());
      else if (a == "--reps") p.reps = std::stoi(value());
      else if (a == "--no-mpi") p.mpi = false;
      else if (a == "--phase") p.phase = value();
      else if (a == "--path") p.path = value();
      else if (a == "--expr") p.expr = value();
      else if (a == "--only") p.only = value();
      else {
        std::fprintf(stderr,
                     "usage: bench_query [options]\n%s"
                     "  --frames N       time steps (default 100; --scale multiplies it)\n"
                     "  --lat N --lon N  grid (default 720 x 1440)\n"
                     "  --reps N         runs per measurement, the median is reported (default 3)\n"
                     "  --no-mpi         skip the mpirun -n 2 build\n",
                     common_usage());
        return 2;
      }
    }
    if (p.phase.empty()) {
      p.frames = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(p.frames * p.o.scale)));
      return driver(p);
    }
    if (p.phase == "write") phase_write(p);
    else if (p.phase == "build") phase_build(p);
    else if (p.phase == "mpi-build") phase_mpi_build(p);
    else if (p.phase == "query") phase_query(p);
    else throw std::invalid_argument("unknown phase " + p.phase);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_query: %s\n", e.what());
    return 1;
  }
}
