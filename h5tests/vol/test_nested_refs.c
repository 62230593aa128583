/* test_nested_refs.c — 1.12-style references (H5R_ref_t, H5T_STD_REF) inside compound,
 * array and variable-length types, on tessera compared with native HDF5
 * (vol_test_log.h), issue 45.
 *
 * HDF5 1.14's dimension-scale library stores its REFERENCE_LIST (a compound of a
 * reference and an index) and DIMENSION_LIST (variable-length sequences of references)
 * with new-style references whenever the connector is not native (H5DSwith_new_ref), so
 * netCDF-4 cannot write a dimension without them.  The first part does what netCDF does
 * — scales set, attached, labelled, shared by two datasets, detached — and reads it back
 * the way h5dump and netCDF do (natively the library uses old-style references; what is
 * compared is what the H5DS calls report).  The second part stores such values directly:
 * compounds, arrays and sequences of object, region and attribute references in datasets
 * and attributes, read back with the same and with a reordered memory type, and copied
 * with H5Ocopy into another file with and without H5O_COPY_EXPAND_REFERENCE_FLAG (checked
 * against what H5Ocopy documents: native HDF5 1.14.5 cannot read its own copies back).
 * Every reference read is described by what it names (type, object path, attribute
 * name, selected points), never by its bytes.
 *
 * Usage: test_nested_refs [directory for the files]
 */
#include "vol_test_log.h"

#include <hdf5_hl.h>

typedef struct {
    H5R_ref_t ref;
    int       idx;
} pair_t;

typedef struct { /* the same members, the other way round and packed */
    int       idx;
    H5R_ref_t ref;
} __attribute__((packed)) rpair_t;

static hid_t pair_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(pair_t));
    H5Tinsert(t, "ref", HOFFSET(pair_t, ref), H5T_STD_REF);
    H5Tinsert(t, "idx", HOFFSET(pair_t, idx), H5T_NATIVE_INT);
    return t;
}

static hid_t rpair_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(rpair_t));
    H5Tinsert(t, "idx", 0, H5T_NATIVE_INT);
    H5Tinsert(t, "ref", sizeof(int), H5T_STD_REF);
    return t;
}

/* What a reference names, in one line (into out). */
static void describe_to(char *out, size_t size, H5R_ref_t *r)
{
    H5R_type_t t = H5Rget_type(r);
    if (t == H5R_BADTYPE || t == H5R_OBJECT1) { /* a zeroed H5R_ref_t reports H5R_OBJECT1 */
        snprintf(out, size, "null");
        return;
    }
    char    name[256] = "", attr[64] = "";
    ssize_t n         = H5Rget_obj_name(r, H5P_DEFAULT, name, sizeof name);
    hssize_t pts      = -1;
    if (t == H5R_DATASET_REGION2) {
        hid_t s = H5Ropen_region(r, H5P_DEFAULT, H5P_DEFAULT);
        pts     = s >= 0 ? H5Sget_select_npoints(s) : -2;
        if (s >= 0)
            H5Sclose(s);
    }
    if (t == H5R_ATTR)
        H5Rget_attr_name(r, attr, sizeof attr);
    hid_t       o = H5Ropen_object(r, H5P_DEFAULT, H5P_DEFAULT);
    H5O_info2_t oi;
    int         otype = o >= 0 && H5Oget_info3(o, &oi, H5O_INFO_BASIC) >= 0 ? (int)oi.type : -1;
    if (o >= 0)
        H5Oclose(o);
    snprintf(out, size, "type %d object %s (%zd) opens as %d points %lld attr '%s'", (int)t, name, n, otype,
             (long long)pts, attr);
}

static void describe(const char *what, H5R_ref_t *r)
{
    char d[400];
    describe_to(d, sizeof d, r);
    LOG("%s: %s", what, d);
}

