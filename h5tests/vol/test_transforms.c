/* test_transforms.c — data transforms (H5Pset_data_transform) on write and on read,
 * tessera compared with native HDF5 (vol_test_log.h).
 *
 * For each expression, each native memory type and two file types: write with the
 * transform and read back plainly, write plainly and read with the transform, both
 * through a strided hyperslab and a point selection; every value read is logged, as is
 * whether the application's buffer stayed unchanged.  Non-native memory types (a
 * compound, big-endian integers, variable-length strings) must fail on both.
 *
 * Usage: test_transforms [directory for the files]
 */
#include "vol_test_log.h"

#define N 24

static const char *exprs[] = {"x+1", "x-32", "(x-32)*5/9", "2*x", "x/3", "-x", "+x", "x*-2", "100-x",
                              "x*x", "x*x-x", "(x+1)*(x-1)/4", "1/2*x", "x*(1/2)", "x*0.5", "7",
                              "-3.75", "x/0", "2e1+x", ".5*x", "x1*2", "3*(2+x)", "x+x+x"};
/* Not "x/x": with integer data holding 0, native HDF5 dies of SIGFPE (tessera refuses). */

/* C leaves a floating-point value converted to an integer type that cannot hold it
 * undefined (negative to unsigned, infinities, NaN), and HDF5 converts its intermediate
 * doubles with plain casts: such results depend on how HDF5 was compiled, so those
 * combinations are left out (docs/vol-datasets.md, "Data transforms"). */
static int defined(const char *e, hid_t mtype)
{
    int is_int      = H5Tget_class(mtype) == H5T_INTEGER;
    int is_unsigned = is_int && H5Tget_sign(mtype) == H5T_SGN_NONE;
    if (is_int && strcmp(e, "x/0") == 0)
        return 0;
    if (is_unsigned && (strstr(e, "-32") || strcmp(e, "-x") == 0 || strstr(e, "*-2") || strcmp(e, "-3.75") == 0))
        return 0;
    return 1;
}

typedef struct {
    const char *name;
    hid_t       id;
} mtype_t;

static void log_values(const char *what, hid_t t, const unsigned char *buf, int n)
{
    char   line[4096];
    size_t len = 0;
    size_t sz  = H5Tget_size(t);
    for (int i = 0; i < n && len + 64 < sizeof line; i++) {
        if (H5Tget_class(t) == H5T_FLOAT) {
            long double v = sz == 4 ? *(const float *)(buf + i * sz)
                            : sz == 8 ? *(const double *)(buf + i * sz)
                                      : *(const long double *)(buf + i * sz);
            len += (size_t)snprintf(line + len, sizeof line - len, "%.17Lg ", v);
        }
        else {
            unsigned long long v = 0;
            memcpy(&v, buf + i * sz, sz);
            len += (size_t)snprintf(line + len, sizeof line - len, "%llx ", v);
        }
    }
    LOG("%s: %s", what, line);
}

static void one(hid_t f, const char *expr, hid_t mtype, const char *mname, hid_t ftype, int case_no)
{
    hsize_t n = N;
    hid_t   s = H5Screate_simple(1, &n, NULL);
    char    name[64];
    snprintf(name, sizeof name, "d%d", case_no);
    hid_t d = H5Dcreate2(f, name, ftype, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    size_t        sz = H5Tget_size(mtype);
    unsigned char in[N * 16], keep[N * 16], out[N * 16];
    /* Values in every type's range: -11..12 for signed, 0..23 for unsigned, fractions for floats. */
    for (int i = 0; i < N; i++) {
        double v = (H5Tget_sign(mtype) == H5T_SGN_NONE) ? i : i - 11;
        if (H5Tget_class(mtype) == H5T_FLOAT)
            v += 0.25 * (i % 3);
        switch (H5Tget_class(mtype) == H5T_FLOAT ? (int)sz : -(int)sz) {
            case 4: ((float *)in)[i] = (float)v; break;
            case 8: ((double *)in)[i] = v; break;
            case 16: ((long double *)in)[i] = v; break;
            case -1: ((signed char *)in)[i] = (signed char)v; break;
            case -2: ((short *)in)[i] = (short)v; break;
            case -4: ((int *)in)[i] = (int)v; break;
            default: ((long long *)in)[i] = (long long)v; break;
        }
    }
    memcpy(keep, in, sizeof in);
    hid_t xf = H5Pcreate(H5P_DATASET_XFER);
    LOG("case %d %s %s set %s", case_no, expr, mname, RC(H5Pset_data_transform(xf, expr)));
    /* write with the transform (all), read plainly */
    herr_t rc;
    H5E_BEGIN_TRY { rc = H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, xf, in); }
    H5E_END_TRY;
    LOG("write xform %s, buffer %s", RC(rc), memcmp(in, keep, sizeof in) ? "changed" : "kept");
    memset(out, 0, sizeof out);
    LOG("read plain %s", RC(H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, out)));
    log_values("after write xform", mtype, out, N);
    /* write plainly, read with the transform through a strided hyperslab */
    H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, in);
    hsize_t start = 1, stride = 3, count = 7, blk = 1;
    hid_t   fs = H5Scopy(s);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, &stride, &count, &blk);
    hid_t ms = H5Screate_simple(1, &count, NULL);
    memset(out, 0, sizeof out);
    H5E_BEGIN_TRY { rc = H5Dread(d, mtype, ms, fs, xf, out); }
    H5E_END_TRY;
    LOG("read xform hyperslab %s", RC(rc));
    log_values("hyperslab", mtype, out, (int)count);
    /* points, written with the transform */
    hsize_t pts[4] = {20, 2, 9, 0};
    H5Sselect_elements(fs, H5S_SELECT_SET, 4, pts);
    hsize_t four = 4;
    hid_t   ms4  = H5Screate_simple(1, &four, NULL);
    H5E_BEGIN_TRY { rc = H5Dwrite(d, mtype, ms4, fs, xf, in); }
    H5E_END_TRY;
    LOG("write xform points %s", RC(rc));
    memset(out, 0, sizeof out);
    H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, out);
    log_values("after points", mtype, out, N);
    H5Sclose(ms4);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Pclose(xf);
    H5Dclose(d);
    H5Sclose(s);
}

