/* test_elinks — external links on tessera compared with native HDF5.
 *
 * One scenario runs twice in one process: with native HDF5 files in elinks_native/ and
 * with tessera containers in elinks_tessera/ (the connector chosen per file by the fapl;
 * native stays the default connector, HDF5_PLUGIN_PATH must point at the plugin).  Every
 * observable result is logged and the two logs must be identical:
 *   - links into another file: H5Lexists, H5Oexists_by_name, link info and value,
 *     objects opened and data read and written through them, attributes behind them;
 *   - the target file found through H5Pset_elink_prefix and through HDF5_EXT_PREFIX, and
 *     not found without either;
 *   - access flags: H5Pset_elink_acc_flags(H5F_ACC_RDONLY) opens the target read-only,
 *     the default follows the linking file's intent;
 *   - dangling links (missing object, missing file): H5Lexists true, opening fails;
 *   - iteration (H5Literate2) and visiting (H5Ovisit3, H5Lvisit2) over a group holding
 *     external links: external links are listed, never followed.
 * Checked per run (tessera only): an external link whose target is a native HDF5 file
 * fails to open with an error that says so.
 *
 * Exit status 0 only if the logs match and every check passed.
 */
#include <hdf5.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vol_test_log.h"

/* All error descriptions on the stack, joined (for "does the error say X"). */
static herr_t collect_cb(unsigned n, const H5E_error2_t *e, void *ud)
{
    char *all = ud;
    (void)n;
    if (e->desc && strlen(all) + strlen(e->desc) + 3 < 4096) {
        strcat(all, e->desc);
        strcat(all, " | ");
    }
    return 0;
}

/* ---------------------------------------------------------------- helpers */
static void make_dataset(hid_t loc, const char *name, const int *v)
{
    hsize_t n = 4;
    hid_t   s = H5Screate_simple(1, &n, NULL);
    hid_t   d = H5Dcreate2(loc, name, H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("create %s %s write %s", name, RC(d), RC(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v)));
    H5Dclose(d);
    H5Sclose(s);
}

/* Opens `path` under loc as a dataset with dapl, reads its 4 ints, logs the intent of
 * the file it lives in and whether writing `wv` to element 0 works. */
static void probe_dataset(const char *what, hid_t loc, const char *path, hid_t dapl, int wv)
{
    hid_t d;
    H5E_BEGIN_TRY { d = H5Dopen2(loc, path, dapl); }
    H5E_END_TRY
    if (d < 0) {
        LOG("%s: open %s fail", what, path);
        return;
    }
    int      v[4]   = {-1, -1, -1, -1};
    herr_t   r      = H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    hid_t    fid    = H5Iget_file_id(d);
    unsigned intent = 99;
    H5Fget_intent(fid, &intent);
    hid_t   fs    = H5Dget_space(d), ms;
    hsize_t one   = 1, start = 0;
    herr_t  w;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &one, NULL);
    ms = H5Screate_simple(1, &one, NULL);
    H5E_BEGIN_TRY { w = H5Dwrite(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, &wv); }
    H5E_END_TRY
    LOG("%s: open %s ok read %s [%d %d %d %d] intent=%s write(%d) %s", what, path, RC(r), v[0], v[1], v[2], v[3],
        intent == H5F_ACC_RDONLY ? "ro" : intent == H5F_ACC_RDWR ? "rw" : "?", wv, RC(w));
    H5Sclose(ms);
    H5Sclose(fs);
    H5Fclose(fid);
    H5Dclose(d);
}

static void link_value(hid_t loc, const char *name)
{
    H5L_info2_t li;
    herr_t      r = H5Lget_info2(loc, name, &li, H5P_DEFAULT);
    if (r < 0) {
        LOG("linfo %s fail", name);
        return;
    }
    if (li.type != H5L_TYPE_EXTERNAL) {
        LOG("linfo %s type=%d", name, (int)li.type);
        return;
    }
    char        buf[512];
    unsigned    flags = 99;
    const char *fn = "", *on = "";
    herr_t      r1 = li.u.val_size <= sizeof buf ? H5Lget_val(loc, name, buf, sizeof buf, H5P_DEFAULT) : -1;
    herr_t      r2 = r1 >= 0 ? H5Lunpack_elink_val(buf, li.u.val_size, &flags, &fn, &on) : -1;
    LOG("linfo %s type=external val_size=%zu get_val %s unpack %s flags=%u file=%s obj=%s", name, li.u.val_size,
        RC(r1), RC(r2), flags, fn, on);
}

