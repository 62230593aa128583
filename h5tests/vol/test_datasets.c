/* test_datasets — dataset create/read/write/extent/get compared with native HDF5.
 *
 * Every scenario runs twice in this one process: on a native HDF5 file and on a tessera
 * container, the connector chosen per file by the fapl (H5Pset_vol with the connector
 * registered by name; HDF5_PLUGIN_PATH must point at the plugin).  Each scenario appends
 * everything it observes — every byte read, return codes, dims, dcpl properties — to a
 * log; the two logs must be identical byte for byte.  Failures that must happen (out of
 * extent, mismatched counts) are logged as their sign, so "fails cleanly" is compared too.
 *
 *   test_datasets            exits 0 only if every scenario matched
 */
#include <hdf5.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- observation log */
typedef struct {
    unsigned char *p;
    size_t         n, cap;
} log_t;

static void log_b(log_t *L, const void *p, size_t n)
{
    if (L->n + n > L->cap) {
        L->cap = (L->n + n) * 2 + 1024;
        L->p   = realloc(L->p, L->cap);
        if (!L->p)
            abort();
    }
    memcpy(L->p + L->n, p, n);
    L->n += n;
}
static void log_i(log_t *L, long long v) { log_b(L, &v, sizeof v); }

static int g_failed = 0, g_passed = 0;
static const char *g_conn = "";   /* connector of the current run, for messages */
static hsize_t     g_storage[2];  /* storage sizes seen by the sparse scenario: native, tessera */
static hsize_t     g_reported[2]; /* what H5Dget_storage_size said there: native, tessera */
static int         g_run = 0;     /* 0 native, 1 tessera */

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            printf("  [%s] %s:%d: %s failed\n", g_conn, __FILE__, __LINE__, #cond);            \
            g_failed++;                                                                       \
        }                                                                                     \
    } while (0)

/* Reads into a poisoned buffer and logs the outcome and every byte. */
static void rd(log_t *L, hid_t ds, hid_t mt, hid_t ms, hid_t fs, void *buf, size_t nbytes)
{
    herr_t r;
    memset(buf, 0xA5, nbytes);
    H5E_BEGIN_TRY { r = H5Dread(ds, mt, ms, fs, H5P_DEFAULT, buf); } H5E_END_TRY
    log_i(L, r >= 0);
    log_b(L, buf, nbytes);
}
static void wr(log_t *L, hid_t ds, hid_t mt, hid_t ms, hid_t fs, const void *buf)
{
    herr_t r;
    H5E_BEGIN_TRY { r = H5Dwrite(ds, mt, ms, fs, H5P_DEFAULT, buf); } H5E_END_TRY
    log_i(L, r >= 0);
}
static void log_dims(log_t *L, hid_t ds)
{
    hid_t   s = H5Dget_space(ds);
    hsize_t d[8] = {0}, m[8] = {0};
    int     r = H5Sget_simple_extent_dims(s, d, m);
    log_i(L, r);
    log_b(L, d, sizeof d);
    log_b(L, m, sizeof m);
    log_i(L, H5Sget_select_npoints(s));
    H5Sclose(s);
}

static hid_t mk_dcpl(int rank, const hsize_t *chunk)
{
    hid_t p = H5Pcreate(H5P_DATASET_CREATE);
    if (chunk)
        H5Pset_chunk(p, rank, chunk);
    return p;
}
static hid_t space2(hsize_t a, hsize_t b)
{
    hsize_t d[2] = {a, b};
    return H5Screate_simple(2, d, NULL);
}
static unsigned g_seed = 12345;
static unsigned rnd(void) { return g_seed = g_seed * 1103515245u + 12345u, (g_seed >> 8) & 0xffffff; }

/* ---------------------------------------------------------------- scenarios */

/* Every integer/float type, LE and BE, chunked and contiguous: fill before write, whole
 * writes from native memory, reads as stored and converted to double and to int16. */
