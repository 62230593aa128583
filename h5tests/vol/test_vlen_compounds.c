/* test_vlen_compounds.c — compounds with variable-length members written and read through
 * a different memory type (conversion), member subsets and selections, tessera compared
 * with native HDF5 (vol_test_log.h).  Run under ASan by scripts/test --sanitize (leaks
 * and double frees of converted vlen data are what this guards against).
 *
 * File type: {i64be serial; vlen string location; f64be temperature; vlen of i16be
 * readings; nested {i32le a[2]; vlen string note} inner}.  Memory: the native struct.
 *
 * Usage: test_vlen_compounds [directory for the files]
 */
#include "vol_test_log.h"

typedef struct {
    int   a[2];
    char *note;
} inner_t;

typedef struct {
    long long serial;
    char     *location;
    double    temperature;
    hvl_t     readings;
    inner_t   inner;
} rec_t;

typedef struct {
    double temperature;
    char  *location;
} sub_t;

#define N 6

static hid_t vstr(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    return t;
}

static hid_t inner_type(int file)
{
    hsize_t two = 2;
    hid_t   arr = H5Tarray_create2(file ? H5T_STD_I32LE : H5T_NATIVE_INT, 1, &two);
    hid_t   t   = H5Tcreate(H5T_COMPOUND, file ? 8 + 8 : sizeof(inner_t));
    hid_t   s   = vstr();
    H5Tinsert(t, "a", file ? 0 : HOFFSET(inner_t, a), arr);
    H5Tinsert(t, "note", file ? 8 : HOFFSET(inner_t, note), s);
    if (file)
        H5Tpack(t);
    H5Tclose(arr);
    H5Tclose(s);
    return t;
}

static hid_t rec_type(int file)
{
    hid_t s  = vstr();
    hid_t vl = H5Tvlen_create(file ? H5T_STD_I16BE : H5T_NATIVE_INT);
    hid_t in = inner_type(file);
    hid_t t  = H5Tcreate(H5T_COMPOUND, sizeof(rec_t) + 64);
    H5Tinsert(t, "serial", HOFFSET(rec_t, serial), file ? H5T_STD_I64BE : H5T_NATIVE_LLONG);
    H5Tinsert(t, "location", HOFFSET(rec_t, location), s);
    H5Tinsert(t, "temperature", HOFFSET(rec_t, temperature), file ? H5T_IEEE_F64BE : H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "readings", HOFFSET(rec_t, readings), vl);
    H5Tinsert(t, "inner", HOFFSET(rec_t, inner), in);
    if (file)
        H5Tpack(t);
    else
        H5Tset_size(t, sizeof(rec_t));
    H5Tclose(s);
    H5Tclose(vl);
    H5Tclose(in);
    return t;
}

static hid_t sub_type(void)
{
    hid_t s = vstr();
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(sub_t));
    H5Tinsert(t, "temperature", HOFFSET(sub_t, temperature), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "location", HOFFSET(sub_t, location), s);
    H5Tclose(s);
    return t;
}

