/* test_default_plists.c — an application that changes HDF5's default property lists, and
 * what links, attributes and datasets created or opened with the defaults then get,
 * tessera vs native HDF5 (vol_test_log.h).
 *
 * Native HDF5 reads the link creation and dataset access properties of its default lists
 * once, at library init, and uses that copy whenever a call carries the default list
 * (H5CX.c); an attribute created with the default acpl gets ASCII (H5Aint.c).  Setting
 * H5P_LINK_CREATE_DEFAULT's character set or intermediate-group flag,
 * H5P_ATTRIBUTE_CREATE_DEFAULT's character set or H5P_DATASET_ACCESS_DEFAULT's external
 * file prefix therefore changes nothing for objects made with H5P_DEFAULT — while a list
 * of the application's own with the same settings does.  The connector answers the same
 * way without reading the default lists (vol/base/default_plists.h; issue 20): a connector that
 * read them, or one that ignored the application's own lists, differs from native here.
 * Likewise the default dcpl: native makes every dataset created with it from a copy taken
 * at library start, while the creating handle reports the list as it is now
 * (vol/types/dcpl.h dcpl_encoding); its properties are changed between creates below.
 *
 * Usage: test_default_plists [directory for the files]
 */
#include "vol_test_log.h"

static void log_link(hid_t f, const char *name)
{
    H5L_info2_t li;
    if (H5Lget_info2(f, name, &li, H5P_DEFAULT) < 0)
        LOG("%s: no link", name);
    else
        LOG("%s: link cset %d", name, (int)li.cset);
}

static void log_attr(hid_t obj, const char *name)
{
    H5A_info_t ai;
    if (H5Aget_info_by_name(obj, ".", name, &ai, H5P_DEFAULT) < 0) {
        LOG("attr %s: none", name);
        return;
    }
    hid_t      a    = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t      p    = a >= 0 ? H5Aget_create_plist(a) : H5I_INVALID_HID;
    H5T_cset_t cset = H5T_CSET_ERROR;
    if (p >= 0)
        H5Pget_char_encoding(p, &cset);
    LOG("attr %s: info cset %d, acpl cset %d", name, (int)ai.cset, (int)cset);
    if (p >= 0)
        H5Pclose(p);
    if (a >= 0)
        H5Aclose(a);
}

static void log_efile_prefix(hid_t d, const char *name)
{
    hid_t   p        = H5Dget_access_plist(d);
    char    buf[256] = "";
    ssize_t n        = p >= 0 ? H5Pget_efile_prefix(p, buf, sizeof buf) : -1;
    LOG("%s: efile prefix %zd '%s'", name, n, n > 0 ? buf : "");
    if (p >= 0)
        H5Pclose(p);
}

/* What the handle of a dataset just created reports as its dcpl, whether its times are
 * kept, and whether its attributes' creation order is.  (Only the creating handle: with
 * the default object header version, native reports the default list as it is at each
 * open for these properties, not what the dataset was made with.) */
static void log_dcpl(hid_t d, const char *name)
{
    hid_t p = H5Dget_create_plist(d);
    if (p < 0) {
        LOG("%s: no dcpl", name);
        return;
    }
    hbool_t     track = 0, minimize = 0;
    unsigned    corder = 0, max_compact = 0, min_dense = 0;
    H5O_info2_t oi;
    H5Pget_obj_track_times(p, &track);
    H5Pget_attr_creation_order(p, &corder);
    H5Pget_attr_phase_change(p, &max_compact, &min_dense);
    H5Pget_dset_no_attrs_hint(p, &minimize);
    int times = H5Oget_info3(d, &oi, H5O_INFO_TIME) >= 0 ? oi.ctime != 0 : -1;
    LOG("%s: layout %d, track times %d (times kept %d), attr corder %u, phase %u/%u, no-attrs hint %d", name,
        (int)H5Pget_layout(p), (int)track, times, corder, max_compact, min_dense, (int)minimize);
    /* Attributes listed by creation order: only with creation order tracked. */
    hid_t sc = H5Screate(H5S_SCALAR);
    for (const char *an = "zz"; an; an = an[0] == 'z' ? "aa" : NULL) {
        hid_t a = H5Acreate2(d, an, H5T_NATIVE_INT, sc, H5P_DEFAULT, H5P_DEFAULT);
        if (a >= 0)
            H5Aclose(a);
    }
    H5Sclose(sc);
    char   first[16] = "";
    herr_t rc        = -1;
    H5E_BEGIN_TRY
    {
        rc = H5Aget_name_by_idx(d, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, 0, first, sizeof first, H5P_DEFAULT);
    }
    H5E_END_TRY
    LOG("%s: first attribute by creation order: %s", name, rc >= 0 ? first : "(not tracked)");
    H5Pclose(p);
}

