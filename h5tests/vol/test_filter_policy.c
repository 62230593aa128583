/* test_filter_policy.c — filters on tessera datasets, compared with native HDF5
 * (vol_test_log.h): every value read back, the dcpl's filter list, and which creates fail.
 *
 *   - deflate, shuffle, fletcher32: applied by the engine.
 *   - a registered lossless codec (here a test filter registered under lzf's id 32000,
 *     as h5py registers lzf): stored with tessera's own lz4.
 *   - a mandatory filter that is not registered: both fail at H5Dcreate; an optional
 *     one is skipped by both.
 *   - scale-offset (integer, lossy minbits, floating D-scale, with a fill value), n-bit
 *     (a 20-bit integer type) and a registered filter tessera does not know: HDF5's own
 *     pipeline runs over every written chunk (vol/model/value_filters.h), so the values read
 *     back — lossy by design — are native's, also after partial rewrites of chunks.
 *
 * Usage: test_filter_policy [directory for the files]
 */
#include "vol_test_log.h"

/* A lossless test filter: XOR with 0x5a both ways (what it writes is irrelevant to
 * tessera, which stores its own codec; native really runs it). */
static size_t xor_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes,
                         size_t *buf_size, void **buf)
{
    (void)flags, (void)cd_nelmts, (void)cd_values, (void)buf_size;
    unsigned char *p = *buf;
    for (size_t i = 0; i < nbytes; i++)
        p[i] ^= 0x5a;
    return nbytes;
}

static const H5Z_class2_t lzf_like = {H5Z_CLASS_T_VERS, (H5Z_filter_t)32000, 1, 1, "lzf-like test filter",
                                      NULL, NULL, xor_filter};
static const H5Z_class2_t unknown = {H5Z_CLASS_T_VERS, (H5Z_filter_t)40000, 1, 1, "unknown test filter",
                                     NULL, NULL, xor_filter};

#define N 1000

static hid_t make(hid_t f, const char *name, hid_t type, hid_t dcpl)
{
    hsize_t n = N;
    hid_t   s = H5Screate_simple(1, &n, NULL);
    hid_t   d;
    H5E_BEGIN_TRY { d = H5Dcreate2(f, name, type, s, H5P_DEFAULT, dcpl, H5P_DEFAULT); }
    H5E_END_TRY;
    H5Sclose(s);
    return d;
}

static hid_t chunked(void)
{
    hid_t   p  = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t ch = 100;
    H5Pset_chunk(p, 1, &ch);
    return p;
}

/* Creates, writes (everything, then a strip across chunks), reads back and logs. */
static int round_trip_typed(hid_t f, const char *name, hid_t ftype, int floats, hid_t dcpl)
{
    double in[N], strip[N], out[N];
    for (int i = 0; i < N; i++) {
        in[i]    = floats ? (i * 37 % 1000) / 7.0 - 50.0 : (double)((i * 7919) % 100003 - 50000);
        strip[i] = floats ? -i / 3.0 : (double)(i * 3 - 700);
    }
    if (!floats && H5Tget_precision(ftype) < 32) /* n-bit: values beyond 20 bits lose their high bits */
        for (int i = 0; i < N; i++)
            in[i] = (double)((i * 9973) % 4000000 - 2000000), strip[i] = i == 5 ? 99999999 : -(double)(i % 2048);
    hid_t d = make(f, name, ftype, dcpl);
    LOG("create %s %s", name, RC(d));
    if (d < 0)
        return 0;
    LOG("write %s", RC(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, in)));
    hid_t   fs = H5Dget_space(d);
    hsize_t start = 150, count = 120; /* crosses chunks 1 and 2 */
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL);
    hid_t ms = H5Screate_simple(1, &count, NULL);
    LOG("write strip %s", RC(H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, strip)));
    H5Sclose(ms);
    H5Sclose(fs);
    /* Read through a new handle: native keeps written chunks UNFILTERED in the dataset's
     * chunk cache, so until a chunk leaves the cache it returns the values as written;
     * what it stored (and returns after a reopen) is the filtered values, which is what
     * tessera returns (vol/model/value_filters.h). */
    H5Dclose(d);
    d = H5Dopen2(f, name, H5P_DEFAULT);
    memset(out, 0, sizeof out);
    LOG("read %s", RC(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out)));
    for (int i = 0; i < N; i += 50)
        LOG("values[%d..] %.17g %.17g %.17g %.17g %.17g", i, out[i], out[i + 1], out[i + 2], out[i + 3], out[i + 4]);
    unsigned long long h = 0;
    for (int i = 0; i < N; i++) {
        unsigned long long b;
        memcpy(&b, &out[i], sizeof b);
        h = h * 1000003ULL ^ b;
    }
    LOG("hash %llx", h);
    hid_t p  = H5Dget_create_plist(d);
    int   nf = H5Pget_nfilters(p);
    LOG("nfilters %d", nf);
    for (int i = 0; i < nf; i++) {
        unsigned     flags = 0, cd[8] = {0}, cfg = 0;
        size_t       ncd   = 8;
        char         nm[64] = "";
        H5Z_filter_t id    = H5Pget_filter2(p, (unsigned)i, &flags, &ncd, cd, sizeof nm, nm, &cfg);
        LOG("filter %d id=%d flags=%u name=%s", i, (int)id, flags, nm);
    }
    H5Pclose(p);
    H5Dclose(d);
    return 1;
}

