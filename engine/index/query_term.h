// query_term.h — one comparison of a query (`T[0:50, :] > 270`) answered over one
// array: which cells of a subarray hold a value satisfying it.
//
// Every cell answers from its newest value (ownership.h): a dense claim's cells from the
// fragment holding that claim, winning sparse cells from their tile or the write buffer;
// cells a newer sparse or erased cell overrides are taken out of the older claim, and
// cells nobody claims (never written, erased, cut off by a shrink) read as the fill
// value.  A fragment with an index file (index_format.h) answers from the bitmaps of its
// bins, looking at values only where a bin straddles the constant (candidates); a
// fragment without one (not built yet, inline, written since) is scanned.  When the fill
// value itself satisfies the comparison the opposite is computed over the stored values
// and complemented, so unwritten cells never have to be enumerated.
//
// The region is walked in slabs of whole tile rows (at most 2^24 cells each): memory is
// one slab's claims, winning sparse cells and needed bitmaps, plus the answer.
#pragma once
#include <cstdint>
#include <string>

#include "engine/index/bitmap.h"
#include "engine/geometry/box.h"
#include "engine/read/read_planner.h"
#include "engine/schema/schema.h"
#include "engine/index/value_type.h"

namespace tessera {

// A subarray (FastQuery's var[start:end:stride]): per dimension the first index, the
// step and how many; its cells, in row-major order, are the query's positions.
struct TermRegion {
  Coords start, stride, count;
  uint64_t cells() const;  // 0 when any count is 0; throws kInvalidArgument past 2^64
};

struct TermQuery {
  CmpOp op = CmpOp::kLt;
  Literal lit;
  TermRegion region;  // inside the array's extent
  bool want_hits = true;  // false: only the count
};

struct TermAnswer {
  uint64_t count = 0;
  Bitmap hits;  // positions (row-major over region.count) satisfying the comparison
  // How the answer was found: positions decided by index bins alone, and values read
  // and compared (candidates of straddling bins, fragments without an index, the buffer).
  uint64_t decided = 0, compared = 0;
};

// `dir`: the array's directory (its index files); `what` names the array in messages.
void evaluate_term(const Schema& s, const ReadView& view, const std::string& dir, const std::string& what,
                   const TermQuery& q, TermAnswer* out);
// The same over values already read: `values` holds the region's cells in row-major
// order (a compact array's few cells).
void evaluate_values(const Schema& s, const std::string& what, const TermQuery& q, const uint8_t* values,
                     TermAnswer* out);
// Throws kInvalidArgument unless q's region fits the extent (naming `what`).
void check_region(const Schema& s, const std::string& what, const TermRegion& r);

}  // namespace tessera
