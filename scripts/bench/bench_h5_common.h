// bench_h5_common.h — shared pieces of the tessera-vs-native HDF5 benchmarks (bench_h5_*.cc).
//
// Each benchmark runs one workload twice in the same process, once per connector, chosen
// per file with a file-access plist (native: H5Pset_vol(H5VL_NATIVE); tessera:
// H5VLregister_connector_by_name("tessera"), found through HDF5_PLUGIN_PATH). The output
// is line based so scripts/bench/run_h5_benchmarks and the smoke test can parse it:
//   RESULT<TAB>workload<TAB>native<TAB>tessera<TAB>unit<TAB>ratio<TAB>note
//   CHECK<TAB>name<TAB>native hash<TAB>tessera hash<TAB>ok|MISMATCH|-
// ratio = native / tessera (> 1: tessera is faster). A failure on one side is reported
// (value "FAILED") and the other workloads still run; the exit status is 0 only when every
// workload ran on every requested side and every CHECK matched.
#pragma once

#include <hdf5.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <unordered_set>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

enum class Side { kNative = 0, kTessera = 1 };
inline const char* side_name(Side s) { return s == Side::kNative ? "native" : "tessera"; }

// Thrown by BCHECK; caught per (workload, side) so one failure does not hide the rest.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline std::string h5_error_text() {
  // The innermost messages of the current HDF5 error stack, for the failure report.
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD,
           [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
             auto* s = static_cast<std::string*>(out);
             if (!s->empty()) *s += " | ";
             *s += e->desc ? e->desc : "?";
             return 0;
           },
           &text);
  return text;
}

#define BCHECK(expr)                                                                        \
  do {                                                                                       \
    if ((expr) < 0)                                                                          \
      throw ::bench::Failure(std::string(#expr) + " failed: " + ::bench::h5_error_text()); \
  } while (0)

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A stopwatch that can be paused, so data generation stays outside the timed region.
struct Stopwatch {
  double total = 0;
  Clock::time_point t0;
  bool running = false;
  void start() { t0 = Clock::now(); running = true; }
  void stop() { if (running) total += since(t0); running = false; }
};

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[v.size() / 2];
}

// 64-bit word-wise hash (FNV-style multiply); only used to compare the two sides.
inline uint64_t hash_bytes(const void* p, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* b = static_cast<const unsigned char*>(p);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, b + i, 8);
    h = (h ^ w) * 1099511628211ull;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

struct Options {
  std::string dir;            // where the files/containers go
  bool keep = false;          // keep them after the run
  std::vector<Side> sides = {Side::kNative, Side::kTessera};
  std::string cache = "auto"; // auto | proc | fadvise
  double scale = 1.0;         // linear scale of the workload (1 = the full size)
};

inline double parse_scale(const char* s) {
  // Accepts "0.25" or "1/64".
  const char* slash = std::strchr(s, '/');
  double v = slash ? std::atof(s) / std::atof(slash + 1) : std::atof(s);
  if (!(v > 0 && v <= 1)) throw std::invalid_argument(std::string("--scale must be in (0,1]: ") + s);
  return v;
}

// Consumes the common options; returns false for an argument it does not know.
inline bool parse_common(Options& o, int argc, char** argv, int& i) {
  std::string a = argv[i];
  auto value = [&]() -> const char* {
    if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
    return argv[++i];
  };
  if (a == "--dir") o.dir = value();
  else if (a == "--keep") o.keep = true;
  else if (a == "--scale") o.scale = parse_scale(value());
  else if (a == "--cache-drop") o.cache = value();
  else if (a == "--native-only") o.sides = {Side::kNative};
  else if (a == "--tessera-only") o.sides = {Side::kTessera};
  else return false;
  return true;
}

inline const char* common_usage() {
  return "  --scale S        linear scale, e.g. 1/64 for a smoke run (default 1 = full size)\n"
         "  --dir DIR        directory for the files (default: a fresh one under /tmp)\n"
         "  --keep           keep the files afterwards\n"
         "  --cache-drop M   auto | proc (/proc/sys/vm/drop_caches) | fadvise (POSIX_FADV_DONTNEED)\n"
         "  --native-only / --tessera-only   run one side\n";
}

inline void prepare_dir(Options& o, const char* tag) {
  if (o.dir.empty()) {
    std::string tmpl = std::string("/tmp/tessera-") + tag + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
    o.dir = buf.data();
  } else {
    std::filesystem::create_directories(o.dir);
  }
}

inline std::string path_for(const Options& o, Side s, const std::string& name) {
  return o.dir + "/" + side_name(s) + "_" + name + ".h5";
}

inline void remove_path(const std::string& p) {
  std::error_code ec;
  std::filesystem::remove_all(p, ec);
}

// The file-access plist that selects a side's connector. The tessera connector id is
// registered once (the plugin is loaded from HDF5_PLUGIN_PATH).
inline hid_t fapl_for(Side s) {
  static hid_t tessera_id = H5I_INVALID_HID;
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  BCHECK(fapl);
  if (s == Side::kNative) {
    // Explicit, so HDF5_VOL_CONNECTOR in the environment does not change the native side.
    BCHECK(H5Pset_vol(fapl, H5VL_NATIVE, nullptr));
  } else {
    if (tessera_id < 0) {
      tessera_id = H5VLregister_connector_by_name("tessera", H5P_DEFAULT);
      if (tessera_id < 0)
        throw Failure("cannot load the tessera connector (is HDF5_PLUGIN_PATH=<build>/plugins set?): " +
                      h5_error_text());
    }
    BCHECK(H5Pset_vol(fapl, tessera_id, nullptr));
  }
  return fapl;
}

// Loads the tessera plugin before anything is timed, as libhdf5 itself is loaded before
// main: registering it in the first timed call put its dlopen — after a cache drop, the
// plugin's pages read from disk, ~1 s on a busy disk — into tessera's first load or cold
// read alone.
inline void load_connectors(const Options& o) {
  if (std::find(o.sides.begin(), o.sides.end(), Side::kTessera) != o.sides.end()) H5Pclose(fapl_for(Side::kTessera));
}

// Every regular file under a path (a native file is one; a tessera container a tree).
inline std::vector<std::string> files_under(const std::string& p) {
  std::vector<std::string> out;
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) {
    for (auto& e : std::filesystem::recursive_directory_iterator(p, ec))
      if (e.is_regular_file(ec)) out.push_back(e.path().string());
  } else if (std::filesystem::exists(p, ec)) {
    out.push_back(p);
  }
  return out;
}