static void sc_types(hid_t f, log_t *L)
{
    hid_t   types[] = {H5T_STD_I8LE,  H5T_STD_I16LE, H5T_STD_I32LE, H5T_STD_I64LE, H5T_STD_U8LE,
                     H5T_STD_U16LE, H5T_STD_U32LE, H5T_STD_U64LE, H5T_IEEE_F32LE, H5T_IEEE_F64LE,
                     H5T_STD_I32BE, H5T_STD_U16BE, H5T_IEEE_F64BE, H5T_IEEE_F32BE};
    hsize_t chunk[2] = {7, 11};
    double  src[20 * 30], dbuf[20 * 30];
    int16_t sbuf[20 * 30];
    unsigned char raw[20 * 30 * 8];
    for (int i = 0; i < 600; i++)
        src[i] = (i % 97) * 1.5 - 20;
    for (size_t t = 0; t < sizeof types / sizeof *types; t++)
        for (int chunked = 0; chunked < 2; chunked++) {
            char name[32];
            snprintf(name, sizeof name, "t%zu_%d", t, chunked);
            hid_t sp = space2(20, 30), dcpl = mk_dcpl(2, chunked ? chunk : NULL);
            hid_t ds = H5Dcreate2(f, name, types[t], sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
            CHECK(ds >= 0);
            size_t es = H5Tget_size(types[t]);
            rd(L, ds, types[t], H5S_ALL, H5S_ALL, raw, 600 * es);
            /* unsigned types: write values that fit */
            double vals[600];
            for (int i = 0; i < 600; i++)
                vals[i] = H5Tget_sign(types[t]) == H5T_SGN_NONE || H5Tget_class(types[t]) == H5T_FLOAT
                              ? (src[i] < 0 ? -src[i] : src[i]) : src[i];
            if (H5Tget_class(types[t]) == H5T_INTEGER)
                for (int i = 0; i < 600; i++)
                    vals[i] = (double)(long long)vals[i];
            wr(L, ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, vals);
            rd(L, ds, types[t], H5S_ALL, H5S_ALL, raw, 600 * es);
            rd(L, ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, dbuf, sizeof dbuf);
            rd(L, ds, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, sbuf, sizeof sbuf);
            hid_t dt = H5Dget_type(ds);
            log_i(L, H5Tequal(dt, types[t]));
            H5Tclose(dt);
            H5Dclose(ds);
            H5Pclose(dcpl);
            H5Sclose(sp);
        }
}

/* Fill values: default and user, read before any write, after a partial write, after
 * reopening; plus the reported dcpl (layout, chunk dims, fill value). */
static void sc_fill(hid_t f, log_t *L)
{
    hsize_t chunk[2] = {4, 4};
    int32_t ifill = -7, ibuf[10 * 10];
    double  dfill = 2.5, dbuf[10 * 10];
    hid_t   sp    = space2(10, 10);
    hid_t   p1 = mk_dcpl(2, chunk), p2 = mk_dcpl(2, NULL);
    H5Pset_fill_value(p1, H5T_NATIVE_INT32, &ifill);
    H5Pset_fill_value(p2, H5T_NATIVE_DOUBLE, &dfill);
    hid_t a = H5Dcreate2(f, "fi", H5T_STD_I32BE, sp, H5P_DEFAULT, p1, H5P_DEFAULT);
    hid_t b = H5Dcreate2(f, "fd", H5T_IEEE_F64LE, sp, H5P_DEFAULT, p2, H5P_DEFAULT);
    rd(L, a, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, ibuf, sizeof ibuf);
    rd(L, b, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, dbuf, sizeof dbuf);
    rd(L, b, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, ibuf, sizeof ibuf);
    hid_t   fs = H5Dget_space(a);
    hsize_t st[2] = {3, 2}, cn[2] = {5, 3};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, st, NULL, cn, NULL);
    hsize_t n = 15;
    hid_t   ms = H5Screate_simple(1, &n, NULL);
    int32_t v[15];
    for (int i = 0; i < 15; i++)
        v[i] = i * 11;
    wr(L, a, H5T_NATIVE_INT32, ms, fs, v);
    rd(L, a, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, ibuf, sizeof ibuf);
    for (int k = 0; k < 2; k++) {
        hid_t   dcpl = H5Dget_create_plist(k ? b : a);
        hsize_t cd[2] = {0, 0};
        log_i(L, H5Pget_layout(dcpl));
        if (H5Pget_layout(dcpl) == H5D_CHUNKED)
            log_i(L, H5Pget_chunk(dcpl, 2, cd));
        log_b(L, cd, sizeof cd);
        H5D_fill_value_t fv;
        H5Pfill_value_defined(dcpl, &fv);
        log_i(L, fv);
        double x = 0;
        log_i(L, H5Pget_fill_value(dcpl, H5T_NATIVE_DOUBLE, &x) >= 0);
        log_b(L, &x, sizeof x);
        H5Pclose(dcpl);
    }
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(a);
    H5Dclose(b);
    H5Pclose(p1);
    H5Pclose(p2);
    H5Sclose(sp);
}

/* Deflate + shuffle (+ fletcher32): data round-trips and the filters are reported back. */
static void sc_filters(hid_t f, log_t *L)
{
    hsize_t chunk[2] = {16, 32};
    hid_t   sp = space2(100, 100), p = mk_dcpl(2, chunk);
    H5Pset_shuffle(p);
    H5Pset_deflate(p, 6);
    H5Pset_fletcher32(p);
    hid_t   ds = H5Dcreate2(f, "z", H5T_STD_I32LE, sp, H5P_DEFAULT, p, H5P_DEFAULT);
    static int32_t v[100 * 100], r[100 * 100];
    for (int i = 0; i < 10000; i++)
        v[i] = (i / 7) % 1000;
    wr(L, ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, v);
    rd(L, ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, r, sizeof r);
    hid_t dcpl = H5Dget_create_plist(ds);
    int   nf   = H5Pget_nfilters(dcpl);
    log_i(L, nf);
    for (int i = 0; i < nf; i++) {
        unsigned flags, cd[8] = {0}, cfg;
        size_t   nc = 8;
        char     nm[64];
        log_i(L, H5Pget_filter2(dcpl, (unsigned)i, &flags, &nc, cd, sizeof nm, nm, &cfg));
        log_i(L, (long long)nc);
        if (i == 1)
            log_i(L, cd[0]); /* deflate level */
    }
    H5Pclose(dcpl);
    H5Dclose(ds);
    H5Pclose(p);
    H5Sclose(sp);
}