static void scenario(const char *path, hid_t fapl, log_t *L)
{
    (void)L;
    hsize_t n = 4;
    int     v[4] = {1, 2, 3, 4};
    hid_t   f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t   sp = H5Screate_simple(1, &n, NULL), scalar = H5Screate(H5S_SCALAR);
    if (f < 0) {
        LOG("create fail");
        return;
    }

    /* The defaults as the library made them. */
    hid_t g = H5Gcreate2(f, "plain", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g);
    log_link(f, "plain");

    /* Changed default lcpl: UTF-8 names, intermediate groups. */
    H5Pset_char_encoding(H5P_LINK_CREATE_DEFAULT, H5T_CSET_UTF8);
    H5Pset_create_intermediate_group(H5P_LINK_CREATE_DEFAULT, 1);
    g = H5Gcreate2(f, "after_lcpl", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g);
    log_link(f, "after_lcpl");
    hid_t d = H5Dcreate2(f, "d_default", H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("d_default: create %s", d >= 0 ? "ok" : "fail");
    if (d >= 0)
        H5Dclose(d);
    log_link(f, "d_default");
    /* The library's default list passed by name rather than as H5P_DEFAULT. */
    d = H5Dcreate2(f, "d_named", H5T_NATIVE_INT, sp, H5P_LINK_CREATE_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("d_named: create %s", d >= 0 ? "ok" : "fail");
    if (d >= 0)
        H5Dclose(d);
    log_link(f, "d_named");
    d = H5Dcreate2(f, "missing/d_nested", H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("missing/d_nested with the default lcpl: %s", d >= 0 ? "created" : "fail");
    if (d >= 0)
        H5Dclose(d);
    hid_t t = H5Tcopy(H5T_NATIVE_INT);
    LOG("commit missing2/t with the default lcpl: %s",
        H5Tcommit2(f, "missing2/t", t, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) >= 0 ? "ok" : "fail");
    H5Tclose(t);
    LOG("hard link with the default lcpl: %s",
        H5Lcreate_hard(f, "plain", f, "hard_default", H5P_DEFAULT, H5P_DEFAULT) >= 0 ? "ok" : "fail");
    log_link(f, "hard_default");
    LOG("soft link with the default lcpl: %s",
        H5Lcreate_soft("/plain", f, "soft_default", H5P_DEFAULT, H5P_DEFAULT) >= 0 ? "ok" : "fail");
    log_link(f, "soft_default");

    /* The application's own lcpl with the same settings: these apply. */
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_char_encoding(lcpl, H5T_CSET_UTF8);
    H5Pset_create_intermediate_group(lcpl, 1);
    d = H5Dcreate2(f, "made/d_own", H5T_NATIVE_INT, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    LOG("made/d_own with its own lcpl: %s", d >= 0 ? "created" : "fail");
    if (d >= 0) {
        herr_t rc = H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
        LOG("write made/d_own: %s", rc >= 0 ? "ok" : "fail");
        H5Dclose(d);
    }
    log_link(f, "made");
    log_link(f, "made/d_own");
    LOG("hard link with its own lcpl: %s",
        H5Lcreate_hard(f, "plain", f, "hard_own", lcpl, H5P_DEFAULT) >= 0 ? "ok" : "fail");
    log_link(f, "hard_own");
    H5Pclose(lcpl);
    H5Pset_char_encoding(H5P_LINK_CREATE_DEFAULT, H5T_CSET_ASCII);
    H5Pset_create_intermediate_group(H5P_LINK_CREATE_DEFAULT, 0);

    /* Changed default acpl, then an acpl of the application's own. */
    hid_t ds = H5Dopen2(f, "d_default", H5P_DEFAULT);
    H5Pset_char_encoding(H5P_ATTRIBUTE_CREATE_DEFAULT, H5T_CSET_UTF8);
    hid_t a = H5Acreate2(ds, "a_default", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0)
        H5Aclose(a);
    a = H5Acreate2(ds, "a_named", H5T_NATIVE_INT, scalar, H5P_ATTRIBUTE_CREATE_DEFAULT, H5P_DEFAULT);
    if (a >= 0)
        H5Aclose(a);
    hid_t acpl = H5Pcreate(H5P_ATTRIBUTE_CREATE);
    H5Pset_char_encoding(acpl, H5T_CSET_UTF8);
    a = H5Acreate2(ds, "a_own", H5T_NATIVE_INT, scalar, acpl, H5P_DEFAULT);
    if (a >= 0)
        H5Aclose(a);
    H5Pclose(acpl);
    H5Pset_char_encoding(H5P_ATTRIBUTE_CREATE_DEFAULT, H5T_CSET_ASCII);
    log_attr(ds, "a_default");
    log_attr(ds, "a_named");
    log_attr(ds, "a_own");
    H5Dclose(ds);

    /* Changed default dapl: the external file prefix a handle reports. */
    H5Pset_efile_prefix(H5P_DATASET_ACCESS_DEFAULT, "/no/such/prefix");
    ds = H5Dopen2(f, "made/d_own", H5P_DEFAULT);
    if (ds >= 0) {
        log_efile_prefix(ds, "opened with the default dapl");
        int r[4] = {0, 0, 0, 0};
        herr_t rc = H5Dread(ds, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, r);
        LOG("read %s: %d %d %d %d", rc >= 0 ? "ok" : "fail", r[0], r[1], r[2], r[3]);
        H5Dclose(ds);
    }
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    H5Pset_efile_prefix(dapl, "/own/prefix");
    ds = H5Dopen2(f, "made/d_own", dapl);
    if (ds >= 0) {
        log_efile_prefix(ds, "opened with its own dapl");
        H5Dclose(ds);
    }
    d = H5Dcreate2(f, "d_created", H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (d >= 0) {
        log_efile_prefix(d, "created with the default dapl");
        H5Dclose(d);
    }
    d = H5Dcreate2(f, "d_created_own", H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT, dapl);
    if (d >= 0) {
        log_efile_prefix(d, "created with its own dapl");
        H5Dclose(d);
    }
    H5Pclose(dapl);
    H5Pset_efile_prefix(H5P_DATASET_ACCESS_DEFAULT, "");

    /* Changed default dcpl, between creates with it.  Native makes each dataset created with
     * the default list from a copy made at library init (layout, object header flags: times
     * and attribute creation order), while the creating handle reports the list as it is
     * now (vol/types/dcpl.h dcpl_encoding). */
    hsize_t chunk = 2;
    const char *dnames[] = {"dc_plain", "dc_untimed", "dc_corder", "dc_phase", "dc_hint", "dc_chunk", "dc_restored"};
    for (int i = 0; i < 7; ++i) {
        if (i == 1)
            H5Pset_obj_track_times(H5P_DATASET_CREATE_DEFAULT, 0);
        if (i == 2)
            H5Pset_attr_creation_order(H5P_DATASET_CREATE_DEFAULT, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
        if (i == 3)
            H5Pset_attr_phase_change(H5P_DATASET_CREATE_DEFAULT, 0, 0);
        if (i == 4)
            H5Pset_dset_no_attrs_hint(H5P_DATASET_CREATE_DEFAULT, 1);
        if (i == 5)
            H5Pset_chunk(H5P_DATASET_CREATE_DEFAULT, 1, &chunk);
        if (i == 6) {
            H5Pset_obj_track_times(H5P_DATASET_CREATE_DEFAULT, 1);
            H5Pset_attr_creation_order(H5P_DATASET_CREATE_DEFAULT, 0);
            H5Pset_attr_phase_change(H5P_DATASET_CREATE_DEFAULT, 8, 6);
            H5Pset_dset_no_attrs_hint(H5P_DATASET_CREATE_DEFAULT, 0);
            H5Pset_layout(H5P_DATASET_CREATE_DEFAULT, H5D_CONTIGUOUS);
        }
        d = H5Dcreate2(f, dnames[i], H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        LOG("%s: create %s", dnames[i], d >= 0 ? "ok" : "fail");
        if (d >= 0) {
            LOG("%s: write %s", dnames[i], H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0 ? "ok" : "fail");
            log_dcpl(d, dnames[i]);
            H5Dclose(d);
        }
    }

    H5Sclose(sp);
    H5Sclose(scalar);
    H5Fclose(f);

    /* After a reopen: what was stored. */
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    log_link(f, "after_lcpl");
    log_link(f, "d_default");
    log_link(f, "made/d_own");
    LOG("missing exists after reopen: %d", (int)H5Lexists(f, "missing", H5P_DEFAULT));
    ds = H5Dopen2(f, "d_default", H5P_DEFAULT);
    log_attr(ds, "a_default");
    log_attr(ds, "a_own");
    H5Dclose(ds);
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDWR, fapl);
    for (int i = 0; i < 7; ++i) {
        hid_t dd = H5Dopen2(f, dnames[i], H5P_DEFAULT);
        hid_t p  = dd >= 0 ? H5Dget_create_plist(dd) : H5I_INVALID_HID;
        hbool_t  track = 0;
        unsigned corder = 0, mc = 0, md = 0;
        if (p >= 0) {
            H5Pget_obj_track_times(p, &track);
            H5Pget_attr_creation_order(p, &corder);
            H5Pget_attr_phase_change(p, &mc, &md);
        }
        LOG("reopened %s: layout %d, track times %d, attr corder %u, phase %u/%u", dnames[i],
            p >= 0 ? (int)H5Pget_layout(p) : -1, (int)track, corder, mc, md);
        if (p >= 0)
            H5Pclose(p);
        if (dd >= 0)
            H5Dclose(dd);
    }
    H5Fclose(f);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    return run_compared(dir, "default_plists", scenario, 60, NULL);
}
