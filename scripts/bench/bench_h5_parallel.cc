// bench_h5_parallel.cc — the parallel benchmark of issue 6: tessera vs PHDF5 (native HDF5
// with H5Pset_fapl_mpio) on the same data in the same MPI run. Run it under mpirun:
//   mpirun -n 4 bench_h5_parallel [--scale 1/64]      (scripts/bench/run_h5_parallel: np 1,2,4)
//
// Workloads (a 16384x16384 int32 dataset at scale 1, 2048x1024 chunks, cell (i,j) = i*cols+j,
// written in chunk-sized blocks; the blocks are split across ranks in contiguous runs):
//   (1) dense load, uncompressed, H5Fcreate .. durable close. PHDF5 writes independently
//       (allowed for unfiltered data; --native-dense collective to compare).
//   (2) the same with deflate: tessera writes every block independently; PHDF5 must write
//       collectively (every rank calls H5Dwrite equally often; ranks with fewer blocks pass
//       empty selections).
//   (2b) the capability probe: an independent H5Dwrite to a deflate dataset on every rank —
//       PHDF5 refuses it when the communicator has more than one rank.
//   (3) N random distinct element updates (100,000 at scale 1) on dataset (1), split across
//       ranks, each rank ONE H5Dwrite with a point selection, timed from the write to the
//       durable close.
//   (4) many small writes: every rank writes K boxes of 8x256 cells (default K = 256) at
//       random places of its own band of rows of dataset (1), each box its OWN independent
//       H5Dwrite, timed from the first write to the durable close.  In a parallel file
//       each tessera H5Dwrite ends a fragment (docs/parallel.md), so this is the cost of
//       per-write fragments against PHDF5 writing into its chunks in place.  The boxes
//       hold the formula's values (so the model is the formula, with the updates of (3)
//       that no box covers).
// Each timed workload runs --repeat times per side (default 3, alternating which side goes
// first) and the median is reported: the machine is shared and its load drifts.
// After each load every rank reads its own blocks back through the mpio file and hashes them;
// at the end rank 0 reopens each file serially (a later serial reader) and hashes it all.
// Both are compared between the sides and with an independent model (the formula plus the
// update list), so a number is only trusted when both sides returned the model's data.
//
// Output (rank 0 only), the format of bench_h5_common.h plus a model column:
//   RESULT<TAB>workload<TAB>native<TAB>tessera<TAB>unit<TAB>ratio<TAB>note
//   CHECK<TAB>name<TAB>native hash<TAB>tessera hash<TAB>ok|MISMATCH|-<TAB>model hash
//   INFO<TAB>key<TAB>value...
// A side's value is a number, FAILED, or (tessera) "unsupported" when the connector refuses
// the mpio file-access plist ("... not supported yet"): that is reported once, the rest of
// tessera's side is skipped and the native side still runs. Exit status 0 when every native
// workload ran, no check mismatched, and tessera either ran everything or was unsupported
// (--require-tessera makes "unsupported" an error too).
#include <hdf5.h>

#ifndef H5_HAVE_PARALLEL
#include <cstdio>
int main() {
  std::fprintf(stderr, "bench_h5_parallel: this HDF5 is not built with parallel (MPI) support\n");
  return 2;
}
#else

#include <mpi.h>

#include <random>
#include <unordered_set>

#include "bench_h5_mpi.h"

using namespace bench;

