// bench_h5_sparse.cc — the sparse-data benchmark of issue 14: the I/O kernels of "Sparse
// Data Management in HDF5" (Mainzer et al., §IV) on native HDF5 and on tessera, in one run.
//
// The model problem: a stream of N frames of H x W pixels of B bytes, every S-th frame
// (a key frame) stored in full, the others holding only
//   ROI  one rectangle covering ~10 % of the frame (shape and position change per frame),
//   SC   50-100 small clusters, each a rectangle of 5-10 pixels, at random places,
//   SS   per frame a coin flip between an ROI and small clusters.
// Stored and read back (key frames in full, non-key frames just their pixels) by
//   baseline     native HDF5, contiguous N x H x W, every frame written and read in full
//                (the paper's reference for the space and time factors);
//   native       chunked (1 x c x c, c = 32, 64, 128, 1024), fill value 0, chunks allocated
//                when written; one H5Dwrite per frame of the frame's selection (a hyperslab
//                or an OR-union of hyperslabs) from a packed buffer, the selection kept as
//                application metadata (H5Sencode2 bytes appended to a 1-D uint8 dataset,
//                end offsets in a second one) and decoded again to read exactly those
//                pixels — the paper's "high-level library" simulation of sparse chunks;
//   tessera      the same H5Dwrite calls, chunk (1, H, W), fill value 0, no application
//                metadata: a read asks tessera_Dget_defined which pixels of the frame exist.
// Then every non-key frame is read as a whole 1 x H x W frame (undefined pixels are the
// fill value) on tessera and on native with 1 x H x W chunks.
// Every read is hashed and compared with the data generated for it, for both connectors.
// Times are to durability: native H5Fclose + fsync of the file; tessera's H5Fclose is
// itself durable (vol/callbacks/file.cc file_close -> flush_all -> tessera::commit_arrays, which
// syncs fragments, journals and the catalog: docs/engine.md "Durability"). Reads are cold:
// the page cache of the file is dropped before it is opened (bench_h5_common.h).
// Output: the RESULT/CHECK lines of bench_h5_common.h plus one table per kernel and B.
#include <array>
#include <random>

#include "tessera/tessera.h"
#include "bench_h5_common.h"

using namespace bench;

