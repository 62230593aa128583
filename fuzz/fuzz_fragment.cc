// A fragment (.tfr file or inline catalog record: header, tiles, footer, trailer;
// docs/format.md "Fragment files") opened, checked against its array's schema and read
// whole the way `tessera verify` and reads do: every dense tile, every sparse and erased
// tile's cells.  Input: [u32 n][schema file (n bytes)][fragment].
#include "engine/array/array_files.h"
#include "engine/context/context.h"
#include "engine/fragment/fragment.h"
#include "engine/schema/layout.h"
#include "fuzz/fuzz_util.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::shared_ptr<Context> ctx = fuzz::small_context();
  fuzz::Parts parts(data, size);
  std::vector<uint8_t> schema_file;
  if (!parts.next(&schema_file)) return 0;
  auto frag = std::make_shared<const std::vector<uint8_t>>(parts.rest());
  fuzz::expect_clean([&] {
    FragmentId eid;
    const Schema s = array_files::parse_schema_file(schema_file, "schema", &eid);
    auto f = Fragment::open_inline("fragment", frag, ctx);
    const FragmentMeta& m = f->meta();
    // Array::open and verify skip (with an error) a fragment of another shape.
    if (m.rank != static_cast<uint32_t>(s.rank()) || m.elem_size != s.elem_size) return;
    const Layout& layout = f->layout(s);  // the fragment's own order, as every reader takes it
    fuzz::expect_clean([&] { f->verify(layout, nullptr, nullptr); });
    // What the readers (read_planner.cc, consolidator.cc) rely on once a tile decoded:
    // a data entry's cells cover its box, a sparse tile holds its cells' coordinates and
    // values.  Fill entries are never read (their blob fields mean nothing).
    for (size_t i = 0; i < m.dense.size(); ++i) {
      const DenseEntry& e = m.dense[i];
      if (e.kind != DenseEntry::kData) continue;
      fuzz::expect_clean([&] {
        auto t = f->dense_tile(i);
        if (t->size() < e.box.cells() * m.elem_size) {
          std::fprintf(stderr, "dense tile %zu: %zu bytes for %llu cells\n", i, t->size(),
                       static_cast<unsigned long long>(e.box.cells()));
          std::abort();
        }
      });
      fuzz::expect_clean([&] { (void)f->stored_dense_bytes(i); });
    }
    for (size_t i = 0; i < m.sparse.size(); ++i) {
      const SparseEntry& e = m.sparse[i];
      fuzz::expect_clean([&] {
        auto t = f->sparse_coords(i, layout);
        if (t->coords.size() != e.cells * m.rank) std::abort();
      });
      fuzz::expect_clean([&] {
        auto t = f->sparse_tile(i, layout);
        if (t->coords.size() != e.cells * m.rank || t->values.size() != e.cells * m.elem_size) {
          std::fprintf(stderr, "sparse tile %zu: %zu values bytes for %llu cells\n", i, t->values.size(),
                       static_cast<unsigned long long>(e.cells));
          std::abort();
        }
      });
    }
    for (size_t i = 0; i < m.erased.size(); ++i) fuzz::expect_clean([&] { (void)f->erased_tile(i, layout); });
  });
  return 0;
}
