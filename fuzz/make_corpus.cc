// make_corpus — writes the seed corpus of every fuzz target (fuzz/corpus/<target>/) from
// real arrays and a real container made by the engine of the fuzzing build (whose
// checksums are constant: fuzz_util.h).  Usage: make_corpus <fuzz/corpus dir>.
//
// Arrays cover the format's variants: dense tiles unfiltered (block checksums) and
// filtered (shuffle + zstd, deflate, zlib, lz4), fill entries from an extent shrink,
// sparse tiles, erased tiles, variable-length cells and their heap, value indexes, a
// compact array; the container's catalog holds inline fragments, schemas and commits.
// A job's logs: a rank's share log (small writes, a shared file, a listing) and two
// ranks' publish logs (H5Dclose's publish_own in a parallel file).
// Usage: make_corpus <fuzz/corpus dir> [target...] — only those targets' seeds.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <cstring>
#include <functional>
#include <numeric>

#include "engine/array/array.h"
#include "engine/array/array_files.h"
#include "engine/util/bytes.h"
#include "engine/catalog/catalog.h"
#include "engine/util/checksum.h"
#include "engine/array/compact_cells.h"
#include "engine/container/container.h"
#include "engine/fragment/fragment.h"
#include "engine/catalog/history.h"
#include "engine/index/index_format.h"
#include "engine/publish/publish_journal.h"
#include "engine/publish/publish_log.h"
#include "engine/publish/share_log.h"
#include "engine/fragment/var_heap.h"
#include "engine/index/value_type.h"
#include "fuzz/share_log_array.h"

using namespace tessera;

