// container_view.cc — container_view.h.
#include "tools/tessera/container_view.h"


#include "engine/util/file_io.h"
#include "tools/tessera/command.h"
#include "vol/base/error.h"  // VolError: a record that does not decode

namespace tool {

using tessera_vol::AttrRecord;
using tessera_vol::LinkRecord;
using tessera_vol::ObjectRecord;
using tessera_vol::ObjType;

std::unique_ptr<ContainerView> ContainerView::open(const std::string& path, bool writable, const std::string& as_of) {
  if (!tessera::path_exists(tessera::Env::posix(), path)) fail("'" + path + "': no such file or directory");
  if (!tessera::Container::is_container(path)) {
    if (!tessera::is_directory(tessera::Env::posix(), path))
      fail("'" + path + "' is not a tessera container (a native HDF5 file, or a file without a tessera anchor)");
    fail("'" + path + "' is not a tessera container (no valid tessera.container header in it)");
  }
  auto v = std::unique_ptr<ContainerView>(new ContainerView());
  v->path_ = path;
  tessera::Status st = as_of.empty() ? tessera::Container::open(path, writable, &v->c_)
                                     : tessera::Container::open_as_of(path, as_of, &v->c_);
  if (!st.ok()) {
    if (st.code() == tessera::Errc::kBusy)
      fail("'" + path + "' is open for writing by another process (" + st.message() + "); try again once it is closed");
    fail(st.message());
  }
  try {
    v->walk();
  } catch (const tessera_vol::VolError& e) {
    fail("'" + path + "': " + e.msg);
  } catch (const tessera::Error& e) {
    fail("'" + path + "': " + e.what());
  }
  return v;
}

void ContainerView::walk() {
  tessera::Catalog& cat = c_->catalog();
  auto record = [&](uint64_t oid) -> std::optional<ObjectRecord> {
    auto v = cat.get("o/" + tessera_vol::hex16(oid));
    if (!v) return std::nullopt;
    return ObjectRecord::deserialize(*v);
  };
  auto root = record(tessera_vol::kRootOid);
  if (!root) fail("'" + path_ + "': the catalog holds no root group (object 1)");
  objects_.push_back(ObjectView{tessera_vol::kRootOid, root->type, "/", {}, *root});
  by_oid_[tessera_vol::kRootOid] = 0;
  // Depth first, names in order (as H5Ovisit walks): the first path found is each
  // object's path, its other hard links are aliases.
  struct Frame {
    uint64_t group;
    std::string path;
    std::vector<std::pair<std::string, std::string>> links;
    size_t next = 0;
  };
  auto frame = [&](uint64_t group, const std::string& p) {
    return Frame{group, p, cat.scan("l/" + tessera_vol::hex16(group) + "/"), 0};
  };
  std::vector<Frame> stack;
  stack.push_back(frame(tessera_vol::kRootOid, "/"));
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next == top.links.size()) {
      stack.pop_back();
      continue;
    }
    auto& [key, value] = top.links[top.next++];
    const std::string name = key.substr(2 + 16 + 1);
    const std::string p = (top.path == "/" ? "/" : top.path + "/") + name;
    LinkRecord l = LinkRecord::deserialize(value);
    if (l.type == H5L_TYPE_HARD) {
      auto it = by_oid_.find(l.target);
      if (it != by_oid_.end()) {
        objects_[it->second].aliases.push_back(p);
        continue;
      }
      auto r = record(l.target);
      if (!r) fail("'" + path_ + "': link '" + p + "' names object " + std::to_string(l.target) +
                   ", which the catalog does not hold (run tessera verify)");
      by_oid_[l.target] = objects_.size();
      objects_.push_back(ObjectView{l.target, r->type, p, {}, *r});
      if (r->type == ObjType::kGroup) stack.push_back(frame(l.target, p));  // `top` is not used after this
    } else if (l.type == H5L_TYPE_SOFT) {
      links_.push_back(LinkView{p, l.type, l.soft_path});
    } else {
      links_.push_back(LinkView{p, l.type, l.soft_path + ":" + l.ext_obj});
    }
  }
}

