/* test_space_reuse.c — dataspace and datatype IDs an application reuses and changes
 * between calls, and what the stored objects report back, tessera vs native HDF5
 * (vol_test_log.h).
 *
 * The connector remembers the encoding of a dataspace ID that selects everything and
 * decodes each stored dataspace and datatype encoding once per process, handing out
 * copies (vol/types/stored_space.h, vol/types/stored_type.h; issue 20).  These scenarios change an
 * ID's extent, selection and class between creations, change a type handed out, and
 * finally shut the library down and open the container again in the same process (the
 * caches hold library IDs, which die with the library).
 *
 * Usage: test_space_reuse [directory for the files]
 */
#include "vol_test_log.h"

static void log_space(const char *what, hid_t s)
{
    if (s < 0) {
        LOG("%s: no space", what);
        return;
    }
    hsize_t dims[8] = {0}, maxd[8] = {0};
    int     rank = H5Sget_simple_extent_dims(s, dims, maxd);
    LOG("%s: class %d rank %d dims %llu,%llu max %lld,%lld npoints %lld sel %d", what,
        (int)H5Sget_simple_extent_type(s), rank, (unsigned long long)dims[0], (unsigned long long)dims[1],
        (long long)(maxd[0] == H5S_UNLIMITED ? -1 : (long long)maxd[0]),
        (long long)(maxd[1] == H5S_UNLIMITED ? -1 : (long long)maxd[1]), (long long)H5Sget_simple_extent_npoints(s),
        (int)H5Sget_select_type(s));
}

static void log_attr(hid_t obj, const char *name)
{
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) {
        LOG("attr %s: open fail", name);
        return;
    }
    hid_t s = H5Aget_space(a);
    char  what[64];
    snprintf(what, sizeof what, "attr %s space", name);
    log_space(what, s);
    hid_t t = H5Aget_type(a);
    LOG("attr %s type class %d size %zu", name, (int)H5Tget_class(t), H5Tget_size(t));
    hssize_t n = H5Sget_simple_extent_npoints(s);
    if (n > 0 && n <= 64) {
        int buf[64] = {0};
        herr_t rc = H5Aread(a, H5T_NATIVE_INT, buf);
        LOG("attr %s read %s hash %llx", name, RC(rc), fnv(buf, (size_t)n * sizeof(int)));
    }
    H5Tclose(t);
    H5Sclose(s);
    H5Aclose(a);
}

static void write_attr(hid_t obj, const char *name, hid_t space)
{
    int buf[64];
    for (int i = 0; i < 64; i++)
        buf[i] = i * 7 + (int)strlen(name);
    hid_t a = H5Acreate2(obj, name, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT);
    LOG("create attr %s %s", name, RC(a));
    if (a >= 0) {
        LOG("write attr %s %s", name, RC(H5Awrite(a, H5T_NATIVE_INT, buf)));
        H5Aclose(a);
    }
}

static void make_dataset(hid_t f, const char *name, hid_t space)
{
    hid_t d = H5Dcreate2(f, name, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("create dataset %s %s", name, RC(d));
    if (d >= 0)
        H5Dclose(d);
}

static void log_dataset(hid_t f, const char *name)
{
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) {
        LOG("dataset %s: open fail", name);
        return;
    }
    hid_t s = H5Dget_space(d);
    char  what[64];
    snprintf(what, sizeof what, "dataset %s space", name);
    log_space(what, s);
    H5Sclose(s);
    H5Dclose(d);
}

/* Not compared: an attribute created with a space selecting part of its extent.  Native
 * reports that selection from H5Aget_space while its attribute object stays cached, "all"
 * once the file was reopened; tessera always reports "all" (docs/conformance.md). */
/* A vlen UTF-8 string attribute made with the application's own type ID and a UTF-8
 * acpl and written with that ID (tessera serializes with the memory type when it equals
 * the stored one), and an int attribute written through a library type that holds an
 * extra application reference (H5Iinc_ref: then asked each time, like an application's
 * type).  Attribute handles keep no dataspace or acpl ID of their own (issue 20): the
 * read back below needs both (H5Treclaim of the vlen read, H5Aget_create_plist). */
