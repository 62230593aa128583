// bench_h5_disk.cc — bulk I/O against the disk's own limit, measured in the same run
// (issue 20): the 1 GiB dense load and a cold full read, on tessera and on native HDF5,
// beside dd-like raw I/O of the same bytes on the same file system:
//   raw write:  the same 1 GiB written with write(2) in chunk-sized (8 MiB) blocks to a
//               plain file, then fdatasync — timed to the sync's return;
//   raw read:   that file read sequentially in 8 MiB blocks after the page cache was
//               dropped, into the same destination buffer the HDF5 reads use;
//   load:       the dense load of bench_h5_dense (16384x16384 int32, 2048x1024 chunks,
//               one H5Dwrite per chunk, timed from H5Fcreate to a durable close);
//   cold read:  page cache dropped, then H5Fopen + H5Dopen + ONE H5Dread of the whole
//               dataset into a 1 GiB buffer + close.
// The four measurements of a round run back to back; every round rotates which goes
// first; --repeat rounds (default 3), medians reported. Generating the data is never timed,
// and the destination buffer is touched before any read (no page faults in the timers).
// Output (bench_h5_common.h): "RESULT workload native tessera unit ratio note" rows, plus
// two rows whose "native" column is the raw disk: ratio = raw time / tessera time = the
// fraction of the disk's speed tessera reaches (target ≥ 0.9). Each read is hashed and
// compared with the cell formula, so a number is reported only for correct data.
// --reads-only (with --dir of an earlier --keep run) skips the loads and times the cold
// reads of the files already there: read-path changes compared run against run.
#include <sys/resource.h>

#include "bench_h5_common.h"

using namespace bench;

namespace {

// CPU seconds (user + system, every thread) of the process so far: printed per round beside
// the wall time, the figure that stays comparable when the machine is shared.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

struct Dims {
  hsize_t n0, n1, c0, c1;
  size_t bytes() const { return size_t(n0) * n1 * 4; }
};

// Cell (i, j) = i*n1 + j, as in bench_h5_dense: the model every read is checked against.
void fill_block(const Dims& d, hsize_t r, hsize_t c, hsize_t h, hsize_t w, int32_t* out) {
  for (hsize_t i = 0; i < h; ++i)
    for (hsize_t j = 0; j < w; ++j) out[i * w + j] = (int32_t)((r + i) * d.n1 + c + j);
}

// The whole dataset's bytes, row-major (what H5Dread returns) or in chunk-block order
// (what the raw file holds: it is written block by block, as the load is).
std::vector<int32_t> model(const Dims& d, bool blocks) {
  std::vector<int32_t> v(size_t(d.n0) * d.n1);
  if (!blocks) {
    fill_block(d, 0, 0, d.n0, d.n1, v.data());
    return v;
  }
  int32_t* p = v.data();
  for (hsize_t r = 0; r < d.n0; r += d.c0)
    for (hsize_t c = 0; c < d.n1; c += d.c1) {
      hsize_t h = std::min(d.c0, d.n0 - r), w = std::min(d.c1, d.n1 - c);
      fill_block(d, r, c, h, w, p);
      p += h * w;
    }
  return v;
}

uint64_t model_hash(const Dims& d, bool blocks) {
  std::vector<int32_t> v = model(d, blocks);
  return hash_bytes(v.data(), v.size() * 4);
}

// dd-like: the same bytes in chunk-sized blocks, then fdatasync.
double raw_write(const Dims& d, const std::string& path) {
  remove_path(path);
  std::vector<int32_t> buf(d.c0 * d.c1);
  Stopwatch sw;
  sw.start();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Failure("open " + path + ": " + std::strerror(errno));
  for (hsize_t r = 0; r < d.n0; r += d.c0)
    for (hsize_t c = 0; c < d.n1; c += d.c1) {
      sw.stop();
      hsize_t h = std::min(d.c0, d.n0 - r), w = std::min(d.c1, d.n1 - c);
      fill_block(d, r, c, h, w, buf.data());
      sw.start();
      const char* p = reinterpret_cast<const char*>(buf.data());
      size_t left = h * w * 4;
      while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n <= 0) throw Failure("write " + path + ": " + std::strerror(errno));
        p += n, left -= size_t(n);
      }
    }
  if (::fdatasync(fd) != 0) throw Failure("fdatasync " + path + ": " + std::strerror(errno));
  ::close(fd);
  sw.stop();
  return sw.total;
}