/* The scales attached to a dimension, as H5DSiterate_scales reports them. */
static herr_t scale_name(hid_t did, unsigned dim, hid_t dsid, void *data)
{
    (void)did;
    (void)dim;
    char name[128] = "";
    H5Iget_name(dsid, name, sizeof name);
    strncat((char *)data, name, 255 - strlen((char *)data));
    strncat((char *)data, " ", 255 - strlen((char *)data));
    return 0;
}

static void log_dims(hid_t f, const char *dset)
{
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
    for (unsigned dim = 0; dim < 2; dim++) {
        char names[256] = "", label[64] = "";
        int  idx        = 0;
        int  n          = H5DSget_num_scales(d, dim);
        H5DSiterate_scales(d, dim, &idx, scale_name, names);
        H5DSget_label(d, dim, label, sizeof label);
        LOG("%s dim %u: %d scale(s) [%s] label '%s'", dset, dim, n, names, label);
    }
    const char *scales[] = {"/x", "/y", "/t"};
    for (int i = 0; i < 3; i++) {
        hid_t s = H5Dopen2(f, scales[i], H5P_DEFAULT);
        char  sname[64] = "";
        H5DSget_scale_name(s, sname, sizeof sname);
        LOG("  %s: is_scale %d name '%s' attached to dim 0: %d dim 1: %d", scales[i], (int)H5DSis_scale(s), sname,
            (int)H5DSis_attached(d, s, 0), (int)H5DSis_attached(d, s, 1));
        H5Dclose(s);
    }
    H5Dclose(d);
}

static hid_t make_2d(hid_t loc, const char *name, hsize_t n0, hsize_t n1)
{
    hsize_t dims[2] = {n0, n1};
    hid_t   s = H5Screate_simple(n1 ? 2 : 1, dims, NULL);
    hid_t   d = H5Dcreate2(loc, name, H5T_NATIVE_FLOAT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Sclose(s);
    return d;
}

/* Part 1: dimension scales as netCDF-4 makes them. */
static void dimension_scales(const char *path, hid_t fapl)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t data = make_2d(f, "data", 4, 3), data2 = make_2d(f, "data2", 4, 3);
    hid_t x = make_2d(f, "x", 4, 0), y = make_2d(f, "y", 3, 0), t = make_2d(f, "t", 4, 0);
    LOG("set_scale x %s y %s t %s", RC(H5DSset_scale(x, "x")), RC(H5DSset_scale(y, "y")), RC(H5DSset_scale(t, NULL)));
    LOG("attach x->data:0 %s y->data:1 %s", RC(H5DSattach_scale(data, x, 0)), RC(H5DSattach_scale(data, y, 1)));
    /* The same scales on a second dataset: REFERENCE_LIST grows (read, deleted, rewritten). */
    LOG("attach x->data2:0 %s y->data2:1 %s t->data:0 %s", RC(H5DSattach_scale(data2, x, 0)),
        RC(H5DSattach_scale(data2, y, 1)), RC(H5DSattach_scale(data, t, 0)));
    LOG("labels %s %s", RC(H5DSset_label(data, 0, "rows")), RC(H5DSset_label(data, 1, "cols")));
    H5Dclose(data);
    H5Dclose(data2);
    H5Dclose(x);
    H5Dclose(y);
    H5Dclose(t);
    H5Fclose(f);

    f = H5Fopen(path, H5F_ACC_RDWR, fapl);
    log_dims(f, "data");
    log_dims(f, "data2");
    data = H5Dopen2(f, "data", H5P_DEFAULT);
    t    = H5Dopen2(f, "t", H5P_DEFAULT);
    LOG("detach t from data:0 %s", RC(H5DSdetach_scale(data, t, 0)));
    H5Dclose(t);
    H5Dclose(data);
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    log_dims(f, "data");
    log_dims(f, "data2");
    H5Fclose(f);
}