static void make_more_attrs(hid_t g)
{
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, H5T_VARIABLE);
    H5Tset_cset(str, H5T_CSET_UTF8);
    hid_t acpl = H5Pcreate(H5P_ATTRIBUTE_CREATE);
    H5Pset_char_encoding(acpl, H5T_CSET_UTF8);
    hsize_t     three = 3;
    hid_t       sp    = H5Screate_simple(1, &three, NULL);
    const char *v[3]  = {"caf\xc3\xa9", "", "metres per second"};
    hid_t       a     = H5Acreate2(g, "a_vstr", str, sp, acpl, H5P_DEFAULT);
    LOG("create a_vstr %s, write %s", RC(a), RC(H5Awrite(a, str, v)));
    H5Aclose(a);
    H5Iinc_ref(H5T_NATIVE_INT);
    int iv[3] = {7, -8, 9};
    a         = H5Acreate2(g, "a_lib_ref", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    LOG("create a_lib_ref %s, write %s", RC(a), RC(H5Awrite(a, H5T_NATIVE_INT, iv)));
    H5Aclose(a);
    H5Idec_ref(H5T_NATIVE_INT);
    H5Sclose(sp);
    H5Pclose(acpl);
    H5Tclose(str);
}

static void log_more_attrs(hid_t g)
{
    hid_t a = H5Aopen(g, "a_vstr", H5P_DEFAULT);
    if (a < 0) {
        LOG("a_vstr: open fail");
        return;
    }
    hid_t      t = H5Aget_type(a), s = H5Aget_space(a), p = H5Aget_create_plist(a);
    H5T_cset_t cs = H5T_CSET_ERROR;
    H5Pget_char_encoding(p, &cs);
    char  *r[3] = {NULL, NULL, NULL};
    herr_t rc   = H5Aread(a, t, r);
    LOG("a_vstr acpl cset %d, type cset %d vlen %d, npoints %lld, read %s: '%s' '%s' '%s'", (int)cs,
        (int)H5Tget_cset(t), (int)H5Tis_variable_str(t), (long long)H5Sget_simple_extent_npoints(s), RC(rc),
        r[0] ? r[0] : "(null)", r[1] ? r[1] : "(null)", r[2] ? r[2] : "(null)");
    if (rc >= 0)
        H5Treclaim(t, s, H5P_DEFAULT, r);
    H5Pclose(p);
    H5Sclose(s);
    H5Tclose(t);
    H5Aclose(a);
    a = H5Aopen(g, "a_lib_ref", H5P_DEFAULT);
    int iv[3] = {0, 0, 0};
    H5Iinc_ref(H5T_NATIVE_INT);
    rc = H5Aread(a, H5T_NATIVE_INT, iv);
    H5Idec_ref(H5T_NATIVE_INT);
    LOG("a_lib_ref read %s: %d %d %d", RC(rc), iv[0], iv[1], iv[2]);
    H5Aclose(a);
}

static const char *g_attrs[] = {"a_scalar", "a_pair", "a_grown", "a_2d", "a_null", "a_again"};
static const char *g_dsets[] = {"d_pair", "d_grown", "d_hyper", "d_unlimited", "d_null", "d_again"};

/* reopened: native 1.14.5 cannot open the attributes created from the null dataspace
 * (H5Sset_extent_none) onwards once the file was closed and opened again (its own
 * defect), so those are compared while the file is still open only; tessera's read back
 * as created either way (the last check of main). */
