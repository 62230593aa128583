// cmd_query.cc — `tessera query CONTAINER "EXPR" [--count | --coords | --values]`: a value
// query over the container's datasets (docs/queries.md, the grammar), evaluated by the
// engine's run_query — the same evaluation as tessera_Fquery* and tessera.query().
// Variables name datasets by path from the root ("/T" or "T") or by re"regex".
// Output: the count; or one line per hit with the first variable's coordinates (and,
// with --values, that dataset's value there), in row-major order of its subarray.
#include <cinttypes>
#include <cstdio>
#include <regex>

#include "engine/query/query.h"
#include "engine/index/value_type.h"
#include "tools/tessera/command.h"
#include "tools/tessera/container_view.h"
#include "tools/tessera/output.h"

namespace tool {

namespace {

struct Args {
  std::string container, expr;
  bool count = false, coords = false, values = false;
};

std::vector<tessera::QueryDataset> find(ContainerView& v, const std::string& name, bool regex) {
  std::vector<tessera::QueryDataset> out;
  auto add = [&](const ObjectView& o) { out.push_back({o.path, std::shared_ptr<tessera::Array>(v.open_array(o, false))}); };
  if (!regex) {
    for (const ObjectView* o : v.datasets())
      if (o->path == (name.empty() || name[0] != '/' ? "/" + name : name)) add(*o);
    return out;
  }
  std::regex re;
  try {
    re = std::regex(name, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    fail("bad regular expression \"" + name + "\": " + e.what());
  }
  for (const ObjectView* o : v.datasets())
    if (std::regex_search(o->path, re)) add(*o);
  return out;
}

// Value i of `bytes` (elements of the array's type), as text.
std::string value_text(const tessera::Schema& s, const uint8_t* bytes, size_t i) {
  return tessera::visit_num(tessera::num_type(s, "the first variable"), [&](auto zero) {
    using T = decltype(zero);
    const T x = tessera::load_value<T>(bytes + i * s.elem_size, s.big_endian);
    if constexpr (std::is_floating_point_v<T>) {
      char t[64];
      std::snprintf(t, sizeof t, "%.17g", static_cast<double>(x));
      return std::string(t);
    } else {
      return std::to_string(x);
    }
  });
}

int run(const Args& args) {
  auto v = ContainerView::open(args.container, false);
  tessera::QueryResult r;
  const bool hits = args.coords || args.values;
  tessera::Status st = tessera::run_query(
      args.expr, [&](const std::string& name, bool regex) { return find(*v, name, regex); }, hits, &r);
  if (!st.ok()) fail("query: " + st.message(), st.code() == tessera::Errc::kInvalidArgument ? kUsage : kFailed);
  if (!hits) {
    std::printf("%" PRIu64 "\n", r.count);
    return kOk;
  }
  const size_t rank = r.shape.size();
  const tessera::Schema& schema = r.first.array->schema();
  std::vector<uint64_t> cells;
  std::vector<uint8_t> vals;
  r.hits.for_each_batch([&](const uint64_t* pos, size_t n) {  // bounded: a batch at a time
    cells.resize(n * rank);
    for (size_t i = 0; i < n; ++i) tessera::query_cell(r, pos[i], &cells[i * rank]);
    if (args.values) {
      vals.resize(n * schema.elem_size);
      tessera::Status rs = r.first.array->read_points(cells.data(), n, vals.data());
      if (!rs.ok()) fail("reading the hits' values: " + rs.message());
    }
    std::string line;
    for (size_t i = 0; i < n; ++i) {
      line.clear();
      for (size_t d = 0; d < rank; ++d) line += (d ? " " : "") + std::to_string(cells[i * rank + d]);
      if (args.values) line += "\t" + value_text(schema, vals.data(), i);
      std::printf("%s\n", line.c_str());
    }
  });
  return kOk;
}

}  // namespace

Runner setup_query(CLI::App& sub) {
  auto args = std::make_shared<Args>();
  container_arg(sub, args->container);
  sub.add_option("EXPR", args->expr, "The query, e.g. \"T[0:50, :] > 270 && P < 1e5\" (docs/queries.md)")
      ->required();
  auto* c = sub.add_flag("--count", args->count, "Print the number of hits (the default)");
  auto* k = sub.add_flag("--coords", args->coords, "Print each hit's coordinates in the first variable's dataset");
  auto* x = sub.add_flag("--values", args->values, "Print each hit's coordinates and the first variable's value");
  c->excludes(k)->excludes(x);
  k->excludes(x);
  return [args] { return run(*args); };
}

}  // namespace tool
