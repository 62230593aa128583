// A container's catalog log opened the way the connector opens a file read-only: the
// container, then every array its records name (arr/<id>/schema, inline fragments
// arr/<id>/frag/..., recorded files arr/<id>/file/..., compact cells), each read back,
// and the container as of its first commit.  Input: catalog.log (the container's header
// file is a valid one, written once).
#include <cstdlib>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "fuzz/fuzz_util.h"

using namespace tessera;

namespace {

// Reads an array's domain, or its first corner when the domain is large (the harness's
// buffer, not the engine's, would be what grows).
void read_some(Array& a) {
  const Schema& s = a.schema();
  if (s.rank() == 0) return;
  Box b = s.domain();
  if (b.cells() == 0) return;
  for (int d = 0; d < s.rank(); ++d) b.hi[d] = std::min<uint64_t>(b.hi[d], b.lo[d] + 15);
  if (b.cells() * s.elem_size > (16u << 20)) return;
  if (s.var) {
    std::vector<uint64_t> lens;
    std::vector<uint8_t> data;
    (void)a.read_var(Selection::from_box(b), &lens, &data);
    return;
  }
  std::vector<uint8_t> dst(b.cells() * s.elem_size);
  Status st = a.read(Selection::from_box(b), dst.data());
  if (!st.ok() && st.code() == Errc::kInternal) {
    std::fprintf(stderr, "kInternal from bad bytes: %s\n", st.message().c_str());
    std::abort();
  }
}

void open_all(Container& c) {
  ArrayOptions o;
  o.durable_writes = false;
  uint64_t last = UINT64_MAX;
  for (auto& [key, value] : c.catalog().scan("arr/")) {
    if (key.size() < 20) continue;
    char* end = nullptr;
    const uint64_t id = std::strtoull(key.c_str() + 4, &end, 16);
    if (end != key.c_str() + 20 || id == last) continue;
    last = id;
    std::unique_ptr<Array> a;
    Status st = c.open_array(id, false, o, &a);
    if (!st.ok()) {
      if (st.code() == Errc::kInternal) {
        std::fprintf(stderr, "kInternal from bad bytes: %s\n", st.message().c_str());
        std::abort();
      }
      continue;
    }
    read_some(*a);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    std::string p = join_path(fuzz::scratch_dir(), "c.tsra");
    std::unique_ptr<Container> c;
    if (!Container::create(p, Container::CreateMode::kTruncate, &c).ok()) std::abort();
    return p;
  }();
  fuzz::put_file(join_path(path, "catalog.log"), data, size);
  std::unique_ptr<Container> c;
  if (Container::open(path, false, &c).ok()) {
    fuzz::expect_clean([&] { open_all(*c); });
    c.reset();
    if (Container::open_as_of(path, "1", &c).ok()) fuzz::expect_clean([&] { open_all(*c); });
  }
  return 0;
}