/* maxdims and H5Dset_extent: grow, shrink, regrow (cut cells read as fill), bad sizes. */
static void sc_extent(hid_t f, log_t *L)
{
    hsize_t d[2] = {10, 20}, mx[2] = {H5S_UNLIMITED, 20}, chunk[2] = {4, 5};
    hid_t   sp = H5Screate_simple(2, d, mx), p = mk_dcpl(2, chunk);
    int32_t fill = 99;
    H5Pset_fill_value(p, H5T_NATIVE_INT32, &fill);
    hid_t   ds = H5Dcreate2(f, "ext", H5T_STD_I32LE, sp, H5P_DEFAULT, p, H5P_DEFAULT);
    static int32_t v[10 * 20], r[40 * 20];
    for (int i = 0; i < 200; i++)
        v[i] = i;
    wr(L, ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, v);
    hsize_t sizes[][2] = {{15, 20}, {5, 10}, {12, 20}, {40, 20}, {0, 0}, {7, 20}};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        herr_t e;
        H5E_BEGIN_TRY { e = H5Dset_extent(ds, sizes[k]); } H5E_END_TRY
        log_i(L, e >= 0);
        log_dims(L, ds);
        rd(L, ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, r, sizes[k][0] * sizes[k][1] * 4);
    }
    /* beyond max dims in the fixed dimension must fail */
    hsize_t bad[2] = {10, 21};
    herr_t  e;
    H5E_BEGIN_TRY { e = H5Dset_extent(ds, bad); } H5E_END_TRY
    log_i(L, e >= 0);
    log_dims(L, ds);
    /* unlimited dims without chunking must fail at create */
    hid_t ds2;
    H5E_BEGIN_TRY { ds2 = H5Dcreate2(f, "ext_contig", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT); }
    H5E_END_TRY
    log_i(L, ds2 >= 0);
    /* contiguous datasets cannot change extent */
    hid_t sp3 = space2(4, 4);
    hid_t ds3 = H5Dcreate2(f, "contig", H5T_STD_I32LE, sp3, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t small[2] = {2, 2};
    H5E_BEGIN_TRY { e = H5Dset_extent(ds3, small); } H5E_END_TRY
    log_i(L, e >= 0);
    H5Dclose(ds3);
    H5Sclose(sp3);
    H5Dclose(ds);
    H5Pclose(p);
    H5Sclose(sp);
}

/* Selections on both sides: all, none, strided hyperslabs, unions, points in random
 * order, H5S_BLOCK, memory hyperslabs/points; writes through each, reading all after. */