namespace {

struct Dims {
  hsize_t n0, n1, c0, c1;
  uint64_t updates;
  uint64_t small_writes = 256;  // (4): boxes per rank
  int level = 1;  // deflate level
  H5FD_mpio_xfer_t native_dense = H5FD_MPIO_INDEPENDENT;
  H5FD_mpio_xfer_t native_update = H5FD_MPIO_INDEPENDENT;
  H5FD_mpio_xfer_t tessera_xfer = H5FD_MPIO_INDEPENDENT;
  bool require_tessera = false;
  int repeat = 3;  // timed runs per side and workload; the median is reported
};

Dims dims_for(double s) {
  auto sc = [&](double v, double lo) { return (hsize_t)std::max(lo, std::round(v * s)); };
  Dims d{};
  d.n0 = sc(16384, 8), d.n1 = sc(16384, 8), d.c0 = sc(2048, 2), d.c1 = sc(1024, 2);
  d.updates = (uint64_t)std::max(16.0, std::round(100000 * s * s));
  return d;
}

// ---------------------------------------------------------------- the data and its model
struct Block {
  hsize_t start[2], count[2];
};

std::vector<Block> all_blocks(const Dims& d) {  // chunk-aligned, row-major
  std::vector<Block> b;
  for (hsize_t r = 0; r < d.n0; r += d.c0)
    for (hsize_t c = 0; c < d.n1; c += d.c1) b.push_back({{r, c}, {std::min(d.c0, d.n0 - r), std::min(d.c1, d.n1 - c)}});
  return b;
}

// Rank r's contiguous run of blocks: [lo, hi).
std::pair<size_t, size_t> my_range(size_t n) { return {n * g_rank / g_size, n * (g_rank + 1) / g_size}; }
size_t max_per_rank(size_t n) { return (n + g_size - 1) / g_size; }

void fill_block(const Dims& d, const Block& b, std::vector<int32_t>& buf) {
  buf.resize(b.count[0] * b.count[1]);
  for (hsize_t i = 0; i < b.count[0]; ++i)
    for (hsize_t j = 0; j < b.count[1]; ++j)
      buf[i * b.count[1] + j] = (int32_t)((b.start[0] + i) * d.n1 + b.start[1] + j);
}

// ---------------------------------------------------------------- files
// The dataset path (native file or tessera container) shared by all ranks.
std::string g_dir;
std::string path_of(Side s, const std::string& name) { return g_dir + "/" + side_name(s) + "_" + name + ".h5"; }

// Native HDF5 does not sync on close: one rank fsyncs the closed file (fsync covers the
// file's pages whoever wrote them); tessera's H5Fclose syncs its own fragments and catalog.
void durable_close(Side s, Ids& ids, hid_t dset, hid_t file, const std::string& path) {
  step([&] {
    ids.release(dset);
    BCHECK(H5Dclose(dset));
    ids.release(file);
    BCHECK(H5Fclose(file));
  });
  step([&] {
    if (s == Side::kNative && g_rank == 0) sync_native_file(path);
  });
}

// (1)/(2): create the dataset and write this rank's blocks; returns the wall time minus
// this rank's block generation, maxed over ranks. *close_s: the durable close's share
// (from the barrier after the writes), for the breakdown in the note.
double load(const Dims& d, Side s, const std::string& path, bool deflate, double* close_s) {
  const bool native = s == Side::kNative;
  const H5FD_mpio_xfer_t mode = native ? (deflate ? H5FD_MPIO_COLLECTIVE : d.native_dense) : d.tessera_xfer;
  if (g_rank == 0) remove_path(path);
  MPI_Barrier(MPI_COMM_WORLD);
  Ids ids;
  hid_t file = -1, dset = -1, fspace = -1, dxpl = -1;
  double gen = 0;
  const double t0 = MPI_Wtime();
  step([&] {
    hid_t fapl = ids.add(parallel_fapl(s), H5Pclose);
    file = ids.add(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
  });
  step([&] {
    hid_t dcpl = ids.add(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    hsize_t chunk[2] = {d.c0, d.c1}, dims[2] = {d.n0, d.n1};
    BCHECK(H5Pset_chunk(dcpl, 2, chunk));
    if (deflate) BCHECK(H5Pset_deflate(dcpl, d.level));
    fspace = ids.add(H5Screate_simple(2, dims, nullptr), H5Sclose);
    dset = ids.add(H5Dcreate2(file, "data", H5T_STD_I32LE, fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
    dxpl = ids.add(xfer_plist(mode), H5Pclose);
  });
  step([&] {
    auto blocks = all_blocks(d);
    auto [lo, hi] = my_range(blocks.size());
    // Collective transfers: every rank calls H5Dwrite as often as the busiest rank.
    size_t calls = mode == H5FD_MPIO_COLLECTIVE ? max_per_rank(blocks.size()) : hi - lo;
    std::vector<int32_t> buf(d.c0 * d.c1);
    hsize_t one = 1;
    for (size_t k = 0; k < calls; ++k) {
      Ids m;
      hid_t mspace;
      if (lo + k < hi) {
        const Block& b = blocks[lo + k];
        double g0 = MPI_Wtime();  // generating the block is the application's work
        fill_block(d, b, buf);
        gen += MPI_Wtime() - g0;
        BCHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, b.start, nullptr, b.count, nullptr));
        mspace = m.add(H5Screate_simple(2, b.count, nullptr), H5Sclose);
      } else {  // padding for a collective call: this rank has no block left
        BCHECK(H5Sselect_none(fspace));
        mspace = m.add(H5Screate_simple(1, &one, nullptr), H5Sclose);
        BCHECK(H5Sselect_none(mspace));
      }
      BCHECK(H5Dwrite(dset, H5T_NATIVE_INT32, mspace, fspace, dxpl, buf.data()));
    }
  });
  MPI_Barrier(MPI_COMM_WORLD);
  const double t1 = MPI_Wtime();
  durable_close(s, ids, dset, file, path);
  MPI_Barrier(MPI_COMM_WORLD);
  *close_s = max_over_ranks(MPI_Wtime() - t1);
  return max_over_ranks(MPI_Wtime() - t0 - gen);
}

// Every rank reads its own blocks through the mpio file (untimed); returns {data hash,
// model hash}, each combined over ranks in rank order (valid on rank 0).
std::pair<uint64_t, uint64_t> parallel_readback(const Dims& d, Side s, const std::string& path) {
  Ids ids;
  hid_t file = -1, dset = -1, fspace = -1, dxpl = -1;
  uint64_t h = 0, m = 0;
  step([&] {
    hid_t fapl = ids.add(parallel_fapl(s), H5Pclose);
    file = ids.add(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
  });
  step([&] {
    dset = ids.add(H5Dopen2(file, "data", H5P_DEFAULT), H5Dclose);
    fspace = ids.add(H5Dget_space(dset), H5Sclose);
    dxpl = ids.add(xfer_plist(H5FD_MPIO_INDEPENDENT), H5Pclose);
  });
  step([&] {
    auto blocks = all_blocks(d);
    auto [lo, hi] = my_range(blocks.size());
    std::vector<int32_t> got, want;
    for (size_t k = lo; k < hi; ++k) {
      const Block& b = blocks[k];
      got.assign(b.count[0] * b.count[1], 0);
      Ids mi;
      hid_t mspace = mi.add(H5Screate_simple(2, b.count, nullptr), H5Sclose);
      BCHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, b.start, nullptr, b.count, nullptr));
      BCHECK(H5Dread(dset, H5T_NATIVE_INT32, mspace, fspace, dxpl, got.data()));
      fill_block(d, b, want);
      h = hash_bytes(got.data(), got.size() * 4, h);
      m = hash_bytes(want.data(), want.size() * 4, m);
    }
  });
  step([&] {
    ids.release(dset);
    BCHECK(H5Dclose(dset));
    ids.release(file);
    BCHECK(H5Fclose(file));
  });
  std::vector<uint64_t> hs(2 * g_size);
  uint64_t mine[2] = {h, m};
  MPI_Gather(mine, 2, MPI_UINT64_T, hs.data(), 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  uint64_t ch = 0, cm = 0;
  for (int r = 0; r < g_size; ++r) {
    ch = hash_bytes(&hs[2 * r], 8, ch);
    cm = hash_bytes(&hs[2 * r + 1], 8, cm);
  }
  return {ch, cm};
}

// (3): this rank's slice of the points in ONE H5Dwrite; write .. durable close.
double update(const Dims& d, Side s, const std::string& path, const Points& p) {
  const H5FD_mpio_xfer_t mode = s == Side::kNative ? d.native_update : d.tessera_xfer;
  Ids ids;
  hid_t file = -1, dset = -1, fspace = -1, mspace = -1, dxpl = -1;
  auto [lo, hi] = my_range(p.values.size());
  step([&] {
    hid_t fapl = ids.add(parallel_fapl(s), H5Pclose);
    file = ids.add(H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl), H5Fclose);
  });
  step([&] {
    dset = ids.add(H5Dopen2(file, "data", H5P_DEFAULT), H5Dclose);
    fspace = ids.add(H5Dget_space(dset), H5Sclose);
    hsize_t n = std::max<hsize_t>(1, hi - lo);
    mspace = ids.add(H5Screate_simple(1, &n, nullptr), H5Sclose);
    if (hi > lo) {
      BCHECK(H5Sselect_elements(fspace, H5S_SELECT_SET, hi - lo, &p.coords[2 * lo]));
    } else {
      BCHECK(H5Sselect_none(fspace));
      BCHECK(H5Sselect_none(mspace));
    }
    dxpl = ids.add(xfer_plist(mode), H5Pclose);
  });
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  const int32_t* values = hi > lo ? &p.values[lo] : p.values.data();
  step([&] { BCHECK(H5Dwrite(dset, H5T_NATIVE_INT32, mspace, fspace, dxpl, values)); });
  durable_close(s, ids, dset, file, path);
  MPI_Barrier(MPI_COMM_WORLD);
  return max_over_ranks(MPI_Wtime() - t0);
}

// (4): rank r's boxes, 8 rows x 256 columns (capped by the dataset) at random places of its
// band of rows; the same on every rank (the model needs every rank's).
std::vector<Block> small_boxes(const Dims& d, int r) {
  const hsize_t lo = d.n0 * (hsize_t)r / (hsize_t)g_size, hi = d.n0 * (hsize_t)(r + 1) / (hsize_t)g_size;
  std::vector<Block> out;
  if (hi <= lo) return out;
  const hsize_t rows = std::min<hsize_t>(8, hi - lo), cols = std::min<hsize_t>(256, d.n1);
  std::mt19937_64 rng(4000 + (uint64_t)r);
  for (uint64_t k = 0; k < d.small_writes; ++k) {
    Block b{{lo + rng() % (hi - lo - rows + 1), rng() % (d.n1 - cols + 1)}, {rows, cols}};
    out.push_back(b);
  }
  return out;
}

// (4): this rank's boxes, one independent H5Dwrite each; write .. durable close, minus the
// time spent generating the boxes' values.
double small_writes(const Dims& d, Side s, const std::string& path) {
  Ids ids;
  hid_t file = -1, dset = -1, fspace = -1, dxpl = -1;
  step([&] {
    hid_t fapl = ids.add(parallel_fapl(s), H5Pclose);
    file = ids.add(H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl), H5Fclose);
  });
  step([&] {
    dset = ids.add(H5Dopen2(file, "data", H5P_DEFAULT), H5Dclose);
    fspace = ids.add(H5Dget_space(dset), H5Sclose);
    dxpl = ids.add(xfer_plist(H5FD_MPIO_INDEPENDENT), H5Pclose);
  });
  const std::vector<Block> boxes = small_boxes(d, g_rank);
  std::vector<int32_t> buf;
  double gen = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  step([&] {
    for (const Block& b : boxes) {
      const double g0 = MPI_Wtime();
      fill_block(d, b, buf);
      gen += MPI_Wtime() - g0;
      Ids m;
      hid_t mspace = m.add(H5Screate_simple(2, b.count, nullptr), H5Sclose);
      BCHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, b.start, nullptr, b.count, nullptr));
      BCHECK(H5Dwrite(dset, H5T_NATIVE_INT32, mspace, fspace, dxpl, buf.data()));
    }
  });
  durable_close(s, ids, dset, file, path);
  MPI_Barrier(MPI_COMM_WORLD);
  return max_over_ranks(MPI_Wtime() - t0 - gen);
}

