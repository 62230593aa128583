// bench_h5_kernels.cc — issue 46: the HPC I/O kernels the HDF5 community judges VOL
// connectors by (after h5bench's VPIC-IO, BDCATS-IO and array kernels; written here, not
// taken from h5bench), tessera vs native HDF5 (PHDF5: H5Pset_fapl_mpio on both sides) in
// one MPI job. Run it under mpirun (scripts/bench/run_h5_kernels: np 1, 2, 4):
//   mpirun -n 2 bench_h5_kernels [--quick] [--workloads LIST] ...
//
// Per rank and timestep (full size; --particles, --timesteps, --quick change it; one
// timestep of the 1-D kernels and four of the arrays by default, fewer than h5bench's
// configurations run, to keep a run at np 1, 2, 4 near 15 minutes here):
//   vpic-*      8 properties x 8 Mi particles (x y z px py pz float32, id1 id2 int32): one
//               1-D dataset of np x 8 Mi elements per property in a group per timestep, each
//               rank writing its own contiguous slice from a contiguous buffer, H5Fcreate to
//               durable close. contig-{coll,ind}: HDF5's default (contiguous) layout,
//               collective or independent transfers; chunk-{coll,ind}: 1 Mi-element chunks.
//   strided-write  the same datasets, each rank writing blocks of 640 every 2,560 elements
//               of its slice (a quarter of it) from a contiguous buffer of that size.
//   read-*      BDCATS-like reads of the vpic-contig-ind file (written by that workload or,
//               when it is not run, once untimed): each rank reads from its own slice of
//               every dataset of every timestep into contiguous memory — full: all of it;
//               partial: 1 Mi particles from a third of the way in; strided-16: blocks of
//               16 every 64; strided-640: blocks of 640 every 2,560 (whole blocks only:
//               3,276 of them in a slice of 8 Mi).
//   array2d-*, array3d-*  a 2048 x 2048 (2-D) or 128 x 128 x 256 (3-D) float32 block per
//               rank per timestep (the datasets are np x 2048 x 2048, np x 128 x 128 x 256,
//               contiguous, one per timestep), written and read in full.
// Every read is cold: rank 0 syncs and drops the page cache before the H5Fopen, and the
// time runs from H5Fopen to H5Fclose (opening the datasets included). Writes are timed to
// a durable close (native: rank 0 fsyncs the closed file; tessera's H5Fclose syncs).
// Times are the maximum over ranks after a barrier; each workload runs --repeat times per
// side (default 3), alternating which side goes first, and the median is reported.
// Data are checked against a model (a formula of property, timestep and element index):
// after each write workload every rank reads its part back (for strided writes its whole
// slice, unwritten elements being the fill value 0), and every timed read's buffer is
// compared with the formula; CHECK lines carry the data's and the model's hashes.
//
// Output (rank 0), the format of bench_h5_parallel:
//   RESULT<TAB>workload<TAB>native<TAB>tessera<TAB>unit<TAB>ratio<TAB>note
//   CHECK<TAB>name<TAB>native hash<TAB>tessera hash<TAB>ok|MISMATCH|-<TAB>model hash
//   INFO<TAB>key<TAB>value...
// ratio = native / tessera (> 1: tessera faster). Exit status 0 when every workload ran
// on every requested side and every check matched the model.
#include <hdf5.h>

#ifndef H5_HAVE_PARALLEL
#include <cstdio>
int main() {
  std::fprintf(stderr, "bench_h5_kernels: this HDF5 is not built with parallel (MPI) support\n");
  return 2;
}
#else

#include <mpi.h>

#include <cstring>

#include "bench_h5_mpi.h"

using namespace bench;