static void sc_selections(hid_t f, log_t *L, int chunked)
{
    enum { R = 40, C = 50 };
    hsize_t chunk[2] = {8, 8};
    hid_t   sp = space2(R, C), p = mk_dcpl(2, chunked ? chunk : NULL);
    hid_t   ds = H5Dcreate2(f, chunked ? "selc" : "sel", H5T_STD_I32LE, sp, H5P_DEFAULT, p, H5P_DEFAULT);
    static int32_t v[R * C], r[R * C], big[60 * 70];
    for (int i = 0; i < R * C; i++)
        v[i] = i * 3 + 1;
    wr(L, ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, v);
    hid_t fs = H5Dget_space(ds);
    hid_t mall = space2(R, C);

    /* strided hyperslab -> contiguous memory, and -> strided memory hyperslab of a bigger buffer */
    hsize_t st[2] = {1, 2}, sd[2] = {3, 4}, cn[2] = {5, 6}, bl[2] = {2, 1};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, st, sd, cn, bl);
    hsize_t n = (hsize_t)H5Sget_select_npoints(fs);
    hid_t   m1 = H5Screate_simple(1, &n, NULL);
    rd(L, ds, H5T_NATIVE_INT32, m1, fs, r, n * 4);
    rd(L, ds, H5T_NATIVE_INT32, H5S_BLOCK, fs, r, n * 4);
    hid_t   mb = space2(60, 70);
    hsize_t mst[2] = {2, 3}, msd[2] = {5, 3}, mcn[2] = {10, 6}, mbl[2] = {1, 1};
    H5Sselect_hyperslab(mb, H5S_SELECT_SET, mst, msd, mcn, mbl);
    rd(L, ds, H5T_NATIVE_INT32, mb, fs, big, sizeof big);
    rd(L, ds, H5T_NATIVE_DOUBLE, mb, fs, big, sizeof big); /* converted + scattered (buffer is 60*70*4 B) */

    /* union of overlapping hyperslabs (irregular) */
    hsize_t s1[2] = {2, 3}, c1[2] = {10, 20}, s2[2] = {8, 15}, c2[2] = {12, 30}, s3[2] = {30, 0}, c3[2] = {1, 50};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, s1, NULL, c1, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_OR, s2, NULL, c2, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_OR, s3, NULL, c3, NULL);
    n = (hsize_t)H5Sget_select_npoints(fs);
    log_i(L, (long long)n);
    H5Sclose(m1);
    m1 = H5Screate_simple(1, &n, NULL);
    rd(L, ds, H5T_NATIVE_INT32, m1, fs, r, n * 4);
    rd(L, ds, H5T_NATIVE_INT32, H5S_ALL, fs, r, sizeof r); /* mem = same selection in a R x C buffer */
    int32_t *w = malloc(n * 4);
    for (hsize_t i = 0; i < n; i++)
        w[i] = -(int32_t)i;
    wr(L, ds, H5T_NATIVE_INT32, m1, fs, w);
    rd(L, ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, r, sizeof r);
    /* union in memory, strided hyperslab in file: lockstep iterators */
    hid_t ms = space2(R, C);
    H5Sselect_hyperslab(ms, H5S_SELECT_SET, s1, NULL, c1, NULL);
    H5Sselect_hyperslab(ms, H5S_SELECT_OR, s2, NULL, c2, NULL);
    H5Sselect_hyperslab(ms, H5S_SELECT_OR, s3, NULL, c3, NULL);
    hsize_t fst[2] = {0, 0}, fcn[2] = {(hsize_t)n / 10, 10};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, fst, NULL, fcn, NULL);
    if ((hsize_t)H5Sget_select_npoints(fs) == n)
        rd(L, ds, H5T_NATIVE_INT32, ms, fs, r, sizeof r);
    free(w);

    /* points in random order, both directions */
    enum { NP = 300 };
    hsize_t coords[NP * 2];
    for (int i = 0; i < NP; i++) {
        coords[2 * i]     = rnd() % R;
        coords[2 * i + 1] = rnd() % C;
    }
    /* make them unique so write order does not matter */
    for (int i = 0; i < NP; i++)
        coords[2 * i + 1] = (hsize_t)((i * 7) % C), coords[2 * i] = (hsize_t)((i * 7) / C + (i % 3) * 10) % R;
    H5Sselect_elements(fs, H5S_SELECT_SET, NP, coords);
    hsize_t np = NP;
    H5Sclose(m1);
    m1 = H5Screate_simple(1, &np, NULL);
    rd(L, ds, H5T_NATIVE_INT32, m1, fs, r, NP * 4);
    int32_t pv[NP];
    for (int i = 0; i < NP; i++)
        pv[i] = 100000 + i;
    wr(L, ds, H5T_NATIVE_INT32, m1, fs, pv);
    rd(L, ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, r, sizeof r);
    /* point selection in memory, hyperslab in file */
    hsize_t mcoords[20 * 2];
    for (int i = 0; i < 20; i++)
        mcoords[2 * i] = (hsize_t)(19 - i), mcoords[2 * i + 1] = (hsize_t)(i * 2);
    H5Sselect_elements(ms, H5S_SELECT_SET, 20, mcoords);
    hsize_t pst[2] = {5, 5}, pcn[2] = {4, 5};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, pst, NULL, pcn, NULL);
    rd(L, ds, H5T_NATIVE_INT32, ms, fs, r, sizeof r);
    wr(L, ds, H5T_NATIVE_INT32, ms, fs, v);
    rd(L, ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, r, sizeof r);

    /* selection offsets (H5Soffset_simple; h5py broadcasts with them) on both sides */
    hssize_t foff[2] = {3, 7}, moff[2] = {1, 2};
    hsize_t  ost2[2] = {2, 1}, osd[2] = {4, 5}, ocn2[2] = {3, 4};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, ost2, osd, ocn2, NULL);
    H5Soffset_simple(fs, foff);
    rd(L, ds, H5T_NATIVE_INT32, H5S_BLOCK, fs, r, 12 * 4);
    wr(L, ds, H5T_NATIVE_INT32, H5S_BLOCK, fs, v);
    H5Sselect_elements(fs, H5S_SELECT_SET, 20, mcoords);
    H5Soffset_simple(fs, foff);
    H5Sselect_hyperslab(ms, H5S_SELECT_SET, pst, NULL, pcn, NULL);
    H5Soffset_simple(ms, moff);
    rd(L, ds, H5T_NATIVE_INT32, ms, fs, r, sizeof r);
    wr(L, ds, H5T_NATIVE_INT32, ms, fs, v); /* ms addresses the whole R x C memory space */
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, s1, NULL, c1, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_OR, s3, NULL, c3, NULL);
    hssize_t uoff[2] = {5, 0};
    H5Soffset_simple(fs, uoff);
    rd(L, ds, H5T_NATIVE_INT32, H5S_BLOCK, fs, r, (size_t)H5Sget_select_npoints(fs) * 4);
    rd(L, ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, r, sizeof r);
    hssize_t zero[2] = {0, 0};
    H5Soffset_simple(fs, zero);
    H5Soffset_simple(ms, zero);

    /* none on both sides */
    H5Sselect_none(fs);
    H5Sselect_none(ms);
    rd(L, ds, H5T_NATIVE_INT32, ms, fs, r, sizeof r);
    wr(L, ds, H5T_NATIVE_INT32, ms, fs, v);

    /* errors: out of extent, mismatched counts */
    hid_t   bigf = H5Scopy(fs); /* same extent, selection beyond it */
    hsize_t ost[2] = {R - 1, 0}, ocn[2] = {2, 2};
    H5Sselect_hyperslab(bigf, H5S_SELECT_SET, ost, NULL, ocn, NULL);
    hsize_t four = 4;
    hid_t   m4   = H5Screate_simple(1, &four, NULL);
    rd(L, ds, H5T_NATIVE_INT32, m4, bigf, r, 16);
    wr(L, ds, H5T_NATIVE_INT32, m4, bigf, v);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, pst, NULL, pcn, NULL); /* 20 elements vs 4 */
    rd(L, ds, H5T_NATIVE_INT32, m4, fs, r, 16);
    wr(L, ds, H5T_NATIVE_INT32, m4, fs, v);
    rd(L, ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, r, sizeof r);
    H5Sclose(m4);
    H5Sclose(bigf);
    H5Sclose(ms);
    H5Sclose(m1);
    H5Sclose(mb);
    H5Sclose(mall);
    H5Sclose(fs);
    H5Dclose(ds);
    H5Pclose(p);
    H5Sclose(sp);
}
static void sc_selections_contig(hid_t f, log_t *L) { sc_selections(f, L, 0); }
static void sc_selections_chunked(hid_t f, log_t *L) { sc_selections(f, L, 1); }

