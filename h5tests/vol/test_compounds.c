/* test_compounds.c — compound types with variable-length members (vlen strings, vlen
 * sequences of numbers and of compounds), fixed strings, arrays of compounds and nested
 * compounds, in datasets and attributes, tessera compared with native HDF5
 * (vol_test_log.h).  What an experienced HDF5 user does with them:
 *
 *   - the full memory struct written and read back, whole and through hyperslab and
 *     point selections (memory selections scattered in a larger buffer too);
 *   - a memory type that is a member subset of the stored compound, with its members
 *     reordered, at other offsets and of other numeric types (int -> double, BE <-> LE,
 *     vlen of int read as vlen of double), read and written (the members the memory
 *     type lacks keep their stored values, as HDF5's background buffer keeps them);
 *   - elements rewritten (the old vlen data replaced), H5Dvlen_get_buf_size, H5Treclaim,
 *     H5Dget_type compared with H5Tequal, reopen in a new file handle;
 *   - fill values of variable-length types (vlen string, vlen sequence, compound with
 *     vlen members): never-written elements and elements exposed by H5Dset_extent read
 *     as native reads them, through the stored type and through converted ones.
 *
 * Every value read is LOGged through a generic walk of the memory type (log_value), so
 * the comparison covers every byte native returns.  Run under ASan by
 * scripts/test --sanitize (leaks, double frees of converted vlen data).
 *
 * Usage: test_compounds [directory for the files]
 */
#include "vol_test_log.h"

/* ---- memory structs ---------------------------------------------------------------- */

typedef struct {
    int   x;
    float y;
} pt_t;

typedef struct {
    int   k;
    char *name;
} kv_t;

typedef struct {
    int   id;
    char *tag;
    hvl_t seq; /* of short */
} nest_t;

typedef struct {
    char  *vs;
    hvl_t  vi; /* of int */
    hvl_t  vd; /* of double */
    char   fs[8];
    pt_t   arr[2];
    nest_t nest;
    hvl_t  vc; /* of kv_t */
    double num;
    char  *names[2];
} rec_t;

/* The same members, other order, other offsets, other types; vd, fs, arr and vc absent. */
typedef struct {
    hvl_t  seq; /* of int (stored: short) */
    char  *tag;
    double id; /* stored: int */
} nest2_t;

typedef struct {
    float   num; /* stored: double BE */
    char   *names[2];
    nest2_t nest;
    hvl_t   vi; /* of double (stored: int BE) */
    char   *vs;
} alt_t;

typedef struct {
    hvl_t vc; /* of kv_t */
    char *vs;
} sub_t;

#define N 6

/* ---- types ------------------------------------------------------------------------- */

static hid_t vstr(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    return t;
}

/* file != 0: the stored form (packed, big-endian numbers where it matters). */
static hid_t pt_type(int file)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(pt_t));
    H5Tinsert(t, "x", HOFFSET(pt_t, x), file ? H5T_STD_I32BE : H5T_NATIVE_INT);
    H5Tinsert(t, "y", HOFFSET(pt_t, y), file ? H5T_IEEE_F32BE : H5T_NATIVE_FLOAT);
    return t;
}

static hid_t kv_type(int file)
{
    hid_t s = vstr();
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(kv_t));
    H5Tinsert(t, "k", HOFFSET(kv_t, k), file ? H5T_STD_I64LE : H5T_NATIVE_INT);
    H5Tinsert(t, "name", HOFFSET(kv_t, name), s);
    if (file)
        H5Tpack(t);
    H5Tclose(s);
    return t;
}

static hid_t nest_type(int file)
{
    hid_t s  = vstr();
    hid_t vl = H5Tvlen_create(file ? H5T_STD_I16BE : H5T_NATIVE_SHORT);
    hid_t t  = H5Tcreate(H5T_COMPOUND, sizeof(nest_t));
    H5Tinsert(t, "id", HOFFSET(nest_t, id), file ? H5T_STD_I32BE : H5T_NATIVE_INT);
    H5Tinsert(t, "tag", HOFFSET(nest_t, tag), s);
    H5Tinsert(t, "seq", HOFFSET(nest_t, seq), vl);
    if (file)
        H5Tpack(t);
    H5Tclose(s);
    H5Tclose(vl);
    return t;
}

