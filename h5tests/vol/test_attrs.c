/* test_attrs.c — attributes and committed datatypes, tessera compared with native HDF5.
 *
 * The same scenario runs twice in one process: on a native file (fapl with the native
 * connector) and on a tessera container (fapl with the "tessera" connector registered by
 * name; HDF5_PLUGIN_PATH must point at the plugin).  Every observation — values read,
 * info fields, iteration sequences, which calls fail — is appended to a per-run log; the
 * two logs must be identical.  A few absolute checks guard against both runs being wrong
 * the same way.  Failing calls are expected to return negative without crashing; the
 * error stack is silenced around them.
 *
 * Usage: test_attrs [directory for the files]   (default: current directory)
 */
#include <hdf5.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ logging */
static char *g_log;
static size_t g_len, g_cap;
static int g_failures;
/* Set while observing an owner whose creation order is native's storage artefact. */
static int g_hide_corder;

static void logf_(const char *fmt, ...) {
  char line[4096];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof line) n = sizeof line - 1;
  if (g_len + (size_t)n + 2 > g_cap) {
    g_cap = (g_cap + (size_t)n + 2) * 2;
    g_log = realloc(g_log, g_cap);
    if (!g_log) abort();
  }
  memcpy(g_log + g_len, line, (size_t)n);
  g_len += (size_t)n;
  g_log[g_len++] = '\n';
  g_log[g_len] = '\0';
}

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "[FAIL] %s\n", what);
    g_failures++;
  }
}

/* Calls expected to fail: the result is logged (negative on both sides), no error stack. */
#define QUIET(expr) ({ __typeof__(expr) _r; H5E_BEGIN_TRY { _r = (expr); } H5E_END_TRY; _r; })
#define LOG_RC(label, expr) logf_("%s -> %s", label, (QUIET(expr) < 0) ? "FAIL" : "ok")

/* ------------------------------------------------------------------ types */
typedef struct {
  int a;
  double b;
  char s[8];
} cmpd_t;

typedef struct {
  double b;
} cmpd_b_t;

static hid_t cmpd_type(void) {
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(cmpd_t));
  hid_t s8 = H5Tcopy(H5T_C_S1);
  H5Tset_size(s8, 8);
  H5Tinsert(t, "a", HOFFSET(cmpd_t, a), H5T_NATIVE_INT);
  H5Tinsert(t, "b", HOFFSET(cmpd_t, b), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "s", HOFFSET(cmpd_t, s), s8);
  H5Tclose(s8);
  return t;
}

static hid_t vstr_type(H5T_cset_t cset) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, cset);
  return t;
}

static hid_t fstr_type(size_t n) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, n);
  H5Tset_strpad(t, H5T_STR_NULLPAD);
  return t;
}

/* ------------------------------------------------------------------ observations */
static void log_info(const char *label, herr_t rc, const H5A_info_t *i) {
  if (rc < 0) logf_("%s info FAIL", label);
  else
    logf_("%s info corder_valid=%d corder=%lld cset=%d data_size=%llu", label, (int)i->corder_valid,
          g_hide_corder ? -1LL : (long long)i->corder, (int)i->cset, (unsigned long long)i->data_size);
}

static void log_bytes(const char *label, const void *p, size_t n) {
  char hex[2048];
  size_t k = 0;
  for (size_t i = 0; i < n && k + 3 < sizeof hex; ++i) k += (size_t)snprintf(hex + k, sizeof hex - k, "%02x", ((const unsigned char *)p)[i]);
  hex[k] = '\0';
  logf_("%s bytes=%s", label, hex);
}

/* Describes an open attribute: name, space, type class/size, info, storage size. */
static void describe(const char *label, hid_t a) {
  char name[256] = "";
  ssize_t nl = H5Aget_name(a, sizeof name, name);
  hid_t s = H5Aget_space(a), t = H5Aget_type(a);
  int nd = H5Sget_simple_extent_ndims(s);
  hsize_t dims[8] = {0};
  if (nd > 0) H5Sget_simple_extent_dims(s, dims, NULL);
  H5A_info_t info;
  herr_t rc = H5Aget_info(a, &info);
  hid_t acpl = H5Aget_create_plist(a);
  H5T_cset_t cset = H5T_CSET_ERROR;
  H5Pget_char_encoding(acpl, &cset);
  logf_("%s name=%s(%zd) space_type=%d ndims=%d dims=%llu,%llu class=%d size=%zu vstr=%d npoints=%lld "
        "storage=%llu acpl_cset=%d",
        label, name, nl, (int)H5Sget_simple_extent_type(s), nd, (unsigned long long)dims[0],
        (unsigned long long)dims[1], (int)H5Tget_class(t), H5Tget_size(t), (int)H5Tis_variable_str(t),
        (long long)H5Sget_simple_extent_npoints(s), (unsigned long long)H5Aget_storage_size(a), (int)cset);
  log_info(label, rc, &info);
  H5Pclose(acpl);
  H5Sclose(s);
  H5Tclose(t);
}

