/* compound_model.h — test_compounds.c's memory structs, their HDF5 types (memory and
 * file), the data every scenario writes (fill_recs), and the logger that walks a memory
 * type and LOGs every value (log_value), so the comparison with native covers every byte.
 * Included by test_compounds.c only: its static functions are that program's.
 */
#ifndef TESSERA_COMPOUND_MODEL_H
#define TESSERA_COMPOUND_MODEL_H

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

#endif
