// options.h — the engine's settings, in one object, parsed and validated in one place.
//
// Every tunable of the engine lives here with its default, its valid range and its name
// (the same name as a "key=value" setting and, upper-cased with a TESSERA_ prefix, as an
// environment variable): settings come from the defaults, then the environment, then
// the connector's info string (HDF5_VOL_CONNECTOR="tessera threads=4 write_buffer_mb=128"),
// and a bad value is an error naming the setting and its range — never a silent default
// or a wrapped-around number.
//
// Two kinds of settings:
//   per container — write_buffer_mb, direct_write_cells, blob_kb, inline_fragment_kb,
//     inline_total_mb, index_on_write, index_precision, index_max_bins, one_file,
//     auto_consolidate, consolidate_fanin, consolidate_ratio, consolidate_retain_s: each
//     container (file) uses the options it was opened with
//     (array_options(), Container::set_inline_budget);
//   per process — threads, io_threads, tile_cache_mb, write_memory_mb, max_open_files: the
//     thread pools, the decoded-tile cache, the write budget (write_budget.h) and the
//     file cache (file_cache.h) are shared by every container of the process and sized
//     once, from the
//     options of the first container opened (configure_process()); a later open asking
//     for other sizes keeps the first ones.
#pragma once

#include <cstdint>
#include <string>

#include "engine/util/error.h"

namespace tessera {

struct ArrayOptions;  // array.h

struct EngineOptions {
  unsigned threads = 0;               // filter threads; 0: the cores this process may use
  unsigned io_threads = 4;            // threads that wait for the disk
  uint64_t tile_cache_mb = 256;       // decoded-tile cache
  uint64_t write_buffer_mb = 64;      // an array's write buffer spills past this
  uint64_t write_memory_mb = 64;      // all write buffers of the process together (write_budget.h)
  uint64_t direct_write_cells = 16384;  // box writes of at least this many cells bypass the buffer
  uint64_t blob_kb = 16384;            // smaller box writes are buffered whole (blob_buffer.h; 0: never)
  uint64_t inline_fragment_kb = 64;   // fragments up to this size live in the catalog (0: never)
  uint64_t inline_total_mb = 256;     // a container's catalog holds at most this many inline bytes
  // Open read-only as of a past commit (history.h): "12", "@<ns>" or a UTC time
  // "2026-11-26T10:41:09Z" (no blanks: settings are blank-separated).  Per file; only in
  // the connector's settings or fapl, never from the environment (which would turn every
  // open of every file into a read of the past).  Empty: the present.
  std::string as_of;
  // The layout of new datasets (docs/layouts.md, parse_layout): a tile order "row-major"
  // (empty: the same), "column-major", "z-order", "hilbert", "multimap", optionally with
  // ":row-major" or ":column-major" for the cells inside tiles.  A dataset's own order is stored in
  // its schema; tessera_Pset_layout on the dcpl overrides this per dataset.
  std::string layout;
  // Value indexes (index_builder.h, docs/queries.md): build every new file fragment's
  // index when it is published (a flush, a consolidation); bin boundaries' significant
  // digits and the most bins per fragment, for these and for on-demand builds.
  uint64_t index_on_write = 0;
  uint64_t index_precision = 3;
  uint64_t index_max_bins = 1024;
  // New containers are one regular file (1; docs/format.md, "The one-file container") or
  // a directory (0).  The engine's create without a form takes the process's setting;
  // the connector passes its own per file.
  uint64_t one_file = 0;
  // The most fragment, heap and index files the process keeps open at once (the file
  // cache, file_cache.h: the others are opened again when read); 0: half of the soft
  // RLIMIT_NOFILE, at least 16 and at most 4096.
  uint64_t max_open_files = 0;
  // Automatic consolidation (ArrayOptions::AutoMerge; docs/engine.md): on or off; how
  // many fragments of similar size make a merge; "similar" (within this factor); how
  // long the files a merge replaced stay for reads as of earlier commits (seconds).
  uint64_t auto_consolidate = 1;
  uint64_t consolidate_fanin = 4;
  uint64_t consolidate_ratio = 2;
  uint64_t consolidate_retain_s = 3600;

  // One "key=value" setting (the names above).
  Status set(const std::string& key, const std::string& value);
  // Settings separated by blanks or commas ("threads=4 tile_cache_mb=512"); the first bad
  // one is the error.
  Status apply(const std::string& settings);
  // The defaults, then every TESSERA_<NAME> environment variable that is set.
  static Status from_env(EngineOptions* out);

  ArrayOptions array_options() const;
  std::string to_string() const;  // every setting, "key=value" separated by blanks
};

// The per-process settings the pools and the tile cache are built from (at their first
// use); the first call wins, later calls are ignored.  Without a call, the environment's.
void configure_process(const EngineOptions& o);
const EngineOptions& process_options();

}  // namespace tessera
