/* test_references.c — references on a tessera container compared with a native file
 * (vol_test_log.h): 1.12-style object, region and attribute references (H5R_ref_t) in
 * datasets and attributes, written in one file session and read in another; external
 * references into a second file; the H5R query API on what was read; old-style object
 * and dataset-region references (hobj_ref_t, hdset_reg_ref_t, through the compat
 * library), also read as H5T_STD_REF, as h5dump reads them.  References inside compounds:
 * test_nested_refs.c.
 *
 * Usage: test_references [directory for the files]
 */
#include "vol_test_log.h"

static void describe(const char *what, H5R_ref_t *r)
{
    H5R_type_t t = H5Rget_type(r);
    if (t == H5R_BADTYPE) {
        LOG("%s: null", what);
        return;
    }
    H5O_type_t ot  = H5O_TYPE_UNKNOWN;
    herr_t     rc  = H5Rget_obj_type3(r, H5P_DEFAULT, &ot);
    char       name[128] = "", attr[64] = "", file[4096] = "";
    H5Rget_obj_name(r, H5P_DEFAULT, name, sizeof name);
    if (t == H5R_ATTR)
        H5Rget_attr_name(r, attr, sizeof attr);
    H5Rget_file_name(r, file, sizeof file);
    const char *base = strrchr(file, '/');
    base             = base ? base + 1 : file;
    /* the file names differ by connector (native/tessera in the name): log the role */
    LOG("%s: type=%d obj_type rc=%s %d name=%s attr=%s file=%s", what, (int)t, RC(rc), (int)ot, name, attr,
        strstr(base, "ext") ? "external" : "self");
    if (t == H5R_DATASET_REGION2) {
        hid_t sp = H5Ropen_region(r, H5P_DEFAULT, H5P_DEFAULT);
        hsize_t lo[2] = {0}, hi[2] = {0};
        H5Sget_select_bounds(sp, lo, hi);
        LOG("%s: region npoints=%lld type=%d bounds=%llu,%llu-%llu,%llu", what, (long long)H5Sget_select_npoints(sp),
            (int)H5Sget_select_type(sp), (unsigned long long)lo[0], (unsigned long long)lo[1],
            (unsigned long long)hi[0], (unsigned long long)hi[1]);
        H5Sclose(sp);
    }
    if (t == H5R_ATTR) {
        hid_t a = H5Ropen_attr(r, H5P_DEFAULT, H5P_DEFAULT);
        int   v = -1;
        H5Aread(a, H5T_NATIVE_INT, &v);
        LOG("%s: attribute value %d", what, v);
        H5Aclose(a);
    }
    hid_t o = H5Ropen_object(r, H5P_DEFAULT, H5P_DEFAULT);
    char  oname[128] = "";
    H5Iget_name(o, oname, sizeof oname);
    LOG("%s: opened %s as %s", what, RC(o), oname);
    if (o >= 0)
        H5Oclose(o);
}

