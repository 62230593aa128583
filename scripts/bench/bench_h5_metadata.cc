// bench_h5_metadata.cc — the metadata-heavy workload of issue 4 (what many h5py users do):
// 10,000 small datasets (100 float64 each) in 100 groups, 3 attributes each (a UTF-8
// variable-length string as h5py writes str attributes, a float64 scalar, an int64 pair),
//   write:  create everything and close durably (fsync for native);
//   read:   reopen, list everything (H5Lvisit2 + H5Oget_info_by_name3 per link, as h5py's
//           visititems does), open every dataset, read it and all its attributes
//           (H5Aiterate2), close.
// Both sides hash what they read (names, data, attribute values) and the hashes are compared.
// See bench_h5_common.h for the output format.
#include "bench_h5_common.h"

using namespace bench;

namespace {

struct Sizes {
  int groups = 100, per_group = 100, elems = 100;
};

std::string gname(int g) { char b[16]; std::snprintf(b, sizeof b, "g%03d", g); return b; }
std::string dname(int d) { char b[16]; std::snprintf(b, sizeof b, "d%03d", d); return b; }

hid_t vlen_utf8(Ids& ids) {
  hid_t t = ids.add(H5Tcopy(H5T_C_S1), H5Tclose);
  BCHECK(H5Tset_size(t, H5T_VARIABLE));
  BCHECK(H5Tset_cset(t, H5T_CSET_UTF8));
  return t;
}

double write_all(const Sizes& z, Side s, const std::string& path) {
  remove_path(path);
  auto t0 = Clock::now();
  Ids ids;
  hid_t fapl = ids.add(fapl_for(s), H5Pclose);
  hid_t file = ids.add(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
  hsize_t n = z.elems, two = 2;
  hid_t space = ids.add(H5Screate_simple(1, &n, nullptr), H5Sclose);
  hid_t pair = ids.add(H5Screate_simple(1, &two, nullptr), H5Sclose);
  hid_t scalar = ids.add(H5Screate(H5S_SCALAR), H5Sclose);
  hid_t str = vlen_utf8(ids);
  std::vector<double> data(z.elems);
  for (int g = 0; g < z.groups; ++g) {
    Ids gi;
    hid_t grp = gi.add(H5Gcreate2(file, gname(g).c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    for (int d = 0; d < z.per_group; ++d) {
      Ids di;
      for (int k = 0; k < z.elems; ++k) data[k] = g * 1e4 + d * 100 + k + 0.25;
      hid_t ds = di.add(H5Dcreate2(grp, dname(d).c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT,
                                   H5P_DEFAULT), H5Dclose);
      BCHECK(H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()));
      std::string units = "metres per second, sensor " + std::to_string(g * z.per_group + d);
      const char* up = units.c_str();
      double scale = 1.0 / (d + 1);
      int64_t idx[2] = {g, d};
      hid_t a1 = di.add(H5Acreate2(ds, "units", str, scalar, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
      BCHECK(H5Awrite(a1, str, &up));
      hid_t a2 = di.add(H5Acreate2(ds, "scale", H5T_IEEE_F64LE, scalar, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
      BCHECK(H5Awrite(a2, H5T_NATIVE_DOUBLE, &scale));
      hid_t a3 = di.add(H5Acreate2(ds, "index", H5T_STD_I64LE, pair, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
      BCHECK(H5Awrite(a3, H5T_NATIVE_INT64, idx));
    }
  }
  ids.release(file);
  // The other ids (spaces, types) are closed by `ids`; the file close waits for nothing.
  durable_close(s, file, path);
  return since(t0);
}

struct Visit {
  uint64_t hash = 0;
  std::vector<std::string> datasets;
};

herr_t on_link(hid_t loc, const char* name, const H5L_info2_t* info, void* op) {
  auto* v = static_cast<Visit*>(op);
  v->hash = hash_bytes(name, std::strlen(name), v->hash);
  if (info->type != H5L_TYPE_HARD) return 0;
  H5O_info2_t oi;
  if (H5Oget_info_by_name3(loc, name, &oi, H5O_INFO_BASIC | H5O_INFO_NUM_ATTRS, H5P_DEFAULT) < 0) return -1;
  int facts[2] = {(int)oi.type, (int)oi.num_attrs};
  v->hash = hash_bytes(facts, sizeof facts, v->hash);
  if (oi.type == H5O_TYPE_DATASET) v->datasets.push_back(name);
  return 0;
}

herr_t on_attr(hid_t obj, const char* name, const H5A_info_t*, void* op) {
  auto* h = static_cast<uint64_t*>(op);
  *h = hash_bytes(name, std::strlen(name), *h);
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0) return -1;
  hid_t ft = H5Aget_type(a), sp = H5Aget_space(a);
  herr_t rc = -1;
  hssize_t n = H5Sget_simple_extent_npoints(sp);
  if (ft >= 0 && sp >= 0 && n > 0) {
    H5T_class_t cls = H5Tget_class(ft);
    if (cls == H5T_STRING && H5Tis_variable_str(ft) > 0) {
      std::vector<char*> s(n);
      hid_t mt = H5Tcopy(ft);
      if (H5Aread(a, mt, s.data()) >= 0) {
        for (char* p : s) *h = hash_bytes(p, p ? std::strlen(p) : 0, *h);
        rc = H5Treclaim(mt, sp, H5P_DEFAULT, s.data());
      }
      H5Tclose(mt);
    } else if (cls == H5T_FLOAT) {
      std::vector<double> d(n);
      rc = H5Aread(a, H5T_NATIVE_DOUBLE, d.data());
      *h = hash_bytes(d.data(), n * 8, *h);
    } else if (cls == H5T_INTEGER) {
      std::vector<int64_t> d(n);
      rc = H5Aread(a, H5T_NATIVE_INT64, d.data());
      *h = hash_bytes(d.data(), n * 8, *h);
    }
  }
  if (ft >= 0) H5Tclose(ft);
  if (sp >= 0) H5Sclose(sp);
  H5Aclose(a);
  return rc < 0 ? -1 : 0;
}

double read_all(const Sizes& z, Side s, const std::string& path, uint64_t* hash, size_t* nds) {
  auto t0 = Clock::now();
  Ids ids;
  hid_t fapl = ids.add(fapl_for(s), H5Pclose);
  hid_t file = ids.add(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
  Visit v;
  BCHECK(H5Lvisit2(file, H5_INDEX_NAME, H5_ITER_INC, on_link, &v));
  std::vector<double> data(z.elems);
  for (const auto& name : v.datasets) {
    Ids di;
    hid_t ds = di.add(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
    BCHECK(H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()));
    v.hash = hash_bytes(data.data(), data.size() * 8, v.hash);
    BCHECK(H5Aiterate2(ds, H5_INDEX_NAME, H5_ITER_INC, nullptr, on_attr, &v.hash));
  }
  ids.release(file);
  BCHECK(H5Fclose(file));
  *hash = v.hash;
  *nds = v.datasets.size();
  return since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  Sizes z;
  int repeat = 3;
  try {
    int groups = -1, per_group = -1;
    repeat = 3;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (parse_common(o, argc, argv, i)) continue;
      if (a == "-h" || a == "--help") {
        std::printf("usage: bench_h5_metadata [options]\n%s"
                    "  --groups N / --per-group N   override the counts (default 100 x 100, scaled by\n"
                    "                               sqrt(scale) each)\n"
                    "  --repeat N       rounds, each writing then reading on both sides, which side\n"
                    "                   goes first alternating; medians reported (default 3)\n",
                    common_usage());
        return 0;
      }
      if (a == "--groups" && i + 1 < argc) groups = std::atoi(argv[++i]);
      else if (a == "--per-group" && i + 1 < argc) per_group = std::atoi(argv[++i]);
      else if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
      else throw std::invalid_argument("unknown argument " + a + " (try --help)");
    }
    int scaled = (int)std::max(2.0, std::round(100 * std::sqrt(o.scale)));
    z.groups = groups > 0 ? groups : scaled;
    z.per_group = per_group > 0 ? per_group : scaled;
    prepare_dir(o, "bench-metadata");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_h5_metadata: %s\n", e.what());
    return 2;
  }
  Report r;
  int total = z.groups * z.per_group;
  r.info("bench_h5_metadata: %d datasets (%d float64 each) in %d groups, 3 attributes each, dir %s", total,
         z.elems, z.groups, o.dir.c_str());
  std::string tag = std::to_string(total) + " datasets in " + std::to_string(z.groups) + " groups";
  // Rounds: the side that runs second runs in a process whose heap and page cache the
  // first one has already used, so the order alternates and each side's median counts.
  std::vector<double> wt[2], rt[2];
  PerSide w, rd;
  const std::vector<Side> sides = o.sides;
  for (int round = 0; round < repeat; ++round) {
    o.sides = sides;
    if (round % 2 == 1) std::reverse(o.sides.begin(), o.sides.end());
    w = run_sides(o, r, "metadata write", [&](Side s) { return write_all(z, s, path_for(o, s, "meta")); });
    uint64_t h[2] = {0, 0};
    size_t nds[2] = {0, 0};
    rd = run_sides(o, r, "metadata read", [&](Side s) {
      double t = read_all(z, s, path_for(o, s, "meta"), &h[int(s)], &nds[int(s)]);
      if (nds[int(s)] != (size_t)total)
        throw Failure("listed " + std::to_string(nds[int(s)]) + " datasets, expected " + std::to_string(total));
      return t;
    });
    for (Side s : sides) {
      if (w.ok(s)) wt[int(s)].push_back(w.v[int(s)]);
      if (rd.ok(s)) rt[int(s)].push_back(rd.v[int(s)]);
    }
    r.info("round %d: write native %.4g tessera %.4g s, read native %.4g tessera %.4g s", round + 1,
           w.v[0], w.v[1], rd.v[0], rd.v[1]);
    bool have[2] = {rd.ok(Side::kNative), rd.ok(Side::kTessera)};
    r.check("metadata: names, data and attributes listed and read (round " + std::to_string(round + 1) + ")",
            have, h);
  }
  o.sides = sides;
  auto median = [](std::vector<double> v) {
    if (v.empty()) return (double)NAN;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  double wm[2] = {median(wt[0]), median(wt[1])}, rm[2] = {median(rt[0]), median(rt[1])};
  bool wf[2] = {wt[0].empty() && w.failed[0], wt[1].empty() && w.failed[1]};
  bool rf[2] = {rt[0].empty() && rd.failed[0], rt[1].empty() && rd.failed[1]};
  const std::string note = "median of " + std::to_string(repeat) + ", sides alternating";
  r.result("metadata (e): write " + tag + ", 3 attrs each, to durable", wm, wf, "s", note);
  r.result("metadata (e): reopen, list and read " + tag, rm, rf, "s", note);
  if (!o.keep) {
    for (Side s : {Side::kNative, Side::kTessera}) remove_path(path_for(o, s, "meta"));
    ::rmdir(o.dir.c_str());
  }
  std::printf("# %d failure(s)\n", r.failures);
  return r.failures ? 1 : 0;
}