const ObjectView* ContainerView::find(uint64_t oid) const {
  auto it = by_oid_.find(oid);
  return it == by_oid_.end() ? nullptr : &objects_[it->second];
}

const ObjectView& ContainerView::resolve(const std::string& path) const {
  uint64_t cur = tessera_vol::kRootOid;
  std::vector<std::string> parts = tessera_vol::path_components(path);
  std::string walked;
  int soft_hops = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const ObjectView* o = find(cur);
    if (!o || o->type != ObjType::kGroup) fail("'" + walked + "' in '" + path + "' is not a group");
    auto v = c_->catalog().get("l/" + tessera_vol::hex16(cur) + "/" + parts[i]);
    if (!v) fail("'" + path + "': no object '" + parts[i] + "' in group '" + (walked.empty() ? "/" : walked) + "'");
    LinkRecord l = LinkRecord::deserialize(*v);
    walked += "/" + parts[i];
    if (l.type == H5L_TYPE_HARD) {
      cur = l.target;
    } else if (l.type == H5L_TYPE_SOFT) {
      if (++soft_hops > 32) fail("'" + path + "': too many soft links (a cycle?)");
      // Resolve the soft link's target (absolute, or relative to the group), then go on.
      std::string base = walked.substr(0, walked.rfind('/'));
      std::string target = l.soft_path.size() && l.soft_path[0] == '/' ? l.soft_path : base + "/" + l.soft_path;
      for (size_t k = i + 1; k < parts.size(); ++k) target += "/" + parts[k];
      return resolve(target);
    } else {
      fail("'" + walked + "' is an external link to '" + l.soft_path + ":" + l.ext_obj +
           "' (run the tool on that file)");
    }
  }
  const ObjectView* o = find(cur);
  if (!o) fail("'" + path + "' names an object the catalog does not hold");
  return *o;
}

std::vector<std::pair<std::string, AttrRecord>> ContainerView::attrs(uint64_t oid) const {
  std::vector<std::pair<std::string, AttrRecord>> out;
  const std::string prefix = "a/" + tessera_vol::hex16(oid) + "/";
  for (auto& [key, value] : c_->catalog().scan(prefix))
    out.emplace_back(key.substr(prefix.size()), AttrRecord::deserialize(value));
  return out;
}

DatasetView ContainerView::dataset(const ObjectView& o) const {
  DatasetView d;
  Hid type(H5Tdecode(o.rec.type_enc.data()));
  d.type = type.valid() ? type_text(type) : "(undecodable type)";
  d.elem_size = type.valid() ? H5Tget_size(type) : 0;
  Hid space(H5Sdecode(o.rec.space_enc.data()));
  int rank = 0;
  if (space.valid()) {
    H5S_class_t k = H5Sget_simple_extent_type(space);
    d.space_kind = k == H5S_SCALAR ? "scalar" : k == H5S_NULL ? "null" : "simple";
    rank = H5Sget_simple_extent_ndims(space);
    if (rank > 0) {
      std::vector<hsize_t> cur(rank), mx(rank);
      H5Sget_simple_extent_dims(space, cur.data(), mx.data());
      d.dims.assign(cur.begin(), cur.end());
      for (hsize_t m : mx) d.maxdims.push_back(m == H5S_UNLIMITED ? UINT64_MAX : m);
    }
  }
  Hid dcpl(o.rec.cpl.empty() ? H5Pcreate(H5P_DATASET_CREATE) : H5Pdecode(o.rec.cpl.data()));
  if (dcpl.valid()) {
    switch (H5Pget_layout(dcpl)) {
      case H5D_CHUNKED: {
        d.layout = "chunked";
        std::vector<hsize_t> c(rank > 0 ? rank : 1);
        int n = H5Pget_chunk(dcpl, static_cast<int>(c.size()), c.data());
        if (n > 0) d.chunk.assign(c.begin(), c.begin() + n);
        break;
      }
      case H5D_COMPACT: d.layout = "compact"; break;
      case H5D_VIRTUAL: d.layout = "virtual"; break;
      default: d.layout = "contiguous"; break;
    }
    if (H5Pget_external_count(dcpl) > 0) d.layout = "external";
    d.filters = filter_texts(dcpl);
  }
  H5Eclear2(H5E_DEFAULT);
  std::unique_ptr<tessera::Array> a;
  tessera::ArrayOptions opts;
  if (o.rec.array_id && c_->open_array(o.rec.array_id, false, opts, &a).ok()) {
    d.has_array = true;
    d.schema = a->schema();
    // The current extent is the array's (H5Dset_extent changes it, not the record).
    if (d.space_kind == "simple" && static_cast<size_t>(d.schema.rank()) == d.dims.size())
      d.dims.assign(d.schema.extent.begin(), d.schema.extent.end());
  }
  return d;
}