static void make(const char *path, const char *ext, hid_t fapl)
{
    hid_t   e  = H5Fcreate(ext, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t   eg = H5Gcreate2(e, "far", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(eg);
    eg = H5Gcreate2(e, "far/away", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(eg);
    hid_t   f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims[2] = {6, 8}, n = 7;
    hid_t   s2 = H5Screate_simple(2, dims, NULL), s1 = H5Screate_simple(1, &n, NULL);
    hid_t   g  = H5Gcreate2(f, "G1", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t   d  = H5Dcreate2(f, "data", H5T_NATIVE_INT, s2, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t   sc = H5Screate(H5S_SCALAR);
    hid_t   a  = H5Acreate2(d, "units", H5T_NATIVE_INT, sc, H5P_DEFAULT, H5P_DEFAULT);
    int     v  = 42;
    H5Awrite(a, H5T_NATIVE_INT, &v);
    H5Aclose(a);
    H5R_ref_t refs[7];
    memset(refs, 0, sizeof refs);
    LOG("create object %s", RC(H5Rcreate_object(f, "G1", H5P_DEFAULT, &refs[0])));
    LOG("create object %s", RC(H5Rcreate_object(f, "data", H5P_DEFAULT, &refs[1])));
    hid_t   sel = H5Scopy(s2);
    hsize_t start[2] = {1, 2}, count[2] = {3, 4};
    H5Sselect_hyperslab(sel, H5S_SELECT_SET, start, NULL, count, NULL);
    LOG("create region %s", RC(H5Rcreate_region(f, "data", sel, H5P_DEFAULT, &refs[2])));
    hsize_t pts[6] = {0, 0, 5, 7, 2, 3};
    H5Sselect_elements(sel, H5S_SELECT_SET, 3, pts);
    LOG("create region points %s", RC(H5Rcreate_region(f, "data", sel, H5P_DEFAULT, &refs[3])));
    LOG("create attr %s", RC(H5Rcreate_attr(f, "data", "units", H5P_DEFAULT, &refs[4])));
    LOG("create external %s", RC(H5Rcreate_object(e, "far/away", H5P_DEFAULT, &refs[5])));
    /* refs[6] stays a null reference */
    LOG("equal 0,0 copy %d", (int)({
            H5R_ref_t c;
            H5Rcopy(&refs[0], &c);
            htri_t q = H5Requal(&refs[0], &c);
            H5Rdestroy(&c);
            q;
        }));
    hid_t rd = H5Dcreate2(f, "refs", H5T_STD_REF, s1, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("write refs %s", RC(H5Dwrite(rd, H5T_STD_REF, H5S_ALL, H5S_ALL, H5P_DEFAULT, refs)));
    hid_t ra = H5Acreate2(g, "refs", H5T_STD_REF, s1, H5P_DEFAULT, H5P_DEFAULT);
    LOG("write attr refs %s", RC(H5Awrite(ra, H5T_STD_REF, refs)));
    H5Aclose(ra);
    /* old-style object references (compat library on tessera) */
    hobj_ref_t old[2];
    LOG("old create %s", RC(H5Rcreate(&old[0], f, "G1", H5R_OBJECT, -1)));
    LOG("old create %s", RC(H5Rcreate(&old[1], f, "data", H5R_OBJECT, -1)));
    hsize_t two = 2;
    hid_t   s2o = H5Screate_simple(1, &two, NULL);
    hid_t   od  = H5Dcreate2(f, "oldrefs", H5T_STD_REF_OBJ, s2o, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("write old refs %s", RC(H5Dwrite(od, H5T_STD_REF_OBJ, H5S_ALL, H5S_ALL, H5P_DEFAULT, old)));
    H5Dclose(od);
    /* old-style dataset-region references */
    hdset_reg_ref_t oldreg[2];
    hsize_t         start2[2] = {2, 1}, count2[2] = {2, 5};
    H5Sselect_hyperslab(sel, H5S_SELECT_SET, start2, NULL, count2, NULL);
    LOG("old region create %s", RC(H5Rcreate(&oldreg[0], f, "data", H5R_DATASET_REGION, sel)));
    H5Sselect_elements(sel, H5S_SELECT_SET, 3, pts);
    LOG("old region create %s", RC(H5Rcreate(&oldreg[1], f, "data", H5R_DATASET_REGION, sel)));
    od = H5Dcreate2(f, "oldregs", H5T_STD_REF_DSETREG, s2o, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("write old regions %s", RC(H5Dwrite(od, H5T_STD_REF_DSETREG, H5S_ALL, H5S_ALL, H5P_DEFAULT, oldreg)));
    H5Dclose(od);
    H5Sclose(s2o);
    for (int i = 0; i < 6; i++)
        H5Rdestroy(&refs[i]);
    H5Sclose(sel);
    H5Dclose(rd);
    H5Dclose(d);
    H5Gclose(g);
    H5Sclose(sc);
    H5Sclose(s1);
    H5Sclose(s2);
    H5Fclose(f);
    H5Fclose(e);
}

static void check_back(const char *path, hid_t fapl)
{
    hid_t     f  = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    hid_t     rd = H5Dopen2(f, "refs", H5P_DEFAULT);
    H5R_ref_t r[7];
    memset(r, 0, sizeof r);
    LOG("read refs %s", RC(H5Dread(rd, H5T_STD_REF, H5S_ALL, H5S_ALL, H5P_DEFAULT, r)));
    for (int i = 0; i < 7; i++) {
        char what[32];
        snprintf(what, sizeof what, "ds[%d]", i);
        describe(what, &r[i]);
    }
    LOG("equal 0,1 %d", (int)H5Requal(&r[0], &r[1]));
    for (int i = 0; i < 7; i++)
        if (H5Rget_type(&r[i]) != H5R_BADTYPE)
            H5Rdestroy(&r[i]);
    /* a part of them, through a point selection */
    hid_t   fs = H5Dget_space(rd);
    hsize_t pts[2] = {4, 2}, two = 2;
    H5Sselect_elements(fs, H5S_SELECT_SET, 2, pts);
    hid_t ms = H5Screate_simple(1, &two, NULL);
    memset(r, 0, sizeof r);
    LOG("read points %s", RC(H5Dread(rd, H5T_STD_REF, ms, fs, H5P_DEFAULT, r)));
    describe("pt[0]", &r[0]);
    describe("pt[1]", &r[1]);
    H5Rdestroy(&r[0]);
    H5Rdestroy(&r[1]);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(rd);
    hid_t a = H5Aopen_by_name(f, "G1", "refs", H5P_DEFAULT, H5P_DEFAULT);
    memset(r, 0, sizeof r);
    LOG("read attr refs %s", RC(H5Aread(a, H5T_STD_REF, r)));
    describe("attr[2]", &r[2]);
    describe("attr[5]", &r[5]);
    for (int i = 0; i < 7; i++)
        if (H5Rget_type(&r[i]) != H5R_BADTYPE)
            H5Rdestroy(&r[i]);
    H5Aclose(a);
    /* old-style references read as H5T_STD_REF (a conversion, as h5dump reads them) */
    hid_t od = H5Dopen2(f, "oldrefs", H5P_DEFAULT);
    memset(r, 0, sizeof r);
    LOG("read old as new %s", RC(H5Dread(od, H5T_STD_REF, H5S_ALL, H5S_ALL, H5P_DEFAULT, r)));
    describe("old[0]", &r[0]);
    describe("old[1]", &r[1]);
    H5Rdestroy(&r[0]);
    H5Rdestroy(&r[1]);
    hobj_ref_t old[2];
    LOG("read old %s", RC(H5Dread(od, H5T_STD_REF_OBJ, H5S_ALL, H5S_ALL, H5P_DEFAULT, old)));
    hid_t o = H5Rdereference2(od, H5P_DEFAULT, H5R_OBJECT, &old[1]);
    char  nm[64] = "";
    H5Iget_name(o, nm, sizeof nm);
    LOG("old deref %s %s", RC(o), nm);
    H5Oclose(o);
    H5Dclose(od);
    /* old-style region references: H5Rget_region, dereference, and read as H5T_STD_REF */
    od = H5Dopen2(f, "oldregs", H5P_DEFAULT);
    hdset_reg_ref_t oldreg[2];
    LOG("read old regions %s", RC(H5Dread(od, H5T_STD_REF_DSETREG, H5S_ALL, H5S_ALL, H5P_DEFAULT, oldreg)));
    for (int i = 0; i < 2; i++) {
        hid_t sp = H5Rget_region(od, H5R_DATASET_REGION, &oldreg[i]);
        hsize_t lo[2] = {0}, hi[2] = {0};
        H5Sget_select_bounds(sp, lo, hi);
        LOG("old region %d: %s npoints=%lld bounds=%llu,%llu-%llu,%llu", i, RC(sp), (long long)H5Sget_select_npoints(sp),
            (unsigned long long)lo[0], (unsigned long long)lo[1], (unsigned long long)hi[0], (unsigned long long)hi[1]);
        H5Sclose(sp);
        H5O_type_t ot = H5O_TYPE_UNKNOWN;
        herr_t     trc = H5Rget_obj_type2(od, H5R_DATASET_REGION, &oldreg[i], &ot);
        hid_t      dd  = H5Rdereference2(od, H5P_DEFAULT, H5R_DATASET_REGION, &oldreg[i]);
        char       rn[64] = "";
        H5Rget_name(od, H5R_DATASET_REGION, &oldreg[i], rn, sizeof rn);
        LOG("old region %d: type %s %d deref %s name %s", i, RC(trc), (int)ot, RC(dd), rn);
        H5Oclose(dd);
    }
    memset(r, 0, sizeof r);
    LOG("read old regions as new %s", RC(H5Dread(od, H5T_STD_REF, H5S_ALL, H5S_ALL, H5P_DEFAULT, r)));
    describe("oldreg[0]", &r[0]);
    describe("oldreg[1]", &r[1]);
    H5Rdestroy(&r[0]);
    H5Rdestroy(&r[1]);
    H5Dclose(od);
    H5Fclose(f);
}

/* Both halves of a run: the files, then reading them back in a new file session. */
static void run(const char *path, hid_t fapl, log_t *L)
{
    (void)L;
    char ext[4096];
    snprintf(ext, sizeof ext, "%.*s_ext%s", (int)(strlen(path) - 3), path, ".h5");
    make(path, ext, fapl);
    check_back(path, fapl);
}

/* A reference inside a compound is stored as what it names, not as process-local bytes
 * (test_nested_refs.c compares such values with native at length): it names G1 again
 * in a new file session. */
static void compound_kept(hid_t tess, const char *dir)
{
    char pt[4096];
    snprintf(pt, sizeof pt, "%s/test_references_tessera.h5", dir);
    hid_t f  = H5Fopen(pt, H5F_ACC_RDWR, tess);
    hid_t ct = H5Tcreate(H5T_COMPOUND, sizeof(H5R_ref_t) + 8);
    H5Tinsert(ct, "r", 0, H5T_STD_REF);
    H5Tinsert(ct, "i", sizeof(H5R_ref_t), H5T_NATIVE_INT);
    hsize_t one = 1;
    hid_t   s   = H5Screate_simple(1, &one, NULL);
    hid_t   d   = H5Dcreate2(f, "cmpd", ct, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    unsigned char buf[sizeof(H5R_ref_t) + 8];
    memset(buf, 0, sizeof buf);
    H5Rcreate_object(f, "G1", H5P_DEFAULT, (H5R_ref_t *)buf);
    herr_t rc = H5Dwrite(d, ct, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    H5Rdestroy((H5R_ref_t *)buf);
    H5Dclose(d);
    H5Fclose(f);
    f = H5Fopen(pt, H5F_ACC_RDONLY, tess);
    d = H5Dopen2(f, "cmpd", H5P_DEFAULT);
    memset(buf, 0, sizeof buf);
    herr_t rd = H5Dread(d, ct, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    char   name[64] = "";
    H5Rget_obj_name((H5R_ref_t *)buf, H5P_DEFAULT, name, sizeof name);
    check(rc >= 0 && rd >= 0 && strcmp(name, "/G1") == 0,
          "a reference inside a compound is stored and names its object again in a new session", "tessera");
    H5Treclaim(ct, s, H5P_DEFAULT, buf);
    H5Dclose(d);
    H5Sclose(s);
    H5Tclose(ct);
    H5Fclose(f);
}

int main(int argc, char **argv)
{
    return run_compared(argc > 1 ? argv[1] : ".", "test_references", run, 60, compound_kept);
}
