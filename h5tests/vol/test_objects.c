/* test_objects — files, groups, links and objects on tessera compared with native HDF5.
 *
 * One sequence of HDF5 calls runs twice in the same process: on a native HDF5 file and on
 * a tessera container (selected per file with H5Pset_vol on the fapl; native is the
 * default connector, HDF5_PLUGIN_PATH must point at the plugin).  Every observable result
 * (return codes, names, iteration orders, link and object info, counts) is written to a
 * log, and the two logs must be identical.  Values that legitimately differ between
 * connectors (tokens, file numbers, file names) are logged as relations: "token equals
 * the token of /a", "name equals the path passed to H5Fcreate".
 *
 * A few checks concern only the connector in use and are asserted per run: the tessera
 * run really uses tessera, a missing file reports "errno = 2" innermost on the error
 * stack, token strings round-trip.
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

/* ---------------------------------------------------------------- error stack */
typedef struct {
    char inner[1024]; /* innermost (first upward) record's description */
    int  seen;
} err_walk_t;

static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *ud)
{
    err_walk_t *w = ud;
    (void)n;
    if (!w->seen && e->desc) {
        snprintf(w->inner, sizeof w->inner, "%s", e->desc);
        w->seen = 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- helpers */
static H5O_token_t g_tok_a, g_tok_root;
static hid_t       g_file; /* for token comparisons in callbacks */

static const char *tok_rel(const H5O_token_t *t)
{
    int c = 1;
    if (H5Otoken_cmp(g_file, t, &g_tok_a, &c) >= 0 && c == 0)
        return "=/a";
    if (H5Otoken_cmp(g_file, t, &g_tok_root, &c) >= 0 && c == 0)
        return "=/";
    return "other";
}

static void log_linfo(const char *prefix, const char *name, const H5L_info2_t *li)
{
    if (li->type == H5L_TYPE_HARD)
        LOG("%s %s type=hard cv=%d co=%lld cset=%d tok=%s", prefix, name, (int)li->corder_valid,
            (long long)(li->corder_valid ? li->corder : -1), (int)li->cset, tok_rel(&li->u.token));
    else
        LOG("%s %s type=%d cv=%d co=%lld cset=%d val_size=%zu", prefix, name, (int)li->type,
            (int)li->corder_valid, (long long)(li->corder_valid ? li->corder : -1), (int)li->cset,
            li->u.val_size);
}

typedef struct {
    int stop_at; /* return 1 at this call (1-based), 0: never */
    int calls;
} iter_ud_t;

static herr_t iter_cb(hid_t g, const char *name, const H5L_info2_t *li, void *ud)
{
    iter_ud_t *u = ud;
    u->calls++;
    log_linfo(H5Iget_type(g) == H5I_GROUP ? "  link" : "  link(bad-id)", name, li);
    return (u->stop_at && u->calls == u->stop_at) ? 1 : 0;
}

static herr_t ovisit_cb(hid_t o, const char *name, const H5O_info2_t *oi, void *ud)
{
    (void)ud;
    LOG("  obj %s type=%d rc=%u nattrs=%llu tok=%s idvalid=%d", name, (int)oi->type, oi->rc,
        (unsigned long long)oi->num_attrs, tok_rel(&oi->token), H5Iis_valid(o) > 0);
    return 0;
}

static void iterate(hid_t loc, const char *grp, H5_index_t idx, H5_iter_order_t order, hsize_t start, int stop)
{
    iter_ud_t u   = {stop, 0};
    hsize_t   i   = start;
    herr_t    ret = H5Literate_by_name2(loc, grp, idx, order, &i, iter_cb, &u, H5P_DEFAULT);
    LOG("iterate %s idx=%d order=%d start=%llu -> ret=%d calls=%d next=%llu", grp, (int)idx, (int)order,
        (unsigned long long)start, (int)ret, u.calls, (unsigned long long)i);
}

static void visit(hid_t loc, H5_index_t idx, H5_iter_order_t order)
{
    iter_ud_t u   = {0, 0};
    herr_t    ret = H5Lvisit2(loc, idx, order, iter_cb, &u);
    LOG("lvisit idx=%d order=%d -> ret=%d calls=%d", (int)idx, (int)order, (int)ret, u.calls);
    ret = H5Ovisit3(loc, idx, order, ovisit_cb, NULL, H5O_INFO_BASIC | H5O_INFO_NUM_ATTRS);
    LOG("ovisit idx=%d order=%d -> ret=%d", (int)idx, (int)order, (int)ret);
}

static void exists(hid_t loc, const char *name)
{
    htri_t e = H5Lexists(loc, name, H5P_DEFAULT);
    LOG("exists %s -> %d", name, e < 0 ? -1 : (int)e);
}

static void ginfo(hid_t loc, const char *name)
{
    H5G_info_t gi;
    herr_t     r = H5Gget_info_by_name(loc, name, &gi, H5P_DEFAULT);
    if (r < 0)
        LOG("ginfo %s -> fail", name);
    else
        LOG("ginfo %s storage=%d nlinks=%llu max_corder=%lld mounted=%d", name, (int)gi.storage_type,
            (unsigned long long)gi.nlinks, (long long)gi.max_corder, (int)gi.mounted);
}

static void oinfo(hid_t loc, const char *name)
{
    H5O_info2_t oi;
    if (H5Oget_info_by_name3(loc, name, &oi, H5O_INFO_ALL, H5P_DEFAULT) < 0)
        LOG("oinfo %s -> fail", name);
    else
        LOG("oinfo %s type=%d rc=%u nattrs=%llu tok=%s", name, (int)oi.type, oi.rc,
            (unsigned long long)oi.num_attrs, tok_rel(&oi.token));
}

/* ---------------------------------------------------------------- the sequence */
static void run(const char *label, const char *path, hid_t fapl, int is_tessera)
{
    char name[256];
    H5E_BEGIN_TRY { H5Fdelete(path, fapl); }
    H5E_END_TRY
    unlink(path);

    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    LOG("create %s", RC(f));
    if (f < 0) {
        check(0, "H5Fcreate", label);
        return;
    }
    g_file = f;
    {
        hid_t vol = H5I_INVALID_HID;
        char  vname[64] = "";
        H5Pget_vol_id(fapl, &vol);
        H5VLget_connector_name(f, vname, sizeof vname);
        check(strcmp(vname, is_tessera ? "tessera" : "native") == 0, "file uses the intended connector", label);
        H5VLclose(vol);
    }
    H5E_BEGIN_TRY { H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, fapl) < 0 ? LOG("excl-create-existing fail") : LOG("excl-create-existing ok"); }
    H5E_END_TRY

    /* groups with and without intermediate creation */
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t g = H5Gcreate2(f, "a/b/c", lcpl, H5P_DEFAULT, H5P_DEFAULT);
    LOG("gcreate a/b/c intermediate %s", RC(g));
    H5Gclose(g);
    H5E_BEGIN_TRY { g = H5Gcreate2(f, "x/y", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT); }
    H5E_END_TRY
    LOG("gcreate x/y no-intermediate %s", RC(g));
    H5E_BEGIN_TRY { g = H5Gcreate2(f, "a", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT); }
    H5E_END_TRY
    LOG("gcreate existing a %s", RC(g));

    H5O_info2_t oi;
    H5Oget_info_by_name3(f, "/a", &oi, H5O_INFO_BASIC, H5P_DEFAULT);
    g_tok_a = oi.token;
    H5Oget_info3(f, &oi, H5O_INFO_BASIC);
    g_tok_root = oi.token;

    /* a creation-ordered group with links made out of name order */
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    hid_t co = H5Gcreate2(f, "co", H5P_DEFAULT, gcpl, H5P_DEFAULT);
    LOG("gcreate co %s", RC(co));
    g = H5Gcreate2(co, "zeta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g);
    LOG("soft alpha %s", RC(H5Lcreate_soft("/a/b", co, "alpha", H5P_DEFAULT, H5P_DEFAULT)));
    LOG("hard mid %s", RC(H5Lcreate_hard(f, "/a", co, "mid", H5P_DEFAULT, H5P_DEFAULT)));
    LOG("ext ext %s", RC(H5Lcreate_external("other.h5", "/foo/bar", co, "ext", H5P_DEFAULT, H5P_DEFAULT)));
    LOG("soft dangling %s", RC(H5Lcreate_soft("/nowhere", co, "dangling", H5P_DEFAULT, H5P_DEFAULT)));
    LOG("hard cycle %s", RC(H5Lcreate_hard(f, "/a", f, "a/b/c/up", H5P_DEFAULT, H5P_DEFAULT)));
    LOG("hard same_loc %s", RC(H5Lcreate_hard(co, "zeta", H5L_SAME_LOC, "zeta2", H5P_DEFAULT, H5P_DEFAULT)));

    /* exists */
    exists(f, "/a");
    exists(f, "/a/b/c");
    exists(f, "/a/nope");
    exists(f, "co/alpha");
    exists(f, "co/dangling");
    exists(f, "co/alpha/c");
    H5E_BEGIN_TRY { exists(f, "/nope/x"); }
    H5E_END_TRY

    /* iteration: by name and by creation order, both directions, from an index */
    iterate(f, "co", H5_INDEX_NAME, H5_ITER_INC, 0, 0);
    iterate(f, "co", H5_INDEX_NAME, H5_ITER_DEC, 0, 0);
    iterate(f, "co", H5_INDEX_CRT_ORDER, H5_ITER_INC, 0, 0);
    iterate(f, "co", H5_INDEX_CRT_ORDER, H5_ITER_DEC, 0, 0);
    iterate(f, "co", H5_INDEX_CRT_ORDER, H5_ITER_INC, 2, 0);
    iterate(f, "co", H5_INDEX_NAME, H5_ITER_INC, 1, 2);
    H5E_BEGIN_TRY
    {
        iterate(f, "co", H5_INDEX_NAME, H5_ITER_INC, 99, 0);
        iterate(f, "/", H5_INDEX_CRT_ORDER, H5_ITER_INC, 0, 0); /* root does not track */
    }
    H5E_END_TRY
    iterate(f, "/", H5_INDEX_NAME, H5_ITER_INC, 0, 0);
    visit(f, H5_INDEX_NAME, H5_ITER_INC);
    visit(f, H5_INDEX_NAME, H5_ITER_DEC);
    visit(f, H5_INDEX_CRT_ORDER, H5_ITER_INC);
    visit(co, H5_INDEX_CRT_ORDER, H5_ITER_DEC);

    /* link info, names by index, values */
    H5L_info2_t li;
    const char *lnames[] = {"co/alpha", "co/mid", "co/ext", "co/zeta", "a", "a/b/c/up"};
    for (size_t i = 0; i < sizeof lnames / sizeof *lnames; i++) {
        if (H5Lget_info2(f, lnames[i], &li, H5P_DEFAULT) < 0)
            LOG("linfo %s fail", lnames[i]);
        else
            log_linfo("linfo", lnames[i], &li);
    }
    for (int idx = 0; idx < 2; idx++)
        for (int ord = 0; ord < 2; ord++)
            for (hsize_t n = 0; n < 6; n++) {
                ssize_t len;
                H5E_BEGIN_TRY
                {
                    len = H5Lget_name_by_idx(f, "co", (H5_index_t)idx, (H5_iter_order_t)ord, n, name, sizeof name,
                                             H5P_DEFAULT);
                }
                H5E_END_TRY
                LOG("name_by_idx co %d %d %llu -> %zd %s", idx, ord, (unsigned long long)n, len,
                    len >= 0 ? name : "");
            }
    H5E_BEGIN_TRY
    {
        ssize_t len = H5Lget_name_by_idx(f, "/", H5_INDEX_CRT_ORDER, H5_ITER_INC, 0, name, sizeof name, H5P_DEFAULT);
        LOG("name_by_idx root crt -> %s", len >= 0 ? "ok" : "fail");
    }
    H5E_END_TRY
    {
        char tiny[4];
        ssize_t len = H5Lget_name_by_idx(f, "co", H5_INDEX_NAME, H5_ITER_INC, 0, tiny, sizeof tiny, H5P_DEFAULT);
        LOG("name_by_idx truncated -> %zd '%s'", len, tiny);
    }
    memset(name, 0, sizeof name);
    LOG("val soft %s '%s'", RC(H5Lget_val(f, "co/alpha", name, sizeof name, H5P_DEFAULT)), name);
    {
        char        buf[256];
        unsigned    flags = 99;
        const char *fn = NULL, *on = NULL;
        H5L_info2_t ei;
        herr_t      r  = H5Lget_info2(f, "co/ext", &ei, H5P_DEFAULT);
        r              = r >= 0 ? H5Lget_val(f, "co/ext", buf, sizeof buf, H5P_DEFAULT) : -1;
        herr_t      r2 = r >= 0 ? H5Lunpack_elink_val(buf, ei.u.val_size, &flags, &fn, &on) : -1;
        LOG("val ext %s unpack %s flags=%u file=%s obj=%s", RC(r), RC(r2), flags, fn ? fn : "", on ? on : "");
    }
    H5E_BEGIN_TRY { LOG("val hard %s", RC(H5Lget_val(f, "co/mid", name, sizeof name, H5P_DEFAULT))); }
    H5E_END_TRY

    /* groups info */
    ginfo(f, "/");
    ginfo(f, "co");
    ginfo(f, "a/b");
    H5E_BEGIN_TRY { ginfo(f, "nope"); }
    H5E_END_TRY
    {
        H5G_info_t gi;
        herr_t r = H5Gget_info_by_idx(f, "co", H5_INDEX_NAME, H5_ITER_INC, 3, &gi, H5P_DEFAULT); /* mid -> /a */
        LOG("ginfo_by_idx co name 3 %s nlinks=%llu", RC(r), r >= 0 ? (unsigned long long)gi.nlinks : 0ULL);
        hid_t p = H5Gget_create_plist(co);
        unsigned crt = 0;
        H5Pget_link_creation_order(p, &crt);
        LOG("gcpl co crt_order=%u", crt);
        H5Pclose(p);
    }

    /* object info, open by index / token, names */
    oinfo(f, "/");
    oinfo(f, "a");
    oinfo(f, "co/zeta");
    oinfo(f, "co/alpha");
    H5E_BEGIN_TRY { oinfo(f, "co/dangling"); }
    H5E_END_TRY
    {
        hid_t o = H5Oopen_by_idx(f, "co", H5_INDEX_CRT_ORDER, H5_ITER_INC, 0, H5P_DEFAULT);
        H5O_info2_t i2;
        H5Oget_info3(o, &i2, H5O_INFO_BASIC);
        ssize_t n = H5Iget_name(o, name, sizeof name);
        LOG("open_by_idx crt 0 %s type=%d idtype=%d name=%s", RC(o), (int)i2.type, (int)H5Iget_type(o),
            n >= 0 ? name : "");
        H5Oclose(o);
        o = H5Oopen_by_token(f, g_tok_a);
        n = H5Iget_name(o, name, sizeof name);
        LOG("open_by_token %s idtype=%d name=%s", RC(o), (int)H5Iget_type(o), n >= 0 ? name : "");
        H5Oclose(o);
        H5E_BEGIN_TRY
        {
            o = H5Oopen_by_idx(f, "/", H5_INDEX_CRT_ORDER, H5_ITER_INC, 0, H5P_DEFAULT);
            LOG("open_by_idx root crt %s", RC(o));
            if (o >= 0)
                H5Oclose(o);
        }
        H5E_END_TRY
        H5O_type_t t;
        LOG("exists_by_name co/alpha %d", (int)H5Oexists_by_name(f, "co/alpha", H5P_DEFAULT));
        LOG("exists_by_name co/dangling %d", (int)H5Oexists_by_name(f, "co/dangling", H5P_DEFAULT));
        H5E_BEGIN_TRY { LOG("exists_by_name nope/x %d", (int)H5Oexists_by_name(f, "nope/x", H5P_DEFAULT) < 0 ? -1 : 0); }
        H5E_END_TRY
        hid_t zg = H5Gopen2(f, "co/zeta", H5P_DEFAULT);
        H5Oget_info3(zg, &i2, H5O_INFO_BASIC);
        t = i2.type;
        LOG("zeta type=%d rc=%u", (int)t, i2.rc);
        LOG("incr %s", RC(H5Oincr_refcount(zg)));
        H5Oget_info3(zg, &i2, H5O_INFO_BASIC);
        LOG("zeta rc after incr=%u", i2.rc);
        LOG("decr %s", RC(H5Odecr_refcount(zg)));
        H5Oget_info3(zg, &i2, H5O_INFO_BASIC);
        LOG("zeta rc after decr=%u", i2.rc);
        LOG("set comment %s", RC(H5Oset_comment(zg, "hello comment")));
        memset(name, 0, sizeof name);
        ssize_t cl = H5Oget_comment(zg, name, sizeof name);
        LOG("get comment %zd '%s'", cl, name);
        H5Gclose(zg);
    }

    /* tokens as strings (connector-specific text, so checked, not logged) */
    {
        char       *s = NULL;
        H5O_token_t back;
        int         c = 1;
        herr_t      r1 = H5Otoken_to_str(f, &g_tok_a, &s);
        herr_t      r2 = r1 >= 0 ? H5Otoken_from_str(f, s, &back) : -1;
        if (r2 >= 0)
            H5Otoken_cmp(f, &back, &g_tok_a, &c);
        check(r1 >= 0 && r2 >= 0 && c == 0, "token to string and back", label);
        H5Otoken_cmp(f, &g_tok_root, &g_tok_a, &c);
        LOG("token cmp root vs a nonzero=%d", c != 0);
        H5free_memory(s);
    }

    /* H5Gget_objinfo (deprecated, used by h5py) */
    {
        H5G_stat_t sb;
        herr_t     r = H5Gget_objinfo(f, "co/zeta", 1, &sb);
        LOG("objinfo zeta %s type=%d nlink=%u", RC(r), (int)sb.type, sb.nlink);
        r = H5Gget_objinfo(f, "co/alpha", 0, &sb);
        LOG("objinfo alpha nofollow %s type=%d linklen=%zu", RC(r), (int)sb.type, sb.linklen);
        H5G_stat_t s2;
        H5Gget_objinfo(f, "co/mid", 1, &s2);
        H5Gget_objinfo(f, "/a", 1, &sb);
        LOG("objinfo mid==a %d", sb.objno[0] == s2.objno[0] && sb.fileno[0] == s2.fileno[0]);
    }

    /* delete, move, copy */
    LOG("delete co/mid %s", RC(H5Ldelete(f, "co/mid", H5P_DEFAULT)));
    oinfo(f, "a");
    LOG("delete_by_idx co crt inc 0 %s", RC(H5Ldelete_by_idx(f, "co", H5_INDEX_CRT_ORDER, H5_ITER_INC, 0, H5P_DEFAULT)));
    LOG("move co/zeta2 -> a/zeta3 %s", RC(H5Lmove(f, "co/zeta2", f, "a/zeta3", H5P_DEFAULT, H5P_DEFAULT)));
    LOG("move co/alpha -> co/omega %s", RC(H5Lmove(co, "alpha", co, "omega", H5P_DEFAULT, H5P_DEFAULT)));
    LOG("copy co/omega -> soft_copy %s", RC(H5Lcopy(f, "co/omega", f, "soft_copy", H5P_DEFAULT, H5P_DEFAULT)));
    LOG("copy a -> a_hard %s", RC(H5Lcopy(f, "a", f, "a_hard", H5P_DEFAULT, H5P_DEFAULT)));
    H5E_BEGIN_TRY { LOG("move missing %s", RC(H5Lmove(f, "nope", f, "nope2", H5P_DEFAULT, H5P_DEFAULT))); }
    H5E_END_TRY
    H5E_BEGIN_TRY { LOG("delete missing %s", RC(H5Ldelete(f, "nope", H5P_DEFAULT))); }
    H5E_END_TRY
    {   /* an open group keeps living without links and can be linked again */
        hid_t tg = H5Gcreate2(f, "tmpg", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        LOG("unlink open group %s", RC(H5Ldelete(f, "tmpg", H5P_DEFAULT)));
        LOG("relink open group %s", RC(H5Olink(tg, f, "relinked", H5P_DEFAULT, H5P_DEFAULT)));
        H5Gclose(tg);
        oinfo(f, "relinked");
        LOG("delete relinked %s", RC(H5Ldelete(f, "relinked", H5P_DEFAULT)));
    }
    iterate(f, "co", H5_INDEX_CRT_ORDER, H5_ITER_INC, 0, 0);
    oinfo(f, "a");
    LOG("ocopy a -> a_copy %s", RC(H5Ocopy(f, "a", f, "a_copy", H5P_DEFAULT, H5P_DEFAULT)));
    visit(f, H5_INDEX_NAME, H5_ITER_INC);

    /* a dataset among the objects: object calls must hand out dataset IDs */
    {
        hsize_t dims[1] = {4};
        hid_t   sp      = H5Screate_simple(1, dims, NULL);
        hid_t   d       = H5Dcreate2(f, "co/dset", H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        LOG("dcreate co/dset %s", RC(d));
        H5Dclose(d);
        H5Sclose(sp);
        oinfo(f, "co/dset");
        hid_t o = H5Oopen(f, "co/dset", H5P_DEFAULT);
        ssize_t n = H5Iget_name(o, name, sizeof name);
        LOG("oopen dset %s idtype=%d name=%s", RC(o), (int)H5Iget_type(o), n >= 0 ? name : "");
        H5Oclose(o);
        int vals[4] = {1, 2, 3, 4}, back[4] = {0, 0, 0, 0};
        d = H5Dopen2(f, "co/dset", H5P_DEFAULT);
        H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals);
        H5Dclose(d);
        LOG("ocopy dset %s", RC(H5Ocopy(f, "co/dset", f, "dset_copy", H5P_DEFAULT, H5P_DEFAULT)));
        vals[0] = 99; /* the copy must not see later writes to the original */
        d = H5Dopen2(f, "co/dset", H5P_DEFAULT);
        H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals);
        H5Dclose(d);
        d = H5Dopen2(f, "dset_copy", H5P_DEFAULT);
        herr_t rr = H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back);
        LOG("read copy %s %d %d %d %d", RC(rr), back[0], back[1], back[2], back[3]);
        H5Dclose(d);
        LOG("delete dset_copy %s", RC(H5Ldelete(f, "dset_copy", H5P_DEFAULT)));
        LOG("ovisit co -> %d", (int)H5Ovisit3(co, H5_INDEX_NAME, H5_ITER_INC, ovisit_cb, NULL, H5O_INFO_BASIC));
    }

    /* file queries */
    {
        hid_t g1 = H5Gopen2(f, "a", H5P_DEFAULT);
        hid_t g2 = H5Gopen2(f, "a/b", H5P_DEFAULT);
        LOG("obj_count all=%zd groups=%zd files=%zd", H5Fget_obj_count(f, H5F_OBJ_ALL),
            H5Fget_obj_count(f, H5F_OBJ_GROUP), H5Fget_obj_count(f, H5F_OBJ_FILE));
        hid_t   ids[16];
        ssize_t n = H5Fget_obj_ids(f, H5F_OBJ_GROUP, 16, ids);
        int     found1 = 0, found2 = 0, foundco = 0;
        for (ssize_t i = 0; i < n; i++) {
            found1 |= ids[i] == g1;
            found2 |= ids[i] == g2;
            foundco |= ids[i] == co;
        }
        LOG("obj_ids groups n=%zd has_g1=%d has_g2=%d has_co=%d", n, found1, found2, foundco);
        n = H5Fget_name(g2, name, sizeof name);
        LOG("fget_name(group) matches=%d", n >= 0 && strcmp(name, path) == 0);
        unsigned intent = 99;
        H5Fget_intent(f, &intent);
        LOG("intent=%u", intent);
        hid_t fid = H5Iget_file_id(g2), fid2 = H5Iget_file_id(g1);
        LOG("iget_file_id same=%d valid=%d", fid == fid2, H5Iis_valid(fid) > 0);
        H5Fclose(fid);
        H5Fclose(fid2);
        hid_t f2 = H5Freopen(f);
        LOG("reopen %s files=%zd", RC(f2), H5Fget_obj_count(f, H5F_OBJ_FILE));
        unsigned long n1 = 0, n2 = 1;
        H5Fget_fileno(f, &n1);
        H5Fget_fileno(f2, &n2);
        LOG("fileno equal=%d", n1 == n2);
        hid_t fa = H5Fget_access_plist(f2), fc = H5Fget_create_plist(f2);
        LOG("plists %s %s", RC(fa), RC(fc));
        H5Pclose(fa);
        H5Pclose(fc);
        H5Fclose(f2);
        LOG("flush %s", RC(H5Fflush(f, H5F_SCOPE_GLOBAL)));
        H5Gclose(g1);
        H5Gclose(g2);
    }

    H5Gclose(co);
    H5Pclose(gcpl);
    H5Pclose(lcpl);
    /* close the file while a group is still open: the group must keep working */
    g = H5Gopen2(f, "a/b", H5P_DEFAULT);
    LOG("close with open group %s", RC(H5Fclose(f)));
    {
        H5G_info_t gi;
        LOG("group after file close %s", RC(H5Gget_info(g, &gi)));
    }
    H5Gclose(g);

    /* read-only */
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    g_file = f;
    LOG("open ro %s", RC(f));
    {
        unsigned intent = 99;
        H5Fget_intent(f, &intent);
        LOG("intent ro=%u", intent);
        H5E_BEGIN_TRY
        {
            g = H5Gcreate2(f, "new", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            LOG("ro gcreate %s", RC(g));
            LOG("ro ldelete %s", RC(H5Ldelete(f, "a", H5P_DEFAULT)));
            LOG("ro soft %s", RC(H5Lcreate_soft("/a", f, "s2", H5P_DEFAULT, H5P_DEFAULT)));
        }
        H5E_END_TRY
        iterate(f, "/", H5_INDEX_NAME, H5_ITER_INC, 0, 0);
        H5Fclose(f);
    }

    /* accessibility, deletion, missing file */
    LOG("accessible %d", (int)H5Fis_accessible(path, fapl));
    {
        FILE *fp = fopen("not_hdf5.txt", "w");
        fputs("plain text\n", fp);
        fclose(fp);
        htri_t a;
        H5E_BEGIN_TRY { a = H5Fis_accessible("not_hdf5.txt", fapl); }
        H5E_END_TRY
        LOG("accessible(text) %d", (int)(a > 0));
        unlink("not_hdf5.txt");
    }
    LOG("delete %s", RC(H5Fdelete(path, fapl)));
    {
        struct stat st;
        LOG("gone after delete %d", stat(path, &st) != 0);
    }
    {
        hid_t      bad;
        err_walk_t w = {"", 0};
        H5E_BEGIN_TRY
        {
            bad = H5Fopen("no_such_file.h5", H5F_ACC_RDONLY, fapl);
            H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, &w);
        }
        H5E_END_TRY
        LOG("open missing %s", RC(bad));
        check(strstr(w.inner, "errno = 2") != NULL, "missing file: innermost error has \"errno = 2\"", label);
        printf("       innermost: %s\n", w.inner);
    }
}

int main(void)
{
    log_t native = {0}, tess = {0};
    hid_t fapl_native, fapl_tess, vol;
    if (make_fapls(&fapl_native, &fapl_tess, &vol) < 0)
        return 1;
    printf("native run:\n");
    g_log = &native;
    run("native", "test_objects_native.h5", fapl_native, 0);
    printf("tessera run:\n");
    g_log = &tess;
    run("tessera", "test_objects_tessera.h5", fapl_tess, 1);

    int line = 0, diffs = compare_logs(&native, &tess, "TEST_OBJECTS_VERBOSE", &line);
    H5Pclose(fapl_native);
    H5Pclose(fapl_tess);
    H5VLclose(vol);
    free(native.buf);
    free(tess.buf);
    return diffs == 0 && g_failed == 0 ? 0 : 1;
}
