// engine_demo: writes and reads a small array with the engine alone and shows what
// happened on disk — the fragments a dense write, scattered point writes and an extent
// change produce, the newest-wins view a read returns, and consolidation.
// Usage: engine_demo [container-dir]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/container/container.h"

using namespace tessera;

static void check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "engine_demo: %s failed: %s\n", what, s.message().c_str());
    std::exit(1);
  }
}

static void show(Array& a, const char* title) {
  const Schema& s = a.schema();
  std::vector<int32_t> v(s.extent[0] * s.extent[1]);
  check(a.read(Selection::from_box(s.domain()), v.data()), "read");
  std::printf("\n%s\n", title);
  for (uint64_t i = 0; i < s.extent[0]; ++i) {
    std::printf("  ");
    for (uint64_t j = 0; j < s.extent[1]; ++j) std::printf("%4d", v[i * s.extent[1] + j]);
    std::printf("\n");
  }
  auto frags = a.fragments();
  std::printf("  %zu fragment(s), %llu bytes on disk, %zu cells buffered\n", frags.size(),
              static_cast<unsigned long long>(a.storage_bytes()), a.buffered_cells());
  for (auto& f : frags)
    std::printf("    %s  cells=%llu dense_pieces=%llu sparse_tiles=%llu domain=%s\n", f.id.name().c_str(),
                static_cast<unsigned long long>(f.cells), static_cast<unsigned long long>(f.dense_tiles),
                static_cast<unsigned long long>(f.sparse_tiles), f.has_domain ? f.domain.to_string().c_str() : "-");
}

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "/tmp/tessera_engine_demo";
  std::unique_ptr<Container> c;
  check(Container::create(dir, Container::CreateMode::kTruncate, &c), "create container");
  Schema s;
  s.extent = {6, 8};
  s.max_extent = {kUnlimited, 8};
  s.tile_extent = {3, 4};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  int32_t fill = -1;
  s.fill.assign(reinterpret_cast<uint8_t*>(&fill), reinterpret_cast<uint8_t*>(&fill) + 4);
  s.filters = FilterPipeline({{FilterType::kShuffle, 0}, {FilterType::kDeflate, 6}}, 4);
  uint64_t id;
  check(c->create_array(s, &id), "create array");
  std::unique_ptr<Array> a;
  ArrayOptions opts;
  opts.direct_cells = 12;  // tiny tiles: let a 4x6 box go straight to a dense fragment
  check(c->open_array(id, true, opts, &a), "open array");
  std::printf("container %s: a 6x8 int32 array, 3x4 tiles, fill -1, shuffle+deflate\n", dir.c_str());
  show(*a, "empty array: every cell reads as the fill value");

  std::vector<int32_t> box(4 * 6);
  for (size_t i = 0; i < box.size(); ++i) box[i] = static_cast<int32_t>(10 + i);
  check(a->write(Selection::from_box(Box({1, 1}, {4, 6})), box.data()), "box write");
  show(*a, "after a dense 4x6 box write at (1,1): one dense fragment");

  std::vector<uint64_t> pts = {0, 0, 2, 3, 5, 7, 2, 3};
  std::vector<int32_t> vals = {900, 901, 902, 903};  // (2,3) written twice: the later wins
  check(a->write_points(pts.data(), 4, vals.data()), "point write");
  show(*a, "after 4 point writes (buffered in memory; reads already see them)");
  check(a->flush(), "flush");
  show(*a, "after flush: the buffer became one sparse fragment");

  check(a->set_extent({4, 8}), "shrink");
  check(a->set_extent({6, 8}), "grow");
  show(*a, "after shrinking to 4 rows and growing back: cut rows read as fill (as in HDF5)");

  check(a->consolidate_all(), "consolidate");
  show(*a, "after consolidation: one fragment, same view");

  a.reset();
  check(c->open_array(id, false, ArrayOptions(), &a), "reopen");
  show(*a, "reopened read-only from disk");
  return 0;
}