static hid_t rec_type(int file)
{
    hsize_t two = 2;
    hid_t   s   = vstr();
    hid_t   vi  = H5Tvlen_create(file ? H5T_STD_I32BE : H5T_NATIVE_INT);
    hid_t   vd  = H5Tvlen_create(file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE);
    hid_t   fs  = H5Tcopy(H5T_C_S1);
    H5Tset_size(fs, 8);
    H5Tset_strpad(fs, file ? H5T_STR_NULLPAD : H5T_STR_NULLTERM);
    hid_t pt  = pt_type(file);
    hid_t arr = H5Tarray_create2(pt, 1, &two);
    hid_t ne  = nest_type(file);
    hid_t kv  = kv_type(file);
    hid_t vc  = H5Tvlen_create(kv);
    hid_t an  = H5Tarray_create2(s, 1, &two);
    hid_t t   = H5Tcreate(H5T_COMPOUND, sizeof(rec_t));
    H5Tinsert(t, "vs", HOFFSET(rec_t, vs), s);
    H5Tinsert(t, "vi", HOFFSET(rec_t, vi), vi);
    H5Tinsert(t, "vd", HOFFSET(rec_t, vd), vd);
    H5Tinsert(t, "fs", HOFFSET(rec_t, fs), fs);
    H5Tinsert(t, "arr", HOFFSET(rec_t, arr), arr);
    H5Tinsert(t, "nest", HOFFSET(rec_t, nest), ne);
    H5Tinsert(t, "vc", HOFFSET(rec_t, vc), vc);
    H5Tinsert(t, "num", HOFFSET(rec_t, num), file ? H5T_IEEE_F64BE : H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "names", HOFFSET(rec_t, names), an);
    if (file)
        H5Tpack(t);
    hid_t ids[] = {s, vi, vd, fs, pt, arr, ne, kv, vc, an};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        H5Tclose(ids[i]);
    return t;
}

static hid_t alt_type(void)
{
    hsize_t two = 2;
    hid_t   s   = vstr();
    hid_t   vi  = H5Tvlen_create(H5T_NATIVE_INT);
    hid_t   vd  = H5Tvlen_create(H5T_NATIVE_DOUBLE);
    hid_t   ne  = H5Tcreate(H5T_COMPOUND, sizeof(nest2_t));
    H5Tinsert(ne, "seq", HOFFSET(nest2_t, seq), vi);
    H5Tinsert(ne, "tag", HOFFSET(nest2_t, tag), s);
    H5Tinsert(ne, "id", HOFFSET(nest2_t, id), H5T_NATIVE_DOUBLE);
    hid_t an = H5Tarray_create2(s, 1, &two);
    hid_t t  = H5Tcreate(H5T_COMPOUND, sizeof(alt_t));
    H5Tinsert(t, "num", HOFFSET(alt_t, num), H5T_NATIVE_FLOAT);
    H5Tinsert(t, "names", HOFFSET(alt_t, names), an);
    H5Tinsert(t, "nest", HOFFSET(alt_t, nest), ne);
    H5Tinsert(t, "vi", HOFFSET(alt_t, vi), vd);
    H5Tinsert(t, "vs", HOFFSET(alt_t, vs), s);
    H5Tclose(s);
    H5Tclose(vi);
    H5Tclose(vd);
    H5Tclose(ne);
    H5Tclose(an);
    return t;
}

static hid_t sub_type(void)
{
    hid_t s  = vstr();
    hid_t kv = kv_type(0);
    hid_t vc = H5Tvlen_create(kv);
    hid_t t  = H5Tcreate(H5T_COMPOUND, sizeof(sub_t));
    H5Tinsert(t, "vc", HOFFSET(sub_t, vc), vc);
    H5Tinsert(t, "vs", HOFFSET(sub_t, vs), s);
    H5Tclose(s);
    H5Tclose(kv);
    H5Tclose(vc);
    return t;
}

/* ---- logging every value through the memory type ------------------------------------ */

typedef struct {
    char  *p;
    size_t len, cap;
} str_t;

static void put(str_t *o, const char *fmt, ...)
{
    char    tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof tmp)
        n = sizeof tmp - 1;
    if (o->len + (size_t)n + 1 > o->cap) {
        o->cap = (o->len + (size_t)n + 1) * 2;
        o->p   = realloc(o->p, o->cap);
    }
    memcpy(o->p + o->len, tmp, (size_t)n + 1);
    o->len += (size_t)n;
}