typedef struct {
  int stop_after;
  int seen;
} iter_ctx;

static herr_t iter_cb(hid_t loc, const char *name, const H5A_info_t *info, void *data) {
  iter_ctx *c = data;
  H5I_type_t lt = H5Iget_type(loc);
  logf_("  iter %s corder=%lld valid=%d size=%llu loc_type=%d", name,
        g_hide_corder ? -1LL : (long long)info->corder,
        (int)info->corder_valid, (unsigned long long)info->data_size, (int)lt);
  /* The location must name the owner: its attributes are reachable through it. */
  logf_("  iter exists-through-loc=%d", (int)H5Aexists(loc, name));
  c->seen++;
  return (c->stop_after && c->seen >= c->stop_after) ? 1 : 0;
}

static void log_iter(const char *label, hid_t loc, H5_index_t idx, H5_iter_order_t order, hsize_t start,
                     int stop_after) {
  iter_ctx c = {stop_after, 0};
  hsize_t i = start;
  logf_("%s iterate idx=%d order=%d start=%llu stop_after=%d", label, (int)idx, (int)order,
        (unsigned long long)start, stop_after);
  herr_t rc = QUIET(H5Aiterate2(loc, idx, order, &i, iter_cb, &c));
  logf_("%s iterate -> rc=%d idx=%llu", label, (int)rc, rc < 0 ? 0ULL : (unsigned long long)i);
}

/* All attributes of loc by index: names by every index/order, info by idx.  Creation
 * order is skipped when with_crt is 0: for an owner that does not track it, native
 * HDF5 uses the order of messages in the object header, which after a reopen of a file
 * with deletions is an artefact of its storage (not reproducible, not meaningful). */
static void log_by_idx(const char *label, hid_t loc, int with_crt) {
  H5O_info2_t oi;
  int n = 0;
  /* Count through iteration so this does not depend on H5Oget_info. */
  iter_ctx c = {0, 0};
  hsize_t i0 = 0;
  H5E_BEGIN_TRY { H5Aiterate2(loc, H5_INDEX_NAME, H5_ITER_INC, &i0, iter_cb, &c); }
  H5E_END_TRY;
  n = c.seen;
  (void)oi;
  for (int idx = 0; idx < (with_crt ? 2 : 1); ++idx)
    for (int ord = 0; ord < 2; ++ord)
      for (int k = 0; k <= n; ++k) { /* k == n: out of range */
        char name[256] = "";
        ssize_t r = QUIET(H5Aget_name_by_idx(loc, ".", (H5_index_t)idx, (H5_iter_order_t)ord, (hsize_t)k, name,
                                             sizeof name, H5P_DEFAULT));
        H5A_info_t info;
        herr_t ri = QUIET(H5Aget_info_by_idx(loc, ".", (H5_index_t)idx, (H5_iter_order_t)ord, (hsize_t)k, &info,
                                             H5P_DEFAULT));
        logf_("%s by_idx idx=%d order=%d n=%d -> %s", label, idx, ord, k, r < 0 ? "FAIL" : name);
        log_info(label, ri, &info);
        hid_t a = QUIET(H5Aopen_by_idx(loc, ".", (H5_index_t)idx, (H5_iter_order_t)ord, (hsize_t)k, H5P_DEFAULT,
                                       H5P_DEFAULT));
        if (a >= 0) {
          char nm2[256] = "";
          H5Aget_name(a, sizeof nm2, nm2);
          logf_("%s open_by_idx -> %s", label, nm2);
          H5Aclose(a);
        } else {
          logf_("%s open_by_idx -> FAIL", label);
        }
      }
}

/* ------------------------------------------------------------------ writing */
static void write_attr(hid_t loc, const char *name, hid_t type, hid_t space, const void *buf) {
  hid_t a = H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  check(a >= 0, name);
  if (a < 0) return;
  if (buf) check(H5Awrite(a, type, buf) >= 0, name);
  H5Aclose(a);
}

