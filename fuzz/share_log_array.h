// share_log_array.h — the array fuzz_share_log reads other ranks' share logs into, and
// make_corpus writes its seed logs from: both must use the same schema, since a log's
// records are fragments of that array.
#pragma once
#include "engine/array/array.h"

namespace tessera::fuzz {

// 2-D int32, 48 x 40 in tiles of 16 x 16 (partial tiles at the edges).
inline Schema share_log_schema() {
  Schema s;
  s.extent = {48, 40};
  s.max_extent = {48, 40};
  s.tile_extent = {16, 16};
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  return s;
}

// Rank `rank` of a job of `ranks`, writing (or reading) a parallel file's collective
// array as the connector opens it: small writes shared through share logs.
inline ArrayOptions share_log_rank(uint32_t rank, uint32_t ranks) {
  ArrayOptions o;
  o.durable_writes = false;
  o.collective = true;
  o.writer_rank = rank;
  o.shadow = rank != 0;
  o.share_ranks = ranks;
  return o;
}

}  // namespace tessera::fuzz
