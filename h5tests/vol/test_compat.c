/* test_compat — HDF5's deprecated v1 calls on a tessera file, compared with a native file.
 *
 *   test_compat DIR        (run with LD_PRELOAD=<build>/compat/libtessera_compat.so and
 *                           HDF5_PLUGIN_PATH=<build>/plugins; CTest sets both)
 *
 * Builds the same small tree twice in one process — once in a native file, once in a
 * tessera container (connector chosen by fapl, so both halves run side by side) — then
 * runs the v1 entry points h5py and old C programs use (H5Literate1, H5Literate_by_name1,
 * H5Lget_info1, H5Lget_info_by_idx1, H5Lvisit1, H5Lvisit_by_name1, H5Oget_info1,
 * H5Oget_info_by_name1, H5Oget_info_by_idx1, H5Oget_info2, H5Ovisit1, H5Ovisit_by_name1,
 * H5Oopen_by_addr, H5Rcreate, H5Rdereference1/2, H5Rget_obj_type1/2, H5Rget_name) on both and
 * compares what they report, line by line.  HDF5 1.14 refuses all of them for non-native
 * files; libtessera_compat.so serves them.  Addresses differ between the two files by
 * nature, so they are compared by what they lead to (the object an address opens, and
 * whether the same object always gets the same address).
 *
 * Prints one line per check; exits 0 only if every check passed.
 */
#include <hdf5.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int g_passed = 0, g_failed = 0;

static void check(int ok, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("  [%s] ", ok ? "PASS" : "FAIL");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  if (ok) g_passed++; else g_failed++;
  fflush(stdout);
}

/* ------------------------------------------------------------------ text log */
typedef struct {
  char text[16384];
  size_t len;
  hid_t file;    /* for address checks */
  int stop_at;   /* H5Literate1 callback stops after this many calls (0: never) */
  int calls;
} log_t;

static void logf_(log_t *l, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (l->len < sizeof l->text) {
    int n = vsnprintf(l->text + l->len, sizeof l->text - l->len, fmt, ap);
    if (n > 0) l->len += (size_t)n;
    if (l->len > sizeof l->text) l->len = sizeof l->text;
  }
  va_end(ap);
}

static const char *otype(H5O_type_t t) {
  switch (t) {
    case H5O_TYPE_GROUP: return "group";
    case H5O_TYPE_DATASET: return "dataset";
    case H5O_TYPE_NAMED_DATATYPE: return "datatype";
    default: return "unknown";
  }
}

/* What an address leads to.  Names are not compared (an object reached through several
 * hard links has several equally valid names: which one H5Iget_name reports for an object
 * opened by address is the connector's choice), so an address is labelled with the first
 * of these paths whose object has that address, after checking that H5Oopen_by_addr
 * opens an object that reports the same address. */
static const char *const k_paths[] = {"/", "/a", "/a/b", "/a/b/d1", "/z", "/top"};

static void log_addr(log_t *l, haddr_t addr) {
  hid_t obj = H5Oopen_by_addr(l->file, addr);
  if (obj < 0) { logf_(l, " addr->(open FAILED)"); return; }
  H5O_info1_t oi;
  int same = H5Oget_info1(obj, &oi) >= 0 && oi.addr == addr;
  H5Oclose(obj);
  const char *label = "(no path)";
  for (size_t i = 0; i < sizeof k_paths / sizeof *k_paths; i++) {
    H5O_info1_t pi;
    if (H5Oget_info_by_name1(l->file, k_paths[i], &pi, H5P_DEFAULT) >= 0 && pi.addr == addr) {
      label = k_paths[i];
      break;
    }
  }
  logf_(l, " addr->%s%s", label, same ? "" : "(address mismatch after open)");
}

static herr_t link_cb(hid_t g, const char *name, const H5L_info1_t *info, void *data) {
  log_t *l = (log_t *)data;
  (void)g;
  logf_(l, "  link %s type=%d", name, (int)info->type);
  if (info->type == H5L_TYPE_HARD) log_addr(l, info->u.address);
  else logf_(l, " val_size=%zu", info->u.val_size);
  logf_(l, "\n");
  l->calls++;
  return (l->stop_at && l->calls >= l->stop_at) ? 1 : 0;
}