static void write_all(hid_t loc) {
  hid_t scalar = H5Screate(H5S_SCALAR), null = H5Screate(H5S_NULL);
  hsize_t d2[2] = {2, 3}, d3[1] = {3};
  hid_t s23 = H5Screate_simple(2, d2, NULL), s3 = H5Screate_simple(1, d3, NULL);

  int iv = 42;
  write_attr(loc, "int", H5T_NATIVE_INT, scalar, &iv);
  float fv[6] = {1.5f, -2.25f, 3, 4, 5, 6.125f};
  write_attr(loc, "floats", H5T_NATIVE_FLOAT, s23, fv);
  /* Stored as big-endian 64-bit, written from native int (conversion on write). */
  long long lv[3] = {-1, 1LL << 40, 7};
  hid_t a = H5Acreate2(loc, "be64", H5T_STD_I64BE, s3, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_LLONG, lv);
  H5Aclose(a);

  hid_t ct = cmpd_type();
  cmpd_t cv[3] = {{1, 1.5, "one"}, {2, 2.5, "two"}, {3, 3.5, "three"}};
  write_attr(loc, "compound", ct, s3, cv);
  /* Compound written partially: only member b (others keep zeros / previous values). */
  a = H5Acreate2(loc, "compound_partial", ct, s3, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, ct, cv);
  hid_t bt = H5Tcreate(H5T_COMPOUND, sizeof(cmpd_b_t));
  H5Tinsert(bt, "b", 0, H5T_NATIVE_DOUBLE);
  cmpd_b_t bv[3] = {{-1}, {-2}, {-3}};
  H5Awrite(a, bt, bv);
  H5Aclose(a);
  H5Tclose(bt);

  hid_t f8 = fstr_type(8);
  char fs[3][8] = {"abc", "defghijk", ""};
  write_attr(loc, "fixed_str", f8, s3, fs);

  hid_t vs = vstr_type(H5T_CSET_UTF8);
  const char *one = "h\xc3\xa9llo";
  write_attr(loc, "vstr_scalar", vs, scalar, &one);
  const char *many[3] = {"alpha", "", "a much longer string with spaces"};
  write_attr(loc, "vstr_array", vs, s3, many);

  hid_t vl = H5Tvlen_create(H5T_NATIVE_INT);
  int seq0[] = {1, 2, 3}, seq2[] = {9};
  hvl_t vv[3] = {{3, seq0}, {0, NULL}, {1, seq2}};
  write_attr(loc, "vlen_int", vl, s3, vv);

  write_attr(loc, "null_space", H5T_NATIVE_INT, null, NULL);
  write_attr(loc, "never_written", H5T_NATIVE_DOUBLE, s3, NULL);

  /* A UTF-8 attribute name via the acpl. */
  hid_t acpl = H5Pcreate(H5P_ATTRIBUTE_CREATE);
  H5Pset_char_encoding(acpl, H5T_CSET_UTF8);
  a = H5Acreate2(loc, "utf8_name_\xc3\xa9", H5T_NATIVE_SHORT, scalar, acpl, H5P_DEFAULT);
  short sv = -3;
  H5Awrite(a, H5T_NATIVE_SHORT, &sv);
  H5Aclose(a);
  H5Pclose(acpl);

  H5Tclose(vl);
  H5Tclose(vs);
  H5Tclose(f8);
  H5Tclose(ct);
  H5Sclose(scalar);
  H5Sclose(null);
  H5Sclose(s23);
  H5Sclose(s3);
}