// Native HDF5's H5Fclose does not fsync; a durable close is H5Fclose + open + fsync.
// tessera's H5Fclose syncs its fragments and catalog itself, so nothing is added there.
inline void sync_native_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0 || ::fsync(fd) != 0) {
    if (fd >= 0) ::close(fd);
    throw Failure("fsync(" + path + ") failed: " + std::strerror(errno));
  }
  ::close(fd);
}

inline void durable_close(Side s, hid_t file, const std::string& path) {
  BCHECK(H5Fclose(file));
  if (s == Side::kNative) sync_native_file(path);
}

// Empties the page cache for `paths`. Prefers dropping the whole page cache (needs root);
// falls back to POSIX_FADV_DONTNEED on every file after a sync. Returns the method used.
inline std::string drop_caches(const Options& o, const std::vector<std::string>& paths) {
  ::sync();
  if (o.cache == "auto" || o.cache == "proc") {
    int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY);
    if (fd >= 0) {
      bool ok = ::write(fd, "3\n", 2) == 2;
      ::close(fd);
      if (ok) return "drop_caches";
    }
    if (o.cache == "proc") throw Failure("cannot write /proc/sys/vm/drop_caches (not root?)");
  }
  for (const auto& p : paths)
    for (const auto& f : files_under(p)) {
      int fd = ::open(f.c_str(), O_RDONLY);
      if (fd < 0) continue;
      ::fdatasync(fd);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(fd);
    }
  return "fadvise";
}

// Reads every file under `paths` once, so a "warm" measurement starts with the data in
// the page cache on both sides whatever ran before (a cold run drops it).
inline void warm_cache(const std::vector<std::string>& paths) {
  std::vector<char> buf(1 << 20);
  for (const auto& p : paths)
    for (const auto& f : files_under(p)) {
      int fd = ::open(f.c_str(), O_RDONLY);
      if (fd < 0) continue;
      while (::read(fd, buf.data(), buf.size()) > 0) {
      }
      ::close(fd);
    }
}

// ---------------------------------------------------------------- reporting
struct Report {
  int failures = 0;
  std::map<std::string, std::string> cache_methods;  // method -> used

