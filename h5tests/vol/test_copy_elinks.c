/* test_copy_elinks.c — H5Ocopy of groups holding external links, with and without
 * H5O_COPY_EXPAND_EXT_LINK_FLAG, tessera compared with native HDF5 (vol_test_log.h):
 *
 *   - without the flag the links are copied as links;
 *   - with it, a link whose file and object can be reached becomes a hard link to a copy
 *     of its target (a dataset with its data, a group with everything under it, external
 *     links inside that group expanded in turn); one whose file or object is missing
 *     stays an external link;
 *   - two links to one object: two copies, unless the application holds the target file
 *     open (native keys its copied-object map by the open file), then one shared copy;
 *   - the copies are independent of later writes to the target; copies into a second
 *     file too.
 *
 * Usage: test_copy_elinks [directory for the files]
 */
#include "vol_test_log.h"

#include <libgen.h>

static void names(const char *path, const char *suffix, char *full, size_t n, char *base, size_t bn)
{
    snprintf(full, n, "%s.%s", path, suffix);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", full);
    snprintf(base, bn, "%s", basename(tmp));
}

static void write_ints(hid_t loc, const char *name, int base)
{
    hsize_t dims[1] = {4};
    int     v[4]    = {base, base + 1, base + 2, base + 3};
    hid_t   sp      = H5Screate_simple(1, dims, NULL);
    hid_t   d       = H5Dcreate2(loc, name, H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("create %s %s", name, RC(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v)));
    H5Dclose(d);
    H5Sclose(sp);
}

static void read_ints(hid_t loc, const char *name)
{
    int   v[4] = {0, 0, 0, 0};
    hid_t d;
    H5E_BEGIN_TRY { d = H5Dopen2(loc, name, H5P_DEFAULT); }
    H5E_END_TRY
    herr_t rc = d >= 0 ? H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) : -1;
    LOG("read %s %s %d %d %d %d", name, RC(rc), v[0], v[1], v[2], v[3]);
    if (d >= 0)
        H5Dclose(d);
}

/* Every link of a group: its type, and for external links the object path and whether
 * the file name is the expected one (file names differ between the two runs). */
static herr_t link_cb(hid_t g, const char *name, const H5L_info2_t *info, void *op)
{
    (void)op;
    if (info->type == H5L_TYPE_EXTERNAL) {
        char        buf[4096];
        const char *file = "", *obj = "";
        unsigned    fl   = 0;
        if (H5Lget_val(g, name, buf, sizeof buf, H5P_DEFAULT) >= 0)
            H5Lunpack_elink_val(buf, info->u.val_size, &fl, &file, &obj);
        const char *dot = strrchr(file, '.');
        LOG("  link %s external obj=%s file=*%s", name, obj, dot ? dot : file);
    }
    else {
        H5O_info2_t oi;
        memset(&oi, 0, sizeof oi);
        herr_t rc;
        H5E_BEGIN_TRY { rc = H5Oget_info_by_name3(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT); }
        H5E_END_TRY
        LOG("  link %s type=%d obj=%s otype=%d rc=%u", name, (int)info->type, RC(rc), (int)oi.type, oi.rc);
    }
    return 0;
}

static void list_links(hid_t loc, const char *group)
{
    hid_t g = H5Gopen2(loc, group, H5P_DEFAULT);
    LOG("links of %s (%s):", group, RC(g));
    if (g >= 0) {
        H5Literate2(g, H5_INDEX_NAME, H5_ITER_INC, NULL, link_cb, NULL);
        H5Gclose(g);
    }
}

static void same_object(hid_t loc, const char *a, const char *b)
{
    H5O_info2_t ia, ib;
    herr_t      ra = H5Oget_info_by_name3(loc, a, &ia, H5O_INFO_BASIC, H5P_DEFAULT);
    herr_t      rb = H5Oget_info_by_name3(loc, b, &ib, H5O_INFO_BASIC, H5P_DEFAULT);
    int         cmp = 1;
    if (ra >= 0 && rb >= 0)
        H5Otoken_cmp(loc, &ia.token, &ib.token, &cmp);
    LOG("%s and %s: %s %s same=%d", a, b, RC(ra), RC(rb), cmp == 0);
}