/* Appends the value at p of (native, memory) type t to o. */
static void log_value(str_t *o, hid_t t, const unsigned char *p)
{
    size_t size = H5Tget_size(t);
    switch (H5Tget_class(t)) {
        case H5T_INTEGER: {
            int       sign = H5Tget_sign(t) == H5T_SGN_2;
            long long v    = 0;
            if (size == 1)
                v = sign ? *(const signed char *)p : *p;
            else if (size == 2) {
                short s;
                memcpy(&s, p, 2);
                v = sign ? (long long)s : (long long)(unsigned short)s;
            }
            else if (size == 4) {
                int i;
                memcpy(&i, p, 4);
                v = sign ? (long long)i : (long long)(unsigned)i;
            }
            else
                memcpy(&v, p, 8);
            put(o, "%lld", v);
            break;
        }
        case H5T_FLOAT:
            if (size == 4) {
                float f;
                memcpy(&f, p, 4);
                put(o, "%.9g", (double)f);
            }
            else {
                double d;
                memcpy(&d, p, 8);
                put(o, "%.17g", d);
            }
            break;
        case H5T_STRING:
            if (H5Tis_variable_str(t) > 0) {
                char *s;
                memcpy(&s, p, sizeof s);
                put(o, s ? "\"%s\"" : "NULL", s);
            }
            else {
                put(o, "'");
                for (size_t i = 0; i < size; i++)
                    put(o, p[i] >= 32 && p[i] < 127 ? "%c" : "\\%02x", p[i]);
                put(o, "'");
            }
            break;
        case H5T_VLEN: {
            hvl_t v;
            memcpy(&v, p, sizeof v);
            hid_t  b  = H5Tget_super(t);
            size_t bs = H5Tget_size(b);
            put(o, "[%zu%s:", v.len, v.len && !v.p ? " NULL!" : "");
            for (size_t i = 0; v.p && i < v.len; i++) {
                put(o, i ? "," : "");
                log_value(o, b, (const unsigned char *)v.p + i * bs);
            }
            put(o, "]");
            H5Tclose(b);
            break;
        }
        case H5T_ARRAY: {
            hid_t  b  = H5Tget_super(t);
            size_t bs = H5Tget_size(b);
            put(o, "(");
            for (size_t i = 0; i < size / bs; i++) {
                put(o, i ? "," : "");
                log_value(o, b, p + i * bs);
            }
            put(o, ")");
            H5Tclose(b);
            break;
        }
        case H5T_COMPOUND: {
            int nm = H5Tget_nmembers(t);
            put(o, "{");
            for (int i = 0; i < nm; i++) {
                char *name = H5Tget_member_name(t, (unsigned)i);
                hid_t mt   = H5Tget_member_type(t, (unsigned)i);
                put(o, "%s%s=", i ? " " : "", name);
                log_value(o, mt, p + H5Tget_member_offset(t, (unsigned)i));
                H5Tclose(mt);
                H5free_memory(name);
            }
            put(o, "}");
            break;
        }
        default:
            put(o, "?class%d", (int)H5Tget_class(t));
    }
}

/* LOGs n elements of t at buf, one line each (long lines are split: LOG's line limit). */
static void log_elems(const char *what, hid_t t, const void *buf, size_t n)
{
    size_t size = H5Tget_size(t);
    for (size_t i = 0; i < n; i++) {
        str_t o = {0};
        log_value(&o, t, (const unsigned char *)buf + i * size);
        for (size_t at = 0; at < o.len; at += 900)
            LOG("%s[%zu]%s %.900s", what, i, at ? "+" : "", o.p + at);
        free(o.p);
    }
}

static void log_type(const char *what, hid_t obj_type, hid_t expect)
{
    LOG("%s: class=%d size=%zu nmembers=%d equal=%d", what, (int)H5Tget_class(obj_type), H5Tget_size(obj_type),
        H5Tget_nmembers(obj_type), (int)H5Tequal(obj_type, expect));
}

/* Reads with t (n elements in a simple space of n) and logs, then reclaims. */
static void read_log(const char *what, hid_t obj, int attr, hid_t t, hid_t mspace, hid_t fspace, size_t n)
{
    size_t         size = H5Tget_size(t);
    unsigned char *buf  = calloc(n ? n : 1, size);
    herr_t         rc   = attr ? H5Aread(obj, t, buf) : H5Dread(obj, t, mspace, fspace, H5P_DEFAULT, buf);
    LOG("%s read %s", what, RC(rc));
    if (rc >= 0) {
        log_elems(what, t, buf, n);
        hsize_t dn = n;
        hid_t   sp = H5Screate_simple(1, &dn, NULL);
        LOG("%s reclaim %s", what, RC(H5Treclaim(t, sp, H5P_DEFAULT, buf)));
        H5Sclose(sp);
    }
    free(buf);
}

/* ---- data -------------------------------------------------------------------------- */

static char   g_strs[N][4][32];
static int    g_ints[N][5];
static double g_dbls[N][3];
static short  g_shorts[N][4];
static kv_t   g_kvs[N][3];

static void fill_recs(rec_t *w, int gen)
{
    memset(w, 0, sizeof(rec_t) * N);
    for (int i = 0; i < N; i++) {
        snprintf(g_strs[i][0], 32, "vs-%d-%d", gen, i);
        snprintf(g_strs[i][1], 32, "tag%d", i * (gen + 1));
        snprintf(g_strs[i][2], 32, "kv name %d/%d", gen, i);
        snprintf(g_strs[i][3], 32, "n%d", i + gen);
        for (int k = 0; k < 5; k++)
            g_ints[i][k] = (i + 1) * 1000 * (gen + 1) - k * 7;
        for (int k = 0; k < 3; k++)
            g_dbls[i][k] = i / 7.0 + k * 1e10 + gen;
        for (int k = 0; k < 4; k++)
            g_shorts[i][k] = (short)(-300 * i + k + gen);
        for (int k = 0; k < 3; k++) {
            g_kvs[i][k].k    = i * 10 + k + gen;
            g_kvs[i][k].name = (k == 1 && i == 2) ? NULL : g_strs[i][2];
        }
        w[i].vs      = i == 3 ? NULL : g_strs[i][0];
        w[i].vi.len  = (size_t)((i + gen) % 6);
        w[i].vi.p    = w[i].vi.len ? g_ints[i] : NULL;
        w[i].vd.len  = (size_t)(i % 4);
        w[i].vd.p    = w[i].vd.len ? g_dbls[i] : NULL;
        if (i == 5)
            memcpy(w[i].fs, "full8chr", 8); /* no terminator: the whole fixed string */
        else
            snprintf(w[i].fs, sizeof w[i].fs, "f%d", i + gen);
        w[i].arr[0]  = (pt_t){i, 0.5f * (float)i};
        w[i].arr[1]  = (pt_t){-i - gen, 1e6f + (float)i};
        w[i].nest.id = 70000 + i + gen;
        w[i].nest.tag      = i == 1 ? NULL : g_strs[i][1];
        w[i].nest.seq.len  = (size_t)((i + 1) % 5);
        w[i].nest.seq.p    = w[i].nest.seq.len ? g_shorts[i] : NULL;
        w[i].vc.len        = (size_t)(i % 3 + (gen & 1));
        w[i].vc.p          = w[i].vc.len ? g_kvs[i] : NULL;
        w[i].num           = 1.0 / (i + 3) + gen;
        w[i].names[0]      = g_strs[i][3];
        w[i].names[1]      = i == 4 ? NULL : g_strs[i][1];
    }
}

