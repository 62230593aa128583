// cmd_index.cc — `tessera index CONTAINER DATASET [--drop] [--rebuild]`: builds (or drops)
// the value indexes of a dataset's fragments (docs/queries.md) with the engine's
// Array::build_index — the same build as tessera_Dbuild_index and tessera.index().
// Indexes are derived data beside the fragments; a writer must not have the container open.
#include <cstdio>

#include "engine/index/index_builder.h"
#include "tools/tessera/command.h"
#include "tools/tessera/container_view.h"
#include "tools/tessera/output.h"
#include "tools/tessera/progress.h"

namespace tool {

namespace {

struct Args {
  std::string container, dataset;
  bool drop = false, rebuild = false;
  uint32_t precision = 3, max_bins = 1024;
};

int run(const Args& args) {
  auto v = ContainerView::open(args.container, true);
  const ObjectView& d = v->resolve(args.dataset);
  auto a = v->open_array(d, true);
  if (args.drop) {
    tessera::Status st = a->drop_index();
    if (!st.ok()) fail("dropping the indexes of '" + d.path + "': " + st.message());
    std::printf("%s: indexes dropped (queries scan its values)\n", d.path.c_str());
    return kOk;
  }
  tessera::IndexOptions o;
  o.precision = args.precision;
  o.max_bins = args.max_bins;
  tessera::IndexBuild b;
  b.rebuild = args.rebuild;
  Progress bar("indexing " + d.path, 0, /*bytes=*/false);
  b.progress = [&](uint64_t done, uint64_t total) {
    bar.set_total(total);
    bar.update(done);
  };
  tessera::Status st = a->build_index(o, &b);
  bar.finish();
  if (!st.ok()) fail("indexing '" + d.path + "': " + st.message());
  std::printf("%s: indexed %llu fragment(s), %llu cell(s); %s of index written\n", d.path.c_str(),
              static_cast<unsigned long long>(b.built), static_cast<unsigned long long>(b.cells),
              human_bytes(b.bytes).c_str());
  return kOk;
}

}  // namespace

Runner setup_index(CLI::App& sub) {
  auto args = std::make_shared<Args>();
  container_arg(sub, args->container, "The container (no writer may have it open)");
  sub.add_option("DATASET", args->dataset, "The dataset to index (integer or floating-point elements)")->required();
  sub.add_flag("--drop", args->drop, "Remove the dataset's indexes instead (queries then scan)");
  sub.add_flag("--rebuild", args->rebuild, "Rebuild indexes that exist too");
  sub.add_option("--precision", args->precision, "Significant decimal digits of bin boundaries")
      ->check(CLI::Range(1, 9));
  sub.add_option("--max-bins", args->max_bins, "Bins per fragment, at most")->check(CLI::Range(2, 65536));
  return [args] { return run(*args); };
}

}  // namespace tool