namespace {

std::string out_root;
std::vector<std::string> only;  // targets to write (all when empty)
int written = 0;

void check(const Status& st, const char* what) {
  if (!st.ok()) {
    std::fprintf(stderr, "make_corpus: %s: %s\n", what, st.message().c_str());
    std::exit(1);
  }
}

void emit(const std::string& target, const std::string& name, const std::vector<uint8_t>& b) {
  if (!only.empty() && std::find(only.begin(), only.end(), target) == only.end()) return;
  const std::string dir = join_path(out_root, target);
  make_dirs(Env::posix(), dir);
  std::FILE* f = std::fopen(join_path(dir, "seed-" + name).c_str(), "wb");
  if (!f || (b.size() && std::fwrite(b.data(), 1, b.size(), f) != b.size())) std::exit(1);
  std::fclose(f);
  ++written;
}

std::vector<uint8_t> prefixed(const std::vector<uint8_t>& a, const std::vector<uint8_t>& rest) {
  std::vector<uint8_t> out(4);
  const uint32_t n = static_cast<uint32_t>(a.size());
  std::memcpy(out.data(), &n, 4);
  out.insert(out.end(), a.begin(), a.end());
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

std::vector<std::string> list(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
        out.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Schema make_schema(Coords extent, Coords tile, uint32_t es, ElementKind kind, std::vector<Filter> filters) {
  Schema s;
  s.extent = extent;
  s.max_extent = extent;
  s.tile_extent = tile;
  s.elem_size = es;
  s.kind = kind;
  s.filters = FilterPipeline(std::move(filters), es);
  return s;
}

ArrayOptions durable_opts() {
  ArrayOptions o;
  o.durable_writes = true;
  return o;
}

// Everything of one array directory goes into the corpora of schema, fragment, index,
// var_heap and journal.
void harvest(const std::string& tag, const std::string& dir, const Schema& s) {
  const std::vector<uint8_t> schema_file = read_file(Env::posix(), join_path(dir, array_files::kSchemaFile));
  emit("schema", tag, schema_file);
  const std::string frag_dir = join_path(dir, array_files::kFragDir);
  std::vector<std::string> moves;
  int i = 0;
  for (const std::string& n : list(frag_dir, ".tfr")) {
    const std::vector<uint8_t> frag = read_file(Env::posix(), join_path(frag_dir, n));
    const std::string ftag = tag + "-" + std::to_string(i++);
    emit("fragment", ftag, prefixed(schema_file, frag));
    moves.push_back(n);
    auto f = Fragment::open(join_path(frag_dir, n));
    const std::string ix = index_path(dir, f->meta().id);
    struct stat st;
    if (::stat(ix.c_str(), &st) == 0) {
      std::vector<uint8_t> rest{static_cast<uint8_t>(static_cast<uint8_t>(num_type(s, tag)) - 1)};
      const std::vector<uint8_t> idx = read_file(Env::posix(), ix);
      rest.insert(rest.end(), idx.begin(), idx.end());
      emit("index", ftag, prefixed(frag, rest));
    }
    if (s.var) {
      // Every distinct descriptor of the fragment's dense tiles, with its heap file.
      int k = 0;
      for (size_t t = 0; t < f->meta().dense.size() && k < 4; ++t) {
        if (f->meta().dense[t].kind != DenseEntry::kData) continue;
        auto cells = f->dense_tile(t);
        for (size_t c = 0; c + kVarDescriptorSize <= cells->size() && k < 4; c += kVarDescriptorSize * 3) {
          VarDescriptor d;
          std::memcpy(&d, cells->data() + c, sizeof d);
          if (!d.length) continue;
          std::vector<uint8_t> in(sizeof d);
          std::memcpy(in.data(), &d, sizeof d);
          const std::vector<uint8_t> heap = read_file(Env::posix(), 
              join_path(join_path(dir, array_files::kHeapDir), HeapReader::file_name(FragmentId{d.ts, d.rank, d.seq, 0})));
          in.insert(in.end(), heap.begin(), heap.end());
          emit("var_heap", ftag + "-" + std::to_string(k++), in);
        }
      }
    }
  }
  // Journals naming this array's fragments: serial (version 1) and epoch (version 2),
  // with and without the schema an extent change carries.
  PublishJournal j;
  for (const std::string& n : moves) j.moves.push_back({join_path(frag_dir, n + ".tmp"), join_path(frag_dir, n)});
  emit("journal", tag + "-serial", j.encode());
  j.epoch = 7;
  j.schema = schema_file;
  emit("journal", tag + "-epoch", j.encode());
}

void dense_arrays(const std::string& root) {
  {  // unfiltered 2-D int32: block checksums, partial writes, an index, an extent shrink
    const std::string dir = join_path(root, "dense_i32");
    Schema s = make_schema({10, 12}, {4, 5}, 4, ElementKind::kInt, {});
    s.max_extent = {20, 20};
    check(Array::create(dir, s), "create");
    std::unique_ptr<Array> a;
    check(Array::open(dir, true, durable_opts(), &a), "open");
    std::vector<int32_t> v(120);
    std::iota(v.begin(), v.end(), -50);
    check(a->write(Selection::from_box(Box({0, 0}, {9, 11})), v.data()), "write");
    check(a->write(Selection::from_box(Box({2, 3}, {5, 6})), v.data()), "write");
    check(a->flush(), "flush");
    IndexBuild b;
    check(a->build_index(IndexOptions{}, &b), "index");
    check(a->set_extent({7, 9}), "shrink");
    check(a->flush(), "flush");
    harvest("dense_i32", dir, a->schema());
  }
  struct Variant {
    const char* tag;
    uint32_t es;
    ElementKind kind;
    std::vector<Filter> filters;
  };
  const Variant variants[] = {
      {"f64_shuffle_zstd", 8, ElementKind::kFloat, {{FilterType::kShuffle, 0}, {FilterType::kZstd, 3}}},
      {"u16_deflate", 2, ElementKind::kUInt, {{FilterType::kDeflate, 4}}},
      {"u8_zlib", 1, ElementKind::kUInt, {{FilterType::kShuffle, 0}, {FilterType::kZlib, 6}}},
      {"f32_lz4", 4, ElementKind::kFloat, {{FilterType::kLz4, 0}}},
  };
  for (const Variant& x : variants) {
    const std::string dir = join_path(root, x.tag);
    Schema s = make_schema({40}, {16}, x.es, x.kind, x.filters);
    check(Array::create(dir, s), "create");
    std::unique_ptr<Array> a;
    check(Array::open(dir, true, durable_opts(), &a), "open");
    std::vector<uint8_t> v(40 * x.es);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i % 7 == 0 ? i : 0);
    if (x.kind == ElementKind::kFloat) std::fill(v.begin(), v.end(), 0);  // zeros: valid floats
    check(a->write(Selection::from_box(Box({0}, {39})), v.data()), "write");
    check(a->flush(), "flush");
    if (x.kind != ElementKind::kOpaque) {
      IndexBuild b;
      check(a->build_index(IndexOptions{}, &b), "index");
    }
    harvest(x.tag, dir, s);
    // The same tile through the bare filter pipeline (fuzz_filter's input).
    ByteWriter w;
    s.filters.serialize(w);
    std::vector<uint8_t> stored;
    s.filters.encode(v.data(), v.size(), stored);
    std::vector<uint8_t> in(4);
    const uint32_t raw = static_cast<uint32_t>(v.size());
    std::memcpy(in.data(), &raw, 4);
    emit("filter", x.tag, [&] {
      std::vector<uint8_t> t = prefixed(w.buf(), stored);
      in.insert(in.end(), t.begin(), t.end());
      return in;
    }());
  }
}

void sparse_array(const std::string& root) {
  const std::string dir = join_path(root, "sparse_u16");
  Schema s = make_schema({1000, 1000}, {100, 100}, 2, ElementKind::kUInt, {{FilterType::kLz4, 0}});
  s.sparse_capacity = 8;
  check(Array::create(dir, s), "create");
  std::unique_ptr<Array> a;
  ArrayOptions o = durable_opts();
  check(Array::open(dir, true, o, &a), "open");
  std::vector<uint64_t> pts;
  std::vector<uint16_t> vals;
  for (uint64_t i = 0; i < 20; ++i) {
    pts.push_back((i * 37) % 1000);
    pts.push_back((i * 91) % 1000);
    vals.push_back(static_cast<uint16_t>(i * 3));
  }
  check(a->write_points(pts.data(), vals.size(), vals.data()), "points");
  check(a->flush(), "flush");
  check(a->erase({Box({0, 0}, {300, 300})}), "erase");
  check(a->flush(), "flush");
  IndexBuild b;
  check(a->build_index(IndexOptions{}, &b), "index");
  harvest("sparse_u16", dir, s);
}

void var_array(const std::string& root) {
  const std::string dir = join_path(root, "var");
  Schema s = make_schema({8}, {4}, kVarDescriptorSize, ElementKind::kOpaque, {});
  s.var = true;
  check(Array::create(dir, s), "create");
  std::unique_ptr<Array> a;
  check(Array::open(dir, true, durable_opts(), &a), "open");
  const uint64_t len[8] = {1, 5, 0, 3, 7, 2, 4, 6};
  check(a->write_var(Selection::from_box(Box({0}, {7})), len, "abcdefghijklmnopqrstuvwxyz0123456789"), "var");
  check(a->flush(), "flush");
  harvest("var", dir, s);
}

void compact(const std::string& root) {
  Schema s = make_schema({3, 4}, {3, 4}, 4, ElementKind::kInt, {});
  s.compact = true;
  s.fill = {1, 0, 0, 0};
  const std::vector<uint8_t> file = array_files::schema_file_bytes(s, FragmentId{});
  emit("schema", "compact", file);
  CompactCells c(s);
  std::vector<int32_t> v(12);
  std::iota(v.begin(), v.end(), 0);
  const uint64_t stride[2] = {2, 1};  // the 3 x 2 selection, row-major
  c.write(Selection::from_box(Box({0, 1}, {2, 2})), reinterpret_cast<const uint8_t*>(v.data()), stride);
  const std::string rec = c.encode();
  emit("compact", "i32", prefixed(file, std::vector<uint8_t>(rec.begin(), rec.end())));
  (void)root;
}

void container(const std::string& root) {
  const std::string path = join_path(root, "c.tsra");
  std::unique_ptr<Container> c;
  check(Container::create(path, Container::CreateMode::kTruncate, &c), "container");
  Schema s = make_schema({6, 6}, {3, 3}, 8, ElementKind::kFloat, {{FilterType::kShuffle, 0}, {FilterType::kDeflate, 1}});
  uint64_t id;
  std::unique_ptr<Array> a;
  check(c->create_and_open_array(s, true, true, durable_opts(), &id, &a), "array");
  std::vector<double> v(36, 2.5);
  check(a->write(Selection::from_box(Box({0, 0}, {5, 5})), v.data()), "write");
  check(a->flush(), "flush");
  CatalogBatch b;
  b.put("g/0000000000000000/link/a", "x");
  add_commit(c->catalog(), b, 1700000000000000000ull, 1, 1);
  c->catalog().commit(std::move(b));
  CatalogBatch d;
  d.del("g/0000000000000000/link/a");
  add_commit(c->catalog(), d, 1700000000000000001ull, 0, 0);
  c->catalog().commit(std::move(d));
  check(c->sync(), "sync");
  a.reset();
  const std::string log = c->catalog().log_path();
  // Inline fragments live in the catalog: their records are fragments too.
  for (auto& [k, val] : c->catalog().scan(Container::array_prefix(id))) {
    if (k.find("/frag/") != std::string::npos) {
      const std::vector<uint8_t> schema_file = array_files::schema_file_bytes(s, FragmentId{});
      emit("fragment", "inline", prefixed(schema_file, std::vector<uint8_t>(val.begin(), val.end())));
      break;
    }
  }
  c.reset();
  emit("catalog", "container", read_file(Env::posix(), log));
  emit("container", "container", read_file(Env::posix(), log));
}


// Rank 1 of a two-rank job writes a parallel file's array as the connector does (each
// H5Dwrite followed by share_own): small box writes (records holding fragments), point
// writes (spilled to a shared file: a kShared record), an H5Dclose (publish_own: kList);
// its share log is taken whole, split between two records, and closed.
void share_logs(const std::string& root) {
  const std::string dir = join_path(root, "share");
  check(Array::create(dir, fuzz::share_log_schema()), "create");
  std::unique_ptr<Array> r0, r1;
  check(Array::open(dir, true, fuzz::share_log_rank(0, 2), &r0), "open rank 0");
  check(Array::open(dir, true, fuzz::share_log_rank(1, 2), &r1), "open rank 1");
  const std::string log = join_path(join_path(dir, array_files::kFragDir), share_log_name(1));
  auto box = [&](Box b, int32_t v) {
    check(r1->refresh_fragments(), "refresh");
    std::vector<int32_t> cells(b.cells(), v);
    check(r1->write(Selection::from_box(b), cells.data()), "write");
    check(r1->share_own(), "share");
  };
  box(Box({0, 0}, {3, 7}), 11);
  box(Box({10, 12}, {20, 30}), 12);  // over four tiles
  const uint64_t split = read_file(Env::posix(), log).size();
  box(Box({40, 0}, {47, 39}), 13);  // the partial tiles at the edge
  uint64_t pts[4] = {5, 5, 33, 17};
  int32_t pv[2] = {21, 22};
  check(r1->write_points(pts, 2, pv), "points");
  check(r1->share_own(), "share points");
  box(Box({2, 2}, {2, 2}), 14);
  size_t n = 0;
  check(r1->publish_own(&n), "publish_own");
  box(Box({30, 30}, {33, 33}), 15);
  check(r0->refresh_fragments(), "rank 0 reads the log");
  std::vector<int32_t> v(48 * 40);
  check(r0->read(Selection::from_box(Box({0, 0}, {47, 39})), v.data()), "rank 0 reads the log");
  if (v[0] != 11 || v[5 * 40 + 5] != 21 || v[33 * 40 + 33] != 15) {
    std::fprintf(stderr, "make_corpus: rank 0 does not read rank 1's writes\n");
    std::exit(1);
  }
  const std::vector<uint8_t> all = read_file(Env::posix(), log);
  emit("share_log", "whole", prefixed(all, {}));
  emit("share_log", "split", prefixed(std::vector<uint8_t>(all.begin(), all.begin() + split),
                                      std::vector<uint8_t>(all.begin() + split, all.end())));
  std::vector<uint8_t> closed(24, 0);  // a kClosed record: no payload (share_log.cc)
  const uint64_t sum = checksum64(nullptr, 0);
  const uint32_t kind = static_cast<uint32_t>(ShareRecord::kClosed), magic = 0x52534c54;
  std::memcpy(closed.data() + 8, &sum, 8);
  std::memcpy(closed.data() + 16, &kind, 4);
  std::memcpy(closed.data() + 20, &magic, 4);
  emit("share_log", "closed", prefixed(all, closed));
}

// Two members of a job publish on their own (publish_own, H5Dclose in a parallel file)
// with no epoch after it: each rank's publish log names its files.
void publish_logs(const std::string& root) {
  const std::string path = join_path(root, "par.tsra");
  uint64_t id;
  {
    std::unique_ptr<Container> c;
    check(Container::create(path, Container::CreateMode::kTruncate, &c), "container");
    c->set_file_arrays(true);
    check(c->create_array(fuzz::share_log_schema(), &id), "array");
    check(c->sync(), "sync");
  }
  std::unique_ptr<Container> root0, shadow;
  check(Container::open(path, true, &root0), "open");
  root0->set_file_arrays(true);
  check(Container::open_shadow(path, &shadow), "shadow");
  std::string frag;
  Container* cs[2] = {root0.get(), shadow.get()};
  for (uint32_t r = 0; r < 2; ++r) {
    ArrayOptions o = fuzz::share_log_rank(r, 2);
    o.share_ranks = 0;  // every write a fragment file
    o.blob_bytes = 0;
    std::unique_ptr<Array> a;
    check(cs[r]->open_array(id, true, o, &a), "open array");
    for (uint64_t q = 2 + r; q-- > 0;) {  // not in tile order: a fragment each
      const uint64_t lo = 24 * r + 8 * q;
      std::vector<int32_t> v(8 * 40, static_cast<int32_t>(r * 10 + q));
      check(a->write(Selection::from_box(Box({lo, 0}, {lo + 7, 39})), v.data()), "write");
    }
    size_t n = 0;
    check(a->publish_own(&n), "publish_own");
    if (n < 2) {
      std::fprintf(stderr, "make_corpus: publish_own published %zu files\n", n);
      std::exit(1);
    }
    frag = join_path(a->dir(), array_files::kFragDir);
  }
  const std::vector<uint8_t> l0 = read_file(Env::posix(), join_path(frag, publish_log_name(0)));
  const std::vector<uint8_t> l1 = read_file(Env::posix(), join_path(frag, publish_log_name(1)));
  emit("publish_log", "two-ranks", prefixed(l0, l1));
  emit("publish_log", "rank0", prefixed(l0, {}));
  emit("publish_log", "rank1", prefixed({}, l1));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_corpus <fuzz/corpus dir> [target...]\n");
    return 2;
  }
  out_root = argv[1];
  only.assign(argv + 2, argv + argc);
  char tmpl[] = "/tmp/tessera-corpus-XXXXXX";
  if (!::mkdtemp(tmpl)) return 1;
  const std::string root = tmpl;
  dense_arrays(root);
  sparse_array(root);
  var_array(root);
  compact(root);
  container(root);
  share_logs(root);
  publish_logs(root);
  // The containers were only the source of the seeds: the corpus holds copies of their bytes.
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  std::printf("make_corpus: %d seed files under %s\n", written, out_root.c_str());
  return 0;
}