/* ---- scenarios ---------------------------------------------------------------------- */

static void datasets(hid_t f, hid_t ft, hid_t mt, hid_t at, hid_t st)
{
    hsize_t n = N;
    hid_t   s = H5Screate_simple(1, &n, NULL);
    hid_t   d = H5Dcreate2(f, "recs", ft, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("create %s", RC(d));
    hid_t dt = H5Dget_type(d);
    log_type("dataset type", dt, ft);
    H5Tclose(dt);
    rec_t w[N];
    fill_recs(w, 0);
    LOG("write all %s", RC(H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, w)));
    read_log("all", d, 0, mt, H5S_ALL, H5S_ALL, N);
    read_log("alt", d, 0, at, H5S_ALL, H5S_ALL, N);
    read_log("sub", d, 0, st, H5S_ALL, H5S_ALL, N);

    /* Member subset (reordered, converted) written to points: the rest keep theirs. */
    alt_t   aw[2];
    double  dv[2][3] = {{1.5, -2.25, 3e100}, {0, 0, 0}};
    int     sq[2][2] = {{-7, 32767}, {1, 2}};
    char   *nm0[2]   = {"alt-a", NULL};
    memset(aw, 0, sizeof aw);
    for (int i = 0; i < 2; i++) {
        aw[i].num         = 2.5f + (float)i;
        aw[i].names[0]    = nm0[i];
        aw[i].names[1]    = "second";
        aw[i].nest.seq.len = (size_t)(2 - i);
        aw[i].nest.seq.p  = sq[i];
        aw[i].nest.tag    = i ? "tag-alt" : NULL;
        aw[i].nest.id     = 12345.75 * (i + 1); /* truncated to int */
        aw[i].vi.len      = (size_t)(3 * (1 - i));
        aw[i].vi.p        = aw[i].vi.len ? dv[i] : NULL;
        aw[i].vs          = i ? NULL : "alt vs";
    }
    hsize_t pts[2] = {4, 0}, two = 2;
    hid_t   fs     = H5Scopy(s);
    H5Sselect_elements(fs, H5S_SELECT_SET, 2, pts);
    hid_t ms2 = H5Screate_simple(1, &two, NULL);
    LOG("write alt points %s", RC(H5Dwrite(d, at, ms2, fs, H5P_DEFAULT, aw)));
    read_log("after alt", d, 0, mt, H5S_ALL, H5S_ALL, N);

    /* Rewrite elements 1..2 with new data (old vlen data replaced), full type. */
    rec_t w2[N];
    fill_recs(w2, 1);
    hsize_t start = 1, cnt = 2;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &cnt, NULL);
    LOG("rewrite slab %s", RC(H5Dwrite(d, mt, ms2, fs, H5P_DEFAULT, w2 + 3)));
    read_log("after rewrite", d, 0, mt, H5S_ALL, H5S_ALL, N);

    /* Subset write of sub_t (vlen of compound with vlen inside) through a memory
     * selection scattered in a larger buffer. */
    sub_t   sw[5];
    kv_t    kvs[2] = {{-1, "minus one"}, {-2, NULL}};
    memset(sw, 0, sizeof sw);
    sw[1].vc.len = 2;
    sw[1].vc.p   = kvs;
    sw[1].vs     = "sub-1";
    sw[3].vs     = "sub-3";
    hsize_t five = 5, mstart = 1, mstride = 2, mcount = 2;
    hid_t   ms5  = H5Screate_simple(1, &five, NULL);
    H5Sselect_hyperslab(ms5, H5S_SELECT_SET, &mstart, &mstride, &mcount, NULL);
    hsize_t fstart = 2, fstride = 3;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &fstart, &fstride, &mcount, NULL);
    LOG("write sub scattered %s", RC(H5Dwrite(d, st, ms5, fs, H5P_DEFAULT, sw)));
    read_log("after sub", d, 0, mt, H5S_ALL, H5S_ALL, N);

    /* Reads through selections: hyperslab into a scattered memory selection (the other
     * memory elements keep the caller's values: zero here), points out of order. */
    {
        alt_t ar[5];
        memset(ar, 0, sizeof ar);
        herr_t rc = H5Dread(d, at, ms5, fs, H5P_DEFAULT, ar);
        LOG("read alt scattered %s", RC(rc));
        log_elems("alt scattered", at, ar, 5);
        H5Treclaim(at, ms5, H5P_DEFAULT, ar);
    }
    hsize_t pts3[3] = {5, 1, 3}, three = 3;
    H5Sselect_elements(fs, H5S_SELECT_SET, 3, pts3);
    hid_t ms3 = H5Screate_simple(1, &three, NULL);
    read_log("points", d, 0, mt, ms3, fs, 3);
    read_log("points sub", d, 0, st, ms3, fs, 3);

    /* H5Dvlen_get_buf_size counts the vlen data as the memory type holds it. */
    hsize_t size = 0;
    { /* the call before the LOG: argument evaluation order is unspecified */
        herr_t brc = H5Dvlen_get_buf_size(d, mt, s, &size);
        LOG("buf_size mt %s %llu", RC(brc), (unsigned long long)size);
    }
    size = 0;
    { /* the call before the LOG: argument evaluation order is unspecified */
        herr_t brc = H5Dvlen_get_buf_size(d, at, s, &size);
        LOG("buf_size alt %s %llu", RC(brc), (unsigned long long)size);
    }
    size = 0;
    { /* the call before the LOG: argument evaluation order is unspecified */
        herr_t brc = H5Dvlen_get_buf_size(d, st, fs, &size);
        LOG("buf_size sub points %s %llu", RC(brc), (unsigned long long)size);
    }

    /* Attributes of the same types: full write, reads through every memory type, a
     * subset write. */
    hid_t a = H5Acreate2(d, "recs", ft, s, H5P_DEFAULT, H5P_DEFAULT);
    LOG("attr create %s", RC(a));
    hid_t atype = H5Aget_type(a);
    log_type("attr type", atype, ft);
    H5Tclose(atype);
    LOG("attr write %s", RC(H5Awrite(a, mt, w)));
    read_log("attr", a, 1, mt, 0, 0, N);
    read_log("attr alt", a, 1, at, 0, 0, N);
    read_log("attr sub", a, 1, st, 0, 0, N);
    {
        alt_t all[N];
        memset(all, 0, sizeof all);
        for (int i = 0; i < N; i++)
            all[i] = aw[i % 2];
        LOG("attr write alt %s", RC(H5Awrite(a, at, all)));
        read_log("attr after alt", a, 1, mt, 0, 0, N);
        LOG("attr rewrite %s", RC(H5Awrite(a, mt, w2)));
        read_log("attr after rewrite", a, 1, mt, 0, 0, N);
    }
    H5Aclose(a);
    /* A scalar attribute of a vlen of the compound. */
    {
        hid_t vt = H5Tvlen_create(ft), vm = H5Tvlen_create(mt), sc = H5Screate(H5S_SCALAR);
        hid_t a2 = H5Acreate2(d, "vlen of recs", vt, sc, H5P_DEFAULT, H5P_DEFAULT);
        hvl_t v  = {3, w2};
        LOG("vlen attr write %s", RC(H5Awrite(a2, vm, &v)));
        read_log("vlen attr", a2, 1, vm, 0, 0, 1);
        H5Aclose(a2);
        H5Sclose(sc);
        H5Tclose(vt);
        H5Tclose(vm);
    }
    H5Sclose(ms3);
    H5Sclose(ms5);
    H5Sclose(ms2);
    H5Sclose(fs);
    H5Dclose(d);
    H5Sclose(s);
}