namespace {

constexpr int kProps = 8;
const char* const kPropNames[kProps] = {"x", "y", "z", "px", "py", "pz", "id1", "id2"};

struct Config {
  hsize_t particles = hsize_t{8} << 20;  // per rank
  hsize_t chunk = hsize_t{1} << 20;      // elements per chunk of the chunked 1-D datasets
  int timesteps = 1;                     // of the 1-D kernels (h5bench's configs run several)
  int array_timesteps = 4;               // of the 2-D and 3-D kernels
  hsize_t a2[2] = {2048, 2048};          // per rank
  hsize_t a3[3] = {128, 128, 256};       // per rank
  int repeat = 3;
  bool quick = false;
};

// One rank's selection in a dataset of `rank` dims: start/stride/count/block per
// dimension, as H5Sselect_hyperslab takes them.
struct Slab {
  int rank = 1;
  hsize_t dims[3] = {1, 1, 1};
  hsize_t start[3] = {0, 0, 0}, stride[3] = {1, 1, 1}, count[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  hsize_t cells() const {
    hsize_t n = 1;
    for (int d = 0; d < rank; ++d) n *= count[d] * block[d];
    return n;
  }
  bool holds(const hsize_t* c) const {
    for (int d = 0; d < rank; ++d) {
      if (c[d] < start[d]) return false;
      const hsize_t o = c[d] - start[d];
      if (count[d] == 1 ? o >= block[d] : (o / stride[d] >= count[d] || o % stride[d] >= block[d])) return false;
    }
    return true;
  }
  // True when every element of `s` is in this selection (both plain boxes: count 1).
  bool covers(const Slab& s) const {
    for (int d = 0; d < rank; ++d) {
      if (count[d] != 1 || s.start[d] < start[d]) return false;
      const hsize_t last = s.start[d] + (s.count[d] - 1) * s.stride[d] + s.block[d] - 1;
      if (last >= start[d] + block[d]) return false;
    }
    return true;
  }
  // f(global row-major index, coordinates) for every selected element, in selection order.
  template <class F>
  void for_each(F f) const {
    hsize_t c[3] = {0, 0, 0}, lin_stride[3] = {1, 1, 1};
    for (int d = rank - 2; d >= 0; --d) lin_stride[d] = lin_stride[d + 1] * dims[d + 1];
    const int last = rank - 1;
    hsize_t i[3] = {0, 0, 0};  // selected index per dimension: block number * block + offset
    for (;;) {
      hsize_t base = 0;
      for (int d = 0; d < last; ++d) {
        c[d] = start[d] + i[d] / block[d] * stride[d] + i[d] % block[d];
        base += c[d] * lin_stride[d];
      }
      for (hsize_t b = 0; b < count[last]; ++b) {
        const hsize_t c0 = start[last] + b * stride[last];
        for (hsize_t k = 0; k < block[last]; ++k) {
          c[last] = c0 + k;
          f(base + c0 + k, (const hsize_t*)c);
        }
      }
      int d = last - 1;
      for (; d >= 0; --d) {
        if (++i[d] < count[d] * block[d]) break;
        i[d] = 0;
      }
      if (d < 0) return;
    }
  }
};

Slab slice_1d(hsize_t n, hsize_t first, hsize_t len, hsize_t stride = 0, hsize_t block = 0) {
  Slab s;
  s.dims[0] = n * g_size;
  s.start[0] = n * g_rank + first;
  if (stride == 0) {
    s.block[0] = len;
  } else {
    s.stride[0] = stride, s.block[0] = block, s.count[0] = len / stride;
  }
  return s;
}

Slab rank_box(int rank, const hsize_t* per_rank) {  // this rank's rows of an np-times taller array
  Slab s;
  s.rank = rank;
  for (int d = 0; d < rank; ++d) s.dims[d] = s.block[d] = per_rank[d];
  s.dims[0] *= g_size;
  s.start[0] = per_rank[0] * g_rank;
  return s;
}

// The model: element g of property p at timestep t (float properties as a value, ids as
// an integer), as the bytes stored.
inline uint32_t model_value(int t, int p, hsize_t g) {
  if (p >= 6) return (uint32_t)(g * 2 + (hsize_t)p + (hsize_t)t * 1000003u);
  float v = (float)(g & 0xfffff) * 0.125f + (float)p * 3.0f + (float)t * 0.5f;
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

// ---------------------------------------------------------------- kernels
struct Kernel {
  std::string name, label;  // label: the RESULT row
  std::string file;         // the file it writes or reads (path_of(side, file))
  bool write = true;
  int steps = 1, props = kProps;
  Slab sel;       // what each rank writes or reads
  Slab check;     // writes: what each rank reads back to check (the fill value where sel is not)
  bool chunked = false;
  H5FD_mpio_xfer_t mode = H5FD_MPIO_INDEPENDENT;
  std::string writer;  // reads: the workload that writes their file
};

std::string g_dir;
std::string path_of(Side s, const std::string& name) { return g_dir + "/" + side_name(s) + "_" + name + ".h5"; }
std::string dset_name(int t, int p, int props) {
  return "Timestep_" + std::to_string(t) + "/" + (props == 1 ? std::string("data") : kPropNames[p]);
}
hid_t file_type(int p, int props) { return props > 1 && p >= 6 ? H5T_STD_I32LE : H5T_IEEE_F32LE; }
hid_t mem_type(int p, int props) { return props > 1 && p >= 6 ? H5T_NATIVE_INT32 : H5T_NATIVE_FLOAT; }

// Selects `s` in a file dataspace.
void select(hid_t fspace, const Slab& s) {
  BCHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, s.start, s.stride, s.count, s.block));
}

// The values a rank writes for (t, p): the model at its selection, in selection order.
std::vector<uint32_t> write_values(const Slab& s, int t, int p) {
  std::vector<uint32_t> v;
  v.reserve(s.cells());
  s.for_each([&](hsize_t g, const hsize_t*) { v.push_back(model_value(t, p, g)); });
  return v;
}

// A write workload: H5Fcreate, per timestep a group and a dataset per property, each
// written with one H5Dwrite of this rank's selection, durable close. Returns the time.
double run_write(const Config& c, const Kernel& k, Side s, const std::vector<std::vector<uint32_t>>& data) {
  const std::string path = path_of(s, k.file);
  if (g_rank == 0) remove_path(path);
  MPI_Barrier(MPI_COMM_WORLD);
  Ids ids;
  hid_t file = -1, dxpl = -1, dcpl = -1, mspace = -1;
  const hsize_t n = k.sel.cells();
  const double t0 = MPI_Wtime();
  step([&] {
    hid_t fapl = ids.add(parallel_fapl(s), H5Pclose);
    file = ids.add(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
    dxpl = ids.add(xfer_plist(k.mode), H5Pclose);
    dcpl = ids.add(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    if (k.chunked) {
      hsize_t chunk = std::min(c.chunk, k.sel.dims[0]);
      BCHECK(H5Pset_chunk(dcpl, 1, &chunk));
    }
    mspace = ids.add(H5Screate_simple(1, &n, nullptr), H5Sclose);
  });
  for (int t = 0; t < k.steps; ++t)
    step([&] {
      Ids g;
      hid_t group = g.add(H5Gcreate2(file, ("Timestep_" + std::to_string(t)).c_str(), H5P_DEFAULT, H5P_DEFAULT,
                                     H5P_DEFAULT), H5Gclose);
      hid_t fspace = g.add(H5Screate_simple(k.sel.rank, k.sel.dims, nullptr), H5Sclose);
      select(fspace, k.sel);
      for (int p = 0; p < k.props; ++p) {
        Ids d;
        const std::string name = k.props == 1 ? "data" : kPropNames[p];
        hid_t dset = d.add(H5Dcreate2(group, name.c_str(), file_type(p, k.props), fspace, H5P_DEFAULT, dcpl,
                                      H5P_DEFAULT), H5Dclose);
        BCHECK(H5Dwrite(dset, mem_type(p, k.props), mspace, fspace, dxpl, data[t * k.props + p].data()));
        d.release(dset);
        BCHECK(H5Dclose(dset));
      }
    });
  step([&] {
    ids.release(file);
    BCHECK(H5Fclose(file));
  });
  step([&] {
    if (s == Side::kNative && g_rank == 0) sync_native_file(path);
  });
  MPI_Barrier(MPI_COMM_WORLD);
  return max_over_ranks(MPI_Wtime() - t0);
}

// A read workload: the cache dropped (cold), then H5Fopen, every dataset opened and this
// rank's selection read into bufs[t * props + p], closed; the time from open to close.
double run_read(const Options& o, const Kernel& k, Side s, std::vector<std::vector<uint32_t>>& bufs, bool cold) {
  const std::string path = path_of(s, k.file);
  for (auto& b : bufs) std::fill(b.begin(), b.end(), 0xdeadbeefu);  // no earlier run's data can pass
  MPI_Barrier(MPI_COMM_WORLD);
  step([&] {
    if (cold && g_rank == 0) drop_caches(o, {path});
  });
  MPI_Barrier(MPI_COMM_WORLD);
  Ids ids;
  hid_t file = -1, dxpl = -1, mspace = -1;
  const hsize_t n = k.sel.cells();
  const double t0 = MPI_Wtime();
  step([&] {
    hid_t fapl = ids.add(parallel_fapl(s), H5Pclose);
    file = ids.add(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
    dxpl = ids.add(xfer_plist(k.mode), H5Pclose);
    mspace = ids.add(H5Screate_simple(1, &n, nullptr), H5Sclose);
  });
  step([&] {
    for (int t = 0; t < k.steps; ++t)
      for (int p = 0; p < k.props; ++p) {
        Ids d;
        hid_t dset = d.add(H5Dopen2(file, dset_name(t, p, k.props).c_str(), H5P_DEFAULT), H5Dclose);
        hid_t fspace = d.add(H5Dget_space(dset), H5Sclose);
        select(fspace, k.sel);
        BCHECK(H5Dread(dset, mem_type(p, k.props), mspace, fspace, dxpl, bufs[t * k.props + p].data()));
      }
  });
  step([&] {
    ids.release(file);
    BCHECK(H5Fclose(file));
  });
  MPI_Barrier(MPI_COMM_WORLD);
  return max_over_ranks(MPI_Wtime() - t0);
}

// Hashes of bufs (what was read at `sel`) and of the model there, where `written` says
// which elements were written (else the fill value 0), combined over ranks in rank order
// (valid on rank 0); *bad: elements differing, summed over ranks.
std::pair<uint64_t, uint64_t> compare(const Kernel& k, const Slab& sel, const Slab& written,
                                      const std::vector<std::vector<uint32_t>>& bufs, uint64_t* bad) {
  uint64_t h = 0, m = 0, wrong = 0;
  std::vector<uint32_t> want;
  const bool whole = written.covers(sel);  // no membership test per element
  for (int t = 0; t < k.steps; ++t)
    for (int p = 0; p < k.props; ++p) {
      want.clear();
      want.reserve(sel.cells());
      sel.for_each([&](hsize_t g, const hsize_t* c) {
        want.push_back(whole || written.holds(c) ? model_value(t, p, g) : 0);
      });
      const auto& got = bufs[t * k.props + p];
      for (size_t i = 0; i < want.size(); ++i) wrong += got[i] != want[i];
      h = hash_bytes(got.data(), got.size() * 4, h);
      m = hash_bytes(want.data(), want.size() * 4, m);
    }
  std::vector<uint64_t> all(3 * g_size);
  uint64_t mine[3] = {h, m, wrong};
  MPI_Gather(mine, 3, MPI_UINT64_T, all.data(), 3, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  uint64_t ch = 0, cm = 0, cw = 0;
  for (int r = 0; r < g_size; ++r) {
    ch = hash_bytes(&all[3 * r], 8, ch);
    cm = hash_bytes(&all[3 * r + 1], 8, cm);
    cw += all[3 * r + 2];
  }
  *bad = cw;
  return {ch, cm};
}

// Touched now (and refilled before every run), so no timed read pays first-touch faults.
std::vector<std::vector<uint32_t>> buffers(const Kernel& k, hsize_t n) {
  return std::vector<std::vector<uint32_t>>(k.steps * k.props, std::vector<uint32_t>(n, 0xdeadbeef));
}

// ---------------------------------------------------------------- the run
struct Run {
  Options o;
  Config c;
  int failures[2] = {0, 0}, mismatches = 0;
  std::vector<std::string> written[2];  // files a side has written (reads need them)

  struct Out {
    double v[2] = {NAN, NAN};
    std::string text[2] = {"-", "-"};
    bool ok(Side s) const { return !std::isnan(v[int(s)]); }
  };

  void fail(Side s, const std::string& what, const std::string& msg) {
    ++failures[int(s)];
    if (g_rank == 0) std::printf("# %s on %s FAILED: %s\n", what.c_str(), side_name(s), msg.c_str());
    std::fflush(stdout);
  }

  // fn on each side c.repeat times, alternating which side goes first; the median.
  Out sides(const std::string& what, const std::function<double(Side)>& fn) {
    Out out;
    std::vector<double> times[2];
    bool done[2] = {false, false};
    for (int rep = 0; rep < c.repeat; ++rep) {
      std::vector<Side> order = o.sides;
      if (rep % 2) std::reverse(order.begin(), order.end());
      for (Side s : order) {
        if (done[int(s)]) continue;
        try {
          times[int(s)].push_back(fn(s));
        } catch (const std::exception& e) {
          done[int(s)] = true;
          out.text[int(s)] = "FAILED";
          fail(s, what, e.what());
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

  void result(const std::string& label, const Out& t, const std::string& note) {
    if (g_rank != 0) return;
    std::string ratio = (t.ok(Side::kNative) && t.ok(Side::kTessera) && t.v[1] > 0) ? Report::num(t.v[0] / t.v[1]) : "-";
    std::printf("RESULT\t%s\t%s\t%s\ts\t%s\t%s\n", label.c_str(), t.text[0].c_str(), t.text[1].c_str(), ratio.c_str(),
                note.c_str());
    std::fflush(stdout);
  }

  void check(const std::string& name, const bool have[2], const std::pair<uint64_t, uint64_t> hs[2],
             const uint64_t bad[2]) {
    if (g_rank != 0) return;
    bool wrong = false;
    uint64_t model = 0;
    char col[2][32] = {"-", "-"};
    for (int s = 0; s < 2; ++s)
      if (have[s]) {
        std::snprintf(col[s], sizeof col[s], "%016llx", (unsigned long long)hs[s].first);
        wrong |= hs[s].first != hs[s].second || bad[s] != 0;
        model = hs[s].second;
        if (bad[s]) std::printf("# %s: %s read %llu elements that differ from the model\n", name.c_str(),
                                side_name(Side(s)), (unsigned long long)bad[s]);
      }
    const char* verdict = wrong ? "MISMATCH" : (have[0] && have[1]) ? "ok" : "-";
    if (wrong) ++mismatches;
    std::printf("CHECK\t%s\t%s\t%s\t%s\t%016llx\n", name.c_str(), col[0], col[1], verdict, (unsigned long long)model);
    std::fflush(stdout);
  }

  // A write workload, then every rank reads its part back (untimed) against the model.
  void write(const Kernel& k) {
    std::vector<std::vector<uint32_t>> data;
    for (int t = 0; t < k.steps; ++t)
      for (int p = 0; p < k.props; ++p) data.push_back(write_values(k.sel, t, p));
    Out t = sides(k.name, [&](Side s) { return run_write(c, k, s, data); });
    data.clear();
    data.shrink_to_fit();
    const double mib = (double)k.sel.cells() * 4 * k.steps * k.props * g_size / (1 << 20);
    char note[160];
    std::snprintf(note, sizeof note, "%s, %s; %.0f MiB in %d dataset(s); tessera %.0f MiB/s, native %.0f MiB/s",
                  k.chunked ? "chunked" : "contiguous", mode_name(k.mode), mib, k.steps * k.props,
                  t.ok(Side::kTessera) ? mib / t.v[1] : NAN, t.ok(Side::kNative) ? mib / t.v[0] : NAN);
    result(k.label, t, note);
    Kernel back = k;
    back.write = false;
    back.sel = k.check;
    verify(k.name + ": read back", back, k.sel, t);
    for (Side s : o.sides)
      if (t.ok(s)) written[int(s)].push_back(k.file);
  }

  // Reads back.sel of every side that ran (untimed, warm) and checks it against the model.
  void verify(const std::string& name, const Kernel& back, const Slab& written_sel, const Out& ran) {
    bool have[2] = {false, false};
    std::pair<uint64_t, uint64_t> hs[2];
    uint64_t bad[2] = {0, 0};
    std::vector<std::vector<uint32_t>> bufs = buffers(back, back.sel.cells());
    for (Side s : o.sides) {
      if (!ran.ok(s)) continue;
      try {
        run_read(o, back, s, bufs, false);
        hs[int(s)] = compare(back, back.sel, written_sel, bufs, &bad[int(s)]);
        have[int(s)] = true;
      } catch (const std::exception& e) {
        fail(s, name, e.what());
      }
    }
    check(name, have, hs, bad);
  }

  // A read workload of the file its writer left; every timed run's data is checked
  // (untimed) against the model, and the check reports the last run's hashes and the
  // elements that differed in any run.
  void read(const Kernel& k, const Kernel& writer) {
    for (Side s : o.sides)
      if (!std::count(written[int(s)].begin(), written[int(s)].end(), k.file)) {
        std::vector<std::vector<uint32_t>> data;
        for (int t = 0; t < writer.steps; ++t)
          for (int p = 0; p < writer.props; ++p) data.push_back(write_values(writer.sel, t, p));
        try {
          run_write(c, writer, s, data);  // untimed: the file the reads need
          written[int(s)].push_back(k.file);
        } catch (const std::exception& e) {
          fail(s, k.name + " (writing its file)", e.what());
        }
      }
    std::vector<std::vector<uint32_t>> bufs = buffers(k, k.sel.cells());
    bool have[2] = {false, false};
    std::pair<uint64_t, uint64_t> hs[2];
    uint64_t bad[2] = {0, 0};
    Out t = sides(k.name, [&](Side s) {
      if (!std::count(written[int(s)].begin(), written[int(s)].end(), k.file)) throw Failure("its file was not written");
      const double v = run_read(o, k, s, bufs, true);
      uint64_t wrong = 0;
      hs[int(s)] = compare(k, k.sel, writer.sel, bufs, &wrong);
      bad[int(s)] += wrong;
      have[int(s)] = true;
      return v;
    });
    const double mib = (double)k.sel.cells() * 4 * k.steps * k.props * g_size / (1 << 20);
    char note[160];
    std::snprintf(note, sizeof note, "cold, H5Fopen to H5Fclose; %.0f MiB from %d dataset(s); tessera %.0f MiB/s, "
                  "native %.0f MiB/s", mib, k.steps * k.props, t.ok(Side::kTessera) ? mib / t.v[1] : NAN,
                  t.ok(Side::kNative) ? mib / t.v[0] : NAN);
    result(k.label, t, note);
    for (Side s : o.sides) have[int(s)] &= t.ok(s);
    check(k.name + ": data read", have, hs, bad);
  }
};

// The workloads, in the order they run (reads after the writes of their files).
std::vector<Kernel> kernels(const Config& c) {
  const hsize_t N = c.particles;
  std::vector<Kernel> ks;
  auto vpic = [&](const std::string& name, const std::string& label, bool chunked, H5FD_mpio_xfer_t mode) {
    Kernel k;
    k.name = name, k.label = label, k.file = name, k.steps = c.timesteps, k.chunked = chunked, k.mode = mode;
    k.sel = k.check = slice_1d(N, 0, N);
    ks.push_back(k);
  };
  const std::string per =
      (N % (1 << 20) ? std::to_string(N) : std::to_string(N >> 20) + " Mi") + " particles x 8 properties per rank";
  vpic("vpic-contig-coll", "VPIC write, contiguous, collective (" + per + ")", false, H5FD_MPIO_COLLECTIVE);
  vpic("vpic-contig-ind", "VPIC write, contiguous, independent (" + per + ")", false, H5FD_MPIO_INDEPENDENT);
  vpic("vpic-chunk-coll", "VPIC write, chunked, collective (" + per + ")", true, H5FD_MPIO_COLLECTIVE);
  vpic("vpic-chunk-ind", "VPIC write, chunked, independent (" + per + ")", true, H5FD_MPIO_INDEPENDENT);
  {
    Kernel k;
    k.name = k.file = "strided-write", k.steps = c.timesteps;
    k.label = "strided file selection write, blocks of 640 every 2560, contiguous memory";
    k.sel = slice_1d(N, 0, N, 2560, 640);
    k.check = slice_1d(N, 0, N);
    ks.push_back(k);
  }
  auto bdcats = [&](const std::string& name, const std::string& label, Slab sel) {
    Kernel k;
    k.name = name, k.label = label, k.file = "vpic-contig-ind", k.write = false, k.steps = c.timesteps;
    k.sel = sel, k.writer = "vpic-contig-ind";
    ks.push_back(k);
  };
  bdcats("read-full", "BDCATS read, full (contiguous file)", slice_1d(N, 0, N));
  bdcats("read-partial", "BDCATS read, partial range (1/8 of each slice)", slice_1d(N, N / 3, N / 8));
  bdcats("read-strided-16", "BDCATS read, strided: blocks of 16 every 64", slice_1d(N, 0, N, 64, 16));
  bdcats("read-strided-640", "BDCATS read, strided: blocks of 640 every 2560", slice_1d(N, 0, N, 2560, 640));
  auto array = [&](const std::string& tag, int rank, const hsize_t* per_rank) {
    std::string shape;
    for (int d = 0; d < rank; ++d) shape += (d ? "x" : "") + std::to_string(per_rank[d]);
    Kernel w;
    w.name = w.file = tag + "-write", w.steps = c.array_timesteps, w.props = 1;
    w.label = std::to_string(rank) + "-D array " + shape + " per rank per timestep, write";
    w.sel = w.check = rank_box(rank, per_rank);
    ks.push_back(w);
    Kernel r = w;
    r.name = tag + "-read", r.write = false, r.writer = w.name;
    r.label = std::to_string(rank) + "-D array " + shape + " per rank per timestep, read in full";
    ks.push_back(r);
  };
  array("array2d", 2, c.a2);
  array("array3d", 3, c.a3);
  return ks;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  Run run;
  std::vector<std::string> workloads;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      auto count = [&](long lo) {
        const std::string v = value();
        char* end = nullptr;
        long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || n < lo) throw std::invalid_argument(a + " needs an integer >= " + std::to_string(lo));
        return n;
      };
      if (a == "--scale") throw std::invalid_argument("--scale: use --quick, --particles, --timesteps");
      if (parse_common(run.o, argc, argv, i)) continue;
      if (a == "-h" || a == "--help") {
        if (g_rank == 0)
          std::printf("usage: mpirun -n N bench_h5_kernels [options]\n"
                      "  --quick            smoke size: 80 Ki particles, 1 timestep, 256x256 and 16x16x64 arrays\n"
                      "  --particles N      particles per rank (default 8388608, at least 2560)\n"
                      "  --timesteps T      timesteps of the 1-D kernels (default 1)\n"
                      "  --array-timesteps T  timesteps of the 2-D and 3-D kernels (default 4)\n"
                      "  --repeat N         timed runs per side and workload, median reported (default 3)\n"
                      "  --workloads LIST   comma list (default all): vpic-contig-coll, vpic-contig-ind,\n"
                      "                     vpic-chunk-coll, vpic-chunk-ind, strided-write, read-full,\n"
                      "                     read-partial, read-strided-16, read-strided-640, array2d-write,\n"
                      "                     array2d-read, array3d-write, array3d-read\n"
                      "%s",
                      common_usage());
        MPI_Finalize();
        return 0;
      }
      if (a == "--quick") {
        run.c.quick = true;
        run.c.particles = 81920, run.c.chunk = 16384, run.c.timesteps = 1, run.c.array_timesteps = 2;
        run.c.a2[0] = run.c.a2[1] = 256;
        run.c.a3[0] = run.c.a3[1] = 16, run.c.a3[2] = 64;
      } else if (a == "--particles") run.c.particles = (hsize_t)count(2560);
      else if (a == "--timesteps") run.c.timesteps = (int)count(1);
      else if (a == "--array-timesteps") run.c.array_timesteps = (int)count(1);
      else if (a == "--repeat") run.c.repeat = (int)count(1);
      else if (a == "--workloads") workloads = split_list(value());
      else throw std::invalid_argument("unknown argument " + a + " (try --help)");
    }
    if (run.o.cache != "auto" && run.o.cache != "proc" && run.o.cache != "fadvise")
      throw std::invalid_argument("--cache-drop must be auto, proc or fadvise");
  } catch (const std::exception& e) {
    if (g_rank == 0) std::fprintf(stderr, "bench_h5_kernels: %s\n", e.what());
    MPI_Finalize();
    return 2;
  }
  std::vector<Kernel> ks = kernels(run.c);
  for (const std::string& w : workloads)
    if (std::none_of(ks.begin(), ks.end(), [&](const Kernel& k) { return k.name == w; })) {
      if (g_rank == 0) std::fprintf(stderr, "bench_h5_kernels: unknown workload '%s' (try --help)\n", w.c_str());
      MPI_Finalize();
      return 2;
    }
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // failures are reported once, by rank 0
  int dir_ok = 1;
  if (g_rank == 0) {
    try {
      prepare_dir(run.o, "bench-kernels");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_h5_kernels: %s\n", e.what());
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
  try {
    load_connectors(run.o);
  } catch (const std::exception& e) {
    if (g_rank == 0) std::fprintf(stderr, "bench_h5_kernels: %s\n", e.what());
    MPI_Finalize();
    return 2;
  }

  const Config& c = run.c;
  if (g_rank == 0) {
    std::printf("# bench_h5_kernels: %d rank(s), %llu particles x %d properties per rank, %d timestep(s); arrays "
                "%llux%llu and %llux%llux%llu per rank, %d timestep(s); median of %d run(s); dir %s\n",
                g_size, (unsigned long long)c.particles, kProps, c.timesteps, (unsigned long long)c.a2[0],
                (unsigned long long)c.a2[1], (unsigned long long)c.a3[0], (unsigned long long)c.a3[1],
                (unsigned long long)c.a3[2], c.array_timesteps, c.repeat, g_dir.c_str());
    std::printf("INFO\tnp\t%d\n", g_size);
    std::fflush(stdout);
  }
  auto wanted = [&](const std::string& n) {
    return workloads.empty() || std::count(workloads.begin(), workloads.end(), n) > 0;
  };
  for (const Kernel& k : ks) {
    if (!wanted(k.name)) continue;
    if (k.write) {
      run.write(k);
    } else {
      auto w = std::find_if(ks.begin(), ks.end(), [&](const Kernel& x) { return x.name == k.writer; });
      run.read(k, *w);
    }
    // A file no later workload reads goes now (the disk holds a few GiB per side).
    const bool later = std::any_of(ks.begin(), ks.end(), [&](const Kernel& x) {
      return &x > &k && !x.write && x.file == k.file && wanted(x.name);
    });
    if (!later && !run.o.keep && g_rank == 0)
      for (Side s : run.o.sides) remove_path(path_of(s, k.file));
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (!run.o.keep && g_rank == 0) ::rmdir(g_dir.c_str());

  int rc = 0;
  if (g_rank == 0) {
    std::printf("# %d native failure(s), %d tessera failure(s), %d data mismatch(es)\n", run.failures[0],
                run.failures[1], run.mismatches);
    rc = (run.failures[0] || run.failures[1] || run.mismatches) ? 1 : 0;
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
#endif  // H5_HAVE_PARALLEL
