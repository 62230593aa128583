/* tessera_compat.c — libtessera_compat.so, the LD_PRELOAD library that serves HDF5's
 * deprecated v1 entry points for objects of non-native VOL connectors (tessera).
 *
 * Why: h5py (built with H5_USE_110_API) and older C programs call the v1 functions
 * below.  HDF5 1.14 refuses each of them for any object whose terminal connector is not
 * native, *before* the connector is called (src/H5Ldeprec.c, H5Odeprec.c, H5Rdeprec.c:
 * "... is only meant to be used with the native VOL connector").  So `list(group)`,
 * `visit()`, `'a/b' in f`, `Group.get(getclass=True)` and object references fail on
 * tessera although the connector implements everything they need through the v2/v3 API.
 *
 * How: this library defines the same symbols; preloaded, it takes precedence over
 * libhdf5's definitions.  Each function asks whether its location ID belongs to a
 * non-native connector (H5VLobject_is_native); if not — native files, invalid IDs,
 * bad arguments — it calls libhdf5's own function unchanged, so native behaviour and
 * native error messages stay exactly as they were.  Otherwise it performs the call with
 * the v2/v3 API and converts the results.
 *
 * Interposed functions (all: "refused for non-native objects in 1.14.5"):
 *   H5Literate1, H5Literate_by_name1      -> H5Literate2/_by_name2, H5L_info2_t -> H5L_info1_t
 *   H5Lvisit1, H5Lvisit_by_name1          -> H5Lvisit2/_by_name2, same conversion
 *   H5Lget_info1, H5Lget_info_by_idx1     -> H5Lget_info2/_by_idx2
 *   H5Oget_info1/_by_name1/_by_idx1       -> H5Oget_info3/_by_name3/_by_idx3, H5O_info2_t -> H5O_info1_t
 *   H5Oget_info2/_by_name2/_by_idx2       -> same, honouring `fields`
 *   H5Ovisit1/_by_name1, H5Ovisit2/_by_name2 -> H5Ovisit3/_by_name3, same conversion
 *   H5Oopen_by_addr                       -> H5Oopen_by_token
 *   H5Rcreate (H5R_OBJECT)                -> H5Oget_info_by_name3 (token -> hobj_ref_t)
 *   H5Rdereference2 (H5R_OBJECT only)     -> H5Oopen_by_token
 *   H5Rget_obj_type2 (H5R_OBJECT only)    -> H5Oopen_by_token + H5Oget_info3
 *   H5Rget_name (H5R_OBJECT only)         -> H5Oopen_by_token + H5Iget_name
 *   H5Rdereference1, H5Rget_obj_type1     -> as their "2" versions (1.6/1.8-era C programs)
 *   H5DSwith_new_ref (HL library)         -> false for tessera objects: dimension scales use the
 *                                            old-style object references native files use (true
 *                                            where they already hold new-style ones)
 *
 * Addresses: v1 structures carry a haddr_t where v2 carries an H5O_token_t (16 bytes).
 * tessera's token holds the 64-bit object id in its first 8 bytes (host order, rest zero;
 * vol/model/objects.cc oid_to_token), so address := object id and token := {id, zeros}.  For
 * another connector whose token uses more than 8 bytes the mapping is not lossless:
 * such tokens get the address HADDR_UNDEF and cannot be referenced.
 *
 *   H5Rcreate (H5R_DATASET_REGION)        -> the connector stores the selection (include/tessera/region_ops.h)
 *   H5Rget_region                         -> the connector returns it, H5Sdecode
 *
 * Not covered: the native-only parts of H5O_info1_t (hdr, meta_size) are zero.
 *
 * Linking: the library does NOT link libhdf5.  It is preloaded into every process the
 * launcher starts (shells, compilers, mpirun...), and h5py loads libhdf5 privately
 * (RTLD_LOCAL), where neither static linking nor dlsym(RTLD_NEXT) can see it.  All HDF5
 * functions are therefore resolved at first use from the libhdf5 already loaded in the
 * process (found with dl_iterate_phdr, opened with RTLD_NOLOAD).  The library keeps no
 * state besides that immutable table, so it is as thread-safe as libhdf5 itself.
 */