/* ------------------------------------------------------------------ reading */
static void read_all(const char *label, hid_t loc) {
  char l[256];
  hid_t a;

  int iv = 0;
  double dv = 0;
  a = H5Aopen(loc, "int", H5P_DEFAULT);
  describe(label, a);
  H5Aread(a, H5T_NATIVE_INT, &iv);
  H5Aread(a, H5T_NATIVE_DOUBLE, &dv); /* conversion on read */
  logf_("%s int=%d as_double=%g", label, iv, dv);
  check(iv == 42 && dv == 42.0, "int attribute value");
  H5Aclose(a);

  float fv[6] = {0};
  int fi[6] = {0};
  a = H5Aopen(loc, "floats", H5P_DEFAULT);
  describe(label, a);
  H5Aread(a, H5T_NATIVE_FLOAT, fv);
  H5Aread(a, H5T_NATIVE_INT, fi);
  logf_("%s floats=%g,%g,%g,%g,%g,%g as_int=%d,%d,%d,%d,%d,%d", label, fv[0], fv[1], fv[2], fv[3], fv[4], fv[5],
        fi[0], fi[1], fi[2], fi[3], fi[4], fi[5]);
  check(fv[5] == 6.125f && fi[1] == -2, "float attribute value");
  H5Aclose(a);

  long long lv[3] = {0};
  a = H5Aopen(loc, "be64", H5P_DEFAULT);
  describe(label, a);
  H5Aread(a, H5T_NATIVE_LLONG, lv);
  logf_("%s be64=%lld,%lld,%lld", label, lv[0], lv[1], lv[2]);
  unsigned char raw[24];
  hid_t ft = H5Aget_type(a);
  H5Aread(a, ft, raw); /* stored type: big-endian bytes */
  log_bytes(label, raw, sizeof raw);
  H5Tclose(ft);
  H5Aclose(a);

  hid_t ct = cmpd_type();
  cmpd_t cv[3];
  memset(cv, 0, sizeof cv);
  a = H5Aopen(loc, "compound", H5P_DEFAULT);
  describe(label, a);
  H5Aread(a, ct, cv);
  for (int i = 0; i < 3; ++i) logf_("%s compound[%d]=%d,%g,%.8s", label, i, cv[i].a, cv[i].b, cv[i].s);
  check(cv[2].a == 3 && cv[2].b == 3.5, "compound attribute value");
  /* Read a member subset: background buffer must keep the rest of the user's buffer. */
  hid_t bt = H5Tcreate(H5T_COMPOUND, sizeof(cmpd_b_t));
  H5Tinsert(bt, "b", 0, H5T_NATIVE_DOUBLE);
  cmpd_b_t bv[3] = {{0}};
  H5Aread(a, bt, bv);
  logf_("%s compound.b=%g,%g,%g", label, bv[0].b, bv[1].b, bv[2].b);
  H5Aclose(a);
  a = H5Aopen(loc, "compound_partial", H5P_DEFAULT);
  memset(cv, 0x55, sizeof cv);
  H5Aread(a, ct, cv);
  for (int i = 0; i < 3; ++i) logf_("%s compound_partial[%d]=%d,%g,%.8s", label, i, cv[i].a, cv[i].b, cv[i].s);
  H5Aclose(a);
  H5Tclose(bt);
  H5Tclose(ct);

  char fs[3][8];
  hid_t f8 = fstr_type(8);
  a = H5Aopen(loc, "fixed_str", H5P_DEFAULT);
  describe(label, a);
  H5Aread(a, f8, fs);
  log_bytes(label, fs, sizeof fs);
  /* Fixed string read into a wider fixed string: conversion pads. */
  char fs12[3][12];
  hid_t f12 = fstr_type(12);
  H5Aread(a, f12, fs12);
  log_bytes(label, fs12, sizeof fs12);
  H5Tclose(f12);
  H5Aclose(a);
  H5Tclose(f8);

  hid_t vs = vstr_type(H5T_CSET_UTF8);
  char *one = NULL;
  a = H5Aopen(loc, "vstr_scalar", H5P_DEFAULT);
  describe(label, a);
  H5Aread(a, vs, &one);
  logf_("%s vstr_scalar=%s", label, one ? one : "(null)");
  check(one && strcmp(one, "h\xc3\xa9llo") == 0, "vlen string scalar");
  free(one);
  H5Aclose(a);
  char *many[3] = {0};
  a = H5Aopen(loc, "vstr_array", H5P_DEFAULT);
  describe(label, a);
  H5Aread(a, vs, many);
  for (int i = 0; i < 3; ++i) logf_("%s vstr_array[%d]=%s", label, i, many[i] ? many[i] : "(null)");
  check(many[2] && strcmp(many[2], "a much longer string with spaces") == 0, "vlen string array");
  hid_t sp = H5Aget_space(a);
  H5Treclaim(vs, sp, H5P_DEFAULT, many);
  H5Sclose(sp);
  H5Aclose(a);
  H5Tclose(vs);

  hid_t vl = H5Tvlen_create(H5T_NATIVE_INT);
  hvl_t vv[3];
  a = H5Aopen(loc, "vlen_int", H5P_DEFAULT);
  describe(label, a);
  H5Aread(a, vl, vv);
  for (int i = 0; i < 3; ++i) {
    snprintf(l, sizeof l, "%s vlen_int[%d] len=%zu:", label, i, vv[i].len);
    for (size_t k = 0; k < vv[i].len; ++k) snprintf(l + strlen(l), sizeof l - strlen(l), " %d", ((int *)vv[i].p)[k]);
    logf_("%s", l);
  }
  check(vv[0].len == 3 && ((int *)vv[0].p)[2] == 3, "vlen sequence");
  /* Read through a converting vlen type (int -> double). */
  hid_t vld = H5Tvlen_create(H5T_NATIVE_DOUBLE);
  hvl_t vd[3];
  herr_t rc = H5Aread(a, vld, vd);
  logf_("%s vlen_int as double rc=%d first=%g", label, (int)rc, rc >= 0 && vd[0].len ? ((double *)vd[0].p)[1] : -1.0);
  sp = H5Aget_space(a);
  H5Treclaim(vl, sp, H5P_DEFAULT, vv);
  if (rc >= 0) H5Treclaim(vld, sp, H5P_DEFAULT, vd);
  H5Sclose(sp);
  H5Tclose(vld);
  H5Aclose(a);
  H5Tclose(vl);

  a = H5Aopen(loc, "null_space", H5P_DEFAULT);
  describe(label, a);
  logf_("%s null_space read rc=%d", label, (int)H5Aread(a, H5T_NATIVE_INT, &iv));
  H5Aclose(a);

  double nw[3] = {9, 9, 9};
  a = H5Aopen(loc, "never_written", H5P_DEFAULT);
  describe(label, a);
  H5Aread(a, H5T_NATIVE_DOUBLE, nw);
  logf_("%s never_written=%g,%g,%g", label, nw[0], nw[1], nw[2]);
  H5Aclose(a);

  short sv = 0;
  a = H5Aopen(loc, "utf8_name_\xc3\xa9", H5P_DEFAULT);
  describe(label, a);
  H5Aread(a, H5T_NATIVE_SHORT, &sv);
  logf_("%s utf8 short=%d", label, sv);
  H5Aclose(a);
}

/* H5Aread takes no transfer plist: HDF5 passes the default one, so attribute reads use
 * malloc even while an application uses a custom vlen allocator elsewhere (native does
 * the same: the counts are compared).  H5Treclaim with the custom dxpl frees them. */
