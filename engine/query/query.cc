// query.cc — see query.h.
#include "engine/query/query.h"

#include <algorithm>

#include "engine/index/query_parse.h"

namespace tessera {

namespace {

[[noreturn]] void fail_var(Errc code, const ParsedQuery& q, const QueryVar& v, const std::string& why) {
  throw_error(code, "query \"" + q.text + "\": at character " + std::to_string(v.pos) + ": " + why);
}

// A variable's subarray over its dataset's extent: Python's slicing rules (a missing
// start is 0, a missing end the extent, an end past the extent is clipped, start >= end
// is empty), a single index must lie inside; missing trailing dimensions are whole.
TermRegion region_of(const ParsedQuery& q, const QueryVar& v, const Schema& s, const std::string& path) {
  const int rank = s.rank();
  if (v.slices.size() > static_cast<size_t>(rank))
    fail_var(Errc::kInvalidArgument, q, v,
             v.text + " has " + std::to_string(v.slices.size()) + " indices, but " + path + " has " +
                 std::to_string(rank) + " dimension" + (rank == 1 ? "" : "s"));
  TermRegion r;
  for (int d = 0; d < rank; ++d) {
    const uint64_t ext = s.extent[d];
    if (static_cast<size_t>(d) >= v.slices.size()) {
      r.start.push_back(0);
      r.stride.push_back(1);
      r.count.push_back(ext);
      continue;
    }
    const QuerySlice& sl = v.slices[d];
    if (sl.single) {
      if (*sl.start >= ext)
        fail_var(Errc::kInvalidArgument, q, v,
                 "index " + std::to_string(*sl.start) + " is outside dimension " + std::to_string(d) + " of " + path +
                     " (extent " + std::to_string(ext) + ")");
      r.start.push_back(*sl.start);
      r.stride.push_back(1);
      r.count.push_back(1);
      continue;
    }
    const uint64_t start = sl.start.value_or(0), end = std::min(sl.end.value_or(ext), ext);
    const uint64_t stride = sl.stride.value_or(1);
    r.start.push_back(std::min(start, ext));
    r.stride.push_back(stride);
    r.count.push_back(start >= end ? 0 : (end - start - 1) / stride + 1);
  }
  return r;
}

struct Var {
  QueryDataset ds;
  TermRegion region;
};

class Evaluation {
 public:
  Evaluation(const ParsedQuery& q, std::vector<Var>& vars, uint64_t rows, QueryResult* out)
      : q_(q), vars_(vars), rows_(rows), out_(out) {}

  Bitmap eval(const QueryNode& n) {
    switch (n.kind) {
      case QueryNode::kCmp: {
        TermAnswer a;
        term(n, true, &a);
        return std::move(a.hits);
      }
      case QueryNode::kAnd: {
        Bitmap x = eval(*n.a);
        if (x.empty()) return x;  // nothing left for the right side to keep
        x.and_with(eval(*n.b));
        return x;
      }
      case QueryNode::kOr: {
        Bitmap x = eval(*n.a);
        x.or_with(eval(*n.b));
        return x;
      }
      case QueryNode::kNot: {
        Bitmap x = eval(*n.a);
        x.flip(0, rows_);
        return x;
      }
    }
    throw_error(Errc::kInternal, "query: unknown node");
  }

  void term(const QueryNode& n, bool want_hits, TermAnswer* a) {
    Var& v = vars_[n.var];
    TermQuery tq;
    tq.op = n.op;
    tq.lit = n.lit;
    tq.region = v.region;
    tq.want_hits = want_hits;
    Status st = v.ds.array->evaluate(tq, a);
    if (!st.ok()) throw_error(st.code(), v.ds.path + ": " + st.message());
    out_->decided += a->decided;
    out_->compared += a->compared;
  }

 private:
  const ParsedQuery& q_;
  std::vector<Var>& vars_;
  uint64_t rows_;
  QueryResult* out_;
};

}  // namespace

Status run_query(const std::string& text, const QueryResolver& resolve, bool want_hits, QueryResult* out) {
  return guard([&] {
    *out = QueryResult();
    const ParsedQuery q = parse_query(text);
    std::vector<Var> vars;
    uint64_t rows = 0;
    for (const QueryVar& v : q.vars) {
      std::vector<QueryDataset> found = resolve(v.name, v.regex);
      if (found.empty())
        fail_var(Errc::kNotFound, q, v,
                 v.regex ? "no dataset's path matches the regular expression \"" + v.name + "\""
                         : "no dataset '" + v.name + "'");
      if (found.size() > 1) {
        std::string list;
        for (size_t i = 0; i < found.size() && i < 8; ++i) list += (i ? ", " : "") + found[i].path;
        if (found.size() > 8) list += ", ...";
        fail_var(Errc::kInvalidArgument, q, v,
                 "\"" + v.name + "\" matches " + std::to_string(found.size()) + " datasets (" + list +
                     "); a variable must name exactly one");
      }
      Var var{found[0], {}};
      if (!var.ds.array) fail_var(Errc::kUnsupported, q, v, var.ds.path + " has no stored array to query");
      const Schema& s = var.ds.array->schema();
      num_type(s, var.ds.path);  // a clear error before any work
      var.region = region_of(q, v, s, var.ds.path);
      const uint64_t n = var.region.cells();
      if (vars.empty()) {
        rows = n;
      } else if (n != rows) {
        fail_var(Errc::kInvalidArgument, q, v,
                 v.text + " has " + std::to_string(n) + " elements but " + q.vars[0].text + " has " +
                     std::to_string(rows) +
                     " (the datasets of one query are paired element by element, in row-major order)");
      }
      vars.push_back(std::move(var));
    }
    out->first = vars[0].ds;
    out->region = vars[0].region;
    out->shape = vars[0].region.count;
    Evaluation ev(q, vars, rows, out);
    if (!want_hits && q.root->kind == QueryNode::kCmp) {
      TermAnswer a;
      ev.term(*q.root, false, &a);
      out->count = a.count;
      return;
    }
    out->hits = ev.eval(*q.root);
    out->count = out->hits.cardinality();
    if (!want_hits) out->hits.clear();
  });
}

void query_cell(const QueryResult& r, uint64_t p, uint64_t* cell) {
  const int rank = static_cast<int>(r.shape.size());
  for (int d = rank - 1; d >= 0; --d) {
    const uint64_t n = std::max<uint64_t>(1, r.shape[d]);
    cell[d] = r.region.start[d] + r.region.stride[d] * (p % n);
    p /= n;
  }
}

}  // namespace tessera