/* Fill values of variable-length types. */
static void fills(hid_t f, hid_t ft, hid_t mt, hid_t at, hid_t st)
{
    hsize_t n = 4, maxd = H5S_UNLIMITED, chunk = 3;
    hid_t   s  = H5Screate_simple(1, &n, &maxd);
    hid_t   vs = vstr();
    /* vlen string, chunked + extendible, fill "bar" */
    {
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, &chunk);
        char *fv = "bar";
        LOG("set fill vstr %s", RC(H5Pset_fill_value(dcpl, vs, &fv)));
        hid_t d = H5Dcreate2(f, "fill_vstr", vs, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create fill_vstr %s", RC(d));
        read_log("vstr unwritten", d, 0, vs, H5S_ALL, H5S_ALL, 4);
        hsize_t one = 1, at1 = 2;
        hid_t   fs = H5Dget_space(d), m1 = H5Screate_simple(1, &one, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at1, NULL, &one, NULL);
        char *val = "written";
        LOG("write one %s", RC(H5Dwrite(d, vs, m1, fs, H5P_DEFAULT, &val)));
        H5Sclose(fs);
        read_log("vstr one written", d, 0, vs, H5S_ALL, H5S_ALL, 4);
        hsize_t n7 = 7;
        LOG("extend %s", RC(H5Dset_extent(d, &n7)));
        read_log("vstr extended", d, 0, vs, H5S_ALL, H5S_ALL, 7);
        /* A fixed-length string memory type: converted from the fill too. */
        hid_t fx = H5Tcopy(H5T_C_S1);
        H5Tset_size(fx, 6);
        read_log("vstr as fixed", d, 0, fx, H5S_ALL, H5S_ALL, 7);
        H5Tclose(fx);
        hsize_t size = 0;
        hid_t   sp   = H5Dget_space(d);
        { /* the call before the LOG: argument evaluation order is unspecified */
            herr_t brc = H5Dvlen_get_buf_size(d, vs, sp, &size);
            LOG("buf_size vstr %s %llu", RC(brc), (unsigned long long)size);
        }
        H5Sclose(sp);
        H5Sclose(m1);
        H5Dclose(d);
        H5Pclose(dcpl);
    }
    /* vlen string, contiguous, default fill: NULL */
    {
        hsize_t n3 = 3;
        hid_t   s3 = H5Screate_simple(1, &n3, NULL);
        hid_t   d  = H5Dcreate2(f, "nofill_vstr", vs, s3, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        read_log("vstr default fill", d, 0, vs, H5S_ALL, H5S_ALL, 3);
        H5Dclose(d);
        /* the empty string as fill */
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        char *fv   = "";
        H5Pset_fill_value(dcpl, vs, &fv);
        d = H5Dcreate2(f, "emptyfill_vstr", vs, s3, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        read_log("vstr empty fill", d, 0, vs, H5S_ALL, H5S_ALL, 3);
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(s3);
    }
    /* vlen sequence of int (stored short BE), fill {7,8,9}, read as int and as double */
    {
        hid_t vf = H5Tvlen_create(H5T_STD_I16BE), vm = H5Tvlen_create(H5T_NATIVE_INT),
              vdbl = H5Tvlen_create(H5T_NATIVE_DOUBLE);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, &chunk);
        int   fvals[3] = {7, 8, 9};
        hvl_t fv       = {3, fvals};
        LOG("set fill vseq %s", RC(H5Pset_fill_value(dcpl, vm, &fv)));
        hid_t d = H5Dcreate2(f, "fill_vseq", vf, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create fill_vseq %s", RC(d));
        read_log("vseq unwritten", d, 0, vm, H5S_ALL, H5S_ALL, 4);
        int     wv[2] = {-1, -2};
        hvl_t   w     = {2, wv};
        hsize_t one = 1, at0 = 0;
        hid_t   fs = H5Dget_space(d), m1 = H5Screate_simple(1, &one, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at0, NULL, &one, NULL);
        LOG("write one %s", RC(H5Dwrite(d, vm, m1, fs, H5P_DEFAULT, &w)));
        H5Sclose(fs);
        hsize_t n5 = 5;
        LOG("extend %s", RC(H5Dset_extent(d, &n5)));
        read_log("vseq extended", d, 0, vm, H5S_ALL, H5S_ALL, 5);
        read_log("vseq as double", d, 0, vdbl, H5S_ALL, H5S_ALL, 5);
        hid_t p = H5Dget_create_plist(d);
        hvl_t got = {0, NULL};
        LOG("plist fill %s", RC(H5Pget_fill_value(p, vm, &got)));
        log_elems("plist fill", vm, &got, 1);
        hid_t sc = H5Screate(H5S_SCALAR);
        H5Treclaim(vm, sc, H5P_DEFAULT, &got);
        H5Sclose(sc);
        H5Pclose(p);
        H5Sclose(m1);
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Tclose(vf);
        H5Tclose(vm);
        H5Tclose(vdbl);
    }
    /* compound with vlen members, fill = a whole record; partial writes, subset types */
    {
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, &chunk);
        rec_t fr[N];
        fill_recs(fr, 3);
        LOG("set fill rec %s", RC(H5Pset_fill_value(dcpl, mt, &fr[2])));
        hid_t d = H5Dcreate2(f, "fill_rec", ft, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create fill_rec %s", RC(d));
        read_log("rec unwritten", d, 0, mt, H5S_ALL, H5S_ALL, 4);
        read_log("rec unwritten alt", d, 0, at, H5S_ALL, H5S_ALL, 4);
        /* A member subset written to an unwritten element: the others are the fill's. */
        sub_t   sw = {{0, NULL}, "only vs"};
        hsize_t one = 1, at1 = 1;
        hid_t   fs = H5Dget_space(d), m1 = H5Screate_simple(1, &one, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at1, NULL, &one, NULL);
        LOG("write sub into unwritten %s", RC(H5Dwrite(d, st, m1, fs, H5P_DEFAULT, &sw)));
        rec_t w[N];
        fill_recs(w, 0);
        hsize_t at3 = 3;
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at3, NULL, &one, NULL);
        LOG("write full one %s", RC(H5Dwrite(d, mt, m1, fs, H5P_DEFAULT, &w[5])));
        H5Sclose(fs);
        hsize_t n6 = 6;
        LOG("extend %s", RC(H5Dset_extent(d, &n6)));
        read_log("rec extended", d, 0, mt, H5S_ALL, H5S_ALL, 6);
        read_log("rec extended sub", d, 0, st, H5S_ALL, H5S_ALL, 6);
        hsize_t size = 0;
        hid_t   sp   = H5Dget_space(d);
        { /* the call before the LOG: argument evaluation order is unspecified */
            herr_t brc = H5Dvlen_get_buf_size(d, mt, sp, &size);
            LOG("buf_size rec %s %llu", RC(brc), (unsigned long long)size);
        }
        H5Sclose(sp);
        H5Sclose(m1);
        H5Dclose(d);
        H5Pclose(dcpl);
    }
    /* fill time never is refused for vlen types; alloc time early with a vlen fill */
    {
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        char *fv   = "early";
        H5Pset_fill_value(dcpl, vs, &fv);
        H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
        hsize_t n3 = 3;
        hid_t   s3 = H5Screate_simple(1, &n3, NULL);
        hid_t   d  = H5Dcreate2(f, "early_vstr", vs, s3, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create early %s", RC(d));
        read_log("vstr early", d, 0, vs, H5S_ALL, H5S_ALL, 3);
        H5Dclose(d);
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
        d = H5Dcreate2(f, "never_vstr", vs, s3, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create fill time never %s", RC(d));
        if (d >= 0)
            H5Dclose(d);
        H5Sclose(s3);
        H5Pclose(dcpl);
    }
    H5Tclose(vs);
    H5Sclose(s);
}

/* After reopening: everything again from a new handle. */
static void reopened(hid_t f, hid_t mt, hid_t at, hid_t st)
{
    hid_t d = H5Dopen2(f, "recs", H5P_DEFAULT);
    LOG("reopen %s", RC(d));
    read_log("reopen", d, 0, mt, H5S_ALL, H5S_ALL, N);
    read_log("reopen alt", d, 0, at, H5S_ALL, H5S_ALL, N);
    hid_t a = H5Aopen(d, "recs", H5P_DEFAULT);
    read_log("reopen attr", a, 1, mt, 0, 0, N);
    H5Aclose(a);
    H5Dclose(d);
    hid_t vs = vstr();
    d        = H5Dopen2(f, "fill_vstr", H5P_DEFAULT);
    read_log("reopen vstr", d, 0, vs, H5S_ALL, H5S_ALL, 7);
    hsize_t n2 = 2, n9 = 9;
    LOG("shrink %s", RC(H5Dset_extent(d, &n2))); /* cuts off "written" at [2] */
    LOG("extend again %s", RC(H5Dset_extent(d, &n9)));
    read_log("reopen vstr extended", d, 0, vs, H5S_ALL, H5S_ALL, 9);
    H5Dclose(d);
    d = H5Dopen2(f, "fill_rec", H5P_DEFAULT);
    read_log("reopen rec", d, 0, mt, H5S_ALL, H5S_ALL, 6);
    read_log("reopen rec sub", d, 0, st, H5S_ALL, H5S_ALL, 6);
    H5Dclose(d);
    H5Tclose(vs);
}

/* A counting vlen allocator (H5Pset_vlen_mem_manager): reads allocate through it, as
 * natively, one block per string / non-empty sequence. */
typedef struct {
    size_t calls, bytes;
} counter_t;

static void *count_alloc(size_t size, void *info)
{
    counter_t *c = info;
    c->calls++;
    c->bytes += size;
    return malloc(size);
}

static void count_free(void *p, void *info)
{
    counter_t *c = info;
    c->calls += 1000000; /* frees counted apart */
    free(p);
}

static void allocators(hid_t f, hid_t mt, hid_t at)
{
    hid_t     d = H5Dopen2(f, "recs", H5P_DEFAULT);
    counter_t c = {0, 0};
    hid_t     dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_vlen_mem_manager(dxpl, count_alloc, &c, count_free, &c);
    hid_t types[2] = {mt, at};
    for (int k = 0; k < 2; k++) {
        unsigned char *buf = calloc(N, H5Tget_size(types[k]));
        c.calls = c.bytes = 0;
        herr_t rc = H5Dread(d, types[k], H5S_ALL, H5S_ALL, dxpl, buf);
        LOG("allocator read %d %s: %zu allocations, %zu bytes", k, RC(rc), c.calls, c.bytes);
        hsize_t n = N;
        hid_t   s = H5Screate_simple(1, &n, NULL);
        c.calls   = 0;
        herr_t frc = H5Treclaim(types[k], s, dxpl, buf); /* before LOG: evaluation order */
        LOG("allocator reclaim %s: %zu frees", RC(frc), c.calls / 1000000);
        H5Sclose(s);
        free(buf);
    }
    H5Pclose(dxpl);
    H5Dclose(d);
}

/* Ragged data: a vlen of vlen of int, 2-D, with a deflate filter, hyperslab writes. */
static void ragged(hid_t f)
{
    hid_t   in = H5Tvlen_create(H5T_NATIVE_INT), out = H5Tvlen_create(in);
    hid_t   fin = H5Tvlen_create(H5T_STD_I64BE), fout = H5Tvlen_create(fin);
    hsize_t dims[2] = {3, 4}, chunk[2] = {2, 2};
    hid_t   s    = H5Screate_simple(2, dims, NULL);
    hid_t   dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    H5Pset_deflate(dcpl, 6);
    hid_t d = H5Dcreate2(f, "ragged", fout, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    LOG("ragged create %s", RC(d));
    int   vals[6] = {1, -2, 3, -4, 5, 2147483647};
    hvl_t inner[4] = {{0, NULL}, {1, vals}, {2, vals + 1}, {3, vals + 3}};
    hvl_t w[6];
    for (int i = 0; i < 6; i++) {
        w[i].len = (size_t)(i % 4);
        w[i].p   = w[i].len ? inner + (i % 2) : NULL;
    }
    hsize_t start[2] = {1, 1}, cnt[2] = {2, 3};
    hid_t   fs = H5Scopy(s), ms = H5Screate_simple(2, cnt, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, cnt, NULL);
    LOG("ragged write %s", RC(H5Dwrite(d, out, ms, fs, H5P_DEFAULT, w)));
    read_log("ragged", d, 0, out, H5S_ALL, H5S_ALL, 12);
    read_log("ragged slab", d, 0, out, ms, fs, 6);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(s);
    H5Tclose(fout);
    H5Tclose(fin);
    H5Tclose(out);
    H5Tclose(in);
}

/* A memory type with members the file type lacks (ignored on write, the caller's values
 * kept on read), a scalar dataset, and a never-written attribute and dataset read through
 * member subsets. */
typedef struct {
    int   extra;
    char *vs;
    hvl_t more; /* of int: not in the file type */
    double num;
} super_t;

static void supersets(hid_t f, hid_t ft, hid_t at, hid_t st)
{
    hid_t s  = vstr();
    hid_t vi = H5Tvlen_create(H5T_NATIVE_INT);
    hid_t t  = H5Tcreate(H5T_COMPOUND, sizeof(super_t));
    H5Tinsert(t, "extra", HOFFSET(super_t, extra), H5T_NATIVE_INT);
    H5Tinsert(t, "vs", HOFFSET(super_t, vs), s);
    H5Tinsert(t, "more", HOFFSET(super_t, more), vi);
    H5Tinsert(t, "num", HOFFSET(super_t, num), H5T_NATIVE_DOUBLE);
    hid_t sc = H5Screate(H5S_SCALAR);
    hid_t d  = H5Dcreate2(f, "scalar_rec", ft, sc, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("scalar create %s", RC(d));
    read_log("scalar unwritten sub", d, 0, st, H5S_ALL, H5S_ALL, 1);
    read_log("scalar unwritten alt", d, 0, at, H5S_ALL, H5S_ALL, 1);
    int     more[2] = {5, 6};
    super_t w       = {77, "super vs", {2, more}, 6.25};
    LOG("scalar write superset %s", RC(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &w)));
    super_t r;
    memset(&r, 0, sizeof r);
    r.extra = -9;
    herr_t rc = H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &r);
    LOG("scalar read superset %s", RC(rc));
    log_elems("scalar superset", t, &r, 1);
    if (rc >= 0)
        H5Treclaim(t, sc, H5P_DEFAULT, &r);
    read_log("scalar alt", d, 0, at, H5S_ALL, H5S_ALL, 1);
    hid_t a = H5Acreate2(d, "unwritten", ft, sc, H5P_DEFAULT, H5P_DEFAULT);
    read_log("attr unwritten sub", a, 1, st, 0, 0, 1);
    read_log("attr unwritten alt", a, 1, at, 0, 0, 1);
    LOG("attr write superset %s", RC(H5Awrite(a, t, &w)));
    read_log("attr superset", a, 1, t, 0, 0, 1);
    read_log("attr superset alt", a, 1, at, 0, 0, 1);
    H5Aclose(a);
    H5Dclose(d);
    H5Sclose(sc);
    H5Tclose(t);
    H5Tclose(vi);
    H5Tclose(s);
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    g_log   = L;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    LOG("file create %s", RC(f));
    hid_t ft = rec_type(1), mt = rec_type(0), at = alt_type(), st = sub_type();
    LOG("types: file %zu mem %zu alt %zu sub %zu", H5Tget_size(ft), H5Tget_size(mt), H5Tget_size(at),
        H5Tget_size(st));
    datasets(f, ft, mt, at, st);
    fills(f, ft, mt, at, st);
    allocators(f, mt, at);
    ragged(f);
    supersets(f, ft, at, st);
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDWR, fapl);
    LOG("file reopen %s", RC(f));
    reopened(f, mt, at, st);
    H5Fclose(f);
    H5Tclose(ft);
    H5Tclose(mt);
    H5Tclose(at);
    H5Tclose(st);
}

int main(int argc, char **argv)
{
    return run_compared(argc > 1 ? argv[1] : ".", "test_compounds", run, 200, NULL);
}