static int g_allocs, g_frees;
static void *count_alloc(size_t n, void *info) {
  (void)info;
  g_allocs++;
  return malloc(n);
}
static void count_free(void *p, void *info) {
  (void)info;
  if (p) g_frees++;
  free(p);
}

static void read_with_allocator(const char *label, hid_t loc) {
  hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
  H5Pset_vlen_mem_manager(dxpl, count_alloc, NULL, count_free, NULL);
  g_allocs = g_frees = 0;
  hid_t vs = vstr_type(H5T_CSET_UTF8), vl = H5Tvlen_create(H5T_NATIVE_INT);
  char *many[3] = {0};
  hvl_t vv[3];
  hid_t a = H5Aopen(loc, "vstr_array", H5P_DEFAULT);
  herr_t rc = H5Aread(a, vs, many);
  hid_t sp = H5Aget_space(a);
  logf_("%s allocator vstr rc=%d allocs=%d [1]=%s", label, (int)rc, g_allocs, many[1] ? many[1] : "(null)");
  H5Treclaim(vs, sp, dxpl, many);
  H5Sclose(sp);
  H5Aclose(a);
  a = H5Aopen(loc, "vlen_int", H5P_DEFAULT);
  rc = H5Aread(a, vl, vv);
  sp = H5Aget_space(a);
  logf_("%s allocator vlen rc=%d allocs=%d len=%zu,%zu,%zu", label, (int)rc, g_allocs, vv[0].len, vv[1].len,
        vv[2].len);
  H5Treclaim(vl, sp, dxpl, vv);
  logf_("%s allocator frees=%d", label, g_frees);
  H5Sclose(sp);
  H5Aclose(a);
  H5Tclose(vs);
  H5Tclose(vl);
  H5Pclose(dxpl);
}

/* ------------------------------------------------------------------ scenario */
static void modify(const char *label, hid_t loc) {
  hid_t scalar = H5Screate(H5S_SCALAR);
  /* Errors: duplicate create, missing open/delete/rename, rename onto existing. */
  LOG_RC("dup create", H5Acreate2(loc, "int", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT));
  LOG_RC("open missing", H5Aopen(loc, "nope", H5P_DEFAULT));
  LOG_RC("delete missing", H5Adelete(loc, "nope"));
  LOG_RC("rename missing", H5Arename(loc, "nope", "nope2"));
  LOG_RC("rename onto existing", H5Arename(loc, "int", "floats"));
  LOG_RC("open_by_name missing object", H5Aopen_by_name(loc, "no/such/object", "int", H5P_DEFAULT, H5P_DEFAULT));
  logf_("%s exists int=%d nope=%d", label, (int)H5Aexists(loc, "int"), (int)H5Aexists(loc, "nope"));
  { /* Wrong owners: an attribute, a transient datatype, a dataspace. */
    hid_t ai = H5Aopen(loc, "int", H5P_DEFAULT);
    hid_t tt = H5Tcopy(H5T_NATIVE_INT);
    LOG_RC("create on attribute", H5Acreate2(ai, "x", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT));
    LOG_RC("create on transient type", H5Acreate2(tt, "x", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT));
    LOG_RC("open on dataspace", H5Aopen(scalar, "int", H5P_DEFAULT));
    LOG_RC("iterate on attribute", H5Aiterate2(ai, H5_INDEX_NAME, H5_ITER_INC, NULL, iter_cb, NULL));
    H5Tclose(tt);
    H5Aclose(ai);
  }

  /* Rename keeps value and creation order. */
  LOG_RC("rename int->renamed", H5Arename(loc, "int", "renamed"));
  logf_("%s exists int=%d renamed=%d", label, (int)H5Aexists(loc, "int"), (int)H5Aexists(loc, "renamed"));
  /* Overwrite a value through a second handle; the first sees it. */
  hid_t a1 = H5Aopen(loc, "renamed", H5P_DEFAULT), a2 = H5Aopen(loc, "renamed", H5P_DEFAULT);
  int v = 7, r = 0;
  H5Awrite(a2, H5T_NATIVE_INT, &v);
  H5Aread(a1, H5T_NATIVE_INT, &r);
  logf_("%s two handles read=%d", label, r);
  check(r == 7, "second handle sees write");
  H5Aclose(a1);
  H5Aclose(a2);
  LOG_RC("delete be64", H5Adelete(loc, "be64"));
  LOG_RC("delete_by_idx name inc 0", H5Adelete_by_idx(loc, ".", H5_INDEX_NAME, H5_ITER_INC, 0, H5P_DEFAULT));
  LOG_RC("delete_by_idx out of range", H5Adelete_by_idx(loc, ".", H5_INDEX_NAME, H5_ITER_INC, 100, H5P_DEFAULT));
  /* A new attribute after deletions: creation order continues. */
  hid_t a = H5Acreate2(loc, "late", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT);
  describe(label, a);
  H5Aclose(a);
  H5Sclose(scalar);
}

