// query.h — value queries over the datasets of a file (the FastQuery paper,
// ../shared/seeds/fastquery-parallel-indexing.txt; docs/queries.md).
//
//   vapor[0:50, :] > 0.5 && T > 270
//
// Each variable is a dataset (found by the caller's resolver: by path, or by regular
// expression) with an optional subarray; the variables of one query must have the same
// number of elements, which are paired in row-major order (FastQuery's mapping of arrays
// onto a relational table: element i of every variable is row i).  The answer is the
// set of rows satisfying the expression, as positions in the first variable's subarray.
//
// run_query is the single entry point for every front end: the connector's
// tessera.query operation (C API tessera_Fquery*, Python tessera.query) and the command
// line tool's `tessera query` go through it.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/index/bitmap.h"
#include "engine/util/error.h"
#include "engine/index/query_term.h"

namespace tessera {

struct QueryDataset {
  std::string path;              // the name messages use (the dataset's full path)
  std::shared_ptr<Array> array;
};

// The datasets a variable names: `name` is a path (regex false) or a regular expression
// (ECMAScript, searched for in every dataset's full path).  Throws (an Error) when the
// name cannot be looked up at all; an empty answer means no such dataset.
using QueryResolver = std::function<std::vector<QueryDataset>(const std::string& name, bool regex)>;

struct QueryResult {
  uint64_t count = 0;
  Bitmap hits;           // row-major positions in `shape` (when asked for)
  Coords shape;          // the first variable's subarray shape
  QueryDataset first;    // position p is the cell start + stride * unravel(p, shape) of it
  TermRegion region;
  uint64_t decided = 0, compared = 0;  // over all comparisons (TermAnswer)
};

// Parses `text`, resolves its variables and evaluates it.  want_hits = false computes
// only the count (cheaper: a single comparison's count may come from the index's
// counts alone).  Errors (kInvalidArgument for the text, kNotFound for a dataset, ...)
// name the character of the text they are about.
Status run_query(const std::string& text, const QueryResolver& resolve, bool want_hits, QueryResult* out);

// The coordinates of position p of a result: start + stride * unravel(p, shape).
void query_cell(const QueryResult& r, uint64_t p, uint64_t* cell);

}  // namespace tessera