double raw_read(const Options& o, Report& r, const Dims& d, const std::string& path, std::vector<int32_t>& dst) {
  r.cache_methods[drop_caches(o, {path})] = "used";
  auto t = Clock::now();
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Failure("open " + path + ": " + std::strerror(errno));
  char* p = reinterpret_cast<char*>(dst.data());
  size_t left = d.bytes(), block = d.c0 * d.c1 * 4;
  while (left > 0) {
    ssize_t n = ::read(fd, p, std::min(left, block));
    if (n <= 0) throw Failure("read " + path + ": short file");
    p += n, left -= size_t(n);
  }
  ::close(fd);
  return since(t);
}

double h5_load(const Dims& d, Side s, const std::string& path) {
  remove_path(path);
  Ids ids;
  Stopwatch sw;
  sw.start();
  hid_t fapl = ids.add(fapl_for(s), H5Pclose);
  hid_t file = ids.add(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
  hid_t dcpl = ids.add(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  hsize_t chunk[2] = {d.c0, d.c1}, dims[2] = {d.n0, d.n1};
  BCHECK(H5Pset_chunk(dcpl, 2, chunk));
  hid_t fspace = ids.add(H5Screate_simple(2, dims, nullptr), H5Sclose);
  hid_t dset = ids.add(H5Dcreate2(file, "data", H5T_STD_I32LE, fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  std::vector<int32_t> buf(d.c0 * d.c1);
  for (hsize_t r = 0; r < d.n0; r += d.c0)
    for (hsize_t c = 0; c < d.n1; c += d.c1) {
      sw.stop();
      hsize_t start[2] = {r, c}, count[2] = {std::min(d.c0, d.n0 - r), std::min(d.c1, d.n1 - c)};
      fill_block(d, r, c, count[0], count[1], buf.data());
      sw.start();
      hid_t mspace = H5Screate_simple(2, count, nullptr);
      BCHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr));
      herr_t rc = H5Dwrite(dset, H5T_NATIVE_INT32, mspace, fspace, H5P_DEFAULT, buf.data());
      H5Sclose(mspace);
      BCHECK(rc);
    }
  ids.release(dset);
  BCHECK(H5Dclose(dset));
  ids.release(file);
  durable_close(s, file, path);
  sw.stop();
  return sw.total;
}

double h5_cold_read(const Options& o, Report& r, Side s, const std::string& path, std::vector<int32_t>& dst) {
  r.cache_methods[drop_caches(o, {path})] = "used";
  Ids ids;
  auto t = Clock::now();
  hid_t fapl = ids.add(fapl_for(s), H5Pclose);
  hid_t file = ids.add(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
  hid_t dset = ids.add(H5Dopen2(file, "data", H5P_DEFAULT), H5Dclose);
  BCHECK(H5Dread(dset, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, dst.data()));
  ids.release(dset);
  BCHECK(H5Dclose(dset));
  ids.release(file);
  BCHECK(H5Fclose(file));
  return since(t);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  int repeat = 3;
  bool reads_only = false;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (parse_common(o, argc, argv, i)) continue;
      if (a == "-h" || a == "--help") {
        std::printf("usage: bench_h5_disk [options]\n%s"
                    "  --repeat N   rounds, the order of the sides rotating (default 3)\n"
                    "  --reads-only only the cold reads, of the files an earlier --keep run left in --dir\n",
                    common_usage());
        return 0;
      }
      if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
      else if (a == "--reads-only") reads_only = o.keep = true;
      else throw std::invalid_argument("unknown argument " + a + " (try --help)");
    }
    if (reads_only && o.dir.empty()) throw std::invalid_argument("--reads-only needs the --dir of a --keep run");
    prepare_dir(o, "bench-disk");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_h5_disk: %s\n", e.what());
    return 2;
  }
  auto sc = [&](double v, double lo) { return (hsize_t)std::max(lo, std::round(v * o.scale)); };
  Dims d{sc(16384, 8), sc(16384, 8), sc(2048, 2), sc(1024, 2)};
  try {
    load_connectors(o);
  } catch (const std::exception&) {  // reported by the first side that needs it, as before
  }
  Report r;
  r.info("bench_h5_disk: %llux%llu int32 (%.3f GiB), chunks %llux%llu, %d rounds, dir %s",
         (unsigned long long)d.n0, (unsigned long long)d.n1, d.bytes() / double(1 << 30),
         (unsigned long long)d.c0, (unsigned long long)d.c1, repeat, o.dir.c_str());
  const uint64_t want = model_hash(d, false), want_raw = model_hash(d, true);
  std::vector<int32_t> dst(d.n0 * d.n1);
  std::memset(dst.data(), 0xff, d.bytes());  // touched once: no page faults inside the timers

  // Three "sides": 0 native, 1 tessera, 2 the raw disk.
  std::vector<Side> sides = o.sides;
  const int kRaw = 2;
  std::vector<int> order;
  for (Side s : sides) order.push_back(int(s));
  order.push_back(kRaw);
  std::vector<double> load[3], read[3];
  bool failed[3] = {false, false, false}, read_ok[3] = {true, true, true};
  auto path = [&](int side) {
    return side == kRaw ? o.dir + "/raw.bin" : path_for(o, Side(side), "load");
  };
  for (int round = 0; round < repeat; ++round) {
    std::rotate(order.begin(), order.begin() + 1, order.end());
    for (int side : order) {
      if (failed[side] || reads_only) continue;
      try {
        const double cpu0 = cpu_seconds();
        load[side].push_back(side == kRaw ? raw_write(d, path(side)) : h5_load(d, Side(side), path(side)));
        std::printf("# round %d, %s: load %.3f s (cpu %.3f s, data generation included)\n", round + 1,
                    side == kRaw ? "raw" : side_name(Side(side)), load[side].back(), cpu_seconds() - cpu0);
      } catch (const std::exception& e) {
        failed[side] = true, ++r.failures;
        std::printf("# load on %s FAILED: %s\n", side == kRaw ? "raw" : side_name(Side(side)), e.what());
      }
    }
    for (int side : order) {
      if (failed[side]) continue;
      try {
        std::memset(dst.data(), 0xff, d.bytes());  // a stale copy must not pass the check
        const double cpu0 = cpu_seconds();
        read[side].push_back(side == kRaw ? raw_read(o, r, d, path(side), dst)
                                          : h5_cold_read(o, r, Side(side), path(side), dst));
        const double cpu = cpu_seconds() - cpu0;
        if (hash_bytes(dst.data(), d.bytes()) != (side == kRaw ? want_raw : want)) read_ok[side] = false;
        std::printf("# round %d, %s: cold read %.3f s (cpu %.3f s)\n", round + 1,
                    side == kRaw ? "raw" : side_name(Side(side)), read[side].back(), cpu);
      } catch (const std::exception& e) {
        failed[side] = true, ++r.failures;
        std::printf("# cold read on %s FAILED: %s\n", side == kRaw ? "raw" : side_name(Side(side)), e.what());
      }
    }
  }
  auto med = [&](std::vector<double>* v, int side) { return v[side].empty() ? NAN : median(v[side]); };
  double mib = d.bytes() / double(1 << 20);
  std::string note = "median of " + std::to_string(repeat) + ", order rotating; raw: write(2) 8 MiB blocks + fdatasync, " +
                     "cold read(2) 8 MiB blocks; raw MiB/s write " + Report::num(mib / med(load, kRaw)) +
                     ", read " + Report::num(mib / med(read, kRaw));
  {
    double v[2] = {med(load, 0), med(load, 1)};
    bool f[2] = {failed[0], failed[1]};
    r.result("bulk: dense load, to durable", v, f, "s", note);
    double w[2] = {med(read, 0), med(read, 1)};
    r.result("bulk: cold full read, one H5Dread", w, f, "s", note);
  }
  for (int side : {0, 1}) {
    if (std::find(sides.begin(), sides.end(), Side(side)) == sides.end()) continue;
    std::string who = side_name(Side(side));
    double v[2] = {med(load, kRaw), med(load, side)};
    bool f[2] = {failed[kRaw], failed[side]};
    r.result("bulk vs disk: raw write+fdatasync / " + who + " load", v, f, "s",
             "ratio = fraction of the disk's write speed (target for tessera >= 0.9)");
    double w[2] = {med(read, kRaw), med(read, side)};
    r.result("bulk vs disk: raw cold read / " + who + " cold full read", w, f, "s",
             "ratio = fraction of the disk's read speed (target for tessera >= 0.9)");
  }
  for (int side : {0, 1, kRaw}) {
    if (read[side].empty()) continue;
    bool have[2] = {true, true};
    uint64_t h[2] = {want, read_ok[side] ? want : ~want};
    r.check(std::string("cold full read equals the cell formula: ") +
                (side == kRaw ? "raw (chunk-block order)" : side_name(Side(side))),
            have, h);
  }
  for (auto& [m, _] : r.cache_methods) std::printf("INFO\tcache_drop\t%s\n", m.c_str());
  if (!o.keep) {
    for (int side : {0, 1, kRaw}) remove_path(path(side));
    ::rmdir(o.dir.c_str());
  }
  std::printf("# %d failure(s)\n", r.failures);
  return r.failures ? 1 : 0;
}