static void observe(const char *label, hid_t loc) {
  read_all(label, loc);
  log_by_idx(label, loc, 1);
  log_iter(label, loc, H5_INDEX_NAME, H5_ITER_INC, 0, 0);
  log_iter(label, loc, H5_INDEX_NAME, H5_ITER_DEC, 0, 0);
  log_iter(label, loc, H5_INDEX_CRT_ORDER, H5_ITER_INC, 0, 0);
  log_iter(label, loc, H5_INDEX_CRT_ORDER, H5_ITER_DEC, 2, 0);
  log_iter(label, loc, H5_INDEX_NAME, H5_ITER_INC, 1, 3); /* stops early, idx reports position */
}

static void observe_after_modify(const char *label, hid_t loc, int with_crt) {
  g_hide_corder = !with_crt;
  log_by_idx(label, loc, with_crt);
  if (with_crt) log_iter(label, loc, H5_INDEX_CRT_ORDER, H5_ITER_INC, 0, 0);
  log_iter(label, loc, H5_INDEX_NAME, H5_ITER_DEC, 0, 0);
  g_hide_corder = 0;
}

/* Runs the whole scenario on `path` with `fapl`; returns the log (caller frees). */
/* An application's memory type that changes between calls: every H5Aread/H5Awrite must
 * see its current form (the connector caches type comparisons only for the library's
 * immutable types, and the stored type's decoded copy, never the application's), and
 * predefined stored types used again keep their own size and byte order. */
static void mutable_types(hid_t loc) {
  hid_t scalar = H5Screate(H5S_SCALAR);
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, 8);
  hid_t a = H5Acreate2(loc, "mut_str", t, scalar, H5P_DEFAULT, H5P_DEFAULT);
  char buf[16];
  LOG_RC("mut_str write as 8", H5Awrite(a, t, "abcdefgh"));
  memset(buf, 0x5a, sizeof buf);
  LOG_RC("mut_str read as 8", H5Aread(a, t, buf));
  log_bytes("mut_str as 8", buf, sizeof buf);
  H5Tset_size(t, 4); /* the same ID, now a 4-byte string */
  memset(buf, 0x5a, sizeof buf);
  LOG_RC("mut_str read as 4", H5Aread(a, t, buf));
  log_bytes("mut_str as 4", buf, sizeof buf);
  LOG_RC("mut_str write as 4", H5Awrite(a, t, "wxyz"));
  H5Tset_size(t, 8);
  memset(buf, 0x5a, sizeof buf);
  LOG_RC("mut_str read as 8 again", H5Aread(a, t, buf));
  log_bytes("mut_str as 8 again", buf, sizeof buf);
  H5Aclose(a);
  H5Tclose(t);
  const hid_t stored[2] = {H5T_STD_I16BE, H5T_STD_I64LE};
  const char *names[2] = {"i16be", "i64le"};
  for (int k = 0; k < 2; ++k)
    for (int rep = 0; rep < 2; ++rep) {
      char name[32];
      snprintf(name, sizeof name, "%s_%d", names[k], rep);
      a = H5Acreate2(loc, name, stored[k], scalar, H5P_DEFAULT, H5P_DEFAULT);
      int v = -1234 - rep, back = 0;
      LOG_RC(name, H5Awrite(a, H5T_NATIVE_INT, &v));
      LOG_RC(name, H5Aread(a, H5T_NATIVE_INT, &back));
      hid_t at = H5Aget_type(a);
      logf_("%s back=%d storage=%llu size=%zu order=%d", name, back, (unsigned long long)H5Aget_storage_size(a),
            H5Tget_size(at), (int)H5Tget_order(at));
      H5Tclose(at);
      H5Aclose(a);
    }
  H5Sclose(scalar);
}