// (2b): every rank writes one small deflate chunk with an independent transfer. Returns
// "" when accepted, else the library's message. The file is closed collectively either way.
std::string independent_deflate_probe(Side s, const std::string& path) {
  if (g_rank == 0) remove_path(path);
  MPI_Barrier(MPI_COMM_WORLD);
  Ids ids;
  hid_t file = -1, dset = -1, fspace = -1, dxpl = -1;
  const hsize_t edge = 64;
  step([&] {
    hid_t fapl = ids.add(parallel_fapl(s), H5Pclose);
    file = ids.add(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
  });
  step([&] {
    hid_t dcpl = ids.add(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    hsize_t chunk[2] = {edge, edge}, dims[2] = {edge * (hsize_t)g_size, edge};
    BCHECK(H5Pset_chunk(dcpl, 2, chunk));
    BCHECK(H5Pset_deflate(dcpl, 1));
    fspace = ids.add(H5Screate_simple(2, dims, nullptr), H5Sclose);
    dset = ids.add(H5Dcreate2(file, "data", H5T_STD_I32LE, fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
    dxpl = ids.add(xfer_plist(H5FD_MPIO_INDEPENDENT), H5Pclose);
  });
  // The refusal is the measured outcome, not a failure: no step() around the write.
  std::string refused;
  {
    std::vector<int32_t> buf(edge * edge, g_rank + 1);
    hsize_t start[2] = {edge * (hsize_t)g_rank, 0}, count[2] = {edge, edge};
    Ids m;
    hid_t mspace = m.add(H5Screate_simple(2, count, nullptr), H5Sclose);
    if (H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
        H5Dwrite(dset, H5T_NATIVE_INT32, mspace, fspace, dxpl, buf.data()) < 0)
      refused = h5_error_text();
  }
  int any = refused.empty() ? 0 : 1, all_any = 0;
  MPI_Allreduce(&any, &all_any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (all_any && refused.empty()) refused = "refused on another rank";
  step([&] {
    ids.release(dset);
    BCHECK(H5Dclose(dset));
    ids.release(file);
    BCHECK(H5Fclose(file));
  });
  if (g_rank == 0) remove_path(path);
  return refused;
}

// Rank 0 reopens the file serially (no mpio: a later serial reader) and hashes it band by
// band; the model hash covers the same bands, with the updates applied.
std::pair<uint64_t, uint64_t> serial_checksum(const Dims& d, Side s, const std::string& path, const Points* upd) {
  uint64_t h = 0, m = 0;
  step([&] {
    if (g_rank != 0) return;
    Ids ids;
    hid_t fapl = ids.add(fapl_for(s), H5Pclose);
    hid_t file = ids.add(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
    hid_t dset = ids.add(H5Dopen2(file, "data", H5P_DEFAULT), H5Dclose);
    hid_t fspace = ids.add(H5Dget_space(dset), H5Sclose);
    // The updates sorted by row, to patch the model band by band.
    std::vector<size_t> order;
    if (upd) {
      order.resize(upd->values.size());
      for (size_t k = 0; k < order.size(); ++k) order[k] = k;
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return upd->coords[2 * a] < upd->coords[2 * b]; });
    }
    size_t next = 0;
    std::vector<int32_t> got, want;
    for (hsize_t r = 0; r < d.n0; r += d.c0) {
      hsize_t start[2] = {r, 0}, count[2] = {std::min(d.c0, d.n0 - r), d.n1};
      got.assign(count[0] * count[1], 0);
      Ids mi;
      hid_t mspace = mi.add(H5Screate_simple(2, count, nullptr), H5Sclose);
      BCHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr));
      BCHECK(H5Dread(dset, H5T_NATIVE_INT32, mspace, fspace, H5P_DEFAULT, got.data()));
      h = hash_bytes(got.data(), got.size() * 4, h);
      fill_block(d, Block{{r, 0}, {count[0], count[1]}}, want);
      for (; next < order.size() && upd->coords[2 * order[next]] < r + count[0]; ++next) {
        size_t k = order[next];
        want[(upd->coords[2 * k] - r) * d.n1 + upd->coords[2 * k + 1]] = upd->values[k];
      }
      m = hash_bytes(want.data(), want.size() * 4, m);
    }
  });
  return {h, m};
}

// ---------------------------------------------------------------- the run
struct Run {
  Options o;
  Dims d;
  int native_failures = 0, tessera_failures = 0, mismatches = 0;
  std::string tessera_unsupported;  // the refusal message, once seen

  static bool is_unsupported(const std::string& msg) { return msg.find("not supported yet") != std::string::npos; }
  bool want(Side s) const { return std::count(o.sides.begin(), o.sides.end(), s) > 0; }

  // One workload on both sides. values: numbers or FAILED / unsupported / "-" (not run).
  struct Out {
    double v[2] = {NAN, NAN};
    std::string text[2] = {"-", "-"};
    bool ok(Side s) const { return !std::isnan(v[int(s)]); }
  };

  // Runs fn on each side d.repeat times, alternating which side goes first (the machine's
  // load drifts), and keeps the median. A failure on any repetition fails the side.
  Out sides(const std::string& label, const std::function<double(Side)>& fn) {
    Out out;
    std::vector<double> times[2];
    bool done[2] = {false, false};
    for (int rep = 0; rep < d.repeat; ++rep) {
      std::vector<Side> order = o.sides;
      if (rep % 2) std::reverse(order.begin(), order.end());
      for (Side s : order) {
        if (done[int(s)]) continue;
        if (s == Side::kTessera && !tessera_unsupported.empty()) {
          out.text[1] = "unsupported";
          done[1] = true;
          continue;
        }
        try {
          times[int(s)].push_back(fn(s));
        } catch (const std::exception& e) {
          done[int(s)] = true;
          std::string msg = e.what();
          if (s == Side::kTessera && is_unsupported(msg)) {
            tessera_unsupported = msg = innermost(msg);
            out.text[1] = "unsupported";
            if (g_rank == 0) {
              std::printf("# tessera: unsupported (%s)\n", msg.c_str());
              std::printf("INFO\ttessera_unsupported\t%s\n", msg.c_str());
            }
          } else {
            out.text[int(s)] = "FAILED";
            ++(s == Side::kNative ? native_failures : tessera_failures);
            if (g_rank == 0) std::printf("# %s on %s FAILED: %s\n", label.c_str(), side_name(s), msg.c_str());
          }
          std::fflush(stdout);
        }
      }
    }
    for (Side s : o.sides)
      if (!done[int(s)] && !times[int(s)].empty()) {
        out.v[int(s)] = median(times[int(s)]);
        out.text[int(s)] = Report::num(out.v[int(s)]);
      }
    return out;
  }

  void result(const std::string& workload, const Out& t, const char* unit, const std::string& note = "") {
    if (g_rank != 0) return;
    std::string ratio = (t.ok(Side::kNative) && t.ok(Side::kTessera) && t.v[1] > 0) ? Report::num(t.v[0] / t.v[1]) : "-";
    std::printf("RESULT\t%s\t%s\t%s\t%s\t%s\t%s\n", workload.c_str(), t.text[0].c_str(), t.text[1].c_str(), unit,
                ratio.c_str(), note.c_str());
    std::fflush(stdout);
  }

  // hashes[side] = {data, model}. ok: both sides present and equal to the model;
  // MISMATCH: a present side differs from the model; "-": a side is missing.
  void check(const std::string& name, const Out& t, const std::pair<uint64_t, uint64_t> hs[2]) {
    if (g_rank != 0) return;
    bool have[2] = {t.ok(Side::kNative), t.ok(Side::kTessera)};
    bool bad = false;
    uint64_t model = 0;
    char col[2][32] = {"-", "-"};
    for (int s = 0; s < 2; ++s)
      if (have[s]) {
        std::snprintf(col[s], sizeof col[s], "%016llx", (unsigned long long)hs[s].first);
        bad |= hs[s].first != hs[s].second;
        model = hs[s].second;
      }
    if (have[0] && have[1] && hs[0].second != hs[1].second) bad = true;  // cannot happen: same model
    const char* verdict = bad ? "MISMATCH" : (have[0] && have[1]) ? "ok" : "-";
    if (bad) ++mismatches;
    std::printf("CHECK\t%s\t%s\t%s\t%s\t%016llx\n", name.c_str(), col[0], col[1], verdict, (unsigned long long)model);
    std::fflush(stdout);
  }

  // A side's data check after a workload (the side ran); a failure counts against the side.
  Out verified(const std::string& name, const Out& ran, const std::function<std::pair<uint64_t, uint64_t>(Side)>& fn) {
    std::pair<uint64_t, uint64_t> hs[2];
    Out t;
    for (Side s : o.sides) {
      if (!ran.ok(s)) continue;
      try {
        hs[int(s)] = fn(s);
        t.v[int(s)] = 0;
      } catch (const std::exception& e) {
        ++(s == Side::kNative ? native_failures : tessera_failures);
        if (g_rank == 0) std::printf("# %s on %s FAILED: %s\n", name.c_str(), side_name(s), e.what());
      }
    }
    check(name, t, hs);
    return t;
  }

  // serial: also reread the whole dataset serially now (the uncompressed one is reread
  // after the updates instead, when they run).
  void dense(bool deflate, bool serial) {
    const std::string name = deflate ? "deflate" : "plain";
    const std::string tag = deflate ? "deflate " + std::to_string(d.level) : "uncompressed";
    const std::string nmode = mode_name(deflate ? H5FD_MPIO_COLLECTIVE : d.native_dense);
    std::vector<double> close_s[2];
    Out t = sides("load " + tag, [&](Side s) {
      double c = NAN, v = load(d, s, path_of(s, name), deflate, &c);
      close_s[int(s)].push_back(c);
      return v;
    });
    std::string note = "PHDF5 " + nmode + ", tessera " + mode_name(d.tessera_xfer) + "; close share";
    for (Side s : o.sides)
      if (t.ok(s)) note += std::string(" ") + (s == Side::kNative ? "PHDF5 " : "tessera ") + Report::num(median(close_s[int(s)]));
    result("(" + std::string(deflate ? "2" : "1") + ") load, " + tag + ", to durable", t, "s", note);
    verified("parallel read of each rank's blocks, " + tag, t,
             [&](Side s) { return parallel_readback(d, s, path_of(s, name)); });
    if (serial)
      verified("serial read of the whole dataset, " + tag, t,
               [&](Side s) { return serial_checksum(d, s, path_of(s, name), nullptr); });
    if (deflate) {
      if (!o.keep && g_rank == 0)
        for (Side s : o.sides) remove_path(path_of(s, name));
    }
  }

  void probe() {
    Out t;
    std::string msgs[2];
    for (Side s : o.sides) {
      if (s == Side::kTessera && !tessera_unsupported.empty()) {
        t.text[1] = "unsupported";
        continue;
      }
      try {
        msgs[int(s)] = independent_deflate_probe(s, path_of(s, "probe"));
        t.text[int(s)] = msgs[int(s)].empty() ? "accepted" : "refused";
      } catch (const std::exception& e) {
        std::string msg = e.what();
        if (s == Side::kTessera && is_unsupported(msg)) {
          tessera_unsupported = innermost(msg);
          t.text[1] = "unsupported";
          if (g_rank == 0) {
            std::printf("# tessera: unsupported (%s)\n", tessera_unsupported.c_str());
            std::printf("INFO\ttessera_unsupported\t%s\n", tessera_unsupported.c_str());
          }
        } else {
          t.text[int(s)] = "FAILED";
          ++(s == Side::kNative ? native_failures : tessera_failures);
          if (g_rank == 0) std::printf("# probe on %s FAILED: %s\n", side_name(s), msg.c_str());
        }
      }
    }
    std::string note;
    for (int s = 0; s < 2; ++s)
      if (!msgs[s].empty())
        note += std::string(note.empty() ? "" : "; ") + (s == 0 ? "PHDF5" : "tessera") + ": \"" + innermost(msgs[s]) + "\"";
    if (g_size == 1) note += "PHDF5 refuses only when the communicator has more than one rank";
    result("(2b) independent H5Dwrite to a deflate dataset", t, "-", note);
    if (g_rank == 0) std::printf("INFO\tprobe\t%s\t%s\n", t.text[0].c_str(), t.text[1].c_str());
  }

  void updates() {
    Points p = make_points(d.n0, d.n1, d.updates, 1000);
    Out t = sides("update", [&](Side s) { return update(d, s, path_of(s, "plain"), p); });
    result("(3) update " + std::to_string(d.updates) + " random points, one H5Dwrite per rank, to durable", t, "s",
           "PHDF5 " + std::string(mode_name(d.native_update)) + ", tessera " + mode_name(d.tessera_xfer));
    verified("serial read of the whole dataset after the updates, uncompressed", t,
             [&](Side s) { return serial_checksum(d, s, path_of(s, "plain"), &p); });
  }

  void small(bool after_updates) {
    Out t = sides("small writes", [&](Side s) { return small_writes(d, s, path_of(s, "plain")); });
    const double writes = (double)d.small_writes * g_size;
    std::string note = std::to_string(d.small_writes) + " independent H5Dwrites of 8x256 per rank";
    if (t.ok(Side::kNative) && t.ok(Side::kTessera)) {
      char b[96];
      std::snprintf(b, sizeof b, "; %.3f / %.3f ms per write", 1e3 * t.v[0] / writes, 1e3 * t.v[1] / writes);
      note += b;
    }
    result("(4) " + std::to_string(d.small_writes) + " small writes per rank, each its own H5Dwrite, to durable", t,
           "s", note);
    // The model: the formula, and the updates of (3) that no box covers.
    Points rest;
    if (after_updates) {
      Points p = make_points(d.n0, d.n1, d.updates, 1000);
      std::vector<Block> all;
      for (int r = 0; r < g_size; ++r)
        for (const Block& b : small_boxes(d, r)) all.push_back(b);
      for (size_t k = 0; k < p.size(); ++k) {
        const hsize_t i = p.coords[2 * k], j = p.coords[2 * k + 1];
        bool covered = false;
        for (const Block& b : all)
          covered = covered || (i >= b.start[0] && i < b.start[0] + b.count[0] && j >= b.start[1] &&
                                j < b.start[1] + b.count[1]);
        if (covered) continue;
        rest.coords.insert(rest.coords.end(), {i, j});
        rest.values.push_back(p.values[k]);
      }
    }
    verified("serial read of the whole dataset after the small writes, uncompressed", t,
             [&](Side s) { return serial_checksum(d, s, path_of(s, "plain"), &rest); });
  }
};

H5FD_mpio_xfer_t parse_mode(const std::string& v) {
  if (v == "independent") return H5FD_MPIO_INDEPENDENT;
  if (v == "collective") return H5FD_MPIO_COLLECTIVE;
  throw std::invalid_argument("transfer mode must be independent or collective: " + v);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  Run run;
  std::vector<std::string> workloads = {"plain", "deflate", "probe", "update", "small"};
  try {
    std::vector<std::pair<std::string, std::string>> later;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (parse_common(run.o, argc, argv, i)) continue;
      if (a == "-h" || a == "--help") {
        if (g_rank == 0)
          std::printf("usage: mpirun -n N bench_h5_parallel [options]\n"
                      "  --scale S          linear scale, e.g. 1/16 for a smoke run (default 1 = full size)\n"
                      "  --dir DIR          directory for the files, shared by all ranks (default: under /tmp)\n"
                      "  --keep             keep the files afterwards\n"
                      "  --native-only / --tessera-only   run one side\n"
                      "  --workloads LIST   comma list of plain,deflate,probe,update,small (update, small need plain)\n"
                      "  --updates N        random point updates (default 100,000 x scale^2)\n"
                      "  --small-writes K   (4): small H5Dwrites per rank (default 256)\n"
                      "  --deflate-level N  (default 1)\n"
                      "  --native-dense M   PHDF5 transfer mode of the uncompressed load (default independent)\n"
                      "  --native-update M  PHDF5 transfer mode of the point update (default independent)\n"
                      "  --tessera-xfer M   tessera's transfer mode for all writes (default independent)\n"
                      "  --repeat N         timed runs per side and workload, median reported (default 3)\n"
                      "  --require-tessera  exit 1 when tessera refuses the mpio plist\n");
        MPI_Finalize();
        return 0;
      }
      if (a == "--require-tessera") later.push_back({a, ""});
      else if (i + 1 < argc && (a == "--workloads" || a == "--updates" || a == "--repeat" || a == "--small-writes" ||
                                a == "--deflate-level" || a == "--native-dense" || a == "--native-update" ||
                                a == "--tessera-xfer"))
        later.push_back({a, argv[++i]});
      else throw std::invalid_argument("unknown argument " + a + " (try --help)");
    }
    run.d = dims_for(run.o.scale);
    for (auto& [k, v] : later) {
      if (k == "--workloads") {
        workloads = split_list(v);
      } else if (k == "--updates") run.d.updates = std::strtoull(v.c_str(), nullptr, 10);
      else if (k == "--small-writes") run.d.small_writes = std::max<uint64_t>(1, std::strtoull(v.c_str(), nullptr, 10));
      else if (k == "--deflate-level") run.d.level = std::atoi(v.c_str());
      else if (k == "--repeat") run.d.repeat = std::max(1, std::atoi(v.c_str()));
      else if (k == "--native-dense") run.d.native_dense = parse_mode(v);
      else if (k == "--native-update") run.d.native_update = parse_mode(v);
      else if (k == "--tessera-xfer") run.d.tessera_xfer = parse_mode(v);
      else if (k == "--require-tessera") run.d.require_tessera = true;
    }
    if (std::count(workloads.begin(), workloads.end(), "update") &&
        !std::count(workloads.begin(), workloads.end(), "plain"))
      throw std::invalid_argument("--workloads: update needs plain (it updates that dataset)");
    if (std::count(workloads.begin(), workloads.end(), "small") &&
        !std::count(workloads.begin(), workloads.end(), "plain"))
      throw std::invalid_argument("--workloads: small needs plain (it writes into that dataset)");
  } catch (const std::exception& e) {
    if (g_rank == 0) std::fprintf(stderr, "bench_h5_parallel: %s\n", e.what());
    MPI_Finalize();
    return 2;
  }
  // Errors are reported by the benchmark (once, on rank 0), not printed by every rank.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  int dir_ok = 1;
  if (g_rank == 0) {
    try {
      prepare_dir(run.o, "bench-parallel");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_h5_parallel: %s\n", e.what());
      dir_ok = 0;
    }
    g_dir = run.o.dir;
  }
  MPI_Bcast(&dir_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!dir_ok) {
    MPI_Finalize();
    return 2;
  }
  int len = (int)g_dir.size();
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  g_dir.resize(len);
  MPI_Bcast(g_dir.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);

  const Dims& d = run.d;
  if (g_rank == 0) {
    std::printf("# bench_h5_parallel: %d rank(s), %llux%llu int32 (%.3f GiB), chunks %llux%llu (%zu blocks), "
                "%llu updates, deflate level %d, median of %d run(s), dir %s\n",
                g_size, (unsigned long long)d.n0, (unsigned long long)d.n1, d.n0 * d.n1 * 4.0 / (1 << 30),
                (unsigned long long)d.c0, (unsigned long long)d.c1, all_blocks(d).size(),
                (unsigned long long)d.updates, d.level, d.repeat, g_dir.c_str());
    std::printf("INFO\tnp\t%d\n", g_size);
    std::fflush(stdout);
  }
  auto want = [&](const char* w) { return std::count(workloads.begin(), workloads.end(), w) > 0; };
  if (want("plain")) run.dense(false, !want("update"));
  if (want("deflate")) run.dense(true, true);
  if (want("probe")) run.probe();
  if (want("update")) run.updates();
  if (want("small")) run.small(want("update"));
  if (want("plain") && !run.o.keep && g_rank == 0)
    for (Side s : run.o.sides) remove_path(path_of(s, "plain"));
  MPI_Barrier(MPI_COMM_WORLD);
  if (!run.o.keep && g_rank == 0) ::rmdir(g_dir.c_str());

  int rc = 0;
  if (g_rank == 0) {
    bool unsupported = !run.tessera_unsupported.empty();
    std::printf("# %d native failure(s), %d tessera failure(s), %d data mismatch(es)%s\n", run.native_failures,
                run.tessera_failures, run.mismatches, unsupported ? ", tessera unsupported" : "");
    rc = (run.native_failures || run.tessera_failures || run.mismatches || (unsupported && d.require_tessera)) ? 1 : 0;
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
#endif  // H5_HAVE_PARALLEL
