// cmd_verify.cc — `tessera verify CONTAINER [--json]`: is anything damaged or missing?
//
// Two passes, both read-only (no lock: the container may be open elsewhere; what a
// writer has not flushed yet is not checked):
//  1. the HDF5 objects in the catalog: every object, link and attribute record decodes;
//     every hard link names an object that exists; every dataset's array has its schema;
//     every committed datatype a dataset or attribute names exists;
//  2. the engine's check of everything stored (engine/container/verify.h): the container header,
//     the catalog log's checksums, every array schema, every fragment file and inline
//     fragment (footer, every tile's checksums and filter streams), variable-length
//     values against their heaps, compact arrays, and every fragment file the catalog
//     records as published present.
// Exit status 0: nothing is damaged; 1: damage found (listed); 2: could not check.
#include <cstdio>
#include <deque>
#include <map>
#include <set>

#include "engine/container/container.h"
#include "engine/container/verify.h"
#include "engine/util/file_io.h"
#include "tools/tessera/command.h"
#include "tools/tessera/h5util.h"
#include "tools/tessera/output.h"
#include "tools/tessera/progress.h"
#include "vol/base/error.h"  // VolError: a record that does not decode
#include "vol/model/records.h"

namespace tool {

namespace {

using tessera_vol::AttrRecord;
using tessera_vol::LinkRecord;
using tessera_vol::ObjectRecord;
using tessera_vol::ObjType;

struct Args {
  std::string container;
  bool json = false;
};

struct ObjectCheck {
  std::vector<std::string> problems, notes;
  uint64_t objects = 0, links = 0, attributes = 0;
  std::map<std::string, std::string> array_paths;  // hex16 array id -> dataset path
};

template <class F>
bool decodes(F f, std::string* why) {
  try {
    f();
    return true;
  } catch (const tessera_vol::VolError& e) {
    *why = e.msg;
  } catch (const std::exception& e) {
    *why = e.what();
  }
  return false;
}

void check_objects(tessera::Container& c, ObjectCheck* out) {
  tessera::Catalog& cat = c.catalog();
  const std::string log = cat.log_path();
  std::map<uint64_t, ObjectRecord> objs;
  std::string why;
  for (auto& [key, value] : cat.scan("o/")) {
    ObjectRecord r;
    if (!decodes([&] { r = ObjectRecord::deserialize(value); }, &why)) {
      out->problems.push_back("catalog '" + log + "': object record '" + key + "' does not decode: " + why);
      continue;
    }
    objs[std::strtoull(key.c_str() + 2, nullptr, 16)] = std::move(r);
  }
  out->objects = objs.size();
  auto hex = tessera_vol::hex16;
  if (!objs.count(tessera_vol::kRootOid)) out->problems.push_back("catalog '" + log + "': the root group (object 1) is missing");
  // Paths, breadth first from the root, and the links' own checks.
  std::map<uint64_t, std::string> path{{tessera_vol::kRootOid, "/"}};
  std::deque<uint64_t> queue{tessera_vol::kRootOid};
  std::set<uint64_t> seen{tessera_vol::kRootOid};
  std::map<uint64_t, std::vector<std::pair<std::string, LinkRecord>>> links;
  for (auto& [key, value] : cat.scan("l/")) {
    out->links++;
    LinkRecord l;
    if (!decodes([&] { l = LinkRecord::deserialize(value); }, &why)) {
      out->problems.push_back("catalog '" + log + "': link record '" + key + "' does not decode: " + why);
      continue;
    }
    uint64_t group = std::strtoull(key.c_str() + 2, nullptr, 16);
    links[group].emplace_back(key.substr(19), l);
  }
  while (!queue.empty()) {
    uint64_t g = queue.front();
    queue.pop_front();
    for (auto& [name, l] : links[g]) {
      const std::string p = (path[g] == "/" ? "/" : path[g] + "/") + name;
      if (l.type != H5L_TYPE_HARD) continue;
      auto it = objs.find(l.target);
      if (it == objs.end()) {
        out->problems.push_back("link '" + p + "' names object " + hex(l.target) + ", which the catalog does not hold");
        continue;
      }
      if (seen.insert(l.target).second) {
        path[l.target] = p;
        if (it->second.type == ObjType::kGroup) queue.push_back(l.target);
      }
    }
  }
  for (auto& [g, ls] : links)
    if (!objs.count(g))
      out->problems.push_back("catalog '" + log + "': links of group " + hex(g) + ", which the catalog does not hold");
  for (auto& [oid, r] : objs) {
    const std::string name = path.count(oid) ? "'" + path[oid] + "'" : "object " + hex(oid);
    if (!path.count(oid))
      out->notes.push_back(name + " is reachable by no link (an object still open when its last link went)");
    if (r.type != ObjType::kGroup) {
      Hid t(H5Tdecode(r.type_enc.data()));
      if (!t.valid()) out->problems.push_back(name + ": its datatype does not decode");
    }
    if (r.type == ObjType::kDataset) {
      Hid s(H5Sdecode(r.space_enc.data()));
      if (!s.valid()) out->problems.push_back(name + ": its dataspace does not decode");
      if (!r.cpl.empty()) {
        Hid p(H5Pdecode(r.cpl.data()));
        if (!p.valid()) out->problems.push_back(name + ": its creation property list does not decode");
      }
      if (r.array_id) {
        const std::string h = hex(r.array_id);
        out->array_paths[h] = path.count(oid) ? path[oid] : name;
        if (!cat.contains("arr/" + h + "/schema") &&
            !tessera::path_exists(c.env(), tessera::join_path(c.array_dir(r.array_id), "schema")))
          out->problems.push_back(name + ": its array " + h + " is missing (no schema record or file)");
      }
    }
    if (r.committed_type && !objs.count(r.committed_type))
      out->problems.push_back(name + ": the committed datatype " + hex(r.committed_type) + " it was created with is missing");
  }
  for (auto& [key, value] : cat.scan("a/")) {
    out->attributes++;
    uint64_t owner = std::strtoull(key.c_str() + 2, nullptr, 16);
    const std::string where = "attribute '" + key.substr(19) + "' of " +
                              (path.count(owner) ? "'" + path[owner] + "'" : "object " + hex(owner));
    AttrRecord a;
    if (!decodes([&] { a = AttrRecord::deserialize(value); }, &why)) {
      out->problems.push_back(where + ": its record does not decode: " + why);
      continue;
    }
    if (!objs.count(owner)) out->problems.push_back(where + ": its object is missing");
    Hid t(H5Tdecode(a.type_enc.data())), s(H5Sdecode(a.space_enc.data()));
    if (!t.valid() || !s.valid()) {
      out->problems.push_back(where + ": its datatype or dataspace does not decode");
      continue;
    }
    if (H5Tdetect_class(t, H5T_VLEN) <= 0 && H5Tis_variable_str(t) <= 0 && H5Tget_class(t) != H5T_REFERENCE) {
      const hssize_t n = H5Sget_simple_extent_npoints(s);
      if (n >= 0 && a.data.size() != 0 && a.data.size() != static_cast<uint64_t>(n) * H5Tget_size(t))
        out->problems.push_back(where + ": holds " + std::to_string(a.data.size()) + " bytes, its type and shape make " +
                                std::to_string(static_cast<uint64_t>(n) * H5Tget_size(t)));
    }
    if (a.committed_type && !objs.count(a.committed_type))
      out->problems.push_back(where + ": the committed datatype " + hex(a.committed_type) + " it was created with is missing");
  }
  H5Eclear2(H5E_DEFAULT);
}

// "… arrays/0000000000000003/frag/…" -> the same, then " (dataset /x)".
std::string with_dataset(const std::string& msg, const ObjectCheck& oc) {
  for (auto& [h, p] : oc.array_paths)
    if (msg.find("arrays/" + h) != std::string::npos || msg.find("arr/" + h) != std::string::npos ||
        msg.find("array " + h) != std::string::npos)
      return msg + " (dataset " + p + ")";
  return msg;
}

int run(const Args& args) {
  if (!tessera::path_exists(tessera::Env::posix(), args.container)) fail("'" + args.container + "': no such file or directory");
  if (!tessera::is_directory(tessera::Env::posix(), args.container) && !tessera::Container::is_container(args.container))
    fail("'" + args.container + "' is not a tessera container (a native HDF5 file?)");
  ObjectCheck oc;
  {
    std::unique_ptr<tessera::Container> c;
    if (tessera::Container::open(args.container, false, &c).ok()) check_objects(*c, &oc);
  }
  tessera::VerifyReport r;
  tessera::VerifyOptions vo;
  Progress bar("verifying", 0);
  vo.progress = [&](uint64_t done, uint64_t total) {
    bar.set_total(total);
    bar.update(done);
  };
  tessera::Status st = tessera::verify_container(args.container, vo, &r);
  bar.finish();
  if (!st.ok()) fail(st.message());
  std::vector<std::string> problems, notes;
  for (auto& p : r.problems) problems.push_back(with_dataset(p, oc));
  for (auto& p : oc.problems) problems.push_back(p);
  for (auto& n : r.notes) notes.push_back(with_dataset(n, oc));
  for (auto& n : oc.notes) notes.push_back(n);
  const bool ok = problems.empty();
  if (args.json) {
    Json j;
    j.begin_object();
    j.field("container", args.container);
    j.field("ok", ok);
    j.key("problems");
    j.begin_array();
    for (auto& p : problems) j.value(p);
    j.end_array();
    j.key("notes");
    j.begin_array();
    for (auto& n : notes) j.value(n);
    j.end_array();
    j.key("checked");
    j.begin_object();
    j.field("objects", oc.objects);
    j.field("links", oc.links);
    j.field("attributes", oc.attributes);
    j.field("arrays", r.arrays);
    j.field("fragments", r.fragments);
    j.field("tiles", r.tiles);
    j.field("bytes", r.bytes);
    j.field("variable_length_values", r.var_values);
    j.field("recorded_fragment_files", r.recorded_files);
    j.end_object();
    j.end_object();
    std::printf("%s\n", j.str().c_str());
    return ok ? kOk : kDamaged;
  }
  std::printf("verify     %s\n", args.container.c_str());
  std::printf("objects    %llu object(s), %llu link(s), %llu attribute(s)\n",
              static_cast<unsigned long long>(oc.objects), static_cast<unsigned long long>(oc.links),
              static_cast<unsigned long long>(oc.attributes));
  std::printf("data       %llu array(s), %llu fragment(s), %llu tile(s), %s read", static_cast<unsigned long long>(r.arrays),
              static_cast<unsigned long long>(r.fragments), static_cast<unsigned long long>(r.tiles),
              human_bytes(r.bytes).c_str());
  if (r.var_values) std::printf(", %llu variable-length value(s)", static_cast<unsigned long long>(r.var_values));
  std::printf("\n");
  for (auto& n : notes) std::printf("note       %s\n", n.c_str());
  if (ok) {
    std::printf("result     OK: every checksum matches and every committed piece is present\n");
    return kOk;
  }
  for (auto& p : problems) std::printf("DAMAGED    %s\n", p.c_str());
  std::printf("result     DAMAGED: %zu problem(s); reads of the damaged pieces fail with an error naming them\n",
              problems.size());
  return kDamaged;
}

}  // namespace

Runner setup_verify(CLI::App& sub) {
  auto args = std::make_shared<Args>();
  container_arg(sub, args->container);
  json_flag(sub, args->json);
  return [args] { return run(*args); };
}

}  // namespace tool