/* Compound data: full write, subset reads and writes (background buffers), LE<->BE. */
typedef struct { int32_t a; double b; } ab_t;
typedef struct { double b; } b_t;
typedef struct { int32_t a; } a_t;
static void sc_compound(hid_t f, log_t *L)
{
    hid_t ft = H5Tcreate(H5T_COMPOUND, 12);
    H5Tinsert(ft, "a", 0, H5T_STD_I32BE);
    H5Tinsert(ft, "b", 4, H5T_IEEE_F64LE);
    hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(ab_t));
    H5Tinsert(mt, "a", HOFFSET(ab_t, a), H5T_NATIVE_INT32);
    H5Tinsert(mt, "b", HOFFSET(ab_t, b), H5T_NATIVE_DOUBLE);
    hid_t mb = H5Tcreate(H5T_COMPOUND, sizeof(b_t));
    H5Tinsert(mb, "b", 0, H5T_NATIVE_DOUBLE);
    hid_t ma = H5Tcreate(H5T_COMPOUND, sizeof(a_t));
    H5Tinsert(ma, "a", 0, H5T_NATIVE_INT32);
    hsize_t n = 30, chunk = 8;
    hid_t   sp = H5Screate_simple(1, &n, NULL), p = mk_dcpl(1, &chunk);
    hid_t   ds = H5Dcreate2(f, "cmp", ft, sp, H5P_DEFAULT, p, H5P_DEFAULT);
    ab_t    v[30], r[30];
    b_t     rb[30];
    a_t     wa[30];
    memset(v, 0, sizeof v);
    for (int i = 0; i < 30; i++)
        v[i].a = i - 5, v[i].b = i * 0.25;
    wr(L, ds, mt, H5S_ALL, H5S_ALL, v);
    rd(L, ds, mt, H5S_ALL, H5S_ALL, r, sizeof r);
    rd(L, ds, mb, H5S_ALL, H5S_ALL, rb, sizeof rb);
    for (int i = 0; i < 30; i++)
        wa[i].a = 1000 + i;
    hid_t   fs = H5Dget_space(ds);
    hsize_t st = 3, sd = 2, cn = 10;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &st, &sd, &cn, NULL);
    hid_t m10 = H5Screate_simple(1, &cn, NULL);
    wr(L, ds, ma, m10, fs, wa); /* only 'a' changes, 'b' keeps the file values */
    rd(L, ds, mt, H5S_ALL, H5S_ALL, r, sizeof r);
    /* read subset into a partly filled buffer: the other member keeps memory values */
    for (int i = 0; i < 30; i++)
        r[i].a = 7, r[i].b = -1;
    herr_t e = H5Dread(ds, mb, H5S_ALL, H5S_ALL, H5P_DEFAULT, rb);
    log_i(L, e >= 0);
    log_b(L, rb, sizeof rb);
    H5Sclose(m10);
    H5Sclose(fs);
    H5Dclose(ds);
    H5Pclose(p);
    H5Sclose(sp);
    H5Tclose(ft);
    H5Tclose(mt);
    H5Tclose(ma);
    H5Tclose(mb);
}

