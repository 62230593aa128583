/* test_filter_policy.c — which filters tessera applies, maps or refuses, compared with
 * native HDF5 (vol_test_log.h) and with absolute checks for the refusals.
 *
 *   - deflate, shuffle, fletcher32: applied; values and the dcpl as native's.
 *   - a registered lossless codec (here a test filter registered under lzf's id 32000,
 *     as h5py registers lzf): stored with tessera's own lz4; values as native's.
 *   - a mandatory filter that is not registered: both fail at H5Dcreate; an optional
 *     one is skipped by both.
 *   - scale-offset, n-bit and a registered filter tessera does not know: native applies
 *     them, tessera refuses at H5Dcreate with an error (never stores unfiltered data
 *     that would read back different numbers).
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

/* Creates, writes, reads back and logs; returns whether the create succeeded. */
static int round_trip(hid_t f, const char *name, hid_t dcpl)
{
    int in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (i * 7919) % 100003 - 50000;
    hid_t d = make(f, name, H5T_STD_I32LE, dcpl);
    LOG("create %s %s", name, RC(d));
    if (d < 0)
        return 0;
    LOG("write %s", RC(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, in)));
    memset(out, 0, sizeof out);
    LOG("read %s", RC(H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out)));
    long long sum = 0;
    for (int i = 0; i < N; i++)
        sum = sum * 31 + out[i];
    LOG("values %s hash=%lld", memcmp(in, out, sizeof in) ? "differ" : "same", sum);
    hid_t p = H5Dget_create_plist(d);
    int   nf = H5Pget_nfilters(p);
    LOG("nfilters %d", nf);
    for (int i = 0; i < nf; i++) {
        unsigned flags = 0, cd[8] = {0}, cfg = 0;
        size_t   ncd = 8;
        char     nm[64] = "";
        H5Z_filter_t id = H5Pget_filter2(p, (unsigned)i, &flags, &ncd, cd, sizeof nm, nm, &cfg);
        LOG("filter %d id=%d flags=%u ncd=%zu name=%s", i, (int)id, flags, ncd, nm);
    }
    H5Pclose(p);
    H5Dclose(d);
    return 1;
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
}

/* Filters tessera refuses: native must accept them (else the check proves nothing). */
static int refused(hid_t f, const char *name, hid_t dcpl)
{
    hid_t d = make(f, name, H5T_STD_I32LE, dcpl);
    if (d >= 0)
        H5Dclose(d);
    return d >= 0;
}

static void refusals(hid_t fn, hid_t ft)
{
    hid_t so = chunked(), nb = chunked(), un = chunked();
    H5Pset_scaleoffset(so, H5Z_SO_INT, H5Z_SO_INT_MINBITS_DEFAULT);
    H5Pset_nbit(nb);
    H5Pset_filter(un, 40000, H5Z_FLAG_MANDATORY, 0, NULL);
    hid_t       pl[]    = {so, nb, un};
    const char *names[] = {"scaleoffset", "nbit", "unknown_registered"};
    for (int i = 0; i < 3; i++) {
        char what[128];
        snprintf(what, sizeof what, "native applies %s", names[i]);
        check(refused(fn, names[i], pl[i]), what, "native");
        snprintf(what, sizeof what, "tessera refuses %s at create", names[i]);
        check(!refused(ft, names[i], pl[i]), what, "tessera");
        H5Pclose(pl[i]);
    }
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    hid_t       native, tess, vol;
    if (make_fapls(&native, &tess, &vol) < 0)
        return 1;
    if (H5Zregister(&lzf_like) < 0 || H5Zregister(&unknown) < 0) {
        printf("FAIL: cannot register the test filters\n");
        return 1;
    }
    char pn[4096], pt[4096];
    snprintf(pn, sizeof pn, "%s/test_filter_policy_native.h5", dir);
    snprintf(pt, sizeof pt, "%s/test_filter_policy_tessera.h5", dir);
    hid_t fn = H5Fcreate(pn, H5F_ACC_TRUNC, H5P_DEFAULT, native);
    hid_t ft = H5Fcreate(pt, H5F_ACC_TRUNC, H5P_DEFAULT, tess);
    char  cname[64] = "";
    H5VLget_connector_name(ft, cname, sizeof cname);
    check(strcmp(cname, "tessera") == 0, "the container uses the tessera connector", "tessera");
    log_t ln = {0}, lt = {0};
    g_log = &ln;
    common(fn);
    g_log = &lt;
    common(ft);
    refusals(fn, ft);
    H5Fclose(fn);
    H5Fclose(ft);
    int lines = 0;
    int diffs = compare_logs(&ln, &lt, "TEST_FILTER_POLICY_VERBOSE", &lines);
    check(lines > 20, "enough observations were compared", "compare");
    int bad = diffs || g_failed;
    printf(bad ? "[FAIL] filter policy\n" : "[PASS] filter policy\n");
    return bad;
}