static void read_back(hid_t f, int reopened)
{
    hid_t g = H5Gopen2(f, "/g", H5P_DEFAULT);
    for (size_t i = 0; i < sizeof g_attrs / sizeof *g_attrs; i++) {
        if (reopened && (!strcmp(g_attrs[i], "a_null") || !strcmp(g_attrs[i], "a_again")))
            continue;
        log_attr(g, g_attrs[i]);
    }
    hid_t more = H5Gopen2(f, "/more", H5P_DEFAULT);
    log_more_attrs(more);
    H5Gclose(more);
    /* A type handed out and changed by the application: the next one is as stored.
     * (Native hands out read-only types, so its H5Tset_size fails; the HDF5 API has no
     * call that makes a type read-only but closable, so tessera's succeeds: not logged.) */
    hid_t a = H5Aopen(g, "a_pair", H5P_DEFAULT);
    hid_t t = H5Aget_type(a);
    H5E_BEGIN_TRY { H5Tset_size(t, 2); } H5E_END_TRY
    H5Tclose(t);
    t = H5Aget_type(a);
    LOG("type again: class %d size %zu", (int)H5Tget_class(t), H5Tget_size(t));
    H5Tclose(t);
    H5Aclose(a);
    H5Gclose(g);
    /* Every datatype ID handed out is closed again: none may stay counted (HDF5 counts
     * all datatype IDs with application references for H5F_OBJ_ALL, so a type the
     * connector kept open for itself would show here). */
    LOG("open datatype IDs in all files: %zd", H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_DATATYPE));
    /* Native also reports the null dataset as a scalar once reopened (the same defect:
     * the null extent stored in the old encoding): compared while open only. */
    for (size_t i = 0; i < sizeof g_dsets / sizeof *g_dsets; i++)
        if (!reopened || strcmp(g_dsets[i], "d_null"))
            log_dataset(f, g_dsets[i]);
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    (void)L;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    LOG("file create %s", RC(f));
    if (f < 0)
        return;
    hid_t g = H5Gcreate2(f, "/g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t s = H5Screate(H5S_SCALAR);
    write_attr(g, "a_scalar", s);
    /* The same ID, changed to other extents between creations. */
    hsize_t two = 2, five = 5, d2[2] = {3, 4}, mx[2] = {H5S_UNLIMITED, 8};
    H5Sset_extent_simple(s, 1, &two, NULL);
    write_attr(g, "a_pair", s);
    make_dataset(f, "d_pair", s);
    H5Sset_extent_simple(s, 1, &five, NULL);
    write_attr(g, "a_grown", s);
    make_dataset(f, "d_grown", s);
    H5Sset_extent_simple(s, 2, d2, NULL);
    write_attr(g, "a_2d", s);
    /* A selection that is not "all": still the whole extent is stored. */
    hsize_t start[2] = {1, 1}, count[2] = {2, 2};
    H5Sselect_hyperslab(s, H5S_SELECT_SET, start, NULL, count, NULL);
    write_attr(g, "a_hyper", s);
    make_dataset(f, "d_hyper", s);
    H5Sselect_all(s);
    H5Sset_extent_simple(s, 2, d2, mx);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t chunk[2] = {2, 2};
    H5Pset_chunk(dcpl, 2, chunk);
    hid_t d = H5Dcreate2(f, "d_unlimited", H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    LOG("create dataset d_unlimited %s", RC(d));
    if (d >= 0)
        H5Dclose(d);
    H5Pclose(dcpl);
    H5Sset_extent_none(s);
    write_attr(g, "a_null", s);
    make_dataset(f, "d_null", s);
    /* Back to an extent it had before. */
    H5Sset_extent_simple(s, 1, &two, NULL);
    write_attr(g, "a_again", s);
    make_dataset(f, "d_again", s);
    /* On a group of their own: native cannot open attributes created after the null
     * dataspace one in the same object header (read_back). */
    hid_t more = H5Gcreate2(f, "/more", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    make_more_attrs(more);
    H5Gclose(more);
    H5Sclose(s);
    H5Gclose(g);
    read_back(f, 0);
    LOG("close %s", RC(H5Fclose(f)));
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    LOG("reopen %s", RC(f));
    if (f >= 0) {
        read_back(f, 1);
        H5Fclose(f);
    }
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    int         bad = run_compared(dir, "test_space_reuse", run, 60, NULL);
    /* The library shut down and started again in this process: the container reads
     * back as before (the connector's cached IDs died with the library). */
    log_t before = {0}, after = {0};
    char  pt[4096];
    snprintf(pt, sizeof pt, "%s/test_space_reuse_tessera.h5", dir);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            H5close();
        hid_t native, tess, vol;
        if (make_fapls(&native, &tess, &vol) < 0)
            return 1;
        g_log    = pass ? &after : &before;
        hid_t f  = H5Fopen(pt, H5F_ACC_RDONLY, tess);
        LOG("open %s", RC(f));
        if (f >= 0) {
            read_back(f, 0);
            H5Fclose(f);
        }
        H5Pclose(native);
        H5Pclose(tess);
        H5VLclose(vol);
    }
    int ok = before.buf && after.buf && strcmp(before.buf, after.buf) == 0 && strlen(before.buf) > 200;
    check(ok, "the container reads back the same after H5close", "tessera");
    free(before.buf);
    free(after.buf);
    return bad || !ok;
}