/* Fixed-length strings: null-terminated file type, read as null-padded and shorter. */
static void sc_strings(hid_t f, log_t *L)
{
    hid_t ft = H5Tcopy(H5T_C_S1);
    H5Tset_size(ft, 8);
    H5Tset_strpad(ft, H5T_STR_NULLTERM);
    hid_t m12 = H5Tcopy(H5T_C_S1);
    H5Tset_size(m12, 12);
    H5Tset_strpad(m12, H5T_STR_NULLPAD);
    hid_t m4 = H5Tcopy(H5T_C_S1);
    H5Tset_size(m4, 4);
    hsize_t n  = 6;
    hid_t   sp = H5Screate_simple(1, &n, NULL);
    hid_t   ds = H5Dcreate2(f, "str", ft, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    char    w[6][12] = {"a", "hello", "sevench", "toolongstri", "", "xyz"};
    char    r12[6][12], r4[6][4], r8[6][8];
    wr(L, ds, m12, H5S_ALL, H5S_ALL, w);
    rd(L, ds, ft, H5S_ALL, H5S_ALL, r8, sizeof r8);
    rd(L, ds, m12, H5S_ALL, H5S_ALL, r12, sizeof r12);
    rd(L, ds, m4, H5S_ALL, H5S_ALL, r4, sizeof r4);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Tclose(ft);
    H5Tclose(m12);
    H5Tclose(m4);
}

/* H5Dread_multi / H5Dwrite_multi over two datasets of different types. */
static void sc_multi(hid_t f, log_t *L)
{
    hsize_t n  = 50;
    hid_t   sp = H5Screate_simple(1, &n, NULL);
    hid_t   ds[2];
    ds[0] = H5Dcreate2(f, "m0", H5T_STD_I16LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ds[1] = H5Dcreate2(f, "m1", H5T_IEEE_F32BE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int32_t     a[50];
    double      b[50];
    for (int i = 0; i < 50; i++)
        a[i] = i * 3, b[i] = i / 4.0;
    hid_t       mt[2] = {H5T_NATIVE_INT32, H5T_NATIVE_DOUBLE};
    hid_t       ms[2] = {H5S_ALL, H5S_ALL}, fss[2] = {H5S_ALL, H5S_ALL};
    const void *wb[2] = {a, b};
    herr_t      e;
    H5E_BEGIN_TRY { e = H5Dwrite_multi(2, ds, mt, ms, fss, H5P_DEFAULT, wb); } H5E_END_TRY
    log_i(L, e >= 0);
    int32_t ra[50];
    double  rb[50];
    memset(ra, 0, sizeof ra);
    memset(rb, 0, sizeof rb);
    void *rbuf[2] = {ra, rb};
    H5E_BEGIN_TRY { e = H5Dread_multi(2, ds, mt, ms, fss, H5P_DEFAULT, rbuf); } H5E_END_TRY
    log_i(L, e >= 0);
    log_b(L, ra, sizeof ra);
    log_b(L, rb, sizeof rb);
    H5Dclose(ds[0]);
    H5Dclose(ds[1]);
    H5Sclose(sp);
}

/* Scalar datasets, groups with intermediate creation, reopen by path. */
static void sc_misc(hid_t f, log_t *L)
{
    hid_t  sp = H5Screate(H5S_SCALAR);
    hid_t  ds = H5Dcreate2(f, "scalar", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    double x = 3.25, y = 0;
    rd(L, ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, &y, sizeof y);
    wr(L, ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, &x);
    rd(L, ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, &y, sizeof y);
    log_dims(L, ds);
    H5Dclose(ds);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hsize_t n = 5;
    hid_t   s1 = H5Screate_simple(1, &n, NULL);
    ds = H5Dcreate2(f, "g1/g2/d", H5T_STD_U8LE, s1, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    log_i(L, ds >= 0);
    unsigned char u[5] = {1, 2, 3, 4, 5}, ru[5];
    wr(L, ds, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, u);
    H5Dclose(ds);
    hid_t ds2;
    H5E_BEGIN_TRY { ds2 = H5Dcreate2(f, "g1/g2/d", H5T_STD_U8LE, s1, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT); }
    H5E_END_TRY
    log_i(L, ds2 >= 0);
    H5E_BEGIN_TRY { ds2 = H5Dcreate2(f, "nope/d", H5T_STD_U8LE, s1, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT); }
    H5E_END_TRY
    log_i(L, ds2 >= 0);
    hid_t g = H5Gopen2(f, "g1", H5P_DEFAULT);
    ds = H5Dopen2(g, "g2/d", H5P_DEFAULT);
    rd(L, ds, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, ru, sizeof ru);
    H5D_space_status_t ss;
    H5Dget_space_status(ds, &ss);
    log_i(L, ss != H5D_SPACE_STATUS_NOT_ALLOCATED);
    H5Dclose(ds);
    H5Gclose(g);
    H5Sclose(s1);
    H5Pclose(lcpl);
    H5Sclose(sp);
}

/* A large sparse dataset: a few scattered writes.  The allocated chunks are logged; the
 * bytes the file really grew by and H5Dget_storage_size are compared across connectors
 * after both runs (tessera must store and report less: docs/sparse.md), not logged. */
static void sc_sparse(hid_t f, log_t *L)
{
    hsize_t before = 0, after = 0;
    H5Fflush(f, H5F_SCOPE_LOCAL);
    H5Fget_filesize(f, &before);
    hsize_t chunk[2] = {100, 100};
    hid_t   sp = space2(1000, 1000), p = mk_dcpl(2, chunk);
    hid_t   ds = H5Dcreate2(f, "sparse", H5T_STD_I32LE, sp, H5P_DEFAULT, p, H5P_DEFAULT);
    hid_t   fs = H5Dget_space(ds);
    hsize_t coords[20];
    for (int i = 0; i < 10; i++)
        coords[2 * i] = (hsize_t)(i * 97 % 1000), coords[2 * i + 1] = (hsize_t)(i * 331 % 1000);
    H5Sselect_elements(fs, H5S_SELECT_SET, 10, coords);
    hsize_t ten = 10;
    hid_t   ms  = H5Screate_simple(1, &ten, NULL);
    int32_t v[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, r[10];
    wr(L, ds, H5T_NATIVE_INT32, ms, fs, v);
    H5Dflush(ds);
    rd(L, ds, H5T_NATIVE_INT32, ms, fs, r, sizeof r);
    hsize_t nchunks = 0;
    H5Dget_num_chunks(ds, H5S_ALL, &nchunks);
    log_i(L, (long long)nchunks);
    g_reported[g_run] = H5Dget_storage_size(ds);
    H5Fflush(f, H5F_SCOPE_LOCAL);
    H5Fget_filesize(f, &after);
    g_storage[g_run] = after - before;
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(ds);
    H5Pclose(p);
    H5Sclose(sp);
}

/* A union of small blocks far apart in a large dataset (the per-box path, not the
 * bounding box), 3-D, read and written in HDF5's row-major pairing order. */
static void sc_sparse_union(hid_t f, log_t *L)
{
    hsize_t d[3] = {20, 300, 400}, chunk[3] = {4, 64, 64};
    hid_t   sp = H5Screate_simple(3, d, NULL), p = mk_dcpl(3, chunk);
    hid_t   ds = H5Dcreate2(f, "sunion", H5T_STD_I16LE, sp, H5P_DEFAULT, p, H5P_DEFAULT);
    int16_t *v = malloc(20 * 300 * 400 * 2), *r = malloc(20 * 300 * 400 * 2);
    for (int i = 0; i < 20 * 300 * 400; i++)
        v[i] = (int16_t)(i * 7);
    wr(L, ds, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, v);
    hid_t   fs = H5Dget_space(ds);
    hsize_t s1[3] = {0, 0, 0}, c1[3] = {2, 3, 400}, s2[3] = {19, 290, 390}, c2[3] = {1, 10, 10};
    hsize_t s3[3] = {5, 100, 0}, c3[3] = {1, 1, 400}, s4[3] = {5, 100, 200}, c4[3] = {3, 2, 5};
    hsize_t s5[3] = {10, 0, 0}, c5[3] = {1, 300, 400};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, s1, NULL, c1, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_OR, s2, NULL, c2, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_OR, s3, NULL, c3, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_OR, s4, NULL, c4, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_OR, s5, NULL, c5, NULL);
    hsize_t n = (hsize_t)H5Sget_select_npoints(fs);
    log_i(L, (long long)n);
    hid_t m1 = H5Screate_simple(1, &n, NULL);
    rd(L, ds, H5T_NATIVE_INT16, m1, fs, r, n * 2);
    rd(L, ds, H5T_NATIVE_INT16, H5S_ALL, fs, r, 20 * 300 * 400 * 2);
    for (hsize_t i = 0; i < n; i++)
        v[i] = (int16_t)(-1 - (int)i);
    wr(L, ds, H5T_NATIVE_INT16, m1, fs, v);
    H5Sselect_all(fs);
    rd(L, ds, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, r, 20 * 300 * 400 * 2);
    free(v);
    free(r);
    H5Sclose(m1);
    H5Sclose(fs);
    H5Dclose(ds);
    H5Pclose(p);
    H5Sclose(sp);
}

/* Variable-length strings and sequences: unwritten cells, partial writes, contents
 * logged (pointers differ between runs, the values must not), memory reclaimed. */
static void log_str(log_t *L, const char *s) { s ? log_b(L, s, strlen(s) + 1) : log_i(L, -1); }
static void sc_vlen(hid_t f, log_t *L)
{
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, H5T_VARIABLE);
    hid_t   vt = H5Tvlen_create(H5T_NATIVE_INT32);
    hsize_t n = 6, chunk = 4, mx = H5S_UNLIMITED;
    hid_t   sp = H5Screate_simple(1, &n, &mx), p = mk_dcpl(1, &chunk);
    hid_t   ds = H5Dcreate2(f, "vstr", st, sp, H5P_DEFAULT, p, H5P_DEFAULT);
    hid_t   dv = H5Dcreate2(f, "vseq", vt, sp, H5P_DEFAULT, p, H5P_DEFAULT);
    char   *r[8];
    hvl_t   rv[8];
    const char *w[3] = {"one", "", "three and more"};
    hid_t   fs = H5Dget_space(ds);
    hsize_t s0 = 2, c0 = 3;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &s0, NULL, &c0, NULL);
    hid_t m3 = H5Screate_simple(1, &c0, NULL);
    wr(L, ds, st, m3, fs, w);
    int32_t a[5] = {1, 2, 3, 4, 5};
    hvl_t   wv[3] = {{2, a}, {0, NULL}, {5, a}};
    wr(L, dv, vt, m3, fs, wv);
    hsize_t grow = 8;
    log_i(L, H5Dset_extent(ds, &grow) >= 0);
    log_i(L, H5Dset_extent(dv, &grow) >= 0);
    hid_t fs8 = H5Dget_space(ds);
    herr_t e = H5Dread(ds, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, r);
    log_i(L, e >= 0);
    for (int i = 0; i < 8 && e >= 0; i++)
        log_str(L, r[i]);
    if (e >= 0)
        H5Treclaim(st, fs8, H5P_DEFAULT, r);
    e = H5Dread(dv, vt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rv);
    log_i(L, e >= 0);
    for (int i = 0; i < 8 && e >= 0; i++) {
        log_i(L, (long long)rv[i].len);
        if (rv[i].len)
            log_b(L, rv[i].p, rv[i].len * 4);
    }
    if (e >= 0)
        H5Treclaim(vt, fs8, H5P_DEFAULT, rv);
    H5Sclose(fs8);
    H5Sclose(m3);
    H5Sclose(fs);
    H5Dclose(ds);
    H5Dclose(dv);
    H5Pclose(p);
    H5Sclose(sp);
    H5Tclose(st);
    H5Tclose(vt);
}

/* Data written before a close is read back after reopening the file. */
static void sc_reopen_check(hid_t f, log_t *L)
{
    int32_t r[40 * 50];
    hid_t   ds = H5Dopen2(f, "selc", H5P_DEFAULT);
    rd(L, ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, r, sizeof r);
    H5Dclose(ds);
    double d[100];
    ds = H5Dopen2(f, "fd", H5P_DEFAULT);
    rd(L, ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, d, sizeof d);
    log_dims(L, ds);
    H5Dclose(ds);
    ds = H5Dopen2(f, "ext", H5P_DEFAULT);
    log_dims(L, ds);
    H5Dclose(ds);
}

/* ---------------------------------------------------------------- driver */
typedef void (*scenario_fn)(hid_t, log_t *);

static hid_t file_for(int tessera, const char *stem, int create, hid_t vol)
{
    char path[256];
    snprintf(path, sizeof path, "test_datasets_%s.%s", stem, tessera ? "tessera" : "h5");
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_vol(fapl, tessera ? vol : H5VL_NATIVE, NULL);
    hid_t f = create ? H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : H5Fopen(path, H5F_ACC_RDWR, fapl);
    H5Pclose(fapl);
    return f;
}

int main(void)
{
    hid_t vol = H5VLregister_connector_by_name("tessera", H5P_DEFAULT);
    if (vol < 0) {
        printf("FAIL: cannot register the tessera connector (HDF5_PLUGIN_PATH?)\n");
        return 1;
    }
    struct {
        const char *name;
        scenario_fn fn;
        int         reopen; /* run on the file of the previous scenario, opened again */
    } sc[] = {{"types", sc_types, 0},         {"fill", sc_fill, 0},
              {"filters", sc_filters, 0},     {"extent", sc_extent, 0},
              {"selections_contig", sc_selections_contig, 0},
              {"selections_chunked", sc_selections_chunked, 0},
              {"compound", sc_compound, 0},   {"strings", sc_strings, 0},
              {"multi", sc_multi, 0},         {"misc", sc_misc, 0},
              {"sparse", sc_sparse, 0},       {"sparse_union", sc_sparse_union, 0},
              {"vlen", sc_vlen, 0}};
    /* One file holds every scenario (names differ); then a reopen pass reads some back. */
    log_t logs[2][16];
    memset(logs, 0, sizeof logs);
    size_t nsc = sizeof sc / sizeof *sc;
    for (g_run = 0; g_run < 2; g_run++) {
        g_conn  = g_run ? "tessera" : "native";
        hid_t f = file_for(g_run, "all", 1, vol);
        if (f < 0) {
            printf("FAIL: cannot create the %s file\n", g_conn);
            return 1;
        }
        char cname[64] = "";
        H5VLget_connector_name(f, cname, sizeof cname);
        if (strcmp(cname, g_conn) != 0) {
            printf("FAIL: file uses connector '%s', expected '%s'\n", cname, g_conn);
            return 1;
        }
        for (size_t i = 0; i < nsc; i++)
            sc[i].fn(f, &logs[g_run][i]);
        CHECK(H5Fclose(f) >= 0);
        f = file_for(g_run, "all", 0, vol);
        CHECK(f >= 0);
        sc_reopen_check(f, &logs[g_run][nsc]);
        CHECK(H5Fclose(f) >= 0);
    }
    g_conn = "compare";
    for (size_t i = 0; i <= nsc; i++) {
        const char *name = i < nsc ? sc[i].name : "reopen";
        log_t      *a = &logs[0][i], *b = &logs[1][i];
        size_t      k = 0;
        while (k < a->n && k < b->n && a->p[k] == b->p[k])
            k++;
        if (a->n == b->n && k == a->n) {
            printf("  [PASS] %s (%zu bytes observed)\n", name, a->n);
            g_passed++;
        }
        else {
            printf("  [FAIL] %s: logs differ at byte %zu (native %zu bytes, tessera %zu bytes)\n", name, k, a->n,
                   b->n);
            g_failed++;
        }
        free(a->p);
        free(b->p);
    }
    if (g_storage[1] < g_storage[0]) {
        printf("  [PASS] sparse storage: tessera %llu bytes < native %llu bytes\n",
               (unsigned long long)g_storage[1], (unsigned long long)g_storage[0]);
        g_passed++;
    }
    else {
        printf("  [FAIL] sparse storage: tessera %llu bytes, native %llu bytes\n",
               (unsigned long long)g_storage[1], (unsigned long long)g_storage[0]);
        g_failed++;
    }
    if (g_reported[1] > 0 && g_reported[1] < g_reported[0] && g_reported[1] >= 10 * sizeof(int32_t)) {
        printf("  [PASS] sparse H5Dget_storage_size: tessera %llu bytes < native %llu bytes\n",
               (unsigned long long)g_reported[1], (unsigned long long)g_reported[0]);
        g_passed++;
    }
    else {
        printf("  [FAIL] sparse H5Dget_storage_size: tessera %llu bytes, native %llu bytes\n",
               (unsigned long long)g_reported[1], (unsigned long long)g_reported[0]);
        g_failed++;
    }
    H5VLunregister_connector(vol);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
