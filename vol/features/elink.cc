// elink.cc — external link traversal (see elink.h).
//
// The walk mirrors SharedFile::try_resolve (hard links, soft links relative to their group,
// intermediate components must be groups) and adds external links: the target container
// is opened through the same SharedFile registry as H5Fopen, so an object opened through a
// link keeps its container open (HDF5 closes such files "weakly": when the last object goes).
// Soft and external traversals share one budget, the lapl's H5Pget_nlinks (HDF5: 16).
#include "vol/features/elink.h"

#include <sys/stat.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "vol/base/file_prefix.h"
#include "vol/base/tessera_vol.h"

namespace tessera_vol {

namespace {

struct Place {
  std::shared_ptr<SharedFile> file;
  uint64_t oid = 0;
  std::string path;
};


class Walker {
 public:
  explicit Walker(hid_t lapl) : lapl_(lapl == H5P_DEFAULT || lapl < 0 ? H5P_LINK_ACCESS_DEFAULT : lapl) {
    size_t n = 0;
    budget_ = H5Pget_nlinks(lapl_, &n) >= 0 ? static_cast<long>(n) : 16;
  }
  bool crossed = false;
  hid_t lapl() const { return lapl_; }

  // Follows path from p (all components, the last too).  nullopt: a component is missing.
  std::optional<Place> walk(Place p, const std::string& path) {
    if (!path.empty() && path[0] == '/') p = Place{p.file, kRootOid, "/"};
    for (auto& part : path_components(path)) {
      auto next = step(p, part);
      if (!next) return std::nullopt;
      p = std::move(*next);
    }
    return p;
  }

  // Follows all components but the last; returns the parent place and the last name.
  std::optional<std::pair<Place, std::string>> walk_parent(Place p, const std::string& path) {
    auto parts = path_components(path);
    if (parts.empty()) return std::nullopt;
    if (!path.empty() && path[0] == '/') p = Place{p.file, kRootOid, "/"};
    for (size_t k = 0; k + 1 < parts.size(); ++k) {
      auto next = step(p, parts[k]);
      if (!next) return std::nullopt;
      p = std::move(*next);
    }
    return std::make_pair(std::move(p), parts.back());
  }

  // Follows link `name` of group p.  Only groups can be walked through.
  std::optional<Place> step(const Place& p, const std::string& name) {
    std::optional<LinkRecord> l;
    {
      std::lock_guard<std::recursive_mutex> lk(p.file->mu());
      auto g = p.file->find_object(p.oid);
      if (!g || g->type != ObjType::kGroup) return std::nullopt;
      l = p.file->find_link(p.oid, name);
    }
    if (!l) return std::nullopt;
    return follow(p, name, *l);
  }

  // H5Oexists_by_name as native HDF5 answers it (H5G_loc_exists): a missing intermediate
  // group is an error; a missing last link is an error at the top (`missing_is_error`) but
  // "does not exist" at the end of a soft link's path; a dangling soft link is "does not
  // exist"; an external link whose file or object cannot be reached is "does not exist"
  // (native clears the traversal's error).
  bool exists(const Place& p, const std::string& path, bool missing_is_error) {
    auto pp = walk_parent(p, path);
    if (!pp) {
      if (path_components(path).empty()) return true;  // the location itself
      fail_arg("a group on the path '" + path + "' does not exist");
    }
    const Place& at = pp->first;
    const std::string& last = pp->second;
    std::optional<LinkRecord> l;
    {
      std::lock_guard<std::recursive_mutex> lk(at.file->mu());
      auto g = at.file->find_object(at.oid);
      if (!g || g->type != ObjType::kGroup) fail_arg("a component of '" + path + "' is not a group");
      l = at.file->find_link(at.oid, last);
      if (l && l->type == H5L_TYPE_HARD) return at.file->find_object(l->target).has_value();
    }
    if (!l) {
      if (missing_is_error) fail_arg("link '" + last + "' does not exist");
      return false;
    }
    if (--budget_ < 0) fail_arg("too many soft or external links while resolving '" + last + "'");
    if (l->type == H5L_TYPE_SOFT) return exists(at, l->soft_path, false);
    if (l->type != H5L_TYPE_EXTERNAL || l->target == kRawLinkValue) return false;
    try {
      auto tf = open_external_file(*at.file, at.path, *l, lapl_);
      return walk(Place{tf, kRootOid, "/"}, l->ext_obj).has_value();
    } catch (...) {
      return false;
    }
  }

