// A compact array's cells record ("TSRACELL" then the cells; docs/format.md "Compact
// arrays") decoded against its schema and read back, as CompactArray does on first use.
// Input: [u32 n][schema file (n bytes)][record].
#include "engine/array/array_files.h"
#include "engine/array/compact_cells.h"
#include "fuzz/fuzz_util.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Parts parts(data, size);
  std::vector<uint8_t> schema_file;
  if (!parts.next(&schema_file)) return 0;
  const std::vector<uint8_t> rec = parts.rest();
  fuzz::expect_clean([&] {
    FragmentId eid;
    const Schema s = array_files::parse_schema_file(schema_file, "schema", &eid);
    if (!s.compact) return;
    CompactCells cells(s);
    cells.decode(std::string_view(reinterpret_cast<const char*>(rec.data()), rec.size()), "record");
    std::vector<uint8_t> out(cells.bytes());
    Selection sel = Selection::from_box(s.domain());
    std::vector<uint64_t> stride(s.rank(), 1);
    for (int d = s.rank() - 2; d >= 0; --d) stride[d] = stride[d + 1] * s.extent[d + 1];
    if (s.rank() > 0 && s.domain().cells()) cells.read(sel, out.data(), stride.data());
  });
  return 0;
}
