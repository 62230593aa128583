// The rows of an N-d block of a strided source, as byte spans in the order of the
// block's dense row-major image: what FragmentWriter::add_dense_tile_spans writes
// straight from the caller's buffer instead of gathering the block into a tile first.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/util/checksum.h"

namespace tessera {

// Rows shorter than this are gathered instead: a pwritev piece costs the kernel about
// as much as copying a few hundred bytes, and IOV_MAX bounds the pieces per call.
constexpr uint64_t kMinSpanRowBytes = 512;

// True, with *out holding the spans, when `dstride` (elements) is the dense row-major
// order of `shape`, the source's rows are contiguous (sstride[rank-1] == 1) and at least
// kMinSpanRowBytes long; rows that touch in the source are one span.  False otherwise
// (*out unspecified): the caller gathers.  No shape[d] may be 0.
bool row_spans(int rank, const uint64_t* shape, const uint8_t* src, const uint64_t* sstride,
               const uint64_t* dstride, size_t es, std::vector<ByteSpan>* out);

}  // namespace tessera