static void exists(hid_t loc, const char *name)
{
    htri_t l, o;
    H5E_BEGIN_TRY
    {
        l = H5Lexists(loc, name, H5P_DEFAULT);
        o = H5Oexists_by_name(loc, name, H5P_DEFAULT);
    }
    H5E_END_TRY
    LOG("exists %s: link=%d object=%d", name, (int)l, (int)(o < 0 ? -1 : o));
}

static herr_t iter_cb(hid_t g, const char *name, const H5L_info2_t *li, void *ud)
{
    (void)g;
    (void)ud;
    LOG("  link %s type=%d val_size=%zu", name, (int)li->type, li->type == H5L_TYPE_HARD ? 0 : li->u.val_size);
    return 0;
}

static herr_t ovisit_cb(hid_t o, const char *name, const H5O_info2_t *oi, void *ud)
{
    (void)o;
    (void)ud;
    LOG("  obj %s type=%d", name, (int)oi->type);
    return 0;
}

static herr_t lvisit_cb(hid_t g, const char *name, const H5L_info2_t *li, void *ud)
{
    (void)g;
    (void)ud;
    LOG("  visit link %s type=%d", name, (int)li->type);
    return 0;
}

/* ---------------------------------------------------------------- scenario */
static void run(const char *label, hid_t fapl, int is_tessera, const char *native_file_abs)
{
    char dir[64], sub[80], cwd[512], target[600], target2[600], main_name[600], subabs[1200];
    snprintf(dir, sizeof dir, "elinks_%s", label);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    mkdir(dir, 0755);
    mkdir(sub, 0755);
    if (!getcwd(cwd, sizeof cwd))
        strcpy(cwd, ".");
    snprintf(target, sizeof target, "%s/target.h5", dir);
    snprintf(target2, sizeof target2, "%s/target2.h5", sub);
    snprintf(main_name, sizeof main_name, "%s/main.h5", dir);
    snprintf(subabs, sizeof subabs, "%s/%s", cwd, sub);
    printf("%s run:\n", label);

    /* target files: /g/d = 1 2 3 4 with an attribute, /g/h; sub/target2.h5: /d = 5 6 7 8 */
    {
        int   v[4] = {1, 2, 3, 4}, w[4] = {5, 6, 7, 8};
        hid_t f    = H5Fcreate(target, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        hid_t g    = H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        LOG("target %s group %s", RC(f), RC(g));
        make_dataset(g, "d", v);
        hid_t h = H5Gcreate2(g, "h", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        hid_t s = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(g, "attr", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT);
        int   av = 42;
        LOG("attr %s write %s", RC(a), RC(H5Awrite(a, H5T_NATIVE_INT, &av)));
        H5Aclose(a);
        H5Sclose(s);
        H5Gclose(h);
        H5Gclose(g);
        H5Fclose(f);
        f = H5Fcreate(target2, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        LOG("target2 %s", RC(f));
        make_dataset(f, "d", w);
        H5Fclose(f);
    }

    /* the linking file */
    {
        hid_t f = H5Fcreate(main_name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        hid_t g = H5Gcreate2(f, "links", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        LOG("main %s group %s", RC(f), RC(g));
        LOG("elink ext_g %s", RC(H5Lcreate_external("target.h5", "/g", g, "ext_g", H5P_DEFAULT, H5P_DEFAULT)));
        LOG("elink ext_d %s", RC(H5Lcreate_external("target.h5", "/g/d", g, "ext_d", H5P_DEFAULT, H5P_DEFAULT)));
        LOG("elink dangling_obj %s",
            RC(H5Lcreate_external("target.h5", "/no/such", g, "dangling_obj", H5P_DEFAULT, H5P_DEFAULT)));
        LOG("elink dangling_file %s",
            RC(H5Lcreate_external("no_such_file.h5", "/x", g, "dangling_file", H5P_DEFAULT, H5P_DEFAULT)));
        LOG("elink ext_prefixed %s",
            RC(H5Lcreate_external("target2.h5", "/d", g, "ext_prefixed", H5P_DEFAULT, H5P_DEFAULT)));
        LOG("soft %s", RC(H5Lcreate_soft("/links/ext_g/h", g, "soft_through", H5P_DEFAULT, H5P_DEFAULT)));
        LOG("soft dangling %s", RC(H5Lcreate_soft("/nowhere", g, "dangling_soft", H5P_DEFAULT, H5P_DEFAULT)));
        LOG("soft dangling2 %s",
            RC(H5Lcreate_soft("/nowhere/deeper", g, "dangling_soft2", H5P_DEFAULT, H5P_DEFAULT)));
        LOG("soft to elink %s", RC(H5Lcreate_soft("ext_d", g, "soft_to_elink", H5P_DEFAULT, H5P_DEFAULT)));
        LOG("soft to dangling elink %s",
            RC(H5Lcreate_soft("dangling_file", g, "soft_to_dangling", H5P_DEFAULT, H5P_DEFAULT)));
        hid_t h = H5Gcreate2(g, "hard", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Gclose(h);
        H5Gclose(g);
        H5Fclose(f);
    }

    hid_t f = H5Fopen(main_name, H5F_ACC_RDWR, fapl);
    LOG("open main rw %s", RC(f));

    /* existence and link values */
    const char *names[] = {"links/ext_g",         "links/ext_d",        "links/dangling_obj",
                           "links/dangling_file", "links/ext_prefixed", "links/ext_g/h",
                           "links/ext_g/d",       "links/soft_through", "links/ext_g/nope",
                           "links/nope",          "links/dangling_soft", "links/dangling_soft2",
                           "links/soft_to_elink", "links/soft_to_dangling", "nope/deeper",
                           "links/ext_g/h/x/y",   "/",                   "links/hard"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        exists(f, names[i]);
    link_value(f, "links/ext_g");
    link_value(f, "links/dangling_file");
    link_value(f, "links/hard");

    /* objects through the links */
    {
        /* (calls sequenced before LOG: argument evaluation order is unspecified) */
        H5O_info2_t oi = {0};
        herr_t      r  = H5Oget_info_by_name3(f, "links/ext_g", &oi, H5O_INFO_BASIC, H5P_DEFAULT);
        LOG("oinfo ext_g %s type=%d", RC(r), (int)oi.type);
        hid_t g = H5Gopen2(f, "links/ext_g", H5P_DEFAULT);
        LOG("open group ext_g %s", RC(g));
        H5G_info_t gi = {0};
        r             = H5Gget_info(g, &gi);
        LOG("ginfo %s nlinks=%llu", RC(r), (unsigned long long)gi.nlinks);
        int   av = 0;
        hid_t a  = H5Aopen(g, "attr", H5P_DEFAULT);
        r        = H5Aread(a, H5T_NATIVE_INT, &av);
        LOG("attr through link %s read %s value=%d", RC(a), RC(r), av);
        H5Aclose(a);
        H5Gclose(g);
        hid_t o;
        H5E_BEGIN_TRY { o = H5Oopen(f, "links/soft_through", H5P_DEFAULT); }
        H5E_END_TRY
        LOG("soft link through an external link: open %s type=%d", RC(o), o >= 0 ? (int)H5Iget_type(o) : -1);
        if (o >= 0)
            H5Oclose(o);
    }
    probe_dataset("default flags (main rw)", f, "links/ext_d", H5P_DEFAULT, 10);
    probe_dataset("path through ext_g", f, "links/ext_g/d", H5P_DEFAULT, 11);

    /* access flags: read-only target while the linking file is read-write */
    {
        hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
        H5Pset_elink_acc_flags(dapl, H5F_ACC_RDONLY);
        probe_dataset("elink_acc_flags RDONLY", f, "links/ext_d", dapl, 12);
        H5Pclose(dapl);
    }

    /* dangling links: opening fails */
    probe_dataset("dangling object", f, "links/dangling_obj", H5P_DEFAULT, 0);
    probe_dataset("dangling file", f, "links/dangling_file", H5P_DEFAULT, 0);

    /* the target in a directory only a prefix names */
    probe_dataset("no prefix", f, "links/ext_prefixed", H5P_DEFAULT, 0);
    {
        hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
        LOG("set prefix %s", RC(H5Pset_elink_prefix(dapl, subabs)));
        probe_dataset("H5Pset_elink_prefix", f, "links/ext_prefixed", dapl, 13);
        H5Pclose(dapl);
        hid_t lapl = H5Pcreate(H5P_LINK_ACCESS);
        H5Pset_elink_prefix(lapl, subabs);
        htri_t e;
        H5E_BEGIN_TRY { e = H5Oexists_by_name(f, "links/ext_prefixed", lapl); }
        H5E_END_TRY
        LOG("exists with prefix lapl: %d", (int)(e < 0 ? -1 : e));
        H5Pclose(lapl);
    }
    setenv("HDF5_EXT_PREFIX", subabs, 1);
    probe_dataset("HDF5_EXT_PREFIX", f, "links/ext_prefixed", H5P_DEFAULT, 14);
    unsetenv("HDF5_EXT_PREFIX");
    probe_dataset("prefix unset again", f, "links/ext_prefixed", H5P_DEFAULT, 0);

    /* iteration and visiting list external links without following them */
    {
        hsize_t idx = 0;
        LOG("iterate links by name:");
        LOG("iterate %s", RC(H5Literate2(f, H5_INDEX_NAME, H5_ITER_INC, &idx, iter_cb, NULL)));
        hid_t g = H5Gopen2(f, "links", H5P_DEFAULT);
        idx     = 0;
        LOG("iterate /links by name:");
        LOG("iterate %s next=%llu", RC(H5Literate2(g, H5_INDEX_NAME, H5_ITER_INC, &idx, iter_cb, NULL)),
            (unsigned long long)idx);
        idx = 0;
        LOG("iterate /links decreasing:");
        LOG("iterate %s", RC(H5Literate2(g, H5_INDEX_NAME, H5_ITER_DEC, &idx, iter_cb, NULL)));
        H5Gclose(g);
        LOG("ovisit:");
        LOG("ovisit %s", RC(H5Ovisit3(f, H5_INDEX_NAME, H5_ITER_INC, ovisit_cb, NULL, H5O_INFO_BASIC)));
        LOG("lvisit:");
        LOG("lvisit %s", RC(H5Lvisit2(f, H5_INDEX_NAME, H5_ITER_INC, lvisit_cb, NULL)));
    }
    LOG("close main %s", RC(H5Fclose(f)));

    /* the linking file read-only: the target follows its intent */
    f = H5Fopen(main_name, H5F_ACC_RDONLY, fapl);
    LOG("open main ro %s", RC(f));
    probe_dataset("default flags (main ro)", f, "links/ext_d", H5P_DEFAULT, 15);
    {
        hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
        H5Pset_elink_acc_flags(dapl, H5F_ACC_RDWR);
        probe_dataset("elink_acc_flags RDWR (main ro)", f, "links/ext_d", dapl, 16);
        H5Pclose(dapl);
    }
    LOG("close main %s", RC(H5Fclose(f)));

    /* the data written through the links reached the target files */
    {
        hid_t t = H5Fopen(target, H5F_ACC_RDONLY, fapl);
        probe_dataset("target after", t, "g/d", H5P_DEFAULT, 0);
        H5Fclose(t);
        t = H5Fopen(target2, H5F_ACC_RDONLY, fapl);
        probe_dataset("target2 after", t, "d", H5P_DEFAULT, 0);
        H5Fclose(t);
    }
    LOG("open files left: %zd", H5Fget_obj_count((hid_t)H5F_OBJ_ALL, H5F_OBJ_FILE));

    /* tessera only: a link into a native HDF5 file is refused clearly */
    if (is_tessera) {
        hid_t f2 = H5Fopen(main_name, H5F_ACC_RDWR, fapl);
        H5Lcreate_external(native_file_abs, "/g/d", f2, "to_native", H5P_DEFAULT, H5P_DEFAULT);
        char   all[4096] = "";
        hid_t  d;
        htri_t l;
        H5E_BEGIN_TRY
        {
            l = H5Lexists(f2, "to_native", H5P_DEFAULT);
            d = H5Dopen2(f2, "to_native", H5P_DEFAULT);
            H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_cb, all);
        }
        H5E_END_TRY
        check(l > 0, "link to a native file exists", label);
        check(d < 0, "opening through a link to a native file fails", label);
        check(strstr(all, "is a native HDF5 file") != NULL, "the error says the target is a native HDF5 file",
              label);
        printf("       error stack: %s\n", all);
        if (d >= 0)
            H5Dclose(d);
        H5Fclose(f2);
    }
}

int main(void)
{
    log_t native = {0}, tess = {0};
    hid_t fapl_native, fapl_tess, vol;
    if (make_fapls(&fapl_native, &fapl_tess, &vol) < 0)
        return 1;
    unsetenv("HDF5_EXT_PREFIX");
    g_log = &native;
    run("native", fapl_native, 0, NULL);
    char cwd[512], native_abs[700];
    if (!getcwd(cwd, sizeof cwd))
        strcpy(cwd, ".");
    snprintf(native_abs, sizeof native_abs, "%s/elinks_native/target.h5", cwd);
    g_log = &tess;
    run("tessera", fapl_tess, 1, native_abs);

    int line = 0, diffs = compare_logs(&native, &tess, "TEST_ELINKS_VERBOSE", &line);
    H5Pclose(fapl_native);
    H5Pclose(fapl_tess);
    H5VLclose(vol);
    free(native.buf);
    free(tess.buf);
    return diffs == 0 && g_failed == 0 && line > 40 ? 0 : 1;
}