static int round_trip(hid_t f, const char *name, hid_t dcpl)
{
    return round_trip_typed(f, name, H5T_STD_I32LE, 0, dcpl);
}

static void common(hid_t f)
{
    hid_t p = chunked();
    H5Pset_shuffle(p);
    H5Pset_deflate(p, 4);
    H5Pset_fletcher32(p);
    round_trip(f, "deflate", p);
    H5Pclose(p);
    p = chunked();
    H5Pset_filter(p, 32000, H5Z_FLAG_MANDATORY, 0, NULL);
    round_trip(f, "lzf_like", p);
    H5Pclose(p);
    p = chunked();
    H5Pset_filter(p, 40001, H5Z_FLAG_MANDATORY, 0, NULL); /* not registered */
    round_trip(f, "unregistered_mandatory", p);
    H5Pclose(p);
    p = chunked();
    H5Pset_filter(p, 40001, H5Z_FLAG_OPTIONAL, 0, NULL);
    round_trip(f, "unregistered_optional", p);
    H5Pclose(p);
    /* Value-changing filters: native's values through HDF5's own pipeline. */
    p = chunked();
    H5Pset_scaleoffset(p, H5Z_SO_INT, H5Z_SO_INT_MINBITS_DEFAULT);
    round_trip(f, "scaleoffset_int", p);
    H5Pclose(p);
    p = chunked();
    H5Pset_scaleoffset(p, H5Z_SO_INT, 4); /* lossy: 4 bits for a wide range */
    round_trip(f, "scaleoffset_int_minbits4", p);
    H5Pclose(p);
    p = chunked();
    H5Pset_scaleoffset(p, H5Z_SO_FLOAT_DSCALE, 2);
    round_trip_typed(f, "scaleoffset_float", H5T_IEEE_F64LE, 1, p);
    H5Pclose(p);
    p = chunked();
    H5Pset_scaleoffset(p, H5Z_SO_FLOAT_DSCALE, 1);
    double fillv = -1.5;
    H5Pset_fill_value(p, H5T_NATIVE_DOUBLE, &fillv);
    round_trip_typed(f, "scaleoffset_float_fill", H5T_IEEE_F32LE, 1, p);
    H5Pclose(p);
    p = chunked();
    H5Pset_nbit(p);
    /* 20 of 32 bits: HDF5 1.14.5 refuses types with more unused bits than used ones */
    hid_t t20 = H5Tcopy(H5T_STD_I32LE);
    H5Tset_precision(t20, 20);
    round_trip_typed(f, "nbit20", t20, 0, p);
    H5Tclose(t20);
    H5Pclose(p);
    p = chunked();
    H5Pset_filter(p, 40000, H5Z_FLAG_MANDATORY, 0, NULL); /* registered, unknown to tessera */
    round_trip(f, "unknown_registered", p);
    H5Pclose(p);
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    (void)L;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    common(f);
    H5Fclose(f);
}

int main(int argc, char **argv)
{
    if (H5Zregister(&lzf_like) < 0 || H5Zregister(&unknown) < 0) {
        printf("FAIL: cannot register the test filters\n");
        return 1;
    }
    return run_compared(argc > 1 ? argv[1] : ".", "test_filter_policy", run, 150, NULL);
}
