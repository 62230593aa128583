/* compat_refs.c — the interposed v1 functions of addresses, old-style references and
 * dimension scales (tessera_compat.c has the why and how; compat_internal.h). */
#define _GNU_SOURCE

#include "compat_internal.h"

/* ------------------------------------------------------------------ addresses, references */

hid_t H5Oopen_by_addr(hid_t loc_id, haddr_t addr) {
  FORWARD_UNLESS(1, H5Oopen_by_addr, loc_id, addr);
  return api.H5Oopen_by_token(loc_id, addr_to_token(addr));
}

/* An old-style object reference (hobj_ref_t) is a haddr_t: the address defined above. */
/* Object and dataset-region references both start with the object's address (its id). */
static int object_ref_only(const char *func, H5R_type_t ref_type) {
  if (ref_type == H5R_OBJECT1 || ref_type == H5R_DATASET_REGION1) return 1;
  push_error(func, *api.maj_ref, *api.min_unsupported, "unknown old-style reference type %d", (int)ref_type);
  return 0;
}

/* The connector's region operations (include/tessera/region_ops.h), by name. */
static int region_op(const char *op_name) {
  int op = -1;
  if (api.H5VLfind_opt_operation(H5VL_SUBCLS_OBJECT, op_name, &op) < 0) return -1;
  return op;
}

static herr_t region_put(hid_t loc_id, const char *name, hid_t space_id, uint32_t *id) {
  size_t sz = 0;
  if (api.H5Sencode2(space_id, NULL, &sz, H5P_DEFAULT) < 0 || sz == 0) return -1;
  char *enc = malloc(sz);
  if (!enc) return -1;
  herr_t rc = api.H5Sencode2(space_id, enc, &sz, H5P_DEFAULT);
  tessera_region_put_t put = {enc, sz, 0};
  H5VL_optional_args_t args = {region_op(TESSERA_OP_REGION_PUT), &put};
  if (rc >= 0 && args.op_type > 0)
    rc = (api.H5VLobject_optional_op)(__FILE__, __func__, __LINE__, loc_id, name, H5P_DEFAULT, &args,
                                    H5P_DEFAULT, H5ES_NONE);
  else
    rc = -1;
  free(enc);
  if (rc >= 0) *id = put.id;
  return rc;
}

static hid_t open_ref(hid_t loc_id, const void *ref) {
  hobj_ref_t addr;
  memcpy(&addr, ref, sizeof addr);
  return api.H5Oopen_by_token(loc_id, addr_to_token((haddr_t)addr));
}

