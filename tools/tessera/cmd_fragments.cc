// cmd_fragments.cc — `tessera fragments CONTAINER DATASET [--json] [--all]`: each
// fragment of a dataset, oldest first (newer ones win where they overlap): id, time,
// kind, domain, cells, bytes, where it is stored.  --all adds the fragments a
// consolidation replaced that are kept until a vacuum.
#include <cstdio>

#include "tools/tessera/command.h"
#include "tools/tessera/container_view.h"
#include "tools/tessera/output.h"

namespace tool {

namespace {

struct Args {
  std::string container, dataset;
  std::string as_of;
  bool json = false, all = false;
};

void json_fragment(Json& j, const tessera::FragmentInfo& f, bool replaced) {
  j.begin_object();
  j.field("id", f.id.name());
  j.field("time_ns", f.id.ts);
  j.field("time", utc_time(f.id.ts));
  j.field("writer_rank", static_cast<uint64_t>(f.id.rank));
  j.field("generation", static_cast<uint64_t>(f.id.gen));
  j.field("kind", fragment_kind(f));
  j.key("domain");
  if (f.has_domain) {
    j.begin_object();
    j.key("low");
    j.values(f.domain.lo);
    j.key("high");
    j.values(f.domain.hi);
    j.end_object();
  } else {
    j.null();
  }
  j.field("cells", f.cells);
  j.field("bytes", f.file_size);
  j.field("dense_pieces", f.dense_tiles - f.fill_boxes);
  j.field("sparse_tiles", f.sparse_tiles);
  j.field("erased_tiles", f.erased_tiles);
  j.field("fill_boxes", f.fill_boxes);
  j.field("inline", f.is_inline);
  j.field("location", f.path);
  j.field("layout", f.order.name());  // its own tile:cell order (docs/layouts.md)
  j.key("replaces");
  j.begin_array();
  for (auto& r : f.replaces) j.value(r.name());
  j.end_array();
  j.field("replaced", replaced);
  j.end_object();
}

int run(const Args& args) {
  auto v = ContainerView::open(args.container, false, args.as_of);
  const ObjectView& o = v->resolve(args.dataset);
  if (o.type != tessera_vol::ObjType::kDataset) fail("'" + args.dataset + "' is a group or datatype, not a dataset");
  auto a = v->open_array(o, false);
  const auto live = a->fragments();
  const auto replaced = args.all ? a->replaced_fragments() : std::vector<tessera::FragmentInfo>{};
  if (args.json) {
    Json j;
    j.begin_object();
    j.field("container", args.container);
    j.field("dataset", o.path);
    j.field("compact", a->schema().compact);
    j.key("fragments");
    j.begin_array();
    for (auto& f : live) json_fragment(j, f, false);
    for (auto& f : replaced) json_fragment(j, f, true);
    j.end_array();
    j.end_object();
    std::printf("%s\n", j.str().c_str());
    return kOk;
  }
  if (a->schema().compact) {
    std::printf("%s is a compact array: its cells are one catalog record (%s), no fragments\n", o.path.c_str(),
                human_bytes(a->storage_bytes()).c_str());
    return kOk;
  }
  std::printf("%-43s  %-27s  %-12s  %12s  %10s  %s\n", "id", "time (UTC)", "kind", "cells", "bytes", "domain");
  const tessera::StorageOrder schema_order = a->schema().order();
  auto line = [&](const tessera::FragmentInfo& f, const char* mark) {
    std::string t = utc_time(f.id.ts);
    t = t.substr(0, t.size() - 4);  // without " UTC"
    // A fragment in another order than the dataset's (written before a conversion).
    const std::string order = f.order == schema_order ? "" : "  (layout " + f.order.name() + ")";
    std::printf("%-43s  %-27s  %-12s  %12llu  %10s  %s%s%s%s\n", f.id.name().c_str(), t.c_str(),
                fragment_kind(f).c_str(), static_cast<unsigned long long>(f.cells), human_bytes(f.file_size).c_str(),
                f.has_domain ? box_text(f.domain.lo, f.domain.hi).c_str() : "-", f.is_inline ? "  (inline)" : "",
                order.c_str(), mark);
  };
  for (auto& f : live) line(f, "");
  for (auto& f : replaced) line(f, "  (replaced: removed by vacuum)");
  uint64_t bytes = 0;
  for (auto& f : live) bytes += f.file_size;
  std::printf("%zu fragment(s), %s", live.size(), human_bytes(bytes).c_str());
  if (!args.all && !a->replaced_fragments().empty())
    std::printf("; %zu replaced fragment(s) kept until vacuum (--all lists them)", a->replaced_fragments().size());
  std::printf("\n");
  return kOk;
}

}  // namespace

Runner setup_fragments(CLI::App& sub) {
  auto args = std::make_shared<Args>();
  container_arg(sub, args->container);
  sub.add_option("DATASET", args->dataset, "The dataset (a path inside the container)")->required();
  json_flag(sub, args->json);
  as_of_option(sub, args->as_of);
  sub.add_flag("--all", args->all, "Also the replaced fragments kept until a vacuum");
  return [args] { return run(*args); };
}

}  // namespace tool