namespace {

// ------------------------------------------------------------------ parameters

enum class Kernel { kROI, kSC, kSS };
const char* kernel_name(Kernel k) { return k == Kernel::kROI ? "ROI" : k == Kernel::kSC ? "SC" : "SS"; }

struct Params {
  hsize_t n = 128, h = 1024, w = 1024, stride = 16;  // the paper's N, H, W, S
  std::vector<int> pixel_bytes = {1, 2, 4};         // B
  std::vector<Kernel> kernels = {Kernel::kROI, Kernel::kSC, Kernel::kSS};
  std::vector<hsize_t> chunk_sides = {32, 64, 128, 1024};  // native chunks 1 x c x c
  int repeat = 1;
  uint64_t seed = 20190614;
  bool quick = false;
};

// ------------------------------------------------------------------ kernel generation

struct Rect {
  hsize_t y, x, h, w;
};

// One logical frame as the application has it: a key frame's packed buffer is the whole
// frame; a non-key frame's is its rectangles' pixels in row-major order of the frame —
// the order HDF5 walks a hyperslab selection in, whichever order the blocks were added.
struct Frame {
  bool key = false;
  std::vector<Rect> rects;     // non-key frames: disjoint rectangles
  std::vector<uint8_t> packed; // the pixels written (and expected back)
};

struct Workload {
  Kernel kernel;
  int b;
  std::vector<Frame> frames;
  uint64_t pixel_bytes = 0;         // every pixel written (key frames included)
  uint64_t sparse_pixel_bytes = 0;  // the non-key frames' pixels
  uint64_t hash_kernel_read = 0;    // expected hash of a kernel read (all frames, packed)
  uint64_t hash_whole_frames = 0;   // expected hash of the non-key frames read whole
};

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The full frame f of the stream (what the baseline stores): random, non-zero pixels, so
// nothing is mistaken for the fill value and nothing compresses (no filters anywhere).
void full_frame(const Params& p, int b, hsize_t f, std::vector<uint8_t>& out) {
  const size_t px = p.h * p.w;
  out.resize(px * b);
  uint64_t s = p.seed ^ (f * 0x100000001b3ull) ^ (uint64_t(b) << 56);
  uint8_t* o = out.data();
  const int per = 8 / b;  // pixels per 64-bit draw
  for (size_t i = 0; i < px; i += per) {
    uint64_t r = splitmix(s);
    for (int k = 0; k < per && i + k < px; ++k, r >>= 8 * b) {
      uint64_t v = r & (b == 8 ? ~0ull : ((1ull << (8 * b)) - 1));
      if (v == 0) v = 1;
      std::memcpy(o + (i + k) * b, &v, b);  // little-endian host: the low B bytes
    }
  }
}

// An ROI: ~10 % of the frame, width random in [W/8, 4W/5], height to match.
std::vector<Rect> make_roi(const Params& p, std::mt19937_64& rng) {
  const double area = 0.10 * double(p.h) * double(p.w);
  hsize_t lo = std::max<hsize_t>(1, p.w / 8), hi = std::max(lo, p.w * 4 / 5);
  hsize_t w = lo + rng() % (hi - lo + 1);
  hsize_t h = std::min<hsize_t>(p.h, std::max<hsize_t>(1, hsize_t(std::llround(area / double(w)))));
  w = std::min<hsize_t>(p.w, std::max<hsize_t>(1, hsize_t(std::llround(area / double(h)))));
  return {{rng() % (p.h - h + 1), rng() % (p.w - w + 1), h, w}};
}

// 50-100 small clusters: rectangles of 5-10 pixels, disjoint (rejection against a mask).
std::vector<Rect> make_clusters(const Params& p, std::mt19937_64& rng) {
  static const std::array<std::array<hsize_t, 2>, 22> shapes = {{
      {1, 5}, {1, 6}, {1, 7}, {1, 8}, {1, 9}, {1, 10}, {5, 1}, {6, 1}, {7, 1}, {8, 1}, {10, 1},
      {2, 3}, {3, 2}, {2, 4}, {4, 2}, {2, 5}, {5, 2}, {3, 3}, {1, 5}, {2, 3}, {3, 3}, {2, 4}}};
  std::vector<uint8_t> mask(p.h * p.w, 0);
  std::vector<Rect> out;
  const int n = 50 + int(rng() % 51);
  while (int(out.size()) < n) {
    auto s = shapes[rng() % shapes.size()];
    Rect r{0, 0, std::min(s[0], p.h), std::min(s[1], p.w)};
    r.y = rng() % (p.h - r.h + 1);
    r.x = rng() % (p.w - r.w + 1);
    bool free = true;
    for (hsize_t i = 0; i < r.h && free; ++i)
      for (hsize_t j = 0; j < r.w; ++j) free = free && !mask[(r.y + i) * p.w + r.x + j];
    if (!free) continue;
    for (hsize_t i = 0; i < r.h; ++i) std::memset(&mask[(r.y + i) * p.w + r.x], 1, r.w);
    out.push_back(r);
  }
  return out;
}

// The rectangles' pixels of `full`, in the row-major order of the frame.
std::vector<uint8_t> pack(const Params& p, int b, const std::vector<Rect>& rects, const std::vector<uint8_t>& full) {
  std::vector<const Rect*> by_x;
  for (const Rect& r : rects) by_x.push_back(&r);
  std::sort(by_x.begin(), by_x.end(), [](const Rect* a, const Rect* c) { return a->x < c->x; });
  std::vector<uint8_t> out;
  for (hsize_t y = 0; y < p.h; ++y)
    for (const Rect* r : by_x)
      if (y >= r->y && y < r->y + r->h) {
        const uint8_t* src = &full[(y * p.w + r->x) * b];
        out.insert(out.end(), src, src + r->w * b);
      }
  return out;
}

Workload generate(const Params& p, Kernel k, int b) {
  Workload wl{k, b, {}};
  std::mt19937_64 rng(p.seed * 31 + int(k) * 7 + 1);  // same rectangles for every B
  std::vector<uint8_t> full, whole;
  uint64_t hk = 0, hw = 0;
  for (hsize_t f = 0; f < p.n; ++f) {
    Frame fr;
    fr.key = f % p.stride == 0;
    full_frame(p, b, f, full);
    if (fr.key) {
      fr.packed = full;
    } else {
      bool roi = k == Kernel::kROI || (k == Kernel::kSS && (rng() & 1));
      fr.rects = roi ? make_roi(p, rng) : make_clusters(p, rng);
      fr.packed = pack(p, b, fr.rects, full);
      // The whole frame as a reader of the unchanged program sees it: fill value 0
      // around the written rectangles.
      whole.assign(full.size(), 0);
      for (const Rect& r : fr.rects)
        for (hsize_t i = 0; i < r.h; ++i)
          std::memcpy(&whole[((r.y + i) * p.w + r.x) * b], &full[((r.y + i) * p.w + r.x) * b], r.w * b);
      hw = hash_bytes(whole.data(), whole.size(), hw);
      wl.sparse_pixel_bytes += fr.packed.size();
    }
    wl.pixel_bytes += fr.packed.size();
    hk = hash_bytes(fr.packed.data(), fr.packed.size(), hk);
    wl.frames.push_back(std::move(fr));
  }
  wl.hash_kernel_read = hk;
  wl.hash_whole_frames = hw;
  return wl;
}

// ------------------------------------------------------------------ shared HDF5 pieces

hid_t pixel_type(int b) { return b == 1 ? H5T_NATIVE_UINT8 : b == 2 ? H5T_NATIVE_UINT16 : H5T_NATIVE_UINT32; }
hid_t file_type(int b) { return b == 1 ? H5T_STD_U8LE : b == 2 ? H5T_STD_U16LE : H5T_STD_U32LE; }

// What one configuration cost; medians over the repeats are taken field by field.
struct Measure {
  double write_data = 0, write_md = 0, read_data = 0, read_md = 0, whole_read = NAN;
  double write_close = 0;  // the durable close, part of write_data (shown for diagnosis)
  double size = 0;      // bytes on disk
  double md_bytes = 0;  // application metadata bytes (native: encoded selections)
  uint64_t read_hash = 0, whole_hash = 0;
  double write() const { return write_data + write_md; }
  double read() const { return read_data + read_md; }
};

// Selects frame f whole (1 x H x W) in `space`.
void select_frame(const Params& p, hid_t space, hsize_t f) {
  hsize_t start[3] = {f, 0, 0}, count[3] = {1, p.h, p.w};
  BCHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr));
}

// Selects a non-key frame's rectangles in `space`: one hyperslab, or their OR-union.
void select_rects(hid_t space, hsize_t f, const std::vector<Rect>& rects) {
  for (size_t i = 0; i < rects.size(); ++i) {
    hsize_t start[3] = {f, rects[i].y, rects[i].x}, count[3] = {1, rects[i].h, rects[i].w};
    BCHECK(H5Sselect_hyperslab(space, i == 0 ? H5S_SELECT_SET : H5S_SELECT_OR, start, nullptr, count, nullptr));
  }
}