#define _GNU_SOURCE

#include "compat_internal.h"

/* ------------------------------------------------------------------ libhdf5 table */

struct compat_api api;

static pthread_once_t api_once = PTHREAD_ONCE_INIT;

/* dl_iterate_phdr callback: open (without loading) the first libhdf5 in the process. */
static int find_hdf5(struct dl_phdr_info *info, size_t size, void *out) {
  (void)size;
  const char *path = info->dlpi_name;
  if (!path || !*path) return 0;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  /* libhdf5.so[.N...] or a wheel's libhdf5-<hash>.so; not libhdf5_hl and friends. */
  if (strncmp(base, "libhdf5.so", 10) != 0 && strncmp(base, "libhdf5-", 8) != 0) return 0;
  void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return 0;
  if (!dlsym(h, "H5Literate2")) {
    dlclose(h);
    return 0;
  }
  *(void **)out = h;
  return 1;
}

static void api_init(void) {
  void *h = NULL;
  dl_iterate_phdr(find_hdf5, &h);
  if (!h) {
    fprintf(stderr, "tessera compat: libhdf5 is not loaded in this process; HDF5 v1 calls fail\n");
    return;
  }
  int ok = 1;
#define RESOLVE(name)                                                                     \
  if (!(api.name = (__typeof__(name) *)dlsym(h, #name))) {                                \
    fprintf(stderr, "tessera compat: libhdf5 has no symbol %s\n", #name);                 \
    ok = 0;                                                                               \
  }
  COMPAT_FUNCS(RESOLVE)
#undef RESOLVE
  api.err_cls = (const hid_t *)dlsym(h, "H5E_ERR_CLS_g");
  api.maj_link = (const hid_t *)dlsym(h, "H5E_LINK_g");
  api.maj_ohdr = (const hid_t *)dlsym(h, "H5E_OHDR_g");
  api.maj_ref = (const hid_t *)dlsym(h, "H5E_REFERENCE_g");
  api.min_unsupported = (const hid_t *)dlsym(h, "H5E_UNSUPPORTED_g");
  api.min_badvalue = (const hid_t *)dlsym(h, "H5E_BADVALUE_g");
  api.default_fapl = (const hid_t *)dlsym(h, "H5P_LST_FILE_ACCESS_ID_g");
  api.ok = ok && api.default_fapl && api.err_cls && api.maj_link && api.maj_ohdr && api.maj_ref &&
           api.min_unsupported && api.min_badvalue;
}

int api_ready(void) {
  pthread_once(&api_once, api_init);
  return api.ok;
}

/* ------------------------------------------------------------------ helpers */

/* True when `id` is an object (file, group, dataset, attribute, committed datatype) of a
 * file whose terminal connector is not native.  Anything else — native objects, invalid
 * IDs, H5P_DEFAULT — answers false, and the caller forwards to libhdf5, which produces
 * exactly its usual result or error.  H5Iget_type/H5Tcommitted are probed first because
 * H5VLobject_is_native pushes (and may print) an error for IDs that are not objects. */
int is_foreign(hid_t id) {
  H5I_type_t t = api.H5Iget_type(id);
  switch (t) {
    case H5I_FILE:
    case H5I_GROUP:
    case H5I_DATASET:
    case H5I_ATTR:
      break;
    case H5I_DATATYPE:
      if (api.H5Tcommitted(id) <= 0) return 0;
      break;
    default:
      return 0;
  }
  hbool_t native = 1;
  if (api.H5VLobject_is_native(id, &native) < 0) return 0;
  return !native;
}

/* Push "tessera compat: <func>: <msg>" on the default error stack and report it the way
 * an API function would (the automatic error handler, if one is installed). */
void push_error(const char *func, hid_t maj, hid_t min, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  api.H5Eclear2(H5E_DEFAULT);
  api.H5Epush2(H5E_DEFAULT, "tessera_compat.c", func, __LINE__, *api.err_cls, maj, min,
               "tessera compat: %s: %s", func, msg);
  H5E_auto2_t handler = NULL;
  void *client = NULL;
  if (api.H5Eget_auto2(H5E_DEFAULT, &handler, &client) >= 0 && handler)
    handler(H5E_DEFAULT, client);
}

/* Token <-> address (see the header comment). */
haddr_t token_to_addr(const H5O_token_t *token) {
  uint64_t id;
  memcpy(&id, token->__data, sizeof id);
  for (size_t i = sizeof id; i < H5O_MAX_TOKEN_SIZE; i++)
    if (token->__data[i] != 0) return HADDR_UNDEF; /* not representable as an address */
  return (haddr_t)id;
}

H5O_token_t addr_to_token(haddr_t addr) {
  H5O_token_t token;
  uint64_t id = (uint64_t)addr;
  memset(&token, 0, sizeof token);
  memcpy(token.__data, &id, sizeof id);
  return token;
}

static void link_info_v1(const H5L_info2_t *in, H5L_info1_t *out) {
  memset(out, 0, sizeof *out);
  out->type = in->type;
  out->corder_valid = in->corder_valid;
  out->corder = in->corder;
  out->cset = in->cset;
  if (in->type == H5L_TYPE_HARD)
    out->u.address = token_to_addr(&in->u.token);
  else
    out->u.val_size = in->u.val_size;
}

/* The data-model part of `fields`, which is all a non-native connector can answer. */
static unsigned dm_fields(unsigned fields) {
  return fields & (H5O_INFO_BASIC | H5O_INFO_TIME | H5O_INFO_NUM_ATTRS);
}

/* Like H5O__get_info_old: reset, then copy what `fields` asked for.  hdr and meta_size
 * describe native object headers: they stay zero. */
static void object_info_v1(const H5O_info2_t *in, unsigned fields, H5O_info1_t *out) {
  memset(out, 0, sizeof *out);
  out->type = H5O_TYPE_UNKNOWN;
  out->addr = HADDR_UNDEF;
  if (fields & H5O_INFO_BASIC) {
    out->fileno = in->fileno;
    out->type = in->type;
    out->rc = in->rc;
    out->addr = token_to_addr(&in->token);
  }
  if (fields & H5O_INFO_TIME) {
    out->atime = in->atime;
    out->mtime = in->mtime;
    out->ctime = in->ctime;
    out->btime = in->btime;
  }
  if (fields & H5O_INFO_NUM_ATTRS) out->num_attrs = in->num_attrs;
}

/* Callback adapters: the v2 iteration calls these, they call the user's v1 callback. */
typedef struct {
  H5L_iterate1_t op;
  void *op_data;
} link_shim_t;

static herr_t link_shim(hid_t group, const char *name, const H5L_info2_t *info2, void *data) {
  link_shim_t *shim = (link_shim_t *)data;
  H5L_info1_t info1;
  memset(&info1, 0, sizeof info1);
  if (info2) link_info_v1(info2, &info1);
  return shim->op(group, name, &info1, shim->op_data);
}

typedef struct {
  H5O_iterate1_t op;
  void *op_data;
  unsigned fields;
} object_shim_t;

static herr_t object_shim(hid_t obj, const char *name, const H5O_info2_t *info2, void *data) {
  object_shim_t *shim = (object_shim_t *)data;
  H5O_info1_t info1;
  H5O_info2_t none;
  if (!info2) {
    memset(&none, 0, sizeof none);
    none.type = H5O_TYPE_UNKNOWN;
    info2 = &none;
  }
  object_info_v1(info2, shim->fields, &info1);
  return shim->op(obj, name, &info1, shim->op_data);
}

/* ------------------------------------------------------------------ H5L */

herr_t H5Literate1(hid_t loc_id, H5_index_t idx_type, H5_iter_order_t order, hsize_t *idx,
                   H5L_iterate1_t op, void *op_data) {
  FORWARD_UNLESS(op, H5Literate1, loc_id, idx_type, order, idx, op, op_data);
  link_shim_t shim = {op, op_data};
  return api.H5Literate2(loc_id, idx_type, order, idx, link_shim, &shim);
}

herr_t H5Literate_by_name1(hid_t loc_id, const char *group_name, H5_index_t idx_type,
                           H5_iter_order_t order, hsize_t *idx, H5L_iterate1_t op, void *op_data,
                           hid_t lapl_id) {
  FORWARD_UNLESS(op && group_name, H5Literate_by_name1, loc_id, group_name, idx_type, order, idx,
                 op, op_data, lapl_id);
  link_shim_t shim = {op, op_data};
  return api.H5Literate_by_name2(loc_id, group_name, idx_type, order, idx, link_shim, &shim,
                                 lapl_id);
}

herr_t H5Lvisit1(hid_t loc_id, H5_index_t idx_type, H5_iter_order_t order, H5L_iterate1_t op,
                 void *op_data) {
  FORWARD_UNLESS(op, H5Lvisit1, loc_id, idx_type, order, op, op_data);
  link_shim_t shim = {op, op_data};
  return api.H5Lvisit2(loc_id, idx_type, order, link_shim, &shim);
}

herr_t H5Lvisit_by_name1(hid_t loc_id, const char *group_name, H5_index_t idx_type,
                         H5_iter_order_t order, H5L_iterate1_t op, void *op_data, hid_t lapl_id) {
  FORWARD_UNLESS(op && group_name, H5Lvisit_by_name1, loc_id, group_name, idx_type, order, op,
                 op_data, lapl_id);
  link_shim_t shim = {op, op_data};
  return api.H5Lvisit_by_name2(loc_id, group_name, idx_type, order, link_shim, &shim, lapl_id);
}

herr_t H5Lget_info1(hid_t loc_id, const char *name, H5L_info1_t *linfo, hid_t lapl_id) {
  FORWARD_UNLESS(name && linfo, H5Lget_info1, loc_id, name, linfo, lapl_id);
  H5L_info2_t info2;
  if (api.H5Lget_info2(loc_id, name, &info2, lapl_id) < 0) return -1;
  link_info_v1(&info2, linfo);
  return 0;
}

herr_t H5Lget_info_by_idx1(hid_t loc_id, const char *group_name, H5_index_t idx_type,
                           H5_iter_order_t order, hsize_t n, H5L_info1_t *linfo, hid_t lapl_id) {
  FORWARD_UNLESS(group_name && linfo, H5Lget_info_by_idx1, loc_id, group_name, idx_type, order,
                 n, linfo, lapl_id);
  H5L_info2_t info2;
  if (api.H5Lget_info_by_idx2(loc_id, group_name, idx_type, order, n, &info2, lapl_id) < 0)
    return -1;
  link_info_v1(&info2, linfo);
  return 0;
}

/* ------------------------------------------------------------------ H5O info */

static herr_t info_self(hid_t loc_id, H5O_info1_t *oinfo, unsigned fields) {
  H5O_info2_t info2;
  memset(&info2, 0, sizeof info2);
  if (dm_fields(fields) && api.H5Oget_info3(loc_id, &info2, dm_fields(fields)) < 0) return -1;
  object_info_v1(&info2, fields, oinfo);
  return 0;
}

herr_t H5Oget_info2(hid_t loc_id, H5O_info1_t *oinfo, unsigned fields) {
  FORWARD_UNLESS(oinfo, H5Oget_info2, loc_id, oinfo, fields);
  return info_self(loc_id, oinfo, fields);
}

herr_t H5Oget_info1(hid_t loc_id, H5O_info1_t *oinfo) {
  FORWARD_UNLESS(oinfo, H5Oget_info1, loc_id, oinfo);
  return info_self(loc_id, oinfo, H5O_INFO_ALL);
}

static herr_t info_by_name(hid_t loc_id, const char *name, H5O_info1_t *oinfo, unsigned fields,
                           hid_t lapl_id) {
  H5O_info2_t info2;
  memset(&info2, 0, sizeof info2);
  if (dm_fields(fields) &&
      api.H5Oget_info_by_name3(loc_id, name, &info2, dm_fields(fields), lapl_id) < 0)
    return -1;
  object_info_v1(&info2, fields, oinfo);
  return 0;
}

herr_t H5Oget_info_by_name2(hid_t loc_id, const char *name, H5O_info1_t *oinfo, unsigned fields,
                            hid_t lapl_id) {
  FORWARD_UNLESS(name && oinfo, H5Oget_info_by_name2, loc_id, name, oinfo, fields, lapl_id);
  return info_by_name(loc_id, name, oinfo, fields, lapl_id);
}

herr_t H5Oget_info_by_name1(hid_t loc_id, const char *name, H5O_info1_t *oinfo, hid_t lapl_id) {
  FORWARD_UNLESS(name && oinfo, H5Oget_info_by_name1, loc_id, name, oinfo, lapl_id);
  return info_by_name(loc_id, name, oinfo, H5O_INFO_ALL, lapl_id);
}

static herr_t info_by_idx(hid_t loc_id, const char *group_name, H5_index_t idx_type,
                          H5_iter_order_t order, hsize_t n, H5O_info1_t *oinfo, unsigned fields,
                          hid_t lapl_id) {
  H5O_info2_t info2;
  memset(&info2, 0, sizeof info2);
  if (dm_fields(fields) && api.H5Oget_info_by_idx3(loc_id, group_name, idx_type, order, n, &info2,
                                                   dm_fields(fields), lapl_id) < 0)
    return -1;
  object_info_v1(&info2, fields, oinfo);
  return 0;
}

herr_t H5Oget_info_by_idx2(hid_t loc_id, const char *group_name, H5_index_t idx_type,
                           H5_iter_order_t order, hsize_t n, H5O_info1_t *oinfo, unsigned fields,
                           hid_t lapl_id) {
  FORWARD_UNLESS(group_name && oinfo, H5Oget_info_by_idx2, loc_id, group_name, idx_type, order, n,
                 oinfo, fields, lapl_id);
  return info_by_idx(loc_id, group_name, idx_type, order, n, oinfo, fields, lapl_id);
}

herr_t H5Oget_info_by_idx1(hid_t loc_id, const char *group_name, H5_index_t idx_type,
                           H5_iter_order_t order, hsize_t n, H5O_info1_t *oinfo, hid_t lapl_id) {
  FORWARD_UNLESS(group_name && oinfo, H5Oget_info_by_idx1, loc_id, group_name, idx_type, order, n,
                 oinfo, lapl_id);
  return info_by_idx(loc_id, group_name, idx_type, order, n, oinfo, H5O_INFO_ALL, lapl_id);
}

/* ------------------------------------------------------------------ H5O visit */

herr_t H5Ovisit2(hid_t loc_id, H5_index_t idx_type, H5_iter_order_t order, H5O_iterate1_t op,
                 void *op_data, unsigned fields) {
  FORWARD_UNLESS(op, H5Ovisit2, loc_id, idx_type, order, op, op_data, fields);
  object_shim_t shim = {op, op_data, fields};
  return api.H5Ovisit3(loc_id, idx_type, order, object_shim, &shim, dm_fields(fields));
}

herr_t H5Ovisit1(hid_t loc_id, H5_index_t idx_type, H5_iter_order_t order, H5O_iterate1_t op,
                 void *op_data) {
  FORWARD_UNLESS(op, H5Ovisit1, loc_id, idx_type, order, op, op_data);
  object_shim_t shim = {op, op_data, H5O_INFO_ALL};
  return api.H5Ovisit3(loc_id, idx_type, order, object_shim, &shim, dm_fields(H5O_INFO_ALL));
}

herr_t H5Ovisit_by_name2(hid_t loc_id, const char *obj_name, H5_index_t idx_type,
                         H5_iter_order_t order, H5O_iterate1_t op, void *op_data, unsigned fields,
                         hid_t lapl_id) {
  FORWARD_UNLESS(op && obj_name, H5Ovisit_by_name2, loc_id, obj_name, idx_type, order, op, op_data,
                 fields, lapl_id);
  object_shim_t shim = {op, op_data, fields};
  return api.H5Ovisit_by_name3(loc_id, obj_name, idx_type, order, object_shim, &shim,
                               dm_fields(fields), lapl_id);
}

herr_t H5Ovisit_by_name1(hid_t loc_id, const char *obj_name, H5_index_t idx_type,
                         H5_iter_order_t order, H5O_iterate1_t op, void *op_data, hid_t lapl_id) {
  FORWARD_UNLESS(op && obj_name, H5Ovisit_by_name1, loc_id, obj_name, idx_type, order, op, op_data,
                 lapl_id);
  object_shim_t shim = {op, op_data, H5O_INFO_ALL};
  return api.H5Ovisit_by_name3(loc_id, obj_name, idx_type, order, object_shim, &shim,
                               dm_fields(H5O_INFO_ALL), lapl_id);
}

/* ------------------------------------------------------------------ native files */

/* Whether `path` is a native HDF5 file: a regular file with HDF5's signature at offset 0
 * or at a power of two from 512 on (a userblock before it), as HDF5 searches for it. */
static int native_hdf5_file(const char *path) {
  static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  FILE *fp = fopen(path, "rb");
  if (!fp) return 0;
  int found = 0;
  unsigned char buf[8];
  for (long off = 0; !found && off <= (1L << 30); off = off ? off * 2 : 512) {
    if (fseek(fp, off, SEEK_SET) != 0 || fread(buf, 1, sizeof buf, fp) != sizeof buf) break;
    found = memcmp(buf, sig, sizeof buf) == 0;
  }
  /* A one-file tessera container begins with a small HDF5 file too: its anchor (magic
   * TSRAPACK at 4096 * 2^k, docs/format.md "The one-file container") says it is tessera's. */
  for (long off = 4096; found && off <= (1L << 20); off *= 2)
    if (fseek(fp, off, SEEK_SET) == 0 && fread(buf, 1, sizeof buf, fp) == sizeof buf &&
        memcmp(buf, "TSRAPACK", sizeof buf) == 0)
      found = 0;
  fclose(fp);
  return found;
}

/* Whether the fapl (H5P_DEFAULT: the default one, set from HDF5_VOL_CONNECTOR) selects
 * the tessera connector. */
static int fapl_is_tessera(hid_t fapl) {
  hid_t vol = H5I_INVALID_HID, tess = H5I_INVALID_HID;
  int cmp = 1;
  if (api.H5Pget_vol_id(fapl == H5P_DEFAULT ? *api.default_fapl : fapl, &vol) < 0) return 0;
  tess = api.H5VLget_connector_id_by_name("tessera");
  if (tess >= 0) api.H5VLcmp_connector_cls(&cmp, vol, tess);
  api.H5VLclose(vol);
  if (tess >= 0) api.H5VLclose(tess);
  return cmp == 0;
}

/* H5Fopen: an existing native HDF5 file opens with HDF5's native connector even when
 * tessera is the default (HDF5_VOL_CONNECTOR=tessera), so a program's existing inputs
 * stay readable: new files are tessera containers, old files stay what they are.  The
 * returned ID belongs to the native connector, and so does everything opened through it.
 * Anything else — containers, missing files, bad arguments — goes to libhdf5 unchanged. */
hid_t H5Fopen(const char *filename, unsigned flags, hid_t fapl_id) {
  if (!api_ready()) return -1;
  if (filename && api.H5open() >= 0 && native_hdf5_file(filename) && fapl_is_tessera(fapl_id)) {
    /* The native connector's ID by name: H5VL_NATIVE expands to H5VL_native_register() in
     * 1.14 and to the global H5VL_NATIVE_g in 2.x; the name works in both. */
    hid_t native = api.H5VLget_connector_id_by_name("native");
    hid_t fapl = native >= 0 ? api.H5Pcopy(fapl_id == H5P_DEFAULT ? *api.default_fapl : fapl_id)
                             : H5I_INVALID_HID;
    if (fapl >= 0 && api.H5Pset_vol(fapl, native, NULL) >= 0) {
      api.H5VLclose(native);
      hid_t f = api.H5Fopen(filename, flags, fapl);
      api.H5Pclose(fapl);
      return f;
    }
    if (fapl >= 0) api.H5Pclose(fapl);
    if (native >= 0) api.H5VLclose(native);
  }
  return api.H5Fopen(filename, flags, fapl_id);
}
