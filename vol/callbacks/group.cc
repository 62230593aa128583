// group.cc — H5G callbacks, and the plist-check / creation-order helpers link.cc and
// object.cc share (the lcpl's are in default_plists.h).
//
// A group is an object record plus its link records (object_model.h).  Links always keep
// a creation order; whether it may be *used* (H5_INDEX_CRT_ORDER, H5Lget_info's
// corder_valid) follows the group's gcpl, as in native HDF5.
#include <cstring>

#include "vol/features/elink.h"
#include "vol/model/link_storage.h"
#include "vol/model/objects.h"
#include "vol/base/tessera_vol.h"
#include "vol/model/parallel.h"

namespace tessera_vol {

void require_plist(hid_t id, hid_t cls, const char* what) {
  if (id == H5P_DEFAULT) return;
  // The library's default list of the class (what HDF5 passes for H5P_DEFAULT): its class
  // cannot change, so the two H5I/H5P lookups are skipped (per H5Acreate, issue 20).
  // The library's globals, not the H5P_* macros: each macro calls H5open.
  if ((cls == H5P_CLS_ATTRIBUTE_CREATE_ID_g && id == H5P_LST_ATTRIBUTE_CREATE_ID_g) ||
      (cls == H5P_CLS_ATTRIBUTE_ACCESS_ID_g && id == H5P_LST_ATTRIBUTE_ACCESS_ID_g) ||
      (cls == H5P_CLS_LINK_ACCESS_ID_g && id == H5P_LST_LINK_ACCESS_ID_g) ||
      (cls == H5P_CLS_LINK_CREATE_ID_g && id == H5P_LST_LINK_CREATE_ID_g) ||
      (cls == H5P_CLS_GROUP_CREATE_ID_g && id == H5P_LST_GROUP_CREATE_ID_g) ||
      (cls == H5P_CLS_GROUP_ACCESS_ID_g && id == H5P_LST_GROUP_ACCESS_ID_g))
    return;
  // H5Iget_type does not push errors for invalid IDs; H5Pisa_class then is safe to call.
  if (H5Iget_type(id) != H5I_GENPROP_LST || H5Pisa_class(id, cls) <= 0)
    fail_arg(std::string("invalid ") + what + " property list");
}

void require_loc_lapl(const H5VL_loc_params_t* lp) {
  if (!lp) fail_arg("NULL location parameters");
  if (lp->type == H5VL_OBJECT_BY_NAME) require_plist(lp->loc_data.loc_by_name.lapl_id, H5P_LINK_ACCESS, "link access");
  if (lp->type == H5VL_OBJECT_BY_IDX) require_plist(lp->loc_data.loc_by_idx.lapl_id, H5P_LINK_ACCESS, "link access");
}

namespace {

// The group's creation plist (the fcpl for the root group, which HDF5 creates from it).
hid_t group_cpl(SharedFile& f, uint64_t group, const ObjectRecord& r) {
  if (group == kRootOid) return H5Pcopy(f.fcpl());
  if (!r.cpl.empty()) {
    hid_t p = H5Pdecode(r.cpl.data());
    if (p >= 0) return p;
  }
  return H5Pcopy(H5P_GROUP_CREATE_DEFAULT);
}



void fill_info(SharedFile& f, uint64_t g, H5G_info_t* info) {
  ObjectRecord r = f.object(g);
  if (r.type != ObjType::kGroup) fail_arg("object is not a group");
  size_t n = f.links(g).size();
  bool tracked = group_tracks_corder(f, g);
  info->nlinks = n;
  info->mounted = false;
  // Native HDF5 writes old-style (symbol table) groups unless the gcpl asks for new-style
  // features such as creation order; new-style groups go dense past max_compact links.
  info->max_corder = tracked ? f.peek_link_corder(g, r) : 0;
  if (auto st = link_storage(f, g)) {
    info->storage_type = *st;
  } else if (!tracked) {  // a group from before link_storage.h: derived
    info->storage_type = H5G_STORAGE_TYPE_SYMBOL_TABLE;
  } else {
    unsigned max_compact = 8, min_dense = 6;
    hid_t cpl = group_cpl(f, g, r);
    if (cpl >= 0) {
      H5Pget_link_phase_change(cpl, &max_compact, &min_dense);
      H5Pclose(cpl);
    }
    info->storage_type = n <= max_compact ? H5G_STORAGE_TYPE_COMPACT : H5G_STORAGE_TYPE_DENSE;
  }
}

}  // namespace

bool group_tracks_corder(SharedFile& f, uint64_t group) {
  ObjectRecord r = f.object(group);
  if (r.type != ObjType::kGroup) return false;
  if (group != kRootOid && r.cpl.empty()) return false;  // default gcpl: not tracked
  hid_t cpl = group_cpl(f, group, r);
  if (cpl < 0) return false;
  unsigned flags = 0;
  herr_t st = H5Pget_link_creation_order(cpl, &flags);
  H5Pclose(cpl);
  return st >= 0 && (flags & H5P_CRT_ORDER_TRACKED);
}

void require_index(SharedFile& f, uint64_t group, H5_index_t idx) {
  if (idx == H5_INDEX_CRT_ORDER && !group_tracks_corder(f, group))
    fail_arg("creation order not tracked for links in group");
  if (idx != H5_INDEX_CRT_ORDER && idx != H5_INDEX_NAME) fail_arg("unknown index type");
}

void* group_create(void* obj, const H5VL_loc_params_t* lp, const char* name, hid_t lcpl_id, hid_t gcpl_id,
                   hid_t gapl_id, hid_t, void**) {
  return vol_call_ptr(__func__, "group create", [&]() -> void* {
    auto* o = static_cast<Obj*>(obj);
    if (!o) fail_arg("NULL location");
    ExternalHop hop(o, lp, name, false);  // creating through an external link
    o = hop.obj, lp = hop.lp, name = hop.name;
    auto file = o->file;
    SharedFile& f = *file;
    std::lock_guard<std::recursive_mutex> lk(f.mu());
    require_plist(lcpl_id, H5P_LINK_CREATE, "link creation");
    require_plist(gcpl_id, H5P_GROUP_CREATE, "group creation");
    require_plist(gapl_id, H5P_GROUP_ACCESS, "group access");
    require_loc_lapl(lp);
    f.require_writable("group create");
    std::string base;
    uint64_t loc = locate(o, lp, &base);
    tessera::CatalogBatch b;
    if (!name) {  // H5Gcreate_anon: an object without links
      uint64_t g = f.create_group_record(b, gcpl_id);
      f.commit(b);
      auto* go = new GroupObj(H5I_GROUP, file, g, "");
      go->handle = o->handle;
      return go;
    }
    auto [parent, last] = f.resolve_parent(loc, name, lcpl_intermediate(lcpl_id), &b);
    uint64_t g = f.create_group_record(b, gcpl_id);
    f.add_link(b, parent, last, LinkRecord::hard(g, lcpl_id));
    f.commit(b);
    auto* go = new GroupObj(H5I_GROUP, file, g, join(base, name));
    go->handle = o->handle;
    return go;
  });
}

void* group_open(void* obj, const H5VL_loc_params_t* lp, const char* name, hid_t gapl_id, hid_t, void**) {
  return vol_call_ptr(__func__, "group open", [&]() -> void* {
    auto* o = static_cast<Obj*>(obj);
    if (!o) fail_arg("NULL location");
    if (!name) fail_arg("NULL group name");
    require_plist(gapl_id, H5P_GROUP_ACCESS, "group access");
    require_loc_lapl(lp);
    ExternalHop hop(o, lp, name, true, gapl_id);
    o = hop.obj, lp = hop.lp, name = hop.name;
    SharedFile& f = *o->file;
    std::lock_guard<std::recursive_mutex> lk(f.mu());
    std::string base;
    uint64_t loc = locate(o, lp, &base);
    uint64_t g = f.resolve(loc, name);
    if (f.object(g).type != ObjType::kGroup) fail_arg(std::string("'") + name + "' is not a group");
    auto* go = new GroupObj(H5I_GROUP, o->file, g, join(base, name));
    go->handle = o->handle;
    return go;
  });
}

herr_t group_get(void* obj, H5VL_group_get_args_t* args, hid_t, void**) {
  return vol_call(__func__, "group get", [&] {
    if (!args) fail_arg("NULL arguments");
    Obj* g = as_obj(obj);  // a file object stands for the root group
    std::optional<ExternalHop> hop;
    if (args->op_type == H5VL_GROUP_GET_INFO) {
      hop.emplace(g, &args->args.get_info.loc_params, nullptr, true);
      g = hop->obj;
    }
    SharedFile& f = *g->file;
    std::lock_guard<std::recursive_mutex> lk(f.mu());
    switch (args->op_type) {
      case H5VL_GROUP_GET_GCPL: {
        hid_t p = group_cpl(f, g->oid, f.object(g->oid));
        if (p < 0) fail_arg("cannot decode the group creation property list");
        if (g->oid == kRootOid) {  // the fcpl is a gcpl subclass: hand out a plain gcpl
          hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
          unsigned crt = 0;
          unsigned maxc = 8, mind = 6;
          H5Pget_link_creation_order(p, &crt);
          H5Pget_link_phase_change(p, &maxc, &mind);
          H5Pset_link_creation_order(gcpl, crt);
          H5Pset_link_phase_change(gcpl, maxc, mind);
          H5Pclose(p);
          p = gcpl;
        }
        args->args.get_gcpl.gcpl_id = p;
        return;
      }
      case H5VL_GROUP_GET_INFO: {
        const H5VL_loc_params_t& lp = *hop->lp;
        auto& a = args->args.get_info;
        require_loc_lapl(&lp);
        uint64_t target;
        if (lp.type == H5VL_OBJECT_BY_IDX) {
          uint64_t parent = f.resolve(g->oid, lp.loc_data.loc_by_idx.name);
          require_index(f, parent, lp.loc_data.loc_by_idx.idx_type);
        }
        target = locate(g, &lp);
        fill_info(f, target, a.ginfo);
        return;
      }
    }
    fail_unsupported("operation " + std::to_string(static_cast<int>(args->op_type)));
  });
}

herr_t group_specific(void* obj, H5VL_group_specific_args_t* args, hid_t, void**) {
  return vol_call(__func__, "group specific", [&] {
    if (!args) fail_arg("NULL arguments");
    Obj* g = as_obj(obj);  // a file object stands for the root group
    switch (args->op_type) {
      case H5VL_GROUP_MOUNT:
      case H5VL_GROUP_UNMOUNT:
        fail_unsupported("mounting files is not supported by tessera containers");
      case H5VL_GROUP_FLUSH: {
        if (g->file->parallel()) fail_unsupported(kNoObjectFlushInParallel);
        std::lock_guard<std::recursive_mutex> lk(g->file->mu());
        if (g->file->writable()) g->file->flush_arrays();
        return;
      }
      case H5VL_GROUP_REFRESH:
        return;  // the catalog is read on every access: nothing is cached
    }
    fail_unsupported("operation " + std::to_string(static_cast<int>(args->op_type)));
  });
}

herr_t group_optional(void* obj, H5VL_optional_args_t* args, hid_t, void**) {
  return vol_call(__func__, "group optional", [&] {
    if (!args) fail_arg("NULL arguments");
    auto* o = static_cast<Obj*>(obj);
    if (!o) fail_arg("NULL object");
    SharedFile& f = *o->file;
    std::lock_guard<std::recursive_mutex> lk(f.mu());
    switch (args->op_type) {
      case H5VL_NATIVE_GROUP_GET_OBJINFO: {  // H5Gget_objinfo (h5py hashes objects with it)
        auto& a = static_cast<H5VL_native_group_optional_args_t*>(args->args)->get_objinfo;
        const H5VL_loc_params_t& lp = a.loc_params;
        std::string name = lp.type == H5VL_OBJECT_BY_NAME ? lp.loc_data.loc_by_name.name : ".";
        uint64_t start = o->oid;
        // The last component may be a soft link: without follow_link, describe the link.
        std::optional<LinkRecord> link;
        if (!a.follow_link && name != "." && name != "/") {
          auto [parent, last] = f.resolve_parent(start, name, false, nullptr);
          link = f.find_link(parent, last);
          if (!link) fail_arg("object '" + name + "' doesn't exist");
        }
        H5G_stat_t* sb = a.statbuf;
        if (!sb) return;  // existence check only
        std::memset(sb, 0, sizeof *sb);
        if (link && link->type != H5L_TYPE_HARD) {
          sb->type = link->type == H5L_TYPE_SOFT ? H5G_LINK : H5G_UDLINK;
          sb->linklen = link->soft_path.size() + 1;
          return;
        }
        uint64_t oid = f.resolve(start, name);
        ObjectRecord r = f.object(oid);
        unsigned long fno = static_cast<unsigned long>(f.fileno());
        sb->fileno[0] = fno;
        sb->fileno[1] = 0;
        sb->objno[0] = static_cast<unsigned long>(oid);
        sb->objno[1] = 0;
        sb->nlink = static_cast<unsigned>(r.rc);
        sb->type = r.type == ObjType::kGroup ? H5G_GROUP : r.type == ObjType::kDataset ? H5G_DATASET : H5G_TYPE;
        H5O_info2_t times;
        object_times(f, oid, r, &times);
        sb->mtime = times.ctime;  // as native: the change time
        return;
      }
      case H5VL_NATIVE_GROUP_ITERATE_OLD:
        fail_unsupported("H5Giterate (use H5Literate2)");
      default:
        fail_unsupported("native-only group operation " + std::to_string(args->op_type));
    }
  });
}

herr_t group_close(void* grp, hid_t, void**) {
  return vol_call(__func__, "group close", [&] {
    auto* o = static_cast<Obj*>(grp);
    if (!o) fail_arg("NULL group");
    delete o;
  });
}

}  // namespace tessera_vol