static void log_recs(const char *what, const rec_t *r, int n)
{
    for (int i = 0; i < n; i++) {
        char seq[256] = "";
        size_t len = 0;
        for (size_t k = 0; k < r[i].readings.len && len + 16 < sizeof seq; k++)
            len += (size_t)snprintf(seq + len, sizeof seq - len, "%d,", ((int *)r[i].readings.p)[k]);
        LOG("%s[%d] serial=%lld loc=%s temp=%.17g readings=%zu:%s inner=%d,%d note=%s", what, i, r[i].serial,
            r[i].location ? r[i].location : "(null)", r[i].temperature, r[i].readings.len, seq, r[i].inner.a[0],
            r[i].inner.a[1], r[i].inner.note ? r[i].inner.note : "(null)");
    }
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    g_log     = L;
    hid_t f   = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t ft  = rec_type(1), mt = rec_type(0), st = sub_type();
    hsize_t n = N;
    hid_t   s = H5Screate_simple(1, &n, NULL);
    hid_t   d = H5Dcreate2(f, "recs", ft, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("create %s", RC(d));
    rec_t w[N];
    int   vals[N][4];
    char  locs[N][32], notes[N][32];
    for (int i = 0; i < N; i++) {
        snprintf(locs[i], sizeof locs[i], "station-%d", i * 7);
        snprintf(notes[i], sizeof notes[i], "note %d", i);
        for (int k = 0; k < 4; k++)
            vals[i][k] = i * 10 - k * 3;
        w[i].serial         = 1000000000000LL + i;
        w[i].location       = i == 3 ? NULL : locs[i];
        w[i].temperature    = 20.5 + i / 3.0;
        w[i].readings.len   = (size_t)(i % 4);
        w[i].readings.p     = vals[i];
        w[i].inner.a[0]     = i;
        w[i].inner.a[1]     = -i;
        w[i].inner.note     = i == 4 ? NULL : notes[i];
    }
    LOG("write all %s", RC(H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, w)));
    rec_t r[N];
    memset(r, 0, sizeof r);
    LOG("read all %s", RC(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, r)));
    log_recs("all", r, N);
    H5Treclaim(mt, s, H5P_DEFAULT, r);
    /* Member subset write: only temperature and location change; the rest keep theirs. */
    sub_t sub[2] = {{-1.25, "moved"}, {99.0, NULL}};
    hsize_t pts[2] = {4, 1};
    hid_t   fs = H5Scopy(s);
    H5Sselect_elements(fs, H5S_SELECT_SET, 2, pts);
    hsize_t two = 2;
    hid_t   ms  = H5Screate_simple(1, &two, NULL);
    LOG("write subset points %s", RC(H5Dwrite(d, st, ms, fs, H5P_DEFAULT, sub)));
    memset(r, 0, sizeof r);
    H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, r);
    log_recs("after subset", r, N);
    H5Treclaim(mt, s, H5P_DEFAULT, r);
    /* Member subset read through a hyperslab. */
    hsize_t start = 1, stride = 2, count = 3, blk = 1;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, &stride, &count, &blk);
    hid_t ms3 = H5Screate_simple(1, &count, NULL);
    sub_t rs[3];
    memset(rs, 0, sizeof rs);
    LOG("read subset hyperslab %s", RC(H5Dread(d, st, ms3, fs, H5P_DEFAULT, rs)));
    for (int i = 0; i < 3; i++)
        LOG("sub[%d] temp=%.17g loc=%s", i, rs[i].temperature, rs[i].location ? rs[i].location : "(null)");
    H5Treclaim(st, ms3, H5P_DEFAULT, rs);
    /* Buffer size of the vlen data, as HDF5 counts it in the memory type. */
    hsize_t size = 0;
    { /* the call before the LOG: argument evaluation order is unspecified */
        herr_t brc = H5Dvlen_get_buf_size(d, mt, s, &size);
        LOG("vlen_get_buf_size %s %llu", RC(brc), (unsigned long long)size);
    }
    /* The same type in an attribute. */
    hid_t a = H5Acreate2(d, "recs", ft, s, H5P_DEFAULT, H5P_DEFAULT);
    LOG("attr write %s", RC(H5Awrite(a, mt, w)));
    memset(r, 0, sizeof r);
    LOG("attr read %s", RC(H5Aread(a, mt, r)));
    log_recs("attr", r, N);
    H5Treclaim(mt, s, H5P_DEFAULT, r);
    H5Aclose(a);
    H5Sclose(ms3);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
    /* Read back in a reopened file. */
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    d = H5Dopen2(f, "recs", H5P_DEFAULT);
    memset(r, 0, sizeof r);
    LOG("reopen read %s", RC(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, r)));
    log_recs("reopen", r, N);
    H5Treclaim(mt, s, H5P_DEFAULT, r);
    H5Dclose(d);
    H5Fclose(f);
    H5Sclose(s);
    H5Tclose(ft);
    H5Tclose(mt);
    H5Tclose(st);
}

int main(int argc, char **argv)
{
    return run_compared(argc > 1 ? argv[1] : ".", "test_vlen_compounds", run, 30, NULL);
}