/* Part 2: the values themselves. */
static void values(const char *path, hid_t fapl)
{
    hid_t   f   = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t   g   = H5Gcreate2(f, "grp", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t ten = 10;
    hid_t   s10 = H5Screate_simple(1, &ten, NULL);
    hid_t   tgt = H5Dcreate2(f, "target", H5T_NATIVE_INT, s10, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t   sc  = H5Screate(H5S_SCALAR);
    H5Aclose(H5Acreate2(tgt, "units", H5T_NATIVE_INT, sc, H5P_DEFAULT, H5P_DEFAULT));
    hsize_t start = 2, count = 3;
    H5Sselect_hyperslab(s10, H5S_SELECT_SET, &start, NULL, &count, NULL);

    /* Three pairs: an object, a region and an attribute reference. */
    pair_t w[3];
    memset(w, 0, sizeof w);
    LOG("create refs %s %s %s", RC(H5Rcreate_object(f, "grp", H5P_DEFAULT, &w[0].ref)),
        RC(H5Rcreate_region(f, "target", s10, H5P_DEFAULT, &w[1].ref)),
        RC(H5Rcreate_attr(f, "target", "units", H5P_DEFAULT, &w[2].ref)));
    for (int i = 0; i < 3; i++)
        w[i].idx = 10 * i;
    hsize_t three = 3, four = 4;
    hid_t   s3 = H5Screate_simple(1, &three, NULL), s4 = H5Screate_simple(1, &four, NULL);
    hid_t   pt = pair_type();
    hid_t   dc = H5Dcreate2(f, "pairs", pt, s3, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("pairs dataset: create %s write %s", RC(dc), RC(H5Dwrite(dc, pt, H5S_ALL, H5S_ALL, H5P_DEFAULT, w)));
    hid_t ac = H5Acreate2(g, "pairs", pt, s3, H5P_DEFAULT, H5P_DEFAULT);
    LOG("pairs attribute: create %s write %s", RC(ac), RC(H5Awrite(ac, pt, w)));
    H5Aclose(ac);
    /* A chunked dataset of pairs written in part: the rest reads as null references. */
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t two = 2;
    H5Pset_chunk(dcpl, 1, &two);
    hid_t dch = H5Dcreate2(f, "pairs_chunked", pt, s4, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    hid_t fs  = H5Dget_space(dch), ms = H5Screate_simple(1, &two, NULL);
    hsize_t one = 1;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &one, NULL, &two, NULL);
    LOG("pairs_chunked: write 2 of 4 %s", RC(H5Dwrite(dch, pt, ms, fs, H5P_DEFAULT, w + 1)));
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(dch);
    H5Pclose(dcpl);
    /* An array of three references. */
    hid_t at = H5Tarray_create2(H5T_STD_REF, 1, &three);
    H5R_ref_t arr[3];
    for (int i = 0; i < 3; i++)
        arr[i] = w[2 - i].ref;
    hid_t aa = H5Acreate2(f, "ref_array", at, sc, H5P_DEFAULT, H5P_DEFAULT);
    LOG("ref_array attribute: %s", RC(H5Awrite(aa, at, arr)));
    H5Aclose(aa);
    /* Sequences of references: DIMENSION_LIST's type, in an attribute and a dataset. */
    hid_t vt = H5Tvlen_create(H5T_STD_REF);
    hvl_t seq[2];
    H5R_ref_t two_refs[2] = {w[1].ref, w[0].ref};
    seq[0].len = 1, seq[0].p = &w[2].ref;
    seq[1].len = 2, seq[1].p = two_refs;
    hsize_t ntwo = 2;
    hid_t   s2 = H5Screate_simple(1, &ntwo, NULL);
    hid_t   va = H5Acreate2(tgt, "seqs", vt, s2, H5P_DEFAULT, H5P_DEFAULT);
    LOG("seqs attribute: %s", RC(H5Awrite(va, vt, seq)));
    H5Aclose(va);
    hid_t vd = H5Dcreate2(f, "seqs", vt, s2, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("seqs dataset: %s", RC(H5Dwrite(vd, vt, H5S_ALL, H5S_ALL, H5P_DEFAULT, seq)));
    H5Dclose(vd);
    for (int i = 0; i < 3; i++)
        H5Rdestroy(&w[i].ref);
    H5Dclose(dc);
    H5Dclose(tgt);
    H5Gclose(g);
    H5Fclose(f);

    H5Tclose(vt);
    H5Tclose(at);
    H5Tclose(pt);
    H5Sclose(s2);
    H5Sclose(s3);
    H5Sclose(s4);
    H5Sclose(s10);
    H5Sclose(sc);
}

/* Part 2, reading: every value with the same and with other memory types, described by
 * what its references name. */
static void read_values(const char *path, hid_t fapl)
{
    hsize_t   three = 3, four = 4, ntwo = 2;
    hid_t     s3 = H5Screate_simple(1, &three, NULL), s4 = H5Screate_simple(1, &four, NULL);
    hid_t     s2 = H5Screate_simple(1, &ntwo, NULL);
    hid_t     pt = pair_type(), at = H5Tarray_create2(H5T_STD_REF, 1, &three), vt = H5Tvlen_create(H5T_STD_REF);
    hid_t     f, dc, dch, ac, aa, va, vd;
    H5R_ref_t arr[3];
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    pair_t r[4];
    char   what[64];
    dc = H5Dopen2(f, "pairs", H5P_DEFAULT);
    memset(r, 0, sizeof r);
    LOG("pairs dataset read %s", RC(H5Dread(dc, pt, H5S_ALL, H5S_ALL, H5P_DEFAULT, r)));
    for (int i = 0; i < 3; i++) {
        snprintf(what, sizeof what, "pairs[%d] idx %d", i, r[i].idx);
        describe(what, &r[i].ref);
    }
    H5Treclaim(pt, s3, H5P_DEFAULT, r);
    /* Through a memory type with the members reordered and packed: converted. */
    rpair_t rr[3];
    hid_t   rpt = rpair_type();
    memset(rr, 0, sizeof rr);
    LOG("pairs dataset read reordered %s", RC(H5Dread(dc, rpt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rr)));
    for (int i = 0; i < 3; i++) {
        H5R_ref_t ref;
        memcpy(&ref, &rr[i].ref, sizeof ref);
        snprintf(what, sizeof what, "reordered[%d] idx %d", i, rr[i].idx);
        describe(what, &ref);
        H5Rdestroy(&ref);
    }
    /* Only the index member: no reference read. */
    hid_t it = H5Tcreate(H5T_COMPOUND, sizeof(int));
    H5Tinsert(it, "idx", 0, H5T_NATIVE_INT);
    int idx[3] = {-1, -1, -1};
    LOG("pairs idx only %s: %d %d %d", RC(H5Dread(dc, it, H5S_ALL, H5S_ALL, H5P_DEFAULT, idx)), idx[0], idx[1], idx[2]);
    H5Dclose(dc);
    dch = H5Dopen2(f, "pairs_chunked", H5P_DEFAULT);
    memset(r, 0, sizeof r);
    LOG("pairs_chunked read %s", RC(H5Dread(dch, pt, H5S_ALL, H5S_ALL, H5P_DEFAULT, r)));
    for (int i = 0; i < 4; i++) {
        snprintf(what, sizeof what, "pairs_chunked[%d] idx %d", i, r[i].idx);
        describe(what, &r[i].ref);
    }
    H5Treclaim(pt, s4, H5P_DEFAULT, r);
    H5Dclose(dch);
    ac = H5Aopen_by_name(f, "grp", "pairs", H5P_DEFAULT, H5P_DEFAULT);
    memset(r, 0, sizeof r);
    LOG("pairs attribute read %s", RC(H5Aread(ac, pt, r)));
    for (int i = 0; i < 3; i++) {
        snprintf(what, sizeof what, "attr pairs[%d] idx %d", i, r[i].idx);
        describe(what, &r[i].ref);
    }
    H5Treclaim(pt, s3, H5P_DEFAULT, r);
    memset(rr, 0, sizeof rr);
    LOG("pairs attribute read reordered %s", RC(H5Aread(ac, rpt, rr)));
    for (int i = 0; i < 3; i++) {
        H5R_ref_t ref;
        memcpy(&ref, &rr[i].ref, sizeof ref);
        snprintf(what, sizeof what, "attr reordered[%d] idx %d", i, rr[i].idx);
        describe(what, &ref);
        H5Rdestroy(&ref);
    }
    hid_t ftype = H5Aget_type(ac);
    LOG("pairs attribute type: class %d equal to the written type %d, member 0 is H5T_STD_REF %d",
        (int)H5Tget_class(ftype), (int)H5Tequal(ftype, pt), (int)H5Tequal(H5Tget_member_type(ftype, 0), H5T_STD_REF));
    H5Tclose(ftype);
    H5Aclose(ac);
    aa = H5Aopen(f, "ref_array", H5P_DEFAULT);
    memset(arr, 0, sizeof arr);
    LOG("ref_array read %s", RC(H5Aread(aa, at, arr)));
    for (int i = 0; i < 3; i++) {
        snprintf(what, sizeof what, "ref_array[%d]", i);
        describe(what, &arr[i]);
        H5Rdestroy(&arr[i]);
    }
    H5Aclose(aa);
    for (int k = 0; k < 2; k++) {
        hvl_t rs[2];
        memset(rs, 0, sizeof rs);
        herr_t rc;
        if (k == 0) {
            va = H5Aopen_by_name(f, "target", "seqs", H5P_DEFAULT, H5P_DEFAULT);
            rc = H5Aread(va, vt, rs);
            H5Aclose(va);
        }
        else {
            vd = H5Dopen2(f, "seqs", H5P_DEFAULT);
            rc = H5Dread(vd, vt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rs);
            H5Dclose(vd);
        }
        LOG("seqs %s read %s lengths %zu %zu", k ? "dataset" : "attribute", RC(rc), rs[0].len, rs[1].len);
        for (int i = 0; i < 2; i++)
            for (size_t j = 0; j < rs[i].len && rc >= 0; j++) {
                snprintf(what, sizeof what, "  seqs[%d][%zu]", i, j);
                describe(what, (H5R_ref_t *)rs[i].p + j);
            }
        if (rc >= 0)
            H5Treclaim(vt, s2, H5P_DEFAULT, rs);
    }
    H5Fclose(f);
    H5Tclose(it);
    H5Tclose(rpt);
    H5Tclose(vt);
    H5Tclose(at);
    H5Tclose(pt);
    H5Sclose(s2);
    H5Sclose(s3);
    H5Sclose(s4);
}

/* Part 3: H5Ocopy into another file, with and without expanding references.  Native
 * HDF5 1.14.5 copies new-style references inside other types as their bytes, which
 * name the source file's global heap: reading its copy fails ("bad global heap
 * collection signature") or its references still name the source's objects.  So only
 * the copies' success is compared; what tessera's copies hold is checked against what
 * H5Ocopy documents (copied_refs below). */
static void copies(const char *path, const char *copy_path, hid_t fapl)
{
    hid_t src  = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    hid_t dst  = H5Fcreate(copy_path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t ocpl = H5Pcreate(H5P_OBJECT_COPY);
    LOG("copy pairs %s", RC(H5Ocopy(src, "pairs", dst, "pairs", H5P_DEFAULT, H5P_DEFAULT)));
    LOG("copy grp %s", RC(H5Ocopy(src, "grp", dst, "grp", H5P_DEFAULT, H5P_DEFAULT)));
    H5Pset_copy_object(ocpl, H5O_COPY_EXPAND_REFERENCE_FLAG);
    LOG("copy target expanded %s", RC(H5Ocopy(src, "target", dst, "target_x", ocpl, H5P_DEFAULT)));
    LOG("copy grp expanded %s", RC(H5Ocopy(src, "grp", dst, "grp_x", ocpl, H5P_DEFAULT)));
    H5Pclose(ocpl);
    H5Fclose(dst);
    H5Fclose(src);
}

/* A reference read from a copy is as expected: "null", or of `type`, naming `name` (a
 * prefix when it ends in '*'), opening as object type `otype`, with `pts` points
 * (regions) or attribute `attr`. */
static void expect_ref(const char *what, H5R_ref_t *r, int type, const char *name, int otype, long long pts,
                       const char *attr)
{
    char got[400], want[400];
    describe_to(got, sizeof got, r);
    if (type < 0)
        snprintf(want, sizeof want, "null");
    else {
        size_t nl = strlen(name);
        char   full[128];
        snprintf(full, sizeof full, "%s", name);
        if (nl && name[nl - 1] == '*') { /* the copy's name: ~obj_pointed_by_<its id> */
            const char *p = strstr(got, " object ");
            const char *q = p ? strstr(p + 8, " (") : NULL;
            if (p && q && strncmp(p + 8, name, nl - 1) == 0)
                snprintf(full, sizeof full, "%.*s", (int)(q - p - 8), p + 8);
        }
        snprintf(want, sizeof want, "type %d object %s (%zu) opens as %d points %lld attr '%s'", type, full,
                 strlen(full), otype, pts, attr);
    }
    char line[900];
    snprintf(line, sizeof line, "%s: %s (expected %s)", what, got, want);
    check(strcmp(got, want) == 0, line, "tessera");
}

static void copied_refs(const char *copy_path, hid_t fapl)
{
    hid_t   dst = H5Fopen(copy_path, H5F_ACC_RDONLY, fapl);
    hid_t   pt = pair_type(), vt = H5Tvlen_create(H5T_STD_REF);
    hsize_t three = 3, two = 2;
    hid_t   s3 = H5Screate_simple(1, &three, NULL), s2 = H5Screate_simple(1, &two, NULL);
    pair_t  r[3];
    char    what[96];
    /* Without the expand flag: every reference null, every other value kept. */
    hid_t d = H5Dopen2(dst, "pairs", H5P_DEFAULT);
    memset(r, 0, sizeof r);
    check(H5Dread(d, pt, H5S_ALL, H5S_ALL, H5P_DEFAULT, r) >= 0 && r[1].idx == 10 && r[2].idx == 20,
          "the copied pairs dataset reads, indexes kept", "tessera");
    for (int i = 0; i < 3; i++) {
        snprintf(what, sizeof what, "copied pairs[%d]", i);
        expect_ref(what, &r[i].ref, -1, "", 0, 0, "");
    }
    H5Treclaim(pt, s3, H5P_DEFAULT, r);
    H5Dclose(d);
    hid_t a = H5Aopen_by_name(dst, "grp", "pairs", H5P_DEFAULT, H5P_DEFAULT);
    memset(r, 0, sizeof r);
    check(H5Aread(a, pt, r) >= 0 && r[1].idx == 10 && r[2].idx == 20, "grp/pairs reads, indexes kept", "tessera");
    for (int i = 0; i < 3; i++) {
        snprintf(what, sizeof what, "grp attr pairs[%d]", i);
        expect_ref(what, &r[i].ref, -1, "", 0, 0, "");
    }
    H5Treclaim(pt, s3, H5P_DEFAULT, r);
    H5Aclose(a);
    /* Expanded: each names the object's copy — the group itself, copies of the rest. */
    a = H5Aopen_by_name(dst, "grp_x", "pairs", H5P_DEFAULT, H5P_DEFAULT);
    memset(r, 0, sizeof r);
    check(H5Aread(a, pt, r) >= 0 && r[1].idx == 10 && r[2].idx == 20, "grp_x/pairs reads, indexes kept", "tessera");
    expect_ref("grp_x attr pairs[0]", &r[0].ref, H5R_OBJECT2, "/grp_x", H5O_TYPE_GROUP, -1, "");
    expect_ref("grp_x attr pairs[1]", &r[1].ref, H5R_DATASET_REGION2, "/~obj_pointed_by_*", H5O_TYPE_DATASET, 3, "");
    expect_ref("grp_x attr pairs[2]", &r[2].ref, H5R_ATTR, "/~obj_pointed_by_*", H5O_TYPE_DATASET, -1, "units");
    H5Treclaim(pt, s3, H5P_DEFAULT, r);
    H5Aclose(a);
    a = H5Aopen_by_name(dst, "target_x", "seqs", H5P_DEFAULT, H5P_DEFAULT);
    hvl_t rs[2];
    memset(rs, 0, sizeof rs);
    herr_t rc = H5Aread(a, vt, rs);
    check(rc >= 0 && rs[0].len == 1 && rs[1].len == 2, "target_x/seqs reads, lengths 1 and 2", "tessera");
    if (rc >= 0 && rs[0].len == 1 && rs[1].len == 2) {
        H5R_ref_t *s0 = rs[0].p, *s1 = rs[1].p;
        expect_ref("target_x seqs[0][0]", &s0[0], H5R_ATTR, "/target_x", H5O_TYPE_DATASET, -1, "units");
        expect_ref("target_x seqs[1][0]", &s1[0], H5R_DATASET_REGION2, "/target_x", H5O_TYPE_DATASET, 3, "");
        expect_ref("target_x seqs[1][1]", &s1[1], H5R_OBJECT2, "/~obj_pointed_by_*", H5O_TYPE_GROUP, -1, "");
    }
    if (rc >= 0)
        H5Treclaim(vt, s2, H5P_DEFAULT, rs);
    H5Aclose(a);
    H5Sclose(s2);
    H5Sclose(s3);
    H5Tclose(vt);
    H5Tclose(pt);
    H5Fclose(dst);
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    (void)L;
    char p2[4200], p3[4200];
    snprintf(p2, sizeof p2, "%.*s_values.h5", (int)(strlen(path) - 3), path);
    snprintf(p3, sizeof p3, "%.*s_copy.h5", (int)(strlen(path) - 3), path);
    dimension_scales(path, fapl);
    values(p2, fapl);
    read_values(p2, fapl);
    copies(p2, p3, fapl);
}

/* Tessera only: what the copies hold; a conversion tessera refuses says so. */
static void tessera_only(hid_t tess, const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/test_nested_refs_tessera_copy.h5", dir);
    copied_refs(path, tess);
    snprintf(path, sizeof path, "%s/test_nested_refs_tessera_values.h5", dir);
    hid_t f  = H5Fopen(path, H5F_ACC_RDONLY, tess);
    hid_t vd = H5Dopen2(f, "seqs", H5P_DEFAULT);
    /* A sequence type of the same references but another memory type: not converted. */
    hid_t cmp = H5Tcreate(H5T_COMPOUND, sizeof(H5R_ref_t));
    H5Tinsert(cmp, "r", 0, H5T_STD_REF);
    hid_t vt = H5Tvlen_create(cmp);
    hvl_t rs[2];
    herr_t rc;
    H5E_BEGIN_TRY { rc = H5Dread(vd, vt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rs); }
    H5E_END_TRY
    check(rc < 0 && stack_says("not converted"),
          "a sequence of references read through another memory type is refused with a message", "tessera");
    H5Tclose(vt);
    H5Tclose(cmp);
    H5Dclose(vd);
    H5Fclose(f);
}

/* Run again under the compat library (vol_nested_refs_compat), on the files the first
 * run wrote without it: the dimension scales there hold new-style references, which the
 * library's H5DSwith_new_ref must keep using — read, extended with two more
 * attachments, detached — as native does with its old-style ones. */
static void dims_again(const char *path, hid_t fapl, log_t *L)
{
    (void)L;
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, fapl);
    log_dims(f, "data");
    hid_t data = H5Dopen2(f, "data", H5P_DEFAULT), data2 = H5Dopen2(f, "data2", H5P_DEFAULT);
    hid_t t = H5Dopen2(f, "t", H5P_DEFAULT), y = H5Dopen2(f, "y", H5P_DEFAULT);
    LOG("attach t->data:1 %s t->data2:0 %s", RC(H5DSattach_scale(data, t, 1)), RC(H5DSattach_scale(data2, t, 0)));
    LOG("detach y from data:1 %s", RC(H5DSdetach_scale(data, y, 1)));
    H5Dclose(t);
    H5Dclose(y);
    H5Dclose(data);
    H5Dclose(data2);
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    log_dims(f, "data");
    log_dims(f, "data2");
    H5Fclose(f);
}

/* `tessera export` of the tessera run's values and `tessera import` of the native run's
 * (vol_nested_refs_tool): the exported native file and the imported container must read
 * as the native original does (convert/h5copy.cc re-creates the references). */
static int export_import(const char *dir, const char *tool)
{
    hid_t native, tess, vol;
    if (make_fapls(&native, &tess, &vol) < 0)
        return 1;
    char cmd[26000], exported[4200], imported[4200], original[4200];
    snprintf(original, sizeof original, "%s/test_nested_refs_native_values.h5", dir);
    snprintf(exported, sizeof exported, "%s/nested_refs_exported.h5", dir);
    snprintf(imported, sizeof imported, "%s/nested_refs_imported.h5", dir);
    snprintf(cmd, sizeof cmd, "'%s' export --force '%s/test_nested_refs_tessera_values.h5' '%s' && '%s' import --force '%s' '%s'",
             tool, dir, exported, tool, original, imported);
    if (system(cmd) != 0) {
        printf("FAIL: %s\n", cmd);
        return 1;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    log_t lo = {0}, le = {0}, li = {0};
    g_log = &lo;
    read_values(original, native);
    g_log = &le;
    read_values(exported, native);
    g_log = &li;
    read_values(imported, tess);
    hid_t f = H5Fopen(imported, H5F_ACC_RDONLY, tess);
    char  cname[64] = "";
    H5VLget_connector_name(f, cname, sizeof cname);
    H5Fclose(f);
    check(strcmp(cname, "tessera") == 0, "the imported file is a tessera container", "tessera");
    int lines = 0, diffs = 0;
    printf("exported (native file) vs the native original:\n");
    diffs += compare_logs(&lo, &le, "TESSERA_TEST_VERBOSE", &lines);
    printf("imported (tessera container) vs the native original:\n");
    diffs += compare_logs(&lo, &li, "TESSERA_TEST_VERBOSE", &lines);
    check(lines >= 30, "enough observations were compared", "compare");
    printf(diffs || g_failed ? "[FAIL] export/import differ\n" : "[PASS] export and import read as the original\n");
    free(lo.buf);
    free(le.buf);
    free(li.buf);
    H5Pclose(native);
    H5Pclose(tess);
    H5VLclose(vol);
    return diffs || g_failed;
}

int main(int argc, char **argv)
{
    if (argc > 3 && strcmp(argv[2], "--export-import") == 0)
        return export_import(argv[1], argv[3]);
    if (argc > 2 && strcmp(argv[2], "--dims-again") == 0)
        return run_compared(argv[1], "test_nested_refs", dims_again, 15, NULL);
    return run_compared(argc > 1 ? argv[1] : ".", "test_nested_refs", run, 70, tessera_only);
}