static char *run(const char *path, hid_t fapl, const char *expect_connector) {
  g_log = NULL;
  g_len = g_cap = 0;
  logf_("start");

  hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
  check(f >= 0, "file create");
  if (f < 0) return g_log;
  char conn[64] = "";
  hid_t vol_id = -1;
  H5VLget_connector_name(f, conn, sizeof conn);
  check(strcmp(conn, expect_connector) == 0, "connector in use");
  (void)vol_id;

  /* Owners: root, a group tracking creation order, a dataset, a committed datatype. */
  hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
  H5Pset_attr_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  hid_t g = H5Gcreate2(f, "g", H5P_DEFAULT, gcpl, H5P_DEFAULT);
  check(g >= 0, "group create");
  hsize_t d4[1] = {4};
  hid_t s4 = H5Screate_simple(1, d4, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_attr_creation_order(dcpl, H5P_CRT_ORDER_TRACKED);
  hid_t d = H5Dcreate2(g, "d", H5T_NATIVE_INT, s4, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  check(d >= 0, "dataset create");

  hid_t ct = cmpd_type();
  hid_t tcpl = H5Pcreate(H5P_DATATYPE_CREATE);
  H5Pset_attr_creation_order(tcpl, H5P_CRT_ORDER_TRACKED);
  LOG_RC("commit without intermediate groups", H5Tcommit2(f, "types/cmpd", ct, H5P_DEFAULT, tcpl, H5P_DEFAULT));
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t ct2 = cmpd_type();
  LOG_RC("commit types/cmpd2 with intermediate", H5Tcommit2(f, "types/cmpd2", ct2, lcpl, tcpl, H5P_DEFAULT));
  logf_("committed=%d", (int)H5Tcommitted(ct2));
  LOG_RC("flush committed type", H5Tflush(ct2));
  LOG_RC("refresh committed type", H5Trefresh(ct2));
  LOG_RC("flush transient type", H5Tflush(ct));
  hid_t t_anon = H5Tcopy(H5T_NATIVE_LLONG);
  LOG_RC("commit anon", H5Tcommit_anon(f, t_anon, H5P_DEFAULT, H5P_DEFAULT));
  logf_("anon committed=%d", (int)H5Tcommitted(t_anon));
  LOG_RC("link anon", H5Olink(t_anon, f, "anon_linked", H5P_DEFAULT, H5P_DEFAULT));
  H5Tclose(t_anon);
  t_anon = H5Tcopy(H5T_NATIVE_SHORT); /* committed anonymously, never linked: gone at close */
  LOG_RC("commit anon 2", H5Tcommit_anon(f, t_anon, H5P_DEFAULT, H5P_DEFAULT));
  H5Tclose(t_anon);
  hid_t ct3 = cmpd_type();
  LOG_RC("commit dup name", H5Tcommit2(f, "types/cmpd2", ct3, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Tclose(ct3);

  write_all(f);
  write_all(g);
  write_all(d);
  write_all(ct2);
  hid_t g2 = H5Gcreate2(f, "g2", H5P_DEFAULT, gcpl, H5P_DEFAULT);
  write_all(g2); /* left unmodified: read back whole after reopen */
  H5Gclose(g2);
  hid_t gm = H5Gcreate2(f, "mutable_types", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  mutable_types(gm);
  H5Gclose(gm);

  /* A dataset created with the committed type, and an attribute of that type. */
  hid_t dc = H5Dcreate2(f, "dc", ct2, s4, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  check(dc >= 0, "dataset with committed type");
  hid_t dct = H5Dget_type(dc);
  logf_("dataset type equal=%d", (int)H5Tequal(dct, ct));
  H5Tclose(dct);
  H5Dclose(dc);
  hid_t scalar = H5Screate(H5S_SCALAR);
  cmpd_t one = {5, 5.5, "five"};
  write_attr(g, "of_committed_type", ct2, scalar, &one);
  hid_t a = H5Aopen(g, "of_committed_type", H5P_DEFAULT);
  hid_t at = H5Aget_type(a);
  logf_("attr of committed type: committed=%d equal=%d", (int)H5Tcommitted(at), (int)H5Tequal(at, ct));
  H5Tclose(at);
  H5Aclose(a);
  H5Sclose(scalar);

  /* Attribute by name from another location. */
  a = H5Aopen_by_name(f, "g/d", "int", H5P_DEFAULT, H5P_DEFAULT);
  describe("by_name", a);
  H5Aclose(a);
  H5A_info_t info;
  log_info("info_by_name", H5Aget_info_by_name(f, "g", "vstr_array", &info, H5P_DEFAULT), &info);
  logf_("exists_by_name=%d", (int)H5Aexists_by_name(f, "g/d", "floats", H5P_DEFAULT));
  scalar = H5Screate(H5S_SCALAR);
  a = H5Acreate_by_name(f, "g/d", "made_by_name", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  check(a >= 0, "create by name");
  H5Aclose(a);
  LOG_RC("create_by_name missing object",
         H5Acreate_by_name(f, "nope", "x", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Sclose(scalar);
  {
    iter_ctx c = {0, 0};
    hsize_t i = 0;
    herr_t rc = H5Aiterate_by_name(f, "g/d", H5_INDEX_CRT_ORDER, H5_ITER_DEC, &i, iter_cb, &c, H5P_DEFAULT);
    logf_("iterate_by_name rc=%d idx=%llu seen=%d", (int)rc, (unsigned long long)i, c.seen);
  }
  LOG_RC("rename_by_name", H5Arename_by_name(f, "g/d", "made_by_name", "renamed_by_name", H5P_DEFAULT));
  LOG_RC("delete_by_name", H5Adelete_by_name(f, "g/d", "renamed_by_name", H5P_DEFAULT));

  observe("root", f);
  observe("group", g);
  observe("dataset", d);
  observe("ctype", ct2);

  modify("root", f);
  modify("group", g);
  modify("dataset", d);
  modify("ctype", ct2);
  observe_after_modify("root", f, 1);
  observe_after_modify("group", g, 1);

  H5Tclose(ct2);
  H5Tclose(ct);
  H5Pclose(lcpl);
  H5Pclose(tcpl);
  H5Pclose(dcpl);
  H5Pclose(gcpl);
  H5Pclose(fcpl);
  H5Sclose(s4);
  H5Dclose(d);
  H5Gclose(g);
  check(H5Fclose(f) >= 0, "file close");

  /* Reopen read-only: everything persisted; writes refused. */
  logf_("reopen");
  f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
  check(f >= 0, "file reopen");
  if (f < 0) return g_log;
  g = H5Gopen2(f, "g", H5P_DEFAULT);
  d = H5Dopen2(g, "d", H5P_DEFAULT);
  hid_t t = H5Topen2(f, "types/cmpd2", H5P_DEFAULT);
  check(t >= 0, "datatype open");
  logf_("opened type committed=%d equal=%d", (int)H5Tcommitted(t), (int)H5Tequal(t, ct = cmpd_type()));
  H5Tclose(ct);
  hid_t tcpl2 = H5Tget_create_plist(t);
  unsigned crt = 0;
  H5Pget_attr_creation_order(tcpl2, &crt);
  logf_("tcpl attr creation order=%u", crt);
  H5Pclose(tcpl2);
  LOG_RC("open missing type", H5Topen2(f, "types/none", H5P_DEFAULT));
  t_anon = H5Topen2(f, "anon_linked", H5P_DEFAULT);
  logf_("anon_linked open=%d equal=%d", t_anon >= 0, t_anon >= 0 ? (int)H5Tequal(t_anon, H5T_NATIVE_LLONG) : -1);
  if (t_anon >= 0) H5Tclose(t_anon);
  LOG_RC("write on read-only", H5Adelete(f, "floats"));
  observe_after_modify("root", f, 0); /* root does not track creation order */
  observe_after_modify("group", g, 1);
  observe_after_modify("dataset", d, 1);
  observe_after_modify("ctype", t, 1);
  g2 = H5Gopen2(f, "g2", H5P_DEFAULT);
  read_all("reopened g2", g2);
  read_with_allocator("reopened g2", g2);
  log_by_idx("reopened g2", g2, 1);
  H5Gclose(g2);
  a = H5Aopen(g, "of_committed_type", H5P_DEFAULT);
  memset(&one, 0, sizeof one);
  ct = cmpd_type();
  H5Aread(a, ct, &one);
  logf_("of_committed_type=%d,%g,%s", one.a, one.b, one.s);
  {
    hid_t at = H5Aget_type(a);
    logf_("of_committed_type type committed=%d class=%d", (int)H5Tcommitted(at), (int)H5Tget_class(at));
    H5Tclose(at);
  }
  check(one.a == 5, "attribute of committed type");
  H5Tclose(ct);
  H5Aclose(a);
  H5Tclose(t);
  H5Dclose(d);
  H5Gclose(g);
  H5Fclose(f);
  logf_("end");
  return g_log;
}

/* Prints the first differing line of two logs; returns 0 if equal. */
static int compare(const char *native, const char *tessera) {
  const char *a = native, *b = tessera;
  int line = 1, diffs = 0;
  while (*a || *b) {
    const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
    size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
    if (la != lb || memcmp(a, b, la) != 0) {
      if (diffs++ < 20)
        fprintf(stderr, "[DIFF] line %d\n  native:  %.*s\n  tessera: %.*s\n", line, (int)la, a, (int)lb, b);
    }
    a += la + (ea ? 1 : 0);
    b += lb + (eb ? 1 : 0);
    line++;
  }
  return diffs;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : ".";
  char pn[4096], pt[4096];
  snprintf(pn, sizeof pn, "%s/test_attrs_native.h5", dir);
  snprintf(pt, sizeof pt, "%s/test_attrs_tessera.h5", dir);

  hid_t fapl_n = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_vol(fapl_n, H5VL_NATIVE, NULL);
  hid_t tid = H5VLregister_connector_by_name("tessera", H5P_DEFAULT);
  if (tid < 0) {
    fprintf(stderr, "[FAIL] cannot register the tessera connector (HDF5_PLUGIN_PATH?)\n");
    return 1;
  }
  hid_t fapl_t = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_vol(fapl_t, tid, NULL);

  char *ln = run(pn, fapl_n, "native");
  char *lt = run(pt, fapl_t, "tessera");
  int diffs = compare(ln, lt);
  if (getenv("TEST_ATTRS_DUMP")) {
    FILE *fp = fopen("test_attrs_native.log", "w");
    if (fp) fputs(ln, fp), fclose(fp);
    fp = fopen("test_attrs_tessera.log", "w");
    if (fp) fputs(lt, fp), fclose(fp);
  }
  size_t lines = 0;
  for (const char *p = ln; p && *p; ++p) lines += *p == '\n';
  free(ln);
  free(lt);
  H5Pclose(fapl_n);
  H5Pclose(fapl_t);
  H5VLclose(tid);
  if (diffs) fprintf(stderr, "[FAIL] %d of %zu observations differ from native HDF5\n", diffs, lines);
  if (g_failures) fprintf(stderr, "[FAIL] %d checks failed\n", g_failures);
  if (diffs || g_failures) return 1;
  printf("[PASS] %zu observations identical to native HDF5\n", lines);
  return 0;
}