static void refusals(hid_t f, int *case_no)
{
    hsize_t n = 4;
    hid_t   s = H5Screate_simple(1, &n, NULL);
    hid_t   xf = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_data_transform(xf, "x+1");
    hid_t ct = H5Tcreate(H5T_COMPOUND, 8);
    H5Tinsert(ct, "a", 0, H5T_NATIVE_INT);
    H5Tinsert(ct, "b", 4, H5T_NATIVE_INT);
    hid_t vs = H5Tcopy(H5T_C_S1);
    H5Tset_size(vs, H5T_VARIABLE);
    hid_t       types[] = {ct, H5T_STD_I32BE, vs};
    const char *names[] = {"compound", "i32be", "vlen string"};
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "r%d", (*case_no)++);
        hid_t         d = H5Dcreate2(f, name, types[i], s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        unsigned char buf[64] = {0};
        char         *strs[4] = {"a", "b", "c", "d"};
        herr_t        w, r;
        H5E_BEGIN_TRY
        {
            w = H5Dwrite(d, types[i], H5S_ALL, H5S_ALL, xf, i == 2 ? (void *)strs : (void *)buf);
            r = H5Dread(d, types[i], H5S_ALL, H5S_ALL, xf, buf);
        }
        H5E_END_TRY;
        if (i == 2 && r >= 0)
            H5Treclaim(types[i], s, H5P_DEFAULT, buf);
        LOG("transform on %s: write %s read %s", names[i], RC(w), RC(r));
        H5Dclose(d);
    }
    H5Tclose(ct);
    H5Tclose(vs);
    H5Pclose(xf);
    H5Sclose(s);
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    g_log   = L;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    LOG("file %s", RC(f));
    mtype_t mt[] = {{"schar", H5T_NATIVE_SCHAR}, {"uchar", H5T_NATIVE_UCHAR}, {"short", H5T_NATIVE_SHORT},
                    {"ushort", H5T_NATIVE_USHORT}, {"int", H5T_NATIVE_INT},     {"uint", H5T_NATIVE_UINT},
                    {"long", H5T_NATIVE_LONG},     {"ullong", H5T_NATIVE_ULLONG}, {"float", H5T_NATIVE_FLOAT},
                    {"double", H5T_NATIVE_DOUBLE}, {"ldouble", H5T_NATIVE_LDOUBLE}};
    int case_no = 0;
    for (size_t e = 0; e < sizeof exprs / sizeof *exprs; e++)
        for (size_t m = 0; m < sizeof mt / sizeof *mt; m++) {
            if (!defined(exprs[e], mt[m].id))
                continue;
            /* file type: the memory type itself, and a different one (conversion) */
            hid_t ft = (e % 2) ? H5T_IEEE_F64BE : H5T_STD_I32LE;
            one(f, exprs[e], mt[m].id, mt[m].name, mt[m].id, case_no++);
            one(f, exprs[e], mt[m].id, mt[m].name, ft, case_no++);
        }
    refusals(f, &case_no);
    H5Fclose(f);
}

/* Integer division by a data value of 0: native HDF5 dies of SIGFPE, so only tessera
 * runs it, and must report an error instead. */
static void zero_division(hid_t fapl, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/test_transforms_zero.h5", dir);
    hid_t   f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t n = 3;
    hid_t   s = H5Screate_simple(1, &n, NULL);
    hid_t   d = H5Dcreate2(f, "z", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int     v[3] = {4, 0, 2};
    hid_t   xf = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_data_transform(xf, "x/x");
    herr_t rc;
    H5E_BEGIN_TRY { rc = H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, xf, v); }
    H5E_END_TRY;
    check(rc < 0, "x/x over an integer 0 is an error, not a signal", "tessera");
    H5Pclose(xf);
    H5Dclose(d);
    H5Sclose(s);
    H5Fclose(f);
}

int main(int argc, char **argv)
{
    return run_compared(argc > 1 ? argv[1] : ".", "test_transforms", run, 1000, zero_division);
}