// The memory space of a transfer of n pixels: a whole frame is an H x W image (the shape
// of its file selection, so native HDF5 takes its direct same-shape path: with a 1-D
// memory space it gathers through its conversion buffer, ~5x slower for a whole frame);
// packed pixels of a sparse selection are a 1-D buffer.
hid_t memory_space(Ids& ids, const Params& p, hsize_t n) {
  hsize_t frame[2] = {p.h, p.w};
  return n == p.h * p.w ? ids.add(H5Screate_simple(2, frame, nullptr), H5Sclose)
                        : ids.add(H5Screate_simple(1, &n, nullptr), H5Sclose);
}

// Writes `n` pixels from `buf` to the selection of `fspace`.
void write_packed(const Params& p, hid_t dset, int b, hid_t fspace, const void* buf, hsize_t n) {
  Ids m;
  BCHECK(H5Dwrite(dset, pixel_type(b), memory_space(m, p, n), fspace, H5P_DEFAULT, buf));
}

void read_packed(const Params& p, hid_t dset, int b, hid_t fspace, void* buf, hsize_t n) {
  if (n == 0) return;
  Ids m;
  BCHECK(H5Dread(dset, pixel_type(b), memory_space(m, p, n), fspace, H5P_DEFAULT, buf));
}

// A chunked dataset for the frames: fill value 0, chunks allocated when written.
hid_t create_frames(Ids& ids, hid_t file, const Params& p, int b, hsize_t c) {
  hsize_t dims[3] = {p.n, p.h, p.w}, chunk[3] = {1, std::min(c, p.h), std::min(c, p.w)};
  hid_t dcpl = ids.add(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  BCHECK(H5Pset_chunk(dcpl, 3, chunk));
  uint64_t zero = 0;
  BCHECK(H5Pset_fill_value(dcpl, pixel_type(b), &zero));
  BCHECK(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_INCR));
  hid_t space = ids.add(H5Screate_simple(3, dims, nullptr), H5Sclose);
  return ids.add(H5Dcreate2(file, "frames", file_type(b), space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
}

double bytes_on_disk(const std::string& path) {
  double total = 0;
  std::error_code ec;
  for (const auto& f : files_under(path)) total += double(std::filesystem::file_size(f, ec));
  return total;
}

// Drops the file's pages, so the read that follows (from the open on) is cold.
void make_cold(const Options& o, Report& r, const std::string& path) {
  r.cache_methods[drop_caches(o, {path})] = "used";
}

// ------------------------------------------------------------------ baseline (native, contiguous)

Measure baseline(const Options& o, Report& r, const Params& p, int b, uint64_t* expected) {
  const std::string path = o.dir + "/baseline_B" + std::to_string(b) + ".h5";
  remove_path(path);
  Measure m;
  std::vector<uint8_t> frame;
  uint64_t h = 0;
  {
    Ids ids;
    Stopwatch sw;
    sw.start();
    hid_t fapl = ids.add(fapl_for(Side::kNative), H5Pclose);
    hid_t file = ids.add(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
    hsize_t dims[3] = {p.n, p.h, p.w};
    hid_t fspace = ids.add(H5Screate_simple(3, dims, nullptr), H5Sclose);
    hid_t dset = ids.add(H5Dcreate2(file, "frames", file_type(b), fspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                         H5Dclose);
    for (hsize_t f = 0; f < p.n; ++f) {
      sw.stop();  // the detector's work, not the library's
      full_frame(p, b, f, frame);
      h = hash_bytes(frame.data(), frame.size(), h);
      sw.start();
      select_frame(p, fspace, f);
      write_packed(p, dset, b, fspace, frame.data(), p.h * p.w);
    }
    ids.release(dset);
    BCHECK(H5Dclose(dset));
    ids.release(file);
    durable_close(Side::kNative, file, path);
    sw.stop();
    m.write_data = sw.total;
  }
  *expected = h;
  m.size = bytes_on_disk(path);
  make_cold(o, r, path);
  {
    Ids ids;
    auto t0 = Clock::now();
    hid_t fapl = ids.add(fapl_for(Side::kNative), H5Pclose);
    hid_t file = ids.add(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
    hid_t dset = ids.add(H5Dopen2(file, "frames", H5P_DEFAULT), H5Dclose);
    hid_t fspace = ids.add(H5Dget_space(dset), H5Sclose);
    frame.resize(p.h * p.w * b);
    double hashing = 0;
    for (hsize_t f = 0; f < p.n; ++f) {
      select_frame(p, fspace, f);
      read_packed(p, dset, b, fspace, frame.data(), p.h * p.w);
      auto th = Clock::now();
      m.read_hash = hash_bytes(frame.data(), frame.size(), m.read_hash);
      hashing += since(th);
    }
    ids.release(dset);
    BCHECK(H5Dclose(dset));
    ids.release(file);
    BCHECK(H5Fclose(file));
    m.read_data = since(t0) - hashing;
  }
  if (!o.keep) remove_path(path);
  return m;
}

// ------------------------------------------------------------------ native: chunked + encoded selections

// The application metadata of the native kernels: each non-key frame's H5Sencode2 bytes
// appended to "selections" (1-D uint8), and per frame the end offset of its bytes in
// "selection_ends" (1-D uint64; a key frame adds none). Both grow as the stream goes, as
// a packet table would.
struct SelectionLog {
  hid_t bytes = -1, ends = -1;
  hsize_t nbytes = 0, nframes = 0;

  void create(Ids& ids, hid_t file) {
    hsize_t zero = 0, unlimited = H5S_UNLIMITED, cb = 65536, ce = 1024;
    hid_t sp = ids.add(H5Screate_simple(1, &zero, &unlimited), H5Sclose);
    hid_t dcpl = ids.add(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    BCHECK(H5Pset_chunk(dcpl, 1, &cb));
    bytes = ids.add(H5Dcreate2(file, "selections", H5T_STD_U8LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
    hid_t dcpl2 = ids.add(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    BCHECK(H5Pset_chunk(dcpl2, 1, &ce));
    ends = ids.add(H5Dcreate2(file, "selection_ends", H5T_STD_U64LE, sp, H5P_DEFAULT, dcpl2, H5P_DEFAULT), H5Dclose);
  }

  static void append(hid_t dset, hsize_t at, hsize_t n, hid_t type, const void* buf) {
    hsize_t size = at + n;
    BCHECK(H5Dset_extent(dset, &size));
    if (n == 0) return;
    Ids m;
    hid_t fs = m.add(H5Dget_space(dset), H5Sclose);
    BCHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at, nullptr, &n, nullptr));
    hid_t ms = m.add(H5Screate_simple(1, &n, nullptr), H5Sclose);
    BCHECK(H5Dwrite(dset, type, ms, fs, H5P_DEFAULT, buf));
  }

  // Appends the encoding of `space`'s selection (none for a key frame).
  void add(hid_t space, bool key) {
    if (!key) {
      size_t n = 0;
      BCHECK(H5Sencode2(space, nullptr, &n, H5P_DEFAULT));
      std::vector<uint8_t> enc(n);
      BCHECK(H5Sencode2(space, enc.data(), &n, H5P_DEFAULT));
      append(bytes, nbytes, n, H5T_NATIVE_UINT8, enc.data());
      nbytes += n;
    }
    uint64_t end = nbytes;
    append(ends, nframes++, 1, H5T_NATIVE_UINT64, &end);
  }
};

Measure native_write(const Params& p, const Workload& wl, const std::string& path, hsize_t c) {
  remove_path(path);
  Measure m;
  Ids ids;
  Stopwatch data, md;
  data.start();
  hid_t fapl = ids.add(fapl_for(Side::kNative), H5Pclose);
  hid_t file = ids.add(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
  hid_t dset = create_frames(ids, file, p, wl.b, c);
  hid_t fspace = ids.add(H5Dget_space(dset), H5Sclose);
  data.stop();
  SelectionLog log;
  md.start();
  log.create(ids, file);
  md.stop();
  for (hsize_t f = 0; f < p.n; ++f) {
    const Frame& fr = wl.frames[f];
    data.start();
    if (fr.key) select_frame(p, fspace, f);
    else select_rects(fspace, f, fr.rects);
    write_packed(p, dset, wl.b, fspace, fr.packed.data(), fr.packed.size() / wl.b);
    data.stop();
    md.start();
    log.add(fspace, fr.key);
    md.stop();
  }
  md.start();
  for (hid_t d : {log.bytes, log.ends}) {
    ids.release(d);
    BCHECK(H5Dclose(d));
  }
  md.stop();
  data.start();
  auto tc = Clock::now();
  ids.release(dset);
  BCHECK(H5Dclose(dset));
  ids.release(file);
  durable_close(Side::kNative, file, path);  // the whole file's durability counts as data
  m.write_close = since(tc);
  data.stop();
  m.write_data = data.total;
  m.write_md = md.total;
  m.md_bytes = double(log.nbytes);
  return m;
}

// Reads key frames whole and each non-key frame's decoded selection; hashes what it read.
void native_read(const Params& p, const Workload& wl, const std::string& path, Measure& m,
                 std::vector<uint8_t>& buf) {
  Ids ids;
  Stopwatch data, md;
  data.start();
  hid_t fapl = ids.add(fapl_for(Side::kNative), H5Pclose);
  hid_t file = ids.add(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
  hid_t dset = ids.add(H5Dopen2(file, "frames", H5P_DEFAULT), H5Dclose);
  hid_t fspace = ids.add(H5Dget_space(dset), H5Sclose);
  data.stop();
  md.start();
  hid_t sel = ids.add(H5Dopen2(file, "selections", H5P_DEFAULT), H5Dclose);
  hid_t ends_d = ids.add(H5Dopen2(file, "selection_ends", H5P_DEFAULT), H5Dclose);
  std::vector<uint64_t> ends(p.n);
  BCHECK(H5Dread(ends_d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, ends.data()));
  hid_t sel_space = ids.add(H5Dget_space(sel), H5Sclose);
  md.stop();
  std::vector<uint8_t> enc;
  uint64_t h = 0;
  for (hsize_t f = 0; f < p.n; ++f) {
    const Frame& fr = wl.frames[f];
    Ids frame_ids;
    hid_t rspace = fspace;
    hsize_t n = p.h * p.w;
    if (fr.key) {
      data.start();
      select_frame(p, fspace, f);
      data.stop();
    } else {
      md.start();
      hsize_t lo = f ? ends[f - 1] : 0, len = ends[f] - lo;
      enc.resize(len);
      BCHECK(H5Sselect_hyperslab(sel_space, H5S_SELECT_SET, &lo, nullptr, &len, nullptr));
      hid_t ms = frame_ids.add(H5Screate_simple(1, &len, nullptr), H5Sclose);
      BCHECK(H5Dread(sel, H5T_NATIVE_UINT8, ms, sel_space, H5P_DEFAULT, enc.data()));
      rspace = frame_ids.add(H5Sdecode(enc.data()), H5Sclose);
      hssize_t np = H5Sget_select_npoints(rspace);
      BCHECK(np);
      n = hsize_t(np);
      md.stop();
    }
    data.start();
    read_packed(p, dset, wl.b, rspace, buf.data(), n);
    data.stop();
    h = hash_bytes(buf.data(), n * wl.b, h);
  }
  data.start();
  ids.release(dset);
  BCHECK(H5Dclose(dset));
  ids.release(file);
  for (hid_t d : {sel, ends_d}) {
    ids.release(d);
    BCHECK(H5Dclose(d));
  }
  BCHECK(H5Fclose(file));
  data.stop();
  m.read_data = data.total;
  m.read_md = md.total;
  m.read_hash = h;
}

// ------------------------------------------------------------------ tessera: the same writes, no metadata

Measure tessera_write(const Params& p, const Workload& wl, const std::string& path) {
  remove_path(path);
  Measure m;
  Ids ids;
  Stopwatch data;
  data.start();
  hid_t fapl = ids.add(fapl_for(Side::kTessera), H5Pclose);
  hid_t file = ids.add(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
  hid_t dset = create_frames(ids, file, p, wl.b, std::max(p.h, p.w));
  hid_t fspace = ids.add(H5Dget_space(dset), H5Sclose);
  for (hsize_t f = 0; f < p.n; ++f) {
    const Frame& fr = wl.frames[f];
    if (fr.key) select_frame(p, fspace, f);
    else select_rects(fspace, f, fr.rects);
    write_packed(p, dset, wl.b, fspace, fr.packed.data(), fr.packed.size() / wl.b);
  }
  auto tc = Clock::now();
  ids.release(dset);
  BCHECK(H5Dclose(dset));
  ids.release(file);
  durable_close(Side::kTessera, file, path);  // H5Fclose: durable by itself
  m.write_close = since(tc);
  data.stop();
  m.write_data = data.total;
  return m;
}

// Key frames whole; a non-key frame: which of its pixels are defined (metadata time),
// then exactly those. The defined selection must be the frame's rectangles.
void tessera_read(const Params& p, const Workload& wl, const std::string& path, Measure& m,
                  std::vector<uint8_t>& buf) {
  Ids ids;
  Stopwatch data, md;
  data.start();
  hid_t fapl = ids.add(fapl_for(Side::kTessera), H5Pclose);
  hid_t file = ids.add(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
  hid_t dset = ids.add(H5Dopen2(file, "frames", H5P_DEFAULT), H5Dclose);
  hid_t fspace = ids.add(H5Dget_space(dset), H5Sclose);
  data.stop();
  uint64_t h = 0;
  for (hsize_t f = 0; f < p.n; ++f) {
    const Frame& fr = wl.frames[f];
    Ids frame_ids;
    hid_t rspace = fspace;
    hsize_t n = p.h * p.w;
    if (fr.key) {
      data.start();
      select_frame(p, fspace, f);
      data.stop();
    } else {
      md.start();
      select_frame(p, fspace, f);
      rspace = frame_ids.add(tessera_Dget_defined(dset, fspace, H5P_DEFAULT), H5Sclose);
      hssize_t np = H5Sget_select_npoints(rspace);
      BCHECK(np);
      n = hsize_t(np);
      md.stop();
      if (n * wl.b != fr.packed.size())
        throw Failure("frame " + std::to_string(f) + ": tessera_Dget_defined selects " + std::to_string(n) +
                      " pixels, " + std::to_string(fr.packed.size() / wl.b) + " were written");
    }
    data.start();
    read_packed(p, dset, wl.b, rspace, buf.data(), n);
    data.stop();
    h = hash_bytes(buf.data(), n * wl.b, h);
  }
  data.start();
  ids.release(dset);
  BCHECK(H5Dclose(dset));
  ids.release(file);
  BCHECK(H5Fclose(file));
  data.stop();
  m.read_data = data.total;
  m.read_md = md.total;
  m.read_hash = h;
}

// ------------------------------------------------------------------ whole logical frames

// Every non-key frame read as a whole 1 x H x W hyperslab: the unchanged program's view.
void whole_frame_read(const Params& p, const Workload& wl, Side s, const std::string& path, Measure& m,
                      std::vector<uint8_t>& buf) {
  Ids ids;
  Stopwatch sw;
  sw.start();
  hid_t fapl = ids.add(fapl_for(s), H5Pclose);
  hid_t file = ids.add(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
  hid_t dset = ids.add(H5Dopen2(file, "frames", H5P_DEFAULT), H5Dclose);
  hid_t fspace = ids.add(H5Dget_space(dset), H5Sclose);
  uint64_t h = 0;
  for (hsize_t f = 0; f < p.n; ++f) {
    if (wl.frames[f].key) continue;
    select_frame(p, fspace, f);
    read_packed(p, dset, wl.b, fspace, buf.data(), p.h * p.w);
    sw.stop();
    h = hash_bytes(buf.data(), p.h * p.w * wl.b, h);
    sw.start();
  }
  ids.release(dset);
  BCHECK(H5Dclose(dset));
  ids.release(file);
  BCHECK(H5Fclose(file));
  sw.stop();
  m.whole_read = sw.total;
  m.whole_hash = h;
}

// ------------------------------------------------------------------ running and reporting

// One configuration: "native c" (c = chunk side) or "tessera".
struct Config {
  std::string name;
  Side side;
  hsize_t chunk;  // native chunk side; tessera: H
  bool whole;     // also read whole frames (native 1 x H x W, tessera)
};

// Runs one configuration once: write, size, cold read, cold whole-frame read.
Measure run_config(const Options& o, Report& r, const Params& p, const Workload& wl, const Config& c,
                   std::vector<uint8_t>& buf) {
  const std::string path = o.dir + "/" + c.name + "_" + kernel_name(wl.kernel) + std::to_string(wl.b) +
                           (c.side == Side::kNative ? ".h5" : ".tessera.h5");
  Measure m = c.side == Side::kNative ? native_write(p, wl, path, c.chunk) : tessera_write(p, wl, path);
  m.size = bytes_on_disk(path);
  make_cold(o, r, path);
  if (c.side == Side::kNative) native_read(p, wl, path, m, buf);
  else tessera_read(p, wl, path, m, buf);
  if (c.whole) {
    make_cold(o, r, path);
    whole_frame_read(p, wl, c.side, path, m, buf);
  }
  if (!o.keep) remove_path(path);
  return m;
}

Measure median_of(const std::vector<Measure>& v) {
  auto med = [&](double Measure::*f) {
    std::vector<double> x;
    for (const Measure& m : v) x.push_back(m.*f);
    return median(x);
  };
  Measure m;
  if (v.empty()) {
    m.write_data = m.write_md = m.read_data = m.read_md = m.size = m.md_bytes = NAN;
    return m;
  }
  m.write_data = med(&Measure::write_data);
  m.write_md = med(&Measure::write_md);
  m.write_close = med(&Measure::write_close);
  m.read_data = med(&Measure::read_data);
  m.read_md = med(&Measure::read_md);
  m.whole_read = med(&Measure::whole_read);
  m.size = med(&Measure::size);
  m.md_bytes = med(&Measure::md_bytes);
  m.read_hash = v.front().read_hash;
  m.whole_hash = v.front().whole_hash;
  return m;
}

struct Target {
  std::string what;
  bool met;
};

struct Runner {
  const Options& o;
  Report& r;
  const Params& p;
  std::vector<Target> targets;
  std::vector<std::string> table;  // markdown rows for the summary at the end

  static std::string fmt(const char* f, double v) {
    if (std::isnan(v)) return "-";
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
  }

  // Checks a read's hash against the data generated for it; a mismatch fails the run.
  bool check(const std::string& what, const std::string& config, uint64_t got, uint64_t want) {
    if (got == want) return true;
    ++r.failures;
    std::printf("# MISMATCH %s on %s: read hash %016llx, written data %016llx\n", what.c_str(), config.c_str(),
                (unsigned long long)got, (unsigned long long)want);
    return false;
  }

  void run_b(int b) {
    std::vector<Measure> base_runs;
    uint64_t base_expected = 0;
    for (int rep = 0; rep < p.repeat; ++rep) {
      try {
        Measure m = baseline(o, r, p, b, &base_expected);
        check("baseline B=" + std::to_string(b) + " full read", "native contiguous", m.read_hash, base_expected);
        base_runs.push_back(m);
      } catch (const std::exception& e) {
        ++r.failures;
        std::printf("# baseline B=%d FAILED: %s\n", b, e.what());
      }
    }
    Measure base = median_of(base_runs);
    r.info("baseline B=%d: %.0f bytes, write %.4f s, read %.4f s (native contiguous, %d run(s))", b, base.size,
           base.write(), base.read(), int(base_runs.size()));
    table.push_back("| baseline (native, contiguous) | " + std::to_string(b) + " | " + fmt("%.1f", base.size / 1e6) +
                    " | " + fmt("%.3f", base.write()) + " | " + fmt("%.3f", base.read()) + " | 1 | 1 | 1 | 0 | |");
    for (Kernel k : p.kernels) run_kernel(k, b, base);
  }

  void run_kernel(Kernel k, int b, const Measure& base) {
    Workload wl = generate(p, k, b);
    std::vector<Config> configs;
    for (Side s : o.sides) {
      if (s == Side::kNative)
        for (hsize_t c : p.chunk_sides)
          configs.push_back({"native_c" + std::to_string(c), s, c, std::min(c, p.h) == p.h && std::min(c, p.w) == p.w});
      else
        configs.push_back({"tessera", s, p.h, true});
    }
    std::map<std::string, std::vector<Measure>> runs;
    std::map<std::string, bool> failed;
    std::vector<uint8_t> buf(p.h * p.w * b);
    for (int rep = 0; rep < p.repeat; ++rep) {
      // Which connector goes first alternates: the second finds the disk still busy
      // with the first one's writeback.
      std::vector<Config> order = configs;
      if (rep % 2 == 1) std::reverse(order.begin(), order.end());
      for (const Config& c : order) {
        try {
          Measure m = run_config(o, r, p, wl, c, buf);
          bool ok = check(std::string(kernel_name(k)) + std::to_string(b) + " kernel read", c.name, m.read_hash,
                          wl.hash_kernel_read);
          if (c.whole)
            ok = check(std::string(kernel_name(k)) + std::to_string(b) + " whole-frame read", c.name, m.whole_hash,
                       wl.hash_whole_frames) && ok;
          if (!ok) failed[c.name] = true;
          runs[c.name].push_back(m);
        } catch (const std::exception& e) {
          ++r.failures;
          failed[c.name] = true;
          std::printf("# %s%d on %s FAILED: %s\n", kernel_name(k), b, c.name.c_str(), e.what());
          std::fflush(stdout);
        }
      }
    }
    report_kernel(wl, base, configs, runs, failed);
  }

  void report_kernel(const Workload& wl, const Measure& base, const std::vector<Config>& configs,
                     std::map<std::string, std::vector<Measure>>& runs, std::map<std::string, bool>& failed) {
    const std::string tag = std::string(kernel_name(wl.kernel)) + std::to_string(wl.b);
    const double pix = double(wl.pixel_bytes), sparse = double(wl.sparse_pixel_bytes);
    r.info("%s: %llu pixel bytes written (%llu in non-key frames), %d run(s) per configuration; times in s",
           tag.c_str(), (unsigned long long)wl.pixel_bytes, (unsigned long long)wl.sparse_pixel_bytes, p.repeat);
    std::printf("# %-14s %10s %9s %9s %9s %9s %9s %9s %7s %7s %7s %9s %9s\n", "config", "size MB", "w data",
                "(close)", "w md", "r data", "r md", "whole r", "space", "w fac", "r fac", "md/d", "md/d nk");
    // Best native per metric.
    double best_size = NAN, best_w = NAN, best_r = NAN;
    std::string best_size_by, best_w_by, best_r_by;
    Measure tes, native_full;
    bool have_tes = false, have_full = false;
    for (const Config& c : configs) {
      if (runs[c.name].empty() || failed[c.name]) {
        std::printf("# %-14s FAILED\n", c.name.c_str());
        continue;
      }
      Measure m = median_of(runs[c.name]);
      // Native: app metadata / pixels; tessera: what it stores beyond the pixels.
      double md = c.side == Side::kNative ? m.md_bytes : m.size - pix;
      std::printf("# %-14s %10.3f %9.4f %9.4f %9.4f %9.4f %9.4f %9s %7.2f %7.2f %7.2f %9.4f %9.4f\n", c.name.c_str(),
                  m.size / 1e6, m.write_data, m.write_close, m.write_md, m.read_data, m.read_md,
                  fmt("%.4f", m.whole_read).c_str(), base.size / m.size, base.write() / m.write(),
                  base.read() / m.read(), md / pix, md / sparse);
      std::string label = c.side == Side::kNative ? "native 1x" + std::to_string(std::min(c.chunk, p.h)) + "x" +
                                                        std::to_string(std::min(c.chunk, p.w))
                                                  : "tessera";
      table.push_back("| " + std::string(kernel_name(wl.kernel)) + ", " + label + " | " + std::to_string(wl.b) +
                      " | " + fmt("%.2f", m.size / 1e6) + " | " + fmt("%.3f", m.write_data) + " + " +
                      fmt("%.3f", m.write_md) + " | " + fmt("%.3f", m.read_data) + " + " + fmt("%.3f", m.read_md) +
                      " | " + fmt("%.2f", base.size / m.size) + " | " + fmt("%.2f", base.write() / m.write()) +
                      " | " + fmt("%.2f", base.read() / m.read()) + " | " + fmt("%.3g", md / pix) + " (" +
                      fmt("%.3g", md / sparse) + ") | " + fmt("%.3f", m.whole_read) + " |");
      if (c.side == Side::kTessera) {
        tes = m;
        have_tes = true;
        continue;
      }
      if (c.whole) native_full = m, have_full = true;
      if (std::isnan(best_size) || m.size < best_size) best_size = m.size, best_size_by = label;
      if (std::isnan(best_w) || m.write() < best_w) best_w = m.write(), best_w_by = label;
      if (std::isnan(best_r) || m.read() < best_r) best_r = m.read(), best_r_by = label;
    }
    // The best native chunking per metric (each may come from a different chunk shape), and
    // tessera against it: > 1 means tessera is smaller / faster.
    if (!std::isnan(best_size)) {
      table.push_back("| " + std::string(kernel_name(wl.kernel)) + ", native best | " + std::to_string(wl.b) +
                      " | " + fmt("%.2f", best_size / 1e6) + " (" + best_size_by + ") | " + fmt("%.3f", best_w) +
                      " (" + best_w_by + ") | " + fmt("%.3f", best_r) + " (" + best_r_by + ") | " +
                      fmt("%.2f", base.size / best_size) + " | " + fmt("%.2f", base.write() / best_w) + " | " +
                      fmt("%.2f", base.read() / best_r) + " | | " +
                      fmt("%.3f", have_full ? native_full.whole_read : NAN) + " (native 1x" + std::to_string(p.h) +
                      "x" + std::to_string(p.w) + ") |");
      if (have_tes)
        table.push_back("| " + std::string(kernel_name(wl.kernel)) + ", **native best / tessera** | " +
                        std::to_string(wl.b) + " | **" + fmt("%.2f", best_size / tes.size) + "** | **" +
                        fmt("%.2f", best_w / tes.write()) + "** | **" + fmt("%.2f", best_r / tes.read()) +
                        "** | | | | | **" + fmt("%.2f", have_full ? native_full.whole_read / tes.whole_read : NAN) +
                        "** |");
    }
    // tessera vs the best native chunking, in the common RESULT format (ratio native/tessera).
    auto result = [&](const std::string& what, double nv, double tv, const char* unit, const std::string& note) {
      double v[2] = {nv, have_tes ? tv : NAN};
      bool f[2] = {std::isnan(nv), !have_tes};
      r.result(tag + ": " + what, v, f, unit, note);
    };
    result("stored size (native: best chunking)", best_size / 1e6, tes.size / 1e6, "MB", "best native: " + best_size_by);
    result("write to durable (native: best chunking, data+md)", best_w, tes.write(), "s", "best native: " + best_w_by);
    result("read, cold (native: best chunking, data+md)", best_r, tes.read(), "s", "best native: " + best_r_by);
    result("whole non-key frames read, cold (native 1xHxW chunks)", have_full ? native_full.whole_read : NAN,
           tes.whole_read, "s", "undefined pixels = fill value");
    result("space factor vs baseline", base.size / best_size, base.size / tes.size, "x",
           "ratio < 1: tessera saves more");
    bool have[2] = {!std::isnan(best_r), have_tes};
    uint64_t hs[2] = {wl.hash_kernel_read, have_tes ? tes.read_hash : 0};  // native checked above against it
    r.check(tag + " kernel read (native configs checked against the written data)", have, hs);
    if (!have_tes || p.quick) return;
    // The targets (tessera against the paper's baseline).
    const double sf = base.size / tes.size, wf = base.write() / tes.write(), rf = base.read() / tes.read();
    if (wl.b == 2 && wl.kernel == Kernel::kROI) targets.push_back({tag + " space >= 6.2x (" + fmt("%.2f", sf) + ")", sf >= 6.2});
    if (wl.b == 2 && wl.kernel == Kernel::kSC) targets.push_back({tag + " space >= 15x (" + fmt("%.2f", sf) + ")", sf >= 15});
    if (wl.kernel != Kernel::kSS) {
      targets.push_back({tag + " write factor >= 6x (" + fmt("%.2f", wf) + ")", wf >= 6});
      targets.push_back({tag + " read factor >= 6x (" + fmt("%.2f", rf) + ")", rf >= 6});
    }
    if (have_full)
      targets.push_back({tag + " whole-frame read <= native (" + fmt("%.3f", tes.whole_read) + " vs " +
                             fmt("%.3f", native_full.whole_read) + " s)",
                         tes.whole_read <= native_full.whole_read});
  }
};

[[noreturn]] void usage_exit(int rc) {
  std::printf(
      "usage: bench_h5_sparse [options]\n"
      "  --quick          smoke run: N = 32 frames, B = 2 only, one run (targets not judged)\n"
      "  --repeat K       run every configuration K times, report medians (default 1)\n"
      "  --frames N       logical frames (default 128); --stride S key-frame stride (16)\n"
      "  --bytes LIST     pixel sizes, e.g. 1,2,4 (default)\n"
      "  --kernels LIST   ROI,SC,SS (default all)\n"
      "  --chunks LIST    native chunk sides, e.g. 32,64,128,1024 (default)\n"
      "  --seed N         data seed\n"
      "  --dir DIR        directory for the files (default: a fresh one under /tmp)\n"
      "  --keep           keep the files afterwards\n"
      "  --cache-drop M   auto | proc (/proc/sys/vm/drop_caches) | fadvise (POSIX_FADV_DONTNEED)\n"
      "  --native-only / --tessera-only   run one side (the baseline is always native)\n");
  std::exit(rc);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  Params p;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      auto numbers = [&](const std::string& v) {
        std::vector<hsize_t> out;
        for (const std::string& s : split_list(v)) out.push_back(std::strtoull(s.c_str(), nullptr, 10));
        return out;
      };
      if (a == "-h" || a == "--help") usage_exit(0);
      else if (a == "--scale") throw std::invalid_argument("--scale: use --quick or --frames here");
      else if (parse_common(o, argc, argv, i)) continue;
      else if (a == "--quick") p.quick = true, p.n = 32, p.pixel_bytes = {2};
      else if (a == "--repeat") p.repeat = std::max(1, std::atoi(value().c_str()));
      else if (a == "--frames") p.n = std::strtoull(value().c_str(), nullptr, 10);
      else if (a == "--stride") p.stride = std::strtoull(value().c_str(), nullptr, 10);
      else if (a == "--seed") p.seed = std::strtoull(value().c_str(), nullptr, 10);
      else if (a == "--chunks") p.chunk_sides = numbers(value());
      else if (a == "--bytes") {
        p.pixel_bytes.clear();
        for (hsize_t b : numbers(value())) {
          if (b != 1 && b != 2 && b != 4) throw std::invalid_argument("--bytes: 1, 2 or 4");
          p.pixel_bytes.push_back(int(b));
        }
      } else if (a == "--kernels") {
        p.kernels.clear();
        for (const std::string& k : split_list(value())) {
          if (k == "ROI") p.kernels.push_back(Kernel::kROI);
          else if (k == "SC") p.kernels.push_back(Kernel::kSC);
          else if (k == "SS") p.kernels.push_back(Kernel::kSS);
          else throw std::invalid_argument("--kernels: ROI, SC, SS");
        }
      } else throw std::invalid_argument("unknown argument " + a + " (try --help)");
    }
    if (p.n < 1 || p.stride < 1) throw std::invalid_argument("--frames and --stride must be >= 1");
    prepare_dir(o, "bench-sparse");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_h5_sparse: %s\n", e.what());
    return 2;
  }
  Report r;
  r.info("bench_h5_sparse: N=%llu frames of %llux%llu, key-frame stride %llu, %d run(s) per configuration, dir %s",
         (unsigned long long)p.n, (unsigned long long)p.h, (unsigned long long)p.w, (unsigned long long)p.stride,
         p.repeat, o.dir.c_str());
  Runner run{o, r, p, {}, {}};
  for (int b : p.pixel_bytes) run.run_b(b);

  std::printf("\n| kernel, storage | B | size MB | write s (data + md) | read s (data + md) | space factor | "
              "write factor | read factor | md/d (non-key) | whole-frame read s |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const std::string& row : run.table) std::printf("%s\n", row.c_str());
  std::printf("\n");
  for (auto& [m, _] : r.cache_methods) std::printf("INFO\tcache_drop\t%s\n", m.c_str());
  if (!run.targets.empty()) {
    std::string met, missed;
    for (const Target& t : run.targets) {
      std::string& list = t.met ? met : missed;
      list += (list.empty() ? "" : "; ") + t.what;
    }
    std::printf("TARGETS\tmet: %s\n", met.empty() ? "none" : met.c_str());
    std::printf("TARGETS\tmissed: %s\n", missed.empty() ? "none" : missed.c_str());
  } else {
    std::printf("TARGETS\tnot judged (%s)\n", p.quick ? "--quick" : "tessera did not run");
  }
  if (!o.keep) ::rmdir(o.dir.c_str());
  std::printf("# %d failure(s)\n", r.failures);
  return r.failures ? 1 : 0;
}