herr_t H5Rcreate(void *ref, hid_t loc_id, const char *name, H5R_type_t ref_type, hid_t space_id) {
  FORWARD_UNLESS(ref && name && *name, H5Rcreate, ref, loc_id, name, ref_type, space_id);
  if (!object_ref_only("H5Rcreate", ref_type)) return -1;
  H5O_info2_t info;
  if (api.H5Oget_info_by_name3(loc_id, name, &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return -1;
  haddr_t addr = token_to_addr(&info.token);
  if (addr == HADDR_UNDEF) {
    push_error("H5Rcreate", *api.maj_ref, *api.min_badvalue,
               "the object token of '%s' does not fit an old-style reference (8 bytes)", name);
    return -1;
  }
  hobj_ref_t out = (hobj_ref_t)addr;
  if (ref_type == H5R_DATASET_REGION1) {
    /* hdset_reg_ref_t: the dataset's address, then the id of its stored selection */
    if (info.type != H5O_TYPE_DATASET) {
      push_error("H5Rcreate", *api.maj_ref, *api.min_badvalue, "'%s' is not a dataset", name);
      return -1;
    }
    uint32_t id = 0;
    if (region_put(loc_id, name, space_id, &id) < 0) return -1;
    unsigned char buf[H5R_DSET_REG_REF_BUF_SIZE] = {0};
    memcpy(buf, &out, sizeof out);
    memcpy(buf + sizeof out, &id, sizeof id);
    memcpy(ref, buf, sizeof buf);
    return 0;
  }
  memcpy(ref, &out, sizeof out);
  return 0;
}

hid_t H5Rget_region(hid_t dataset, H5R_type_t ref_type, const void *ref) {
  if (!api_ready()) return H5I_INVALID_HID;
  if (!ref || ref_type != H5R_DATASET_REGION1 || !is_foreign(dataset))
    return api.H5Rget_region(dataset, ref_type, ref);
  uint32_t id;
  memcpy(&id, (const unsigned char *)ref + sizeof(hobj_ref_t), sizeof id);
  hid_t obj = open_ref(dataset, ref);
  if (obj < 0) return H5I_INVALID_HID;
  tessera_region_get_t get = {id, NULL, 0, 0};
  H5VL_optional_args_t args = {region_op(TESSERA_OP_REGION_GET), &get};
  herr_t rc = args.op_type > 0 ? (api.H5VLobject_optional_op)(__FILE__, __func__, __LINE__, obj, ".", H5P_DEFAULT,
                                                            &args, H5P_DEFAULT, H5ES_NONE)
                               : -1;
  hid_t space = H5I_INVALID_HID;
  if (rc >= 0 && get.size > 0 && (get.buf = malloc(get.size)) != NULL) {
    get.buf_size = get.size;
    rc = (api.H5VLobject_optional_op)(__FILE__, __func__, __LINE__, obj, ".", H5P_DEFAULT, &args,
                                    H5P_DEFAULT, H5ES_NONE);
    if (rc >= 0) space = api.H5Sdecode(get.buf);
    free(get.buf);
  }
  api.H5Oclose(obj);
  return space;
}

hid_t H5Rdereference2(hid_t loc_id, hid_t oapl_id, H5R_type_t ref_type, const void *ref) {
  FORWARD_UNLESS(ref && oapl_id >= 0, H5Rdereference2, loc_id, oapl_id, ref_type, ref);
  if (!object_ref_only("H5Rdereference2", ref_type)) return H5I_INVALID_HID;
  return open_ref(loc_id, ref); /* H5Oopen_by_token has no oapl: it is ignored */
}

hid_t H5Rdereference1(hid_t loc_id, H5R_type_t ref_type, const void *ref) {
  FORWARD_UNLESS(ref, H5Rdereference1, loc_id, ref_type, ref);
  if (!object_ref_only("H5Rdereference1", ref_type)) return H5I_INVALID_HID;
  return open_ref(loc_id, ref);
}

static herr_t ref_obj_type(hid_t loc_id, const void *ref, H5O_type_t *obj_type) {
  hid_t obj = open_ref(loc_id, ref);
  if (obj < 0) return -1;
  H5O_info2_t info;
  herr_t status = api.H5Oget_info3(obj, &info, H5O_INFO_BASIC);
  api.H5Oclose(obj);
  if (status < 0) return -1;
  *obj_type = info.type;
  return 0;
}

herr_t H5Rget_obj_type2(hid_t loc_id, H5R_type_t ref_type, const void *ref, H5O_type_t *obj_type) {
  FORWARD_UNLESS(ref && obj_type, H5Rget_obj_type2, loc_id, ref_type, ref, obj_type);
  if (!object_ref_only("H5Rget_obj_type2", ref_type)) return -1;
  return ref_obj_type(loc_id, ref, obj_type);
}

H5G_obj_t H5Rget_obj_type1(hid_t loc_id, H5R_type_t ref_type, const void *ref) {
  if (!api_ready()) return H5G_UNKNOWN;
  if (!ref || !is_foreign(loc_id)) return api.H5Rget_obj_type1(loc_id, ref_type, ref);
  H5O_type_t type = H5O_TYPE_UNKNOWN;
  if (!object_ref_only("H5Rget_obj_type1", ref_type) || ref_obj_type(loc_id, ref, &type) < 0)
    return H5G_UNKNOWN;
  switch (type) { /* H5G_map_obj_type */
    case H5O_TYPE_GROUP: return H5G_GROUP;
    case H5O_TYPE_DATASET: return H5G_DATASET;
    case H5O_TYPE_NAMED_DATATYPE: return H5G_TYPE;
    default: return H5G_UNKNOWN;
  }
}

ssize_t H5Rget_name(hid_t loc_id, H5R_type_t ref_type, const void *ref, char *name, size_t size) {
  FORWARD_UNLESS(ref, H5Rget_name, loc_id, ref_type, ref, name, size);
  if (!object_ref_only("H5Rget_name", ref_type)) return -1;
  hid_t obj = open_ref(loc_id, ref);
  if (obj < 0) return -1;
  ssize_t len = api.H5Iget_name(obj, name, size);
  api.H5Oclose(obj);
  return len;
}

/* ------------------------------------------------------------------ dimension scales */

/* Whether type t holds a 1.12-style reference (an H5R_ref_t-sized reference type) in a
 * sequence or compound, as HDF5's dimension scales store them on other connectors. */
static int holds_new_ref(hid_t t, int depth) {
  if (t < 0 || depth > 8) return 0;
  int found = 0;
  switch (api.H5Tget_class(t)) {
    case H5T_REFERENCE: return api.H5Tget_size(t) == sizeof(H5R_ref_t);
    case H5T_VLEN: {
      hid_t b = api.H5Tget_super(t);
      found = holds_new_ref(b, depth + 1);
      if (b >= 0) api.H5Tclose(b);
      return found;
    }
    case H5T_COMPOUND:
      for (int i = 0, n = api.H5Tget_nmembers(t); i < n && !found; i++) {
        hid_t m = api.H5Tget_member_type(t, (unsigned)i);
        found = holds_new_ref(m, depth + 1);
        if (m >= 0) api.H5Tclose(m);
      }
      return found;
    default: return 0;
  }
}

/* The object's dimension-scale attributes already hold new-style references: a program
 * without this library wrote them (HDF5's own choice on a non-native connector). */
static int scales_use_new_refs(hid_t obj) {
  static const char *const names[] = {"DIMENSION_LIST", "REFERENCE_LIST"};
  int found = 0;
  for (int i = 0; i < 2 && !found; i++) {
    if (api.H5Aexists(obj, names[i]) <= 0) continue;
    hid_t a = api.H5Aopen(obj, names[i], H5P_DEFAULT);
    hid_t t = a >= 0 ? api.H5Aget_type(a) : -1;
    found = holds_new_ref(t, 0);
    if (t >= 0) api.H5Tclose(t);
    if (a >= 0) api.H5Aclose(a);
  }
  return found;
}

/* HDF5's HL library stores dimension scales (DIMENSION_LIST, REFERENCE_LIST) with
 * 1.12-style references for any non-native connector and with old-style object
 * references (hobj_ref_t) in native files.  Readers of netCDF-4 and h5py's dims API
 * understand the old-style ones (h5py has no type for the new ones in attributes), and
 * tessera serves them through this library, so a tessera container gets what a native
 * file gets — unless the object's scales were written with new-style references (by a
 * program without this library; tessera stores those too), which H5DS then keeps
 * reading and writing as they are.  Other connectors keep HDF5's answer. */
herr_t H5DSwith_new_ref(hid_t obj_id, hbool_t *with_new_ref) {
  if (!with_new_ref || !api_ready()) return -1;
  hbool_t native = 1;
  if (api.H5VLobject_is_native(obj_id, &native) < 0) return -1;
#ifdef H5_DIMENSION_SCALES_WITH_NEW_REF
  const int config_flag = 1;
#else
  const int config_flag = 0;
#endif
  int tessera = 0;
  if (!native) {
    char name[16] = "";
    tessera = api.H5VLget_connector_name(obj_id, name, sizeof name) > 0 && strcmp(name, "tessera") == 0;
  }
  *with_new_ref = config_flag || (!native && (!tessera || scales_use_new_refs(obj_id)));
  return 0;
}
