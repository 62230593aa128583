// cmd_info.cc — `tessera info CONTAINER [OBJECT] [--json]`: what a container holds.
//
// Every object (groups, datasets, committed datatypes, soft and external links) with its
// attributes; each dataset's type, shape, HDF5 layout and filters, the engine's tiling
// (tile extents, tile and cell order, tile filters) and its fragments (count, kinds,
// bytes, time range, replaced ones awaiting a vacuum or their retirement); automatic
// consolidation's state (the policy, the merge due, the last merge, what it wrote);
// totals of bytes stored against the logical size.  With OBJECT, only that object (and, for a group, what is under it).
#include <algorithm>
#include <cstdio>
#include <map>

#include "tools/tessera/command.h"
#include "tools/tessera/container_view.h"
#include "tools/tessera/output.h"

namespace tool {

namespace {

using tessera_vol::ObjType;

const char* type_name(ObjType t) {
  return t == ObjType::kGroup ? "group" : t == ObjType::kDataset ? "dataset" : "datatype";
}

struct AttrView {
  std::string name, type;
  std::vector<uint64_t> dims;
  std::string space_kind;
};

std::vector<AttrView> attr_views(const ContainerView& v, uint64_t oid) {
  std::vector<AttrView> out;
  for (auto& [name, a] : v.attrs(oid)) {
    AttrView av{name, "(undecodable type)", {}, "simple"};
    Hid t(H5Tdecode(a.type_enc.data()));
    if (t.valid()) av.type = type_text(t);
    Hid s(H5Sdecode(a.space_enc.data()));
    if (s.valid()) {
      H5S_class_t k = H5Sget_simple_extent_type(s);
      av.space_kind = k == H5S_SCALAR ? "scalar" : k == H5S_NULL ? "null" : "simple";
      int r = H5Sget_simple_extent_ndims(s);
      if (r > 0) {
        std::vector<hsize_t> d(r);
        H5Sget_simple_extent_dims(s, d.data(), nullptr);
        av.dims.assign(d.begin(), d.end());
      }
    }
    out.push_back(std::move(av));
  }
  H5Eclear2(H5E_DEFAULT);
  return out;
}

uint64_t product(const std::vector<uint64_t>& d) {
  uint64_t n = 1;
  for (uint64_t x : d) n = x && n > UINT64_MAX / x ? UINT64_MAX : n * x;
  return n;
}

struct DatasetSummary {
  DatasetView d;
  FragmentTotals t;
  uint64_t stored = 0, logical = 0;
  bool variable = false;
  tessera::IndexInfo index;  // value indexes (docs/queries.md); fragments == 0: none to index
  // Live fragments in another order than the dataset's (written before a conversion,
  // docs/layouts.md), per layout name.
  std::map<std::string, uint64_t> other_orders;
  // Automatic consolidation (engine/array/auto_merge.h), under the policy this
  // environment's settings give (TESSERA_CONSOLIDATE_*; the writer's may differ).
  tessera::ConsolidationInfo merging;
};

// The settings a writer started from this environment would merge with.
tessera::ArrayOptions policy_options() {
  tessera::EngineOptions eo;
  if (!tessera::EngineOptions::from_env(&eo).ok()) eo = tessera::EngineOptions();  // the defaults; open reports the error
  tessera::ArrayOptions o;
  o.auto_merge = eo.array_options().auto_merge;
  return o;
}

DatasetSummary summarize(const ContainerView& v, const ObjectView& o) {
  DatasetSummary s;
  s.d = v.dataset(o);
  // Variable-length data has no fixed logical size (its values live in heaps).
  s.variable = s.d.has_array && s.d.schema.var;
  s.logical = s.d.space_kind == "null" || s.variable ? 0 : product(s.d.dims) * s.d.elem_size;
  if (s.d.has_array) {
    auto a = v.open_array(o, false, policy_options());
    const auto live = a->fragments();
    s.merging = a->consolidation_info();
    s.t = totals_of(live, a->replaced_fragments());
    for (const auto& f : live)
      if (f.order != s.d.schema.order()) s.other_orders[f.order.name()]++;
    s.stored = a->storage_bytes();
    if (!s.d.schema.var && s.d.schema.kind != tessera::ElementKind::kOpaque && !a->index_info(&s.index).ok())
      s.index = tessera::IndexInfo();  // not indexable, or unreadable: shown as no index
  }
  return s;
}

void print_attrs(const std::vector<AttrView>& attrs) {
  for (auto& a : attrs)
    std::printf("    attribute  %s: %s, %s\n", a.name.c_str(), a.type.c_str(),
                a.space_kind == "simple" ? dims_text(a.dims).c_str() : a.space_kind.c_str());
}

void print_dataset(const DatasetSummary& s) {
  const DatasetView& d = s.d;
  std::string shape = d.space_kind == "simple" ? dims_text(d.dims) : d.space_kind;
  if (d.space_kind == "simple" && d.maxdims != d.dims) shape += " (max " + dims_text(d.maxdims) + ")";
  std::printf("    type       %s\n", d.type.c_str());
  std::printf("    shape      %s\n", shape.c_str());
  std::string layout = d.layout;
  if (!d.chunk.empty()) layout += " " + dims_text(d.chunk);
  std::printf("    layout     %s; filters %s\n", layout.c_str(),
              d.filters.empty() ? "none" : [&] {
                std::string f;
                for (auto& x : d.filters) f += (f.empty() ? "" : ", ") + x;
                return f;
              }().c_str());
  if (!d.has_array) {
    std::printf("    storage    none in this container (%s data)\n", d.layout.c_str());
    return;
  }
  const tessera::Schema& sc = d.schema;
  if (sc.compact) {
    std::printf("    tiles      compact array: one catalog record of all cells\n");
  } else {
    std::string cube;  // the MultiMap basic cube, in tiles (docs/layouts.md)
    if (!sc.multimap_cube.empty()) cube = " (basic cube " + dims_text(sc.multimap_cube) + " tiles)";
    std::printf("    tiles      %s; tile order %s%s, cell order %s; tile filters %s%s\n", dims_text(sc.tile_extent).c_str(),
                order_text(sc.tile_order).c_str(), cube.c_str(), order_text(sc.cell_order).c_str(),
                pipeline_text(sc.filters).c_str(), sc.var ? "; variable-length cells (heap files)" : "");
  }
  const FragmentTotals& t = s.t;
  if (t.count) {
    std::string kinds;
    for (auto& [k, n] : t.kinds) kinds += (kinds.empty() ? "" : ", ") + std::to_string(n) + " " + k;
    std::printf("    fragments  %llu (%s%s), %s to %s each\n", static_cast<unsigned long long>(t.count), kinds.c_str(),
                t.inline_count ? (", " + std::to_string(t.inline_count) + " inline").c_str() : "",
                human_bytes(t.min_bytes).c_str(), human_bytes(t.max_bytes).c_str());
    std::printf("    written    %s .. %s\n", utc_time(t.first_ns).c_str(), utc_time(t.last_ns).c_str());
  } else if (!sc.compact) {
    std::printf("    fragments  none (never written: reads return the fill value)\n");
  }
  for (const auto& [name, n] : s.other_orders)
    std::printf("    orders     %llu fragment(s) in layout %s, not the dataset's (`tessera consolidate --layout` "
                "rewrites them)\n",
                static_cast<unsigned long long>(n), name.c_str());
  const tessera::ConsolidationInfo& m = s.merging;
  if (t.replaced && m.retained)
    std::printf("    replaced   %llu fragment(s), %s; %llu file(s) kept for reads of the past, the first until %s "
                "(consolidate_retain_s), the rest until `tessera vacuum`\n",
                static_cast<unsigned long long>(t.replaced), human_bytes(t.replaced_bytes).c_str(),
                static_cast<unsigned long long>(m.retained), utc_time(m.next_retire_ns).c_str());
  else if (t.replaced)
    std::printf("    replaced   %llu fragment(s), %s, kept until `tessera vacuum`\n",
                static_cast<unsigned long long>(t.replaced), human_bytes(t.replaced_bytes).c_str());
  if (!sc.compact && (t.count || m.merges)) {
    std::string due = m.due_inputs ? "a merge of " + std::to_string(m.due_inputs) + " fragments (" +
                                         human_bytes(m.due_bytes) + ") is due at the next writer's commit or open"
                                   : "no merge due";
    std::printf("    merging    automatic (fanin %u, ratio %u): %s; at most %llu fragments when none is due\n",
                m.fanin, m.ratio, due.c_str(), static_cast<unsigned long long>(m.bound));
    if (m.merges)
      std::printf("    merged     %llu automatic merge(s), %s read, %s written; the last %s: %llu fragments -> %s\n",
                  static_cast<unsigned long long>(m.merges), human_bytes(m.bytes_in).c_str(),
                  human_bytes(m.bytes_out).c_str(), utc_time(m.last_ns).c_str(),
                  static_cast<unsigned long long>(m.last_inputs), human_bytes(m.last_bytes).c_str());
  }
  std::printf("    bytes      %s stored, %s\n", human_bytes(s.stored).c_str(),
              s.variable ? "variable-length values (no fixed logical size)" : (human_bytes(s.logical) + " logical").c_str());
  if (s.index.indexed)
    std::printf("    indexes    %llu of %llu file fragment(s), %s (tessera index; docs/queries.md)\n",
                static_cast<unsigned long long>(s.index.indexed), static_cast<unsigned long long>(s.index.fragments),
                human_bytes(s.index.index_bytes).c_str());
}

void json_dataset(Json& j, const DatasetSummary& s) {
  const DatasetView& d = s.d;
  j.field("datatype", d.type);
  j.field("space", d.space_kind);
  j.key("shape");
  j.values(d.dims);
  j.key("maxshape");
  j.begin_array();
  for (uint64_t m : d.maxdims) {
    if (m == UINT64_MAX) j.null();
    else j.value(m);
  }
  j.end_array();
  j.field("element_bytes", d.elem_size);
  j.field("layout", d.layout);
  j.key("chunk");
  if (d.chunk.empty()) j.null();
  else j.values(d.chunk);
  j.key("filters");
  j.begin_array();
  for (auto& f : d.filters) j.value(f);
  j.end_array();
  j.key("logical_bytes");
  if (s.variable) j.null();
  else j.value(s.logical);
  j.field("stored_bytes", s.stored);
  j.field("indexed_fragments", s.index.indexed);
  j.field("index_bytes", s.index.index_bytes);
  j.key("array");
  if (!d.has_array) {
    j.null();
    return;
  }
  const tessera::Schema& sc = d.schema;
  j.begin_object();
  j.field("compact", sc.compact);
  j.field("variable_length", sc.var);
  j.key("tile_extents");
  j.values(sc.tile_extent);
  j.field("tile_order", order_text(sc.tile_order));
  j.field("cell_order", order_text(sc.cell_order));
  if (!sc.multimap_cube.empty()) {
    j.key("multimap_cube");
    j.values(sc.multimap_cube);
  }
  j.field("tile_filters", pipeline_text(sc.filters));
  j.key("fragment_layouts");  // live fragments in another layout than the dataset's, per layout
  j.begin_object();
  for (const auto& [name, n] : s.other_orders) j.field(name, n);
  j.end_object();
  const FragmentTotals& t = s.t;
  j.key("fragments");
  j.begin_object();
  j.field("count", t.count);
  j.field("inline", t.inline_count);
  j.field("bytes", t.bytes);
  j.field("min_bytes", t.min_bytes);
  j.field("max_bytes", t.max_bytes);
  j.field("cells", t.cells);
  j.key("first_time_ns");
  if (t.count) j.value(t.first_ns);
  else j.null();
  j.key("last_time_ns");
  if (t.count) j.value(t.last_ns);
  else j.null();
  j.key("kinds");
  j.begin_object();
  for (auto& [k, n] : t.kinds) j.field(k, n);
  j.end_object();
  j.field("replaced", t.replaced);
  j.field("replaced_bytes", t.replaced_bytes);
  j.end_object();
  const tessera::ConsolidationInfo& m = s.merging;
  j.key("consolidation");  // automatic consolidation (docs/tool.md)
  j.begin_object();
  j.field("fanin", static_cast<uint64_t>(m.fanin));
  j.field("ratio", static_cast<uint64_t>(m.ratio));
  j.field("retain_s", m.retain_s);
  j.field("bound", m.bound);
  j.field("due_inputs", m.due_inputs);
  j.field("due_bytes", m.due_bytes);
  j.field("merges", m.merges);
  j.field("bytes_read", m.bytes_in);
  j.field("bytes_written", m.bytes_out);
  j.key("last_time_ns");
  if (m.merges) j.value(m.last_ns);
  else j.null();
  j.field("last_inputs", m.last_inputs);
  j.field("last_bytes", m.last_bytes);
  j.field("retained", m.retained);
  j.field("retained_bytes", m.retained_bytes);
  j.key("next_retire_ns");
  if (m.retained) j.value(m.next_retire_ns);
  else j.null();
  j.end_object();
  j.end_object();
}

struct Args {
  std::string container, object;
  std::string as_of;
  bool json = false;
};

int run(const Args& args) {
  auto v = ContainerView::open(args.container, false, args.as_of);
  // The objects to show: all, or the named one and (for a group) those under it.
  std::vector<const ObjectView*> shown;
  std::vector<const LinkView*> links;
  std::string under;
  if (!args.object.empty()) {
    const ObjectView& o = v->resolve(args.object);
    shown.push_back(&o);
    if (o.type == ObjType::kGroup) under = o.path == "/" ? "/" : o.path + "/";
  } else {
    under = "/";
  }
  if (!under.empty()) {
    for (auto& o : v->objects())
      if (&o != (shown.empty() ? nullptr : shown[0]) && o.path.compare(0, under.size(), under) == 0) shown.push_back(&o);
    if (args.object.empty()) shown.insert(shown.begin(), &v->objects()[0]);
    shown.erase(std::unique(shown.begin(), shown.end()), shown.end());
    for (auto& l : v->links())
      if (l.path.compare(0, under.size(), under) == 0) links.push_back(&l);
  }
  std::stable_sort(shown.begin() + (args.object.empty() ? 1 : 1), shown.end(),
                   [](auto* a, auto* b) { return a->path < b->path; });
  std::map<uint64_t, DatasetSummary> ds;
  uint64_t stored = 0, logical = 0, replaced = 0, nfrag = 0;
  size_t counts[4] = {0, 0, 0, 0};
  for (auto* o : shown) {
    counts[static_cast<int>(o->type)]++;
    if (o->type != ObjType::kDataset) continue;
    DatasetSummary s = summarize(*v, *o);
    stored += s.stored;
    logical += s.logical;
    replaced += s.t.replaced_bytes;
    nfrag += s.t.count;
    ds.emplace(o->oid, std::move(s));
  }
  size_t soft = 0, ext = 0;
  for (auto* l : links) (l->type == H5L_TYPE_SOFT ? soft : ext)++;
  const uint64_t catalog_bytes = tessera::File::open_read(v->container().env(), v->container().catalog().log_path()).size();

  if (args.json) {
    Json j;
    j.begin_object();
    j.field("container", args.container);
    j.key("objects");
    j.begin_array();
    for (auto* o : shown) {
      j.begin_object();
      j.field("path", o->path);
      j.field("kind", type_name(o->type));
      j.key("aliases");
      j.begin_array();
      for (auto& a : o->aliases) j.value(a);
      j.end_array();
      j.key("attributes");
      j.begin_array();
      for (auto& a : attr_views(*v, o->oid)) {
        j.begin_object();
        j.field("name", a.name);
        j.field("datatype", a.type);
        j.field("space", a.space_kind);
        j.key("shape");
        j.values(a.dims);
        j.end_object();
      }
      j.end_array();
      if (o->type == ObjType::kDataset) json_dataset(j, ds.at(o->oid));
      if (o->type == ObjType::kDatatype) {
        Hid t(H5Tdecode(o->rec.type_enc.data()));
        j.field("datatype", t.valid() ? type_text(t) : std::string("(undecodable type)"));
        H5Eclear2(H5E_DEFAULT);
      }
      j.end_object();
    }
    j.end_array();
    j.key("links");
    j.begin_array();
    for (auto* l : links) {
      j.begin_object();
      j.field("path", l->path);
      j.field("kind", l->type == H5L_TYPE_SOFT ? "soft" : "external");
      j.field("target", l->target);
      j.end_object();
    }
    j.end_array();
    j.key("totals");
    j.begin_object();
    j.field("groups", static_cast<uint64_t>(counts[1]));
    j.field("datasets", static_cast<uint64_t>(counts[2]));
    j.field("datatypes", static_cast<uint64_t>(counts[3]));
    j.field("soft_links", static_cast<uint64_t>(soft));
    j.field("external_links", static_cast<uint64_t>(ext));
    j.field("fragments", nfrag);
    j.field("stored_bytes", stored);
    j.field("replaced_bytes", replaced);
    j.field("logical_bytes", logical);
    j.field("catalog_bytes", catalog_bytes);
    j.end_object();
    j.end_object();
    std::printf("%s\n", j.str().c_str());
    return kOk;
  }

  std::printf("container  %s\n", args.container.c_str());
  std::printf("objects    %zu group(s), %zu dataset(s), %zu committed datatype(s), %zu soft link(s), %zu external link(s)\n",
              counts[1], counts[2], counts[3], soft, ext);
  std::printf("stored     %s in %llu fragment(s)%s; catalog %s\n", human_bytes(stored).c_str(),
              static_cast<unsigned long long>(nfrag),
              replaced ? (" (+ " + human_bytes(replaced) + " replaced, awaiting vacuum)").c_str() : "",
              human_bytes(catalog_bytes).c_str());
  std::printf("logical    %s\n", human_bytes(logical).c_str());
  for (auto* o : shown) {
    std::printf("\n%s  %s", o->path.c_str(), type_name(o->type));
    if (o->type == ObjType::kDatatype) {
      Hid t(H5Tdecode(o->rec.type_enc.data()));
      std::printf("  %s", t.valid() ? type_text(t).c_str() : "(undecodable type)");
      H5Eclear2(H5E_DEFAULT);
    }
    std::printf("\n");
    for (auto& a : o->aliases) std::printf("    also at    %s\n", a.c_str());
    if (o->type == ObjType::kDataset) print_dataset(ds.at(o->oid));
    print_attrs(attr_views(*v, o->oid));
  }
  for (auto* l : links)
    std::printf("\n%s  %s link -> %s\n", l->path.c_str(), l->type == H5L_TYPE_SOFT ? "soft" : "external",
                l->target.c_str());
  return kOk;
}

}  // namespace

Runner setup_info(CLI::App& sub) {
  auto args = std::make_shared<Args>();
  container_arg(sub, args->container, "The container (the name given to H5Fcreate)");
  sub.add_option("OBJECT", args->object, "Only this object (a path inside the container)");
  json_flag(sub, args->json);
  as_of_option(sub, args->as_of);
  return [args] { return run(*args); };
}

}  // namespace tool