  static std::string num(double v) {
    if (std::isnan(v)) return "-";
    char b[64];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
  }

  // values[side] is NaN when the side did not run, and failed[side] says it failed.
  void result(const std::string& workload, const double v[2], const bool failed[2], const char* unit,
              const std::string& note = "") {
    std::string nv = failed[0] ? "FAILED" : num(v[0]);
    std::string tv = failed[1] ? "FAILED" : num(v[1]);
    std::string ratio = (!std::isnan(v[0]) && !std::isnan(v[1]) && v[1] > 0) ? num(v[0] / v[1]) : "-";
    std::printf("RESULT\t%s\t%s\t%s\t%s\t%s\t%s\n", workload.c_str(), nv.c_str(), tv.c_str(), unit,
                ratio.c_str(), note.c_str());
    std::fflush(stdout);
  }

  void check(const std::string& name, const bool have[2], const uint64_t h[2]) {
    char a[32] = "-", b[32] = "-";
    if (have[0]) std::snprintf(a, sizeof a, "%016llx", (unsigned long long)h[0]);
    if (have[1]) std::snprintf(b, sizeof b, "%016llx", (unsigned long long)h[1]);
    const char* verdict = (have[0] && have[1]) ? (h[0] == h[1] ? "ok" : "MISMATCH") : "-";
    if (have[0] && have[1] && h[0] != h[1]) ++failures;
    std::printf("CHECK\t%s\t%s\t%s\t%s\n", name.c_str(), a, b, verdict);
    std::fflush(stdout);
  }

  void info(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    va_list ap;
    va_start(ap, fmt);
    std::printf("# ");
    std::vprintf(fmt, ap);
    std::printf("\n");
    va_end(ap);
    std::fflush(stdout);
  }
};

// Runs fn(side) for every requested side, catching failures; returns per-side values.
struct PerSide {
  double v[2] = {NAN, NAN};
  bool failed[2] = {false, false};
  bool ok(Side s) const { return !failed[int(s)] && !std::isnan(v[int(s)]); }
};

inline PerSide run_sides(const Options& o, Report& r, const std::string& workload,
                         const std::function<double(Side)>& fn) {
  PerSide out;
  for (Side s : o.sides) {
    try {
      out.v[int(s)] = fn(s);
    } catch (const std::exception& e) {
      out.failed[int(s)] = true;
      ++r.failures;
      std::printf("# %s on %s FAILED: %s\n", workload.c_str(), side_name(s), e.what());
      std::fflush(stdout);
    }
  }
  return out;
}

// Closes HDF5 ids on scope exit (ignores errors: used on failure paths too).
struct Ids {
  std::vector<std::pair<hid_t, herr_t (*)(hid_t)>> ids;
  hid_t add(hid_t id, herr_t (*close)(hid_t)) {
    if (id < 0) throw Failure("HDF5 call returned an invalid id: " + h5_error_text());
    ids.emplace_back(id, close);
    return id;
  }
  void release(hid_t id) {  // closed by the caller (e.g. a timed H5Fclose)
    ids.erase(std::remove_if(ids.begin(), ids.end(), [&](auto& p) { return p.first == id; }), ids.end());
  }
  ~Ids() {
    H5E_BEGIN_TRY {
      for (auto it = ids.rbegin(); it != ids.rend(); ++it) it->second(it->first);
    }
    H5E_END_TRY
  }
};

// "a,b,,c" -> {a, b, c} (command-line lists such as --workloads).
inline std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : v + ",") {
    if (ch != ',') {
      cur += ch;
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  return out;
}

// Distinct random cells of an n0 x n1 array and the values written to them (duplicates
// would make "which write wins" depend on the implementation's order inside one call);
// the same for a given seed on every rank and side.
struct Points {
  std::vector<hsize_t> coords;  // n x 2
  std::vector<int32_t> values;
  size_t size() const { return values.size(); }
};

inline Points make_points(hsize_t n0, hsize_t n1, uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::unordered_set<uint64_t> seen;
  Points p;
  while (p.values.size() < n) {
    hsize_t i = rng() % n0, j = rng() % n1;
    if (!seen.insert(i * n1 + j).second) continue;
    p.coords.push_back(i);
    p.coords.push_back(j);
    p.values.push_back(-1 - (int32_t)(rng() % 1000000000));
  }
  return p;
}

}  // namespace bench