static herr_t obj_cb(hid_t o, const char *name, const H5O_info1_t *info, void *data) {
  log_t *l = (log_t *)data;
  (void)o;
  logf_(l, "  obj %s type=%s rc=%u attrs=%llu", name, otype(info->type), info->rc,
        (unsigned long long)info->num_attrs);
  log_addr(l, info->addr);
  logf_(l, "\n");
  return 0;
}

static void log_oinfo(log_t *l, const char *what, herr_t st, const H5O_info1_t *oi) {
  if (st < 0) { logf_(l, "%s: FAILED\n", what); return; }
  logf_(l, "%s: type=%s rc=%u attrs=%llu", what, otype(oi->type), oi->rc,
        (unsigned long long)oi->num_attrs);
  log_addr(l, oi->addr);
  logf_(l, "\n");
}

/* ------------------------------------------------------------------ the tree */
static int build(hid_t file) {
  hid_t a = H5Gcreate2(file, "a", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t b = a >= 0 ? H5Gcreate2(a, "b", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
  hid_t z = H5Gcreate2(file, "z", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[1] = {4};
  hid_t sp = H5Screate_simple(1, dims, NULL);
  hid_t d1 = b >= 0 ? H5Dcreate2(b, "d1", H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
  hid_t top = H5Dcreate2(file, "top", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t scalar = H5Screate(H5S_SCALAR);
  hid_t at = z >= 0 ? H5Acreate2(z, "note", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT) : -1;
  int v = 7;
  int ok = a >= 0 && b >= 0 && z >= 0 && d1 >= 0 && top >= 0 && at >= 0 &&
           H5Awrite(at, H5T_NATIVE_INT, &v) >= 0 &&
           H5Lcreate_soft("/a/b", file, "a/soft", H5P_DEFAULT, H5P_DEFAULT) >= 0 &&
           H5Lcreate_hard(file, "a/b/d1", file, "a/hard", H5P_DEFAULT, H5P_DEFAULT) >= 0;
  if (at >= 0) H5Aclose(at);
  H5Sclose(scalar);
  if (top >= 0) H5Dclose(top);
  if (d1 >= 0) H5Dclose(d1);
  H5Sclose(sp);
  if (z >= 0) H5Gclose(z);
  if (b >= 0) H5Gclose(b);
  if (a >= 0) H5Gclose(a);
  return ok;
}

/* Every v1 call, its results as text. */
static void exercise(hid_t file, log_t *l) {
  l->file = file;
  herr_t st;

  logf_(l, "H5Literate1 /\n");
  hsize_t idx = 0;
  st = H5Literate1(file, H5_INDEX_NAME, H5_ITER_INC, &idx, link_cb, l);
  logf_(l, " -> %d idx=%llu\n", (int)st, (unsigned long long)idx);

  logf_(l, "H5Literate1 / stop after 2, then resume\n");
  idx = 0; l->stop_at = 2; l->calls = 0;
  st = H5Literate1(file, H5_INDEX_NAME, H5_ITER_INC, &idx, link_cb, l);
  logf_(l, " -> %d idx=%llu\n", (int)st, (unsigned long long)idx);
  l->stop_at = 0;
  st = H5Literate1(file, H5_INDEX_NAME, H5_ITER_INC, &idx, link_cb, l);
  logf_(l, " -> %d idx=%llu\n", (int)st, (unsigned long long)idx);

  logf_(l, "H5Literate_by_name1 a decreasing\n");
  st = H5Literate_by_name1(file, "a", H5_INDEX_NAME, H5_ITER_DEC, NULL, link_cb, l, H5P_DEFAULT);
  logf_(l, " -> %d\n", (int)st);

  logf_(l, "H5Lvisit1 /\n");
  st = H5Lvisit1(file, H5_INDEX_NAME, H5_ITER_INC, link_cb, l);
  logf_(l, " -> %d\n", (int)st);

  logf_(l, "H5Lvisit_by_name1 a\n");
  st = H5Lvisit_by_name1(file, "a", H5_INDEX_NAME, H5_ITER_INC, link_cb, l, H5P_DEFAULT);
  logf_(l, " -> %d\n", (int)st);

  const char *links[] = {"a", "a/soft", "a/hard", "a/b/d1", "top"};
  for (size_t i = 0; i < sizeof links / sizeof *links; i++) {
    H5L_info1_t li;
    logf_(l, "H5Lget_info1 %s:", links[i]);
    if (H5Lget_info1(file, links[i], &li, H5P_DEFAULT) < 0) { logf_(l, " FAILED\n"); continue; }
    link_cb(file, "", &li, l);
  }
  for (hsize_t n = 0; n < 3; n++) { /* a: b, hard, soft */
    H5L_info1_t li;
    logf_(l, "H5Lget_info_by_idx1 a #%llu:", (unsigned long long)n);
    if (H5Lget_info_by_idx1(file, "a", H5_INDEX_NAME, H5_ITER_INC, n, &li, H5P_DEFAULT) < 0) {
      logf_(l, " FAILED\n");
      continue;
    }
    link_cb(file, "", &li, l);
  }

  H5O_info1_t oi;
  st = H5Oget_info1(file, &oi);
  log_oinfo(l, "H5Oget_info1 file", st, &oi);
  const char *objs[] = {"a", "a/b/d1", "a/hard", "z", "top"};
  for (size_t i = 0; i < sizeof objs / sizeof *objs; i++) {
    char what[64];
    snprintf(what, sizeof what, "H5Oget_info_by_name1 %s", objs[i]);
    st = H5Oget_info_by_name1(file, objs[i], &oi, H5P_DEFAULT);
    log_oinfo(l, what, st, &oi);
  }
  for (hsize_t n = 0; n < 3; n++) {
    char what[64];
    snprintf(what, sizeof what, "H5Oget_info_by_idx1 / #%llu", (unsigned long long)n);
    st = H5Oget_info_by_idx1(file, "/", H5_INDEX_NAME, H5_ITER_INC, n, &oi, H5P_DEFAULT);
    log_oinfo(l, what, st, &oi);
  }
  hid_t z = H5Gopen2(file, "z", H5P_DEFAULT);
  st = H5Oget_info2(z, &oi, H5O_INFO_BASIC);
  log_oinfo(l, "H5Oget_info2 z BASIC", st, &oi); /* attrs must read 0: not asked for */
  st = H5Oget_info2(z, &oi, H5O_INFO_NUM_ATTRS);
  logf_(l, "H5Oget_info2 z NUM_ATTRS: %d attrs=%llu type=%s\n", (int)st,
        (unsigned long long)oi.num_attrs, otype(oi.type));
  H5Gclose(z);

  logf_(l, "H5Ovisit1 /\n");
  st = H5Ovisit1(file, H5_INDEX_NAME, H5_ITER_INC, obj_cb, l);
  logf_(l, " -> %d\n", (int)st);
  logf_(l, "H5Ovisit_by_name1 a\n");
  st = H5Ovisit_by_name1(file, "a", H5_INDEX_NAME, H5_ITER_INC, obj_cb, l, H5P_DEFAULT);
  logf_(l, " -> %d\n", (int)st);

  /* Old-style object references. */
  hobj_ref_t ref = 0, ref2 = 0;
  st = H5Rcreate(&ref, file, "a/b/d1", H5R_OBJECT, -1);
  herr_t st2 = H5Rcreate(&ref2, file, "a/hard", H5R_OBJECT, -1);
  logf_(l, "H5Rcreate a/b/d1: %d, same ref through a/hard: %d\n", (int)st,
        st2 >= 0 && ref == ref2);
  H5O_type_t rt = H5O_TYPE_UNKNOWN;
  st = H5Rget_obj_type2(file, H5R_OBJECT, &ref, &rt);
  logf_(l, "H5Rget_obj_type2: %d %s\n", (int)st, otype(rt));
  hid_t d = H5Rdereference2(file, H5P_DEFAULT, H5R_OBJECT, &ref);
  char name[256] = "";
  if (d >= 0) {
    H5O_info1_t di;
    int same = H5Oget_info1(d, &di) >= 0 && di.addr == (haddr_t)ref;
    logf_(l, "H5Rdereference2: type=%d same address as the reference: %d\n", (int)H5Iget_type(d),
          same);
    H5Oclose(d);
  } else {
    logf_(l, "H5Rdereference2: FAILED\n");
  }
  logf_(l, "H5Rget_obj_type1: %d\n", (int)H5Rget_obj_type1(file, H5R_OBJECT, &ref));
  d = H5Rdereference1(file, H5R_OBJECT, &ref);
  logf_(l, "H5Rdereference1: %s\n", d >= 0 && H5Iget_type(d) == H5I_DATASET ? "dataset" : "FAILED");
  if (d >= 0) H5Oclose(d);
  name[0] = 0;
  ssize_t len = H5Rget_name(file, H5R_OBJECT, &ref, name, sizeof name);
  logf_(l, "H5Rget_name: %s\n", len > 0 && (strcmp(name, "/a/b/d1") == 0 ||
                                             strcmp(name, "/a/hard") == 0)
                                    ? "a path of the object" : "FAILED");
}

/* ------------------------------------------------------------------ main */
static void compare(const char *native, const char *tessera) {
  /* line-by-line, so a failure names the call */
  const char *a = native, *b = tessera;
  int line = 0, same_all = 1;
  while (*a || *b) {
    const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
    size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
    line++;
    int same = la == lb && memcmp(a, b, la) == 0;
    if (!same) {
      same_all = 0;
      printf("    line %d differs:\n      native : %.*s\n      tessera: %.*s\n", line, (int)la, a,
             (int)lb, b);
    }
    a += la + (ea ? 1 : 0);
    b += lb + (eb ? 1 : 0);
  }
  check(same_all, "every v1 call reports the same on tessera as on native (%d lines)", line);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : ".";
  mkdir(dir, 0755);
  char npath[1024], tpath[1024];
  snprintf(npath, sizeof npath, "%s/compat_native.h5", dir);
  snprintf(tpath, sizeof tpath, "%s/compat_tessera.h5", dir);

  static log_t nlog, tlog;
  /* The native half. */
  hid_t nf = H5Fcreate(npath, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  check(nf >= 0 && build(nf), "native file built (%s)", npath);
  if (nf >= 0) exercise(nf, &nlog);

  /* The tessera half: connector set on the fapl. */
  hid_t vol = H5VLregister_connector_by_name("tessera", H5P_DEFAULT);
  check(vol >= 0, "tessera connector registered from HDF5_PLUGIN_PATH");
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (vol >= 0) H5Pset_vol(fapl, vol, NULL);
  hid_t tf = vol >= 0 ? H5Fcreate(tpath, H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : -1;
  hbool_t is_native = 1;
  check(tf >= 0 && H5VLobject_is_native(tf, &is_native) >= 0 && !is_native,
        "tessera file created and not native (%s)", tpath);
  check(tf >= 0 && build(tf), "tessera tree built");
  if (tf >= 0) exercise(tf, &tlog);

  /* Bad arguments are forwarded to libhdf5, which rejects them (no crash, no callback). */
  H5E_BEGIN_TRY {
    log_t scratch;
    memset(&scratch, 0, sizeof scratch);
    check(H5Literate1(H5I_INVALID_HID, H5_INDEX_NAME, H5_ITER_INC, NULL, link_cb, &scratch) < 0 &&
              (tf < 0 || H5Literate1(tf, H5_INDEX_NAME, H5_ITER_INC, NULL, NULL, NULL) < 0) &&
              (tf < 0 || H5Oget_info1(tf, NULL) < 0) && H5Oopen_by_addr(H5I_INVALID_HID, 0) < 0 &&
              scratch.len == 0,
          "invalid arguments are rejected on both connectors");
    /* Region references work on tessera (test_references.c compares them with native). */
    hdset_reg_ref_t rr;
    hid_t sp = H5Screate(H5S_SCALAR);
    check(tf < 0 || H5Rcreate(&rr, tf, "top", H5R_DATASET_REGION, sp) >= 0,
          "a region reference to a dataset is made on tessera");
    H5Sclose(sp);
  } H5E_END_TRY
  check(strstr(nlog.text, "FAILED") == NULL, "no v1 call failed on native");
  check(strstr(tlog.text, "FAILED") == NULL, "no v1 call failed on tessera");
  compare(nlog.text, tlog.text);
  if (getenv("TEST_COMPAT_VERBOSE")) printf("---- native\n%s---- tessera\n%s", nlog.text, tlog.text);

  if (tf >= 0) H5Fclose(tf);
  if (nf >= 0) H5Fclose(nf);
  H5Pclose(fapl);
  if (vol >= 0) H5VLclose(vol);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
