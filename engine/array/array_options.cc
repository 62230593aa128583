// array_options.cc — EngineOptions::array_options (context/options.h): the settings an
// array takes from the engine's options.  Here rather than in context/, which lies below
// array/ and must not include it.
#include "engine/array/array.h"
#include "engine/context/options.h"

namespace tessera {

ArrayOptions EngineOptions::array_options() const {
  ArrayOptions a;
  a.buffer_budget = write_buffer_mb << 20;
  a.direct_cells = direct_write_cells;
  a.blob_bytes = blob_kb << 10;
  a.inline_fragment_bytes = inline_fragment_kb << 10;
  a.index_on_write = index_on_write != 0;
  a.index.precision = static_cast<uint32_t>(index_precision);
  a.index.max_bins = static_cast<uint32_t>(index_max_bins);
  a.auto_merge.on = auto_consolidate != 0;
  a.auto_merge.fanin = static_cast<uint32_t>(consolidate_fanin);
  a.auto_merge.ratio = static_cast<uint32_t>(consolidate_ratio);
  a.auto_merge.retain_ns = consolidate_retain_s * 1000000000ull;
  return a;
}

}  // namespace tessera
