// An array's schema file (<array>/schema: u32 length, the schema, the extent change's id,
// XXH3; docs/format.md "Arrays"), as Array::open reads it, and what is derived from a
// schema on open: the layout (tile/cell order keys) and a compact array's cells.
#include "engine/array/array_files.h"
#include "engine/array/compact_cells.h"
#include "engine/schema/layout.h"
#include "fuzz/fuzz_util.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> b(data, data + size);
  fuzz::expect_clean([&] {
    FragmentId id;
    Schema s = array_files::parse_schema_file(b, "schema", &id);
    Layout layout(s);
    (void)layout;
    if (s.compact) {
      CompactCells cells(s);
      (void)cells.bytes();
    }
  });
  return 0;
}