std::unique_ptr<tessera::Array> ContainerView::open_array(const ObjectView& o, bool writable,
                                                           const tessera::ArrayOptions& opts) const {
  if (o.type != ObjType::kDataset) fail("'" + o.path + "' is not a dataset");
  if (!o.rec.array_id) fail("'" + o.path + "' has no array");
  std::unique_ptr<tessera::Array> a;
  tessera::Status st = c_->open_array(o.rec.array_id, writable, opts, &a);
  if (!st.ok()) fail("'" + o.path + "': " + st.message());
  return a;
}

std::vector<const ObjectView*> ContainerView::datasets(const std::string& only) const {
  std::vector<const ObjectView*> out;
  if (!only.empty()) {
    const ObjectView& o = resolve(only);
    if (o.type != ObjType::kDataset) fail("'" + only + "' is not a dataset");
    out.push_back(&o);
    return out;
  }
  for (auto& o : objects_)
    if (o.type == ObjType::kDataset && o.rec.array_id) out.push_back(&o);
  return out;
}

}  // namespace tool

namespace tool {

std::string fragment_kind(const tessera::FragmentInfo& f) {
  std::vector<std::string> parts;
  const uint64_t data = f.dense_tiles - f.fill_boxes;
  if (data) parts.push_back("dense");
  if (f.sparse_tiles) parts.push_back("sparse");
  if (f.erased_tiles) parts.push_back("erase");
  if (f.fill_boxes) parts.push_back(f.sets_extent ? "extent" : "fill");
  if (parts.empty()) return f.sets_extent ? "extent" : "empty";
  std::string s = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) s += "+" + parts[i];
  return s;
}

std::string order_text(tessera::Order o) { return tessera::order_name(o); }

std::string pipeline_text(const tessera::FilterPipeline& p) {
  if (p.empty()) return "none";
  std::string s;
  for (const tessera::Filter& f : p.filters()) {
    if (!s.empty()) s += ", ";
    switch (f.type) {
      case tessera::FilterType::kShuffle: s += "shuffle"; break;
      case tessera::FilterType::kDeflate: s += "deflate(" + std::to_string(f.level) + ")"; break;
      case tessera::FilterType::kZstd: s += "zstd(" + std::to_string(f.level ? f.level : 3) + ")"; break;
      case tessera::FilterType::kLz4: s += "lz4"; break;
      case tessera::FilterType::kZlib: s += "zlib(" + std::to_string(f.level) + ")"; break;
    }
  }
  return s;
}

FragmentTotals totals_of(const std::vector<tessera::FragmentInfo>& live,
                         const std::vector<tessera::FragmentInfo>& replaced) {
  FragmentTotals t;
  for (const auto& f : live) {
    if (t.count == 0 || f.file_size < t.min_bytes) t.min_bytes = f.file_size;
    if (f.file_size > t.max_bytes) t.max_bytes = f.file_size;
    if (t.count == 0 || f.id.ts < t.first_ns) t.first_ns = f.id.ts;
    if (f.id.ts > t.last_ns) t.last_ns = f.id.ts;
    t.count++;
    t.bytes += f.file_size;
    t.cells += f.cells;
    t.inline_count += f.is_inline;
    t.kinds[fragment_kind(f)]++;
  }
  for (const auto& f : replaced) {
    t.replaced++;
    t.replaced_bytes += f.file_size;
  }
  return t;
}

}  // namespace tool