  std::optional<Place> follow(const Place& p, const std::string& name, const LinkRecord& l) {
    if (l.type == H5L_TYPE_HARD) return Place{p.file, l.target, join(p.path, name)};
    if (--budget_ < 0) fail_arg("too many soft or external links while resolving '" + name + "'");
    if (l.type == H5L_TYPE_SOFT) return walk(p, l.soft_path);
    if (l.type != H5L_TYPE_EXTERNAL) fail_unsupported("traversal of user-defined link '" + name + "'");
    if (l.target == kRawLinkValue) fail_arg("external link '" + name + "' has a malformed value");
    auto tf = open_external_file(*p.file, p.path, l, lapl_);
    crossed = true;
    return walk(Place{tf, kRootOid, "/"}, l.ext_obj);
  }

 private:
  hid_t lapl_;
  long budget_ = 16;
};

// The link access plist a location carries (H5P_DEFAULT for BY_SELF / BY_TOKEN).
hid_t loc_lapl(const H5VL_loc_params_t* lp) {
  if (lp->type == H5VL_OBJECT_BY_NAME) return lp->loc_data.loc_by_name.lapl_id;
  if (lp->type == H5VL_OBJECT_BY_IDX) return lp->loc_data.loc_by_idx.lapl_id;
  return H5P_DEFAULT;
}

}  // namespace

std::shared_ptr<SharedFile> open_external_file(SharedFile& parent, const std::string& group_path,
                                               const LinkRecord& l, hid_t lapl) {
  const std::string& file_name = l.soft_path;
  // Access flags: the lapl's (H5Pset_elink_acc_flags), else the linking file's intent.
  unsigned intent = H5F_ACC_DEFAULT;
  if (H5Pget_elink_acc_flags(lapl, &intent) < 0) fail_arg("cannot read the external link access flags");
  if (intent == H5F_ACC_DEFAULT) intent = parent.intent();
  hid_t fapl = H5Pget_elink_fapl(lapl);
  if (fapl < 0) fail_arg("cannot read the external link file access plist");
  struct FaplGuard {
    hid_t id;
    ~FaplGuard() {
      if (id >= 0 && id != H5P_DEFAULT) H5Pclose(id);
    }
  } fapl_guard{fapl};
  if (fapl == H5P_DEFAULT) fapl = parent.fapl();
  // H5Pset_elink_cb: the application may change the intent (and inspect the fapl).
  H5L_elink_traverse_t cb = nullptr;
  void* cb_data = nullptr;
  if (H5Pget_elink_cb(lapl, &cb, &cb_data) < 0) fail_arg("cannot read the external link callback");
  if (cb) {
    std::string gp = group_path.empty() ? "/" : group_path;
    if (cb(parent.name().c_str(), gp.c_str(), file_name.c_str(), l.ext_obj.c_str(), &intent, fapl, cb_data) < 0)
      fail_arg("the external link traversal callback failed for '" + file_name + "'");
    if (intent & (H5F_ACC_TRUNC | H5F_ACC_EXCL)) fail_arg("invalid file open flags from the external link callback");
  }
  intent &= H5F_ACC_RDWR | H5F_ACC_SWMR_READ | H5F_ACC_SWMR_WRITE;  // as native passes them on

  // Candidates in HDF5's order (file_prefix.h).
  std::string prefix;
  ssize_t plen = H5Pget_elink_prefix(lapl, nullptr, 0);
  if (plen > 0) {
    prefix.assign(static_cast<size_t>(plen) + 1, '\0');
    H5Pget_elink_prefix(lapl, prefix.data(), prefix.size());
    prefix.resize(static_cast<size_t>(plen));
  }
  std::vector<std::string> tries = prefix_candidates(parent.name(), file_name, "HDF5_EXT_PREFIX", prefix);
  // The first candidate that exists is the target, as in HDF5 (which opens the first
  // candidate it can): a native HDF5 file there is refused, not skipped for a later
  // tessera container of the same name.
  for (auto& t : tries) {
    if (is_tessera_container(t.c_str())) return SharedFile::open(t, intent, fapl);
    if (is_native_hdf5(t))
      fail_unsupported("external link target '" + t + "' is a native HDF5 file; tessera follows external "
                       "links only into tessera containers (open it with the native connector)");
  }
  fail_arg("unable to open external file '" + file_name + "' (no tessera container found at '" + tries.front() +
           "'" + (tries.size() > 1 ? " or " + std::to_string(tries.size() - 1) + " other places" : "") + ")");
}

std::optional<ExternalTarget> external_link_target(SharedFile& parent, const std::string& group_path,
                                                   const LinkRecord& l, hid_t lapl) {
  if (l.type != H5L_TYPE_EXTERNAL || l.target == kRawLinkValue) return std::nullopt;
  try {
    Walker w(lapl);
    auto tf = open_external_file(parent, group_path, l, w.lapl());
    auto p = w.walk(Place{tf, kRootOid, "/"}, l.ext_obj);
    if (!p) return std::nullopt;
    std::lock_guard<std::recursive_mutex> lk(p->file->mu());
    if (!p->file->find_object(p->oid)) return std::nullopt;
    return ExternalTarget{p->file, p->oid};
  } catch (const VolError&) {
    return std::nullopt;  // unreachable: the caller keeps the link
  }
}

bool object_exists_by_name(Obj* o, const std::string& name, hid_t lapl) {
  Walker w(lapl);
  return w.exists(Place{o->file, o->oid, o->path}, name, true);
}

ExternalHop::ExternalHop(Obj* o, const H5VL_loc_params_t* l, const char* n, bool follow_last, hid_t apl)
    : obj(o), lp(l), name(n) {
  if (!o || !l) return;
  // The path to walk: the location's own name (BY_NAME / BY_IDX group), then `name`.
  std::string path;
  if (l->type == H5VL_OBJECT_BY_NAME && l->loc_data.loc_by_name.name) path = l->loc_data.loc_by_name.name;
  else if (l->type == H5VL_OBJECT_BY_IDX && l->loc_data.loc_by_idx.name) path = l->loc_data.loc_by_idx.name;
  else if (l->type != H5VL_OBJECT_BY_SELF) return;
  // The n-th link of a BY_IDX group is chosen by the callback: only the group is walked.
  if (l->type == H5VL_OBJECT_BY_IDX) follow_last = true;
  if (n && l->type != H5VL_OBJECT_BY_IDX) path = path.empty() ? n : path + "/" + n;
  if (path.empty()) return;
  if (!o->file->may_have_ud_links()) return;  // no external link to cross

  hid_t lapl = loc_lapl(l);
  Walker w(lapl == H5P_DEFAULT ? apl : lapl);
  Place start{o->file, o->oid, o->path};
  auto parent = w.walk_parent(start, path);
  if (!parent) return;  // missing: the callback reports it as before
  Place at = parent->first;
  std::string last = parent->second;
  if (follow_last) {
    auto fin = w.step(at, last);
    if (fin && w.crossed) {
      at = std::move(*fin);
      last = ".";
    }
  }
  if (!w.crossed) return;

  holder_ = std::make_unique<GroupObj>(H5I_GROUP, at.file, at.oid, at.path);
  name_ = last;
  lp_ = *l;
  if (l->type == H5VL_OBJECT_BY_IDX) {
    lp_.loc_data.loc_by_idx.name = ".";
  } else if (l->type == H5VL_OBJECT_BY_NAME && !n) {
    lp_.loc_data.loc_by_name.name = name_.c_str();
  } else {
    lp_.type = H5VL_OBJECT_BY_SELF;
    name = name_.c_str();
  }
  obj = holder_.get();
  lp = &lp_;
}

}  // namespace tessera_vol