static void do_copy(hid_t src, const char *from, hid_t dst, const char *to, unsigned flags)
{
    hid_t ocp = H5Pcreate(H5P_OBJECT_COPY);
    H5Pset_copy_object(ocp, flags);
    LOG("copy %s -> %s flags=%u %s", from, to, flags, RC(H5Ocopy(src, from, dst, to, ocp, H5P_DEFAULT)));
    H5Pclose(ocp);
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    (void)L;
    char tfull[4096], tbase[4096], ufull[4096], ubase[4096], dfull[4096], dbase[4096];
    names(path, "target", tfull, sizeof tfull, tbase, sizeof tbase);
    names(path, "leaf", ufull, sizeof ufull, ubase, sizeof ubase);
    names(path, "dst", dfull, sizeof dfull, dbase, sizeof dbase);

    /* The leaf file: one dataset.  The target file: a dataset, and a group holding a
     * dataset and an external link into the leaf file. */
    hid_t u = H5Fcreate(ufull, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    write_ints(u, "leaf", 500);
    H5Fclose(u);
    hid_t t = H5Fcreate(tfull, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    write_ints(t, "data", 100);
    hid_t tg = H5Gcreate2(t, "grp", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    write_ints(tg, "inner", 200);
    LOG("elink grp/deep %s", RC(H5Lcreate_external(ubase, "/leaf", tg, "deep", H5P_DEFAULT, H5P_DEFAULT)));
    H5Gclose(tg);
    H5Fclose(t);

    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t s = H5Gcreate2(f, "src", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    write_ints(s, "local", 1);
    LOG("elink e1 %s", RC(H5Lcreate_external(tbase, "/data", s, "e1", H5P_DEFAULT, H5P_DEFAULT)));
    LOG("elink e2 %s", RC(H5Lcreate_external(tbase, "/data", s, "e2", H5P_DEFAULT, H5P_DEFAULT)));
    LOG("elink eg %s", RC(H5Lcreate_external(tbase, "/grp", s, "eg", H5P_DEFAULT, H5P_DEFAULT)));
    LOG("elink no_file %s", RC(H5Lcreate_external("no_such_file.h5", "/x", s, "no_file", H5P_DEFAULT, H5P_DEFAULT)));
    LOG("elink no_obj %s", RC(H5Lcreate_external(tbase, "/nope", s, "no_obj", H5P_DEFAULT, H5P_DEFAULT)));
    LOG("soft s1 %s", RC(H5Lcreate_soft("/src/local", s, "s1", H5P_DEFAULT, H5P_DEFAULT)));
    H5Gclose(s);

    /* Without the flag: links stay links (and still lead to the target). */
    do_copy(f, "src", f, "plain", 0);
    list_links(f, "plain");
    read_ints(f, "plain/e1");

    /* With it: hard links to copies. */
    do_copy(f, "src", f, "expanded", H5O_COPY_EXPAND_EXT_LINK_FLAG);
    list_links(f, "expanded");
    list_links(f, "expanded/eg");
    read_ints(f, "expanded/e1");
    read_ints(f, "expanded/e2");
    read_ints(f, "expanded/eg/inner");
    read_ints(f, "expanded/eg/deep");
    same_object(f, "expanded/e1", "expanded/e2");

    /* Soft and external links expanded together. */
    do_copy(f, "src", f, "both", H5O_COPY_EXPAND_EXT_LINK_FLAG | H5O_COPY_EXPAND_SOFT_LINK_FLAG);
    list_links(f, "both");
    same_object(f, "both/s1", "both/local");

    /* The target file held open by the application read-only: the traversal (with the
     * linking file's read-write intent) cannot open it, so the links stay links. */
    t = H5Fopen(tfull, H5F_ACC_RDONLY, fapl);
    LOG("hold target read-only %s", RC(t));
    do_copy(f, "src", f, "held_ro", H5O_COPY_EXPAND_EXT_LINK_FLAG);
    list_links(f, "held_ro");
    H5Fclose(t);

    /* Held open read-write: one copy for both links. */
    t = H5Fopen(tfull, H5F_ACC_RDWR, fapl);
    LOG("hold target %s", RC(t));
    do_copy(f, "src", f, "held", H5O_COPY_EXPAND_EXT_LINK_FLAG);
    list_links(f, "held");
    same_object(f, "held/e1", "held/e2");
    read_ints(f, "held/e2");
    H5Fclose(t);

    /* Copying one external link by name follows it (the target is copied either way). */
    do_copy(f, "src/e1", f, "one", 0);
    read_ints(f, "one");

    /* The copies do not follow later changes of the target. */
    t = H5Fopen(tfull, H5F_ACC_RDWR, fapl);
    {
        int   v[4] = {-1, -2, -3, -4};
        hid_t d    = H5Dopen2(t, "data", H5P_DEFAULT);
        LOG("rewrite target %s", RC(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v)));
        H5Dclose(d);
    }
    H5Fclose(t);
    read_ints(f, "expanded/e1");
    read_ints(f, "held/e1");
    read_ints(f, "plain/e1");

    /* Into a second file. */
    hid_t d2 = H5Fcreate(dfull, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    do_copy(f, "src", d2, "copied", H5O_COPY_EXPAND_EXT_LINK_FLAG);
    list_links(d2, "copied");
    read_ints(d2, "copied/e1");
    read_ints(d2, "copied/eg/deep");
    H5Fclose(d2);
    H5Fclose(f);

    /* After reopening. */
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    list_links(f, "expanded");
    read_ints(f, "expanded/eg/inner");
    H5Fclose(f);
}

int main(int argc, char **argv)
{
    return run_compared(argc > 1 ? argv[1] : ".", "test_copy_elinks", run, 60, NULL);
}
