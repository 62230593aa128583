// link.cc — H5L callbacks: hard, soft and external links; copy, move, delete, exists,
// iterate and visit.
//
// External links are stored and reported (H5Lget_info2, H5Lget_val, H5Lunpack_elink_val)
// and followed by every path-taking callback through ExternalHop (elink.h); iteration and
// visiting report them without following them, like HDF5.  Iteration hands the callback a group ID made with
// H5VLwrap_register over a GroupObj of its own, released after the iteration.
#include <cstring>
#include <set>

#include "vol/features/elink.h"
#include "vol/model/link_storage.h"
#include "vol/model/objects.h"
#include "vol/base/tessera_vol.h"

namespace tessera_vol {

namespace {

struct LinkAt {
  uint64_t group = 0;
  std::string name;
  LinkRecord rec;
};

// The link a BY_NAME or BY_IDX location names (without following it).
LinkAt link_at(Obj* o, const H5VL_loc_params_t* lp) {
  require_loc_lapl(lp);
  SharedFile& f = *o->file;
  LinkAt r;
  if (lp->type == H5VL_OBJECT_BY_NAME) {
    std::string name = lp->loc_data.loc_by_name.name;
    auto [parent, last] = f.resolve_parent(o->oid, name, false, nullptr);
    auto l = f.find_link(parent, last);
    if (!l) fail_arg("link '" + name + "' doesn't exist");
    r.group = parent;
    r.name = last;
    r.rec = *l;
  } else if (lp->type == H5VL_OBJECT_BY_IDX) {
    const auto& bi = lp->loc_data.loc_by_idx;
    r.group = f.resolve(o->oid, bi.name);
    require_index(f, r.group, bi.idx_type);
    auto links = ordered_links(f, r.group, bi.idx_type, bi.order);
    if (bi.n >= links.size()) fail_arg("index " + std::to_string(bi.n) + " out of range");
    r.name = links[bi.n].first;
    r.rec = links[bi.n].second;
  } else {
    fail_arg("a link must be named by name or by index");
  }
  return r;
}

// Native HDF5 restarts creation order at 0 when a group loses its last link.
void reset_corder_if_empty(SharedFile& f, uint64_t group) {
  auto r = f.find_object(group);
  if (!r || r->type != ObjType::kGroup || !f.links(group).empty()) return;
  f.reset_link_corder(group);
  if (r->next_link_corder == 0) return;
  r->next_link_corder = 0;
  tessera::CatalogBatch b;
  f.put_object(b, group, *r);
  f.commit(b);
}

// Removes a link.  Native HDF5 deletes an object whose last link goes only when its last
// open handle closes, so an open object can be linked again (H5Olink): keep the object
// of an open handle, unlinked with reference count 0.  (If it is never relinked it stays
// in the catalog unreachable: a known space leak, no wrong data.)
void remove_link_keep_open(SharedFile& f, const LinkAt& at) {
  if (at.rec.type == H5L_TYPE_HARD) {
    bool open = false;
    for (auto& [p, t] : f.open_objects())
      if (t != H5I_FILE && t != H5I_ATTR && static_cast<Obj*>(p)->oid == at.rec.target) open = true;
    auto r = f.find_object(at.rec.target);
    if (open && r && r->rc <= 1) {
      tessera::CatalogBatch b;
      b.del(id_key("l/", at.group, "/", at.name));
      link_storage_removing(f, b, at.group);
      r->rc = 0;
      f.put_object(b, at.rec.target, *r);
      f.keep_link_corder(b, at.group, at.rec.corder);  // after: the target may be the group
      f.commit(b);
      return;
    }
  }
  f.remove_link(at.group, at.name);
}

// External link value as HDF5 encodes it: flags byte, file name, NUL, object path, NUL.
std::string elink_value(const LinkRecord& l) {
  if (l.target == kRawLinkValue) return l.soft_path;
  std::string v(1, '\0');
  v += l.soft_path;
  v.push_back('\0');
  v += l.ext_obj;
  v.push_back('\0');
  return v;
}

// `tracked`: group_tracks_corder of the link's group (computed once per group).
void fill_link_info(bool tracked, const LinkRecord& l, H5L_info2_t* info) {
  std::memset(info, 0, sizeof *info);
  info->type = l.type;
  info->corder_valid = tracked || l.corder_kept;
  info->corder = info->corder_valid ? l.corder : 0;
  info->cset = l.cset;
  if (l.type == H5L_TYPE_HARD) oid_to_token(l.target, &info->u.token);
  else if (l.type == H5L_TYPE_SOFT) info->u.val_size = l.soft_path.size() + 1;
  else info->u.val_size = elink_value(l).size();
}

// Keeps a GroupObj alive as an HDF5 ID for the duration of an iteration callback.
struct TempGroupId {
  hid_t id = H5I_INVALID_HID;
  TempGroupId(const std::shared_ptr<SharedFile>& f, uint64_t oid, const std::string& path) {
    auto* g = new GroupObj(H5I_GROUP, f, oid, path);
    id = H5VLwrap_register(g, H5I_GROUP);
    if (id < 0) {
      delete g;
      fail_arg("cannot register a group ID for the iteration callback");
    }
  }
  ~TempGroupId() {
    if (id >= 0) H5Idec_ref(id);  // closes the GroupObj through group_close
  }
};

herr_t iterate(Obj* o, const H5VL_loc_params_t* lp, H5VL_link_iterate_args_t& it) {
  require_loc_lapl(lp);
  ExternalHop hop(o, lp, nullptr, true);  // iterating a group reached through an external link
  o = hop.obj, lp = hop.lp;
  SharedFile& f = *o->file;
  std::string path;
  uint64_t g = locate(o, lp, &path);
  if (f.object(g).type != ObjType::kGroup) fail_arg("iteration location is not a group");
  TempGroupId gid(o->file, g, path);
  if (it.recursive) {  // H5Lvisit: every link, pre-order
    if (it.idx_type != H5_INDEX_NAME && it.idx_type != H5_INDEX_CRT_ORDER) fail_arg("unknown index type");
    std::set<uint64_t> descended{g};
    return walk_links(f, g, it.idx_type, it.order, descended,
                      [&](const std::string& p, const LinkRecord& l, bool tracked) -> herr_t {
                        H5L_info2_t info;
                        fill_link_info(tracked, l, &info);
                        return it.op(gid.id, p.c_str(), &info, it.op_data);
                      });
  }
  require_index(f, g, it.idx_type);
  auto links = ordered_links(f, g, it.idx_type, it.order);
  hsize_t skip = it.idx_p ? *it.idx_p : 0;
  if (skip > 0 && skip >= links.size()) fail_arg("index out of bound");
  hsize_t last = skip;
  herr_t rc = 0;
  bool tracked = group_tracks_corder(f, g);
  for (size_t i = skip; i < links.size() && rc == 0; ++i) {
    H5L_info2_t info;
    fill_link_info(tracked, links[i].second, &info);
    rc = it.op(gid.id, links[i].first.c_str(), &info, it.op_data);
    ++last;
  }
  if (it.idx_p) *it.idx_p = last;
  return rc;
}

}  // namespace

herr_t link_create(H5VL_link_create_args_t* args, void* obj, const H5VL_loc_params_t* lp, hid_t lcpl_id,
                   hid_t lapl_id, hid_t, void**) {
  return vol_call(__func__, "link create", [&] {
    if (!args) fail_arg("NULL arguments");
    // H5Lcreate_hard(H5L_SAME_LOC, ...) passes the new link's location as NULL.
    Obj* o = static_cast<Obj*>(obj);
    if (!o && args->op_type == H5VL_LINK_CREATE_HARD) o = static_cast<Obj*>(args->args.hard.curr_obj);
    if (!o) fail_arg("NULL location");
    ExternalHop hop(o, lp, nullptr, false);  // creating a link through an external link
    o = hop.obj, lp = hop.lp;
    SharedFile& f = *o->file;
    std::lock_guard<std::recursive_mutex> lk(f.mu());
    require_plist(lcpl_id, H5P_LINK_CREATE, "link creation");
    require_plist(lapl_id, H5P_LINK_ACCESS, "link access");
    require_loc_lapl(lp);
    f.require_writable("link create");
    if (lp->type != H5VL_OBJECT_BY_NAME) fail_arg("the new link must be given by name");
    LinkRecord l;
    l.cset = lcpl_cset(lcpl_id);
    switch (args->op_type) {
      case H5VL_LINK_CREATE_HARD: {
        Obj* cur = static_cast<Obj*>(args->args.hard.curr_obj);
        if (!cur) cur = o;
        if (cur->file != o->file) fail_arg("hard links cannot cross files");
        l.type = H5L_TYPE_HARD;
        l.target = locate(cur, &args->args.hard.curr_loc_params);
        break;
      }
      case H5VL_LINK_CREATE_SOFT:
        if (!args->args.soft.target || !*args->args.soft.target) fail_arg("empty soft link target");
        l.type = H5L_TYPE_SOFT;
        l.soft_path = args->args.soft.target;
        break;
      case H5VL_LINK_CREATE_UD: {
        if (args->args.ud.type != H5L_TYPE_EXTERNAL)
          fail_unsupported("user-defined link class " + std::to_string(static_cast<int>(args->args.ud.type)) +
                           ": tessera stores only the external link class (a connector cannot call a "
                           "registered class's callbacks)");
        const char* buf = static_cast<const char*>(args->args.ud.buf);
        size_t n = args->args.ud.buf_size;
        if (!buf && n > 0) fail_arg("NULL link value");
        l.type = H5L_TYPE_EXTERNAL;
        // HDF5 stores an external link's value without checking it (H5Lcreate_ud): a value
        // that is not "flags, file, NUL, object, NUL" is kept raw and fails on traversal.
        size_t flen = n > 1 ? strnlen(buf + 1, n - 1) : 0;
        size_t off = 1 + flen + 1;
        if (n >= 3 && buf[0] == 0 && off < n && buf[n - 1] == '\0' && strnlen(buf + off, n - off) == n - off - 1) {
          l.soft_path.assign(buf + 1, flen);
          l.ext_obj.assign(buf + off);
        } else {
          l.target = kRawLinkValue;
          if (n) l.soft_path.assign(buf, n);
        }
        break;
      }
      default: fail_unsupported("link create type " + std::to_string(static_cast<int>(args->op_type)));
    }
    tessera::CatalogBatch b;
    auto [parent, last] = f.resolve_parent(o->oid, lp->loc_data.loc_by_name.name, lcpl_intermediate(lcpl_id), &b);
    f.add_link(b, parent, last, l);
    f.commit(b);
  });
}

namespace {

// Copy (keep = true) or move a link.  A move is one catalog batch: the new link raises
// the target's reference count, so it is put back to its old value.
void copy_or_move(void* src_obj, const H5VL_loc_params_t* lp1, void* dst_obj, const H5VL_loc_params_t* lp2,
                  hid_t lcpl_id, hid_t lapl_id, bool keep) {
  require_plist(lcpl_id, H5P_LINK_CREATE, "link creation");
  require_plist(lapl_id, H5P_LINK_ACCESS, "link access");
  require_loc_lapl(lp2);
  Obj* src = as_obj(src_obj);
  Obj* dst = dst_obj ? static_cast<Obj*>(dst_obj) : src;
  ExternalHop shop(src, lp1, nullptr, false), dhop(dst, lp2, nullptr, false);
  src = shop.obj, lp1 = shop.lp, dst = dhop.obj, lp2 = dhop.lp;
  SharedFile& f = *src->file;
  if (dst->file != src->file) fail_arg("links cannot be copied or moved between files");
  std::lock_guard<std::recursive_mutex> lk(f.mu());
  f.require_writable(keep ? "link copy" : "link move");
  LinkAt from = link_at(src, lp1);
  if (lp2->type != H5VL_OBJECT_BY_NAME) fail_arg("the destination must be given by name");
  tessera::CatalogBatch b;
  auto [parent, last] = f.resolve_parent(dst->oid, lp2->loc_data.loc_by_name.name, lcpl_intermediate(lcpl_id), &b);
  if (parent == from.group && last == from.name) {
    if (!keep) return;  // moving a link onto itself changes nothing
    fail_arg("destination link '" + last + "' already exists");
  }
  LinkRecord l = from.rec;
  if (lcpl_id != H5P_DEFAULT) l.cset = lcpl_cset(lcpl_id);
  // As native: the link message keeps a valid creation order into a group that stores
  // messages without tracking order; a tracking group numbers it anew (add_link).
  // (An intermediate group made by this batch has no committed storage yet: not kept.)
  auto storage = link_storage(f, parent);
  l.corder_kept = storage && *storage != H5G_STORAGE_TYPE_SYMBOL_TABLE &&
                  (from.rec.corder_kept || group_tracks_corder(f, from.group)) &&
                  !group_tracks_corder(f, parent);
  bool two_step = !keep && l.type == H5L_TYPE_HARD && (l.target == parent || l.target == from.group);
  std::optional<ObjectRecord> before;
  if (!keep && l.type == H5L_TYPE_HARD && !two_step) before = f.object(l.target);
  f.add_link(b, parent, last, l);
  if (!keep && !two_step) {
    b.del(id_key("l/", from.group, "/", from.name));
    link_storage_removing(f, b, from.group);
    f.keep_link_corder(b, from.group, from.rec.corder);
    if (before) f.put_object(b, l.target, *before);
  }
  f.commit(b);
  if (two_step) f.remove_link(from.group, from.name);
  if (!keep) reset_corder_if_empty(f, from.group);
}

}  // namespace

herr_t link_copy(void* src_obj, const H5VL_loc_params_t* lp1, void* dst_obj, const H5VL_loc_params_t* lp2,
                 hid_t lcpl_id, hid_t lapl_id, hid_t, void**) {
  return vol_call(__func__, "link copy", [&] { copy_or_move(src_obj, lp1, dst_obj, lp2, lcpl_id, lapl_id, true); });
}

herr_t link_move(void* src_obj, const H5VL_loc_params_t* lp1, void* dst_obj, const H5VL_loc_params_t* lp2,
                 hid_t lcpl_id, hid_t lapl_id, hid_t, void**) {
  return vol_call(__func__, "link move", [&] { copy_or_move(src_obj, lp1, dst_obj, lp2, lcpl_id, lapl_id, false); });
}

herr_t link_get(void* obj, const H5VL_loc_params_t* lp, H5VL_link_get_args_t* args, hid_t, void**) {
  return vol_call(__func__, "link get", [&] {
    if (!args) fail_arg("NULL arguments");
    ExternalHop hop(as_obj(obj), lp, nullptr, false);
    Obj* o = hop.obj;
    lp = hop.lp;
    SharedFile& f = *o->file;
    std::lock_guard<std::recursive_mutex> lk(f.mu());
    LinkAt at = link_at(o, lp);
    switch (args->op_type) {
      case H5VL_LINK_GET_INFO:
        if (args->args.get_info.linfo)
          fill_link_info(group_tracks_corder(f, at.group), at.rec, args->args.get_info.linfo);
        return;
      case H5VL_LINK_GET_NAME: {
        auto& a = args->args.get_name;
        if (a.name && a.name_size > 0) {
          size_t k = std::min(at.name.size(), a.name_size - 1);
          std::memcpy(a.name, at.name.data(), k);
          a.name[k] = '\0';
        }
        if (a.name_len) *a.name_len = at.name.size();
        return;
      }
      case H5VL_LINK_GET_VAL: {
        if (at.rec.type == H5L_TYPE_HARD) fail_arg("link '" + at.name + "' is a hard link: it has no value");
        std::string v = at.rec.type == H5L_TYPE_SOFT ? at.rec.soft_path + std::string(1, '\0') : elink_value(at.rec);
        auto& a = args->args.get_val;
        if (a.buf && a.buf_size > 0) {
          size_t k = std::min(v.size(), a.buf_size);
          std::memcpy(a.buf, v.data(), k);
          if (at.rec.type == H5L_TYPE_SOFT && v.size() > a.buf_size) static_cast<char*>(a.buf)[a.buf_size - 1] = '\0';
        }
        return;
      }
    }
    fail_unsupported("operation " + std::to_string(static_cast<int>(args->op_type)));
  });
}

herr_t link_specific(void* obj, const H5VL_loc_params_t* lp, H5VL_link_specific_args_t* args, hid_t, void**) {
  // Iteration returns the callback's own value (positive stops early), so it is not
  // wrapped in vol_call's 0/-1.
  if (args && args->op_type == H5VL_LINK_ITER)
    return vol_call_iterate(__func__, "link iterate", obj, [&](Obj* o) { return iterate(o, lp, args->args.iterate); });
  return vol_call(__func__, "link specific", [&] {
    if (!args) fail_arg("NULL arguments");
    ExternalHop hop(as_obj(obj), lp, nullptr, false);
    Obj* o = hop.obj;
    lp = hop.lp;
    SharedFile& f = *o->file;
    std::lock_guard<std::recursive_mutex> lk(f.mu());
    switch (args->op_type) {
      case H5VL_LINK_DELETE: {
        f.require_writable("link delete");
        LinkAt at = link_at(o, lp);
        remove_link_keep_open(f, at);
        reset_corder_if_empty(f, at.group);
        return;
      }
      case H5VL_LINK_EXISTS: {
        // HDF5: every component but the last must exist (else an error); the last is a
        // link name and is not followed.
        if (lp->type != H5VL_OBJECT_BY_NAME) fail_arg("link exists needs a name");
        require_loc_lapl(lp);
        std::string name = lp->loc_data.loc_by_name.name;
        bool exists;
        if (name == "/") {
          exists = true;
        } else {
          auto [parent, last] = f.resolve_parent(o->oid, name, false, nullptr);
          if (f.object(parent).type != ObjType::kGroup) fail_arg("a component of '" + name + "' is not a group");
          exists = f.find_link(parent, last).has_value();
        }
        *args->args.exists.exists = exists;
        return;
      }
      case H5VL_LINK_ITER: return;  // handled above
    }
    fail_unsupported("operation " + std::to_string(static_cast<int>(args->op_type)));
  });
}

herr_t link_optional(void*, const H5VL_loc_params_t*, H5VL_optional_args_t* args, hid_t, void**) {
  TESSERA_VOL_ERROR(kUnsupported, "link optional operation %d not supported (native HDF5 defines none)",
                    args ? args->op_type : -1);
  return -1;
}

}  // namespace tessera_vol
