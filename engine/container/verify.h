// verify.h — checking a whole container against its checksums and its records
// (`tessera verify`, docs/tool.md).
//
// Everything a reader would check, for everything stored, without stopping at the first
// problem: the container header; the catalog log (every record's checksums: opening it
// replays them); every array's schema; every fragment file and inline fragment record
// (footer, every tile's checksums and filter streams, sparse tiles' order), the retained
// ones that a consolidation replaced included; every variable-length value's heap bytes;
// compact arrays' cells; and that every fragment file the catalog records as published
// is present (or replaced by a present fragment).  Read-only: it takes no lock and
// changes nothing, so it may run while the container is open elsewhere (what a writer
// has not flushed yet is not on disk, and not checked).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/util/error.h"

namespace tessera {

struct VerifyReport {
  // What is wrong: each names the file or record and what was found.
  std::vector<std::string> problems;
  // What is worth knowing but not damage (an unfinished publish a writer will finish,
  // a crashed writer's leftovers).
  std::vector<std::string> notes;
  uint64_t arrays = 0;          // arrays checked
  uint64_t fragments = 0;       // fragment files and inline records checked
  uint64_t tiles = 0;           // data, sparse and erased tiles checked
  uint64_t bytes = 0;           // stored bytes read and checked (fragments)
  uint64_t var_values = 0;      // variable-length values checked against their heaps
  uint64_t recorded_files = 0;  // fragment files the catalog records
  bool ok() const { return problems.empty(); }
};

struct VerifyOptions {
  // Called after each tile with (stored bytes checked, stored bytes in all) — for a
  // progress bar.  May be empty.
  std::function<void(uint64_t, uint64_t)> progress;
  // At most this many problems are listed per fragment (the rest are counted).
  size_t max_problems_per_fragment = 8;
};

// Fills *out.  The returned status is an error only when nothing could be checked at all
// (the path is not a container); damage is reported in out->problems.
Status verify_container(const std::string& path, const VerifyOptions& opts, VerifyReport* out);

}  // namespace tessera
