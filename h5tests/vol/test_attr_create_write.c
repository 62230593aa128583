/* test_attr_create_write.c — what an attribute is between its H5Acreate and its H5Awrite,
 * tessera vs native HDF5 (vol_test_log.h).
 *
 * The connector commits an attribute's creation together with the H5Awrite that usually
 * follows it (one catalog put instead of two; vol/model/object_model.h defer_attr_create), and
 * commits it first whenever any other call comes in between.  Every call here comes in
 * between in its own way — existence checks, counts, iteration, reads before the write,
 * a second attribute, another file, a failed write, a write of no elements, a committed
 * type's reference count, closing without a write, a rename and a delete — and what each
 * sees, during the session and after a reopen, must be native's.
 *
 * Usage: test_attr_create_write [directory for the files]
 */
#include "vol_test_log.h"

static herr_t log_name(hid_t loc, const char *name, const H5A_info_t *info, void *op)
{
    (void)loc;
    (void)info;
    log_t *L = (log_t *)op;
    (void)L;
    LOG("  iterate: %s", name);
    return 0;
}

static void log_attrs(hid_t obj, const char *what)
{
    H5O_info2_t oi;
    if (H5Oget_info3(obj, &oi, H5O_INFO_NUM_ATTRS) < 0)
        LOG("%s: no info", what);
    else
        LOG("%s: %llu attributes", what, (unsigned long long)oi.num_attrs);
    hsize_t idx = 0;
    H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, log_name, NULL);
}

static void log_int_attr(hid_t obj, const char *name)
{
    int   v[3] = {-1, -1, -1};
    hid_t a    = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) {
        LOG("%s: cannot open", name);
        return;
    }
    herr_t rc = H5Aread(a, H5T_NATIVE_INT, v);
    LOG("%s: read %d: %d %d %d", name, (int)rc, v[0], v[1], v[2]);
    H5Aclose(a);
}

static void log_type_rc(hid_t f, const char *name)
{
    H5O_info2_t oi;
    if (H5Oget_info_by_name3(f, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
        LOG("%s: no info", name);
    else
        LOG("%s: rc %u", name, oi.rc);
}

static void scenario(const char *path, hid_t fapl, log_t *L)
{
    (void)L;
    char path2[1024];
    snprintf(path2, sizeof path2, "%s.other", path);
    hsize_t three = 3;
    int     v[3] = {7, 8, 9}, w[3] = {1, 2, 3};
    hid_t   f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t   f2 = H5Fcreate(path2, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t   sp = H5Screate_simple(1, &three, NULL), scalar = H5Screate(H5S_SCALAR);
    hid_t   null_sp = H5Screate(H5S_NULL);
    if (f < 0 || f2 < 0) {
        LOG("create fail");
        return;
    }
    hid_t g = H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);

    /* Seen before its write: exists, counted, listed, read as zeros. */
    hid_t a = H5Acreate2(g, "a", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    LOG("a exists before its write: %d", (int)H5Aexists(g, "a"));
    log_attrs(g, "g after creating a");
    log_int_attr(g, "a");
    LOG("write a: %d", (int)H5Awrite(a, H5T_NATIVE_INT, v));
    H5Aclose(a);
    log_int_attr(g, "a");

    /* Two created, then written in the other order. */
    hid_t b = H5Acreate2(g, "b", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    hid_t c = H5Acreate2(g, "c", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    LOG("write c: %d", (int)H5Awrite(c, H5T_NATIVE_INT, w));
    LOG("write b: %d", (int)H5Awrite(b, H5T_NATIVE_INT, v));
    H5Aclose(b);
    H5Aclose(c);
    log_int_attr(g, "b");
    log_int_attr(g, "c");

    /* Created twice: the second fails, whether or not the first was written. */
    hid_t d = H5Acreate2(g, "d", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    hid_t d2 = -1;
    H5E_BEGIN_TRY { d2 = H5Acreate2(g, "d", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT); }
    H5E_END_TRY;
    LOG("second create of d: %s", d2 < 0 ? "fails" : "succeeds");
    if (d2 >= 0)
        H5Aclose(d2);
    H5Aclose(d); /* never written */

    /* Another file's calls in between. */
    hid_t e = H5Acreate2(g, "e", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    hid_t g2 = H5Gcreate2(f2, "other", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t e2 = H5Acreate2(g2, "e", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    LOG("write e in the first file: %d", (int)H5Awrite(e, H5T_NATIVE_INT, w));
    LOG("write e in the other file: %d", (int)H5Awrite(e2, H5T_NATIVE_INT, v));
    H5Aclose(e);
    H5Aclose(e2);
    H5Gclose(g2);

    /* A write that fails: the attribute stays, unwritten. */
    hid_t fx = H5Acreate2(g, "failed", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc;
    H5E_BEGIN_TRY { rc = H5Awrite(fx, H5T_C_S1, v); }
    H5E_END_TRY;
    LOG("write with a string memory type: %d", (int)rc);
    H5Aclose(fx);
    log_int_attr(g, "failed");

    /* No elements to write. */
    hid_t z = H5Acreate2(g, "empty", H5T_STD_I32LE, null_sp, H5P_DEFAULT, H5P_DEFAULT);
    LOG("write of a null space: %d", (int)H5Awrite(z, H5T_NATIVE_INT, v));
    H5Aclose(z);

    /* A committed type's reference count, written or not. */
    hid_t t = H5Tcopy(H5T_STD_I32LE);
    H5Tcommit2(f, "t", t, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t ta = H5Acreate2(g, "typed", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    log_type_rc(f, "t");
    LOG("write typed: %d", (int)H5Awrite(ta, H5T_NATIVE_INT, w));
    H5Aclose(ta);
    hid_t tb = H5Acreate2(g, "typed_unwritten", t, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Aclose(tb);
    log_type_rc(f, "t");
    H5Tclose(t);

    /* Renamed and deleted before their writes. */
    hid_t r = H5Acreate2(g, "to_rename", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    LOG("rename: %d", (int)H5Arename(g, "to_rename", "renamed"));
    LOG("write after the rename: %d", (int)H5Awrite(r, H5T_NATIVE_INT, v));
    H5Aclose(r);
    hid_t x = H5Acreate2(g, "to_delete", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    LOG("delete: %d", (int)H5Adelete(g, "to_delete"));
    H5E_BEGIN_TRY { rc = H5Awrite(x, H5T_NATIVE_INT, v); }
    H5E_END_TRY;
    LOG("write after the delete: %s", rc < 0 ? "fails" : "succeeds");
    H5Aclose(x);

    /* Created last, never written, the file closed with its handle open. */
    hid_t last = H5Acreate2(g, "last", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    log_attrs(g, "g at the end");
    H5Aclose(last);
    H5Gclose(g);
    H5Sclose(sp);
    H5Sclose(scalar);
    H5Sclose(null_sp);
    H5Fclose(f);
    H5Fclose(f2);

    /* What was stored. */
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    g = H5Gopen2(f, "g", H5P_DEFAULT);
    log_attrs(g, "g after a reopen");
    const char *names[] = {"a", "b", "c", "d", "e", "failed", "typed", "renamed"};
    for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
        log_int_attr(g, names[i]);
    log_type_rc(f, "t");
    H5Gclose(g);
    H5Fclose(f);
    f2 = H5Fopen(path2, H5F_ACC_RDONLY, fapl);
    g2 = H5Gopen2(f2, "other", H5P_DEFAULT);
    log_int_attr(g2, "e");
    H5Gclose(g2);
    H5Fclose(f2);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    return run_compared(dir, "attr_create_write", scenario, 40, NULL);
}
