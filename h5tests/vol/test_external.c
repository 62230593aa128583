/* test_external.c — raw data in external files (H5Pset_external, vol/types/external_storage.h),
 * tessera compared with native HDF5 (vol_test_log.h): segments across files with
 * offsets, whole/hyperslab/point writes and reads with type conversion, the bytes the
 * external files hold (read back with stdio), an unlimited last segment with
 * H5Dset_extent, the efile prefix (dapl, ${ORIGIN}) and what H5Dget_access_plist
 * reports, the segments H5Pget_external reports, a file removed behind the dataset's
 * back, reads past a file's end, and native's refusals (storage too small, a second
 * extendible dimension).
 *
 * Usage: test_external [directory for the files]
 */
#include <unistd.h>

#include "vol_test_log.h"

static char g_dir[4096], g_tag[8];

static const char *ext(const char *name)
{
    static char p[6][4200];
    static int  k;
    k = (k + 1) % 6;
    snprintf(p[k], sizeof p[k], "%s/%s_%s", g_dir, g_tag, name);
    return p[k];
}

static void log_file(const char *name)
{
    FILE *f = fopen(ext(name), "rb");
    if (!f) {
        LOG("file %s: missing", name);
        return;
    }
    unsigned char buf[8192];
    size_t        n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LOG("file %s: %zu bytes hash %016llx", name, n, fnv(buf, n));
}

static void log_read(hid_t d, const char *what)
{
    hid_t   s = H5Dget_space(d);
    hsize_t dims[2] = {0, 0};
    H5Sget_simple_extent_dims(s, dims, NULL);
    size_t  n = (size_t)(dims[0] * dims[1]);
    double *v = calloc(n ? n : 1, sizeof(double));
    herr_t  rc = H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    LOG("%s: %llux%llu read %s hash %016llx", what, (unsigned long long)dims[0], (unsigned long long)dims[1], RC(rc),
        fnv(v, n * sizeof(double)));
    free(v);
    H5Sclose(s);
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    g_log = L;
    snprintf(g_tag, sizeof g_tag, "%s", strstr(path, "_native") ? "n" : "t");
    const char *slash = strrchr(path, '/');
    snprintf(g_dir, sizeof g_dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    const char *names[] = {"a.raw", "b.raw", "c.raw", "grow.raw", "small.raw"};
    for (int i = 0; i < 5; i++)
        unlink(ext(names[i]));

    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    /* 6 x 10 int32 = 240 bytes over three segments: a.raw@16 (100), b.raw@0 (60), a.raw@200 (rest). */
    hsize_t dims[2] = {6, 10};
    hid_t   s       = H5Screate_simple(2, dims, NULL);
    hid_t   dcpl    = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_external(dcpl, ext("a.raw"), 16, 100);
    H5Pset_external(dcpl, ext("b.raw"), 0, 60);
    H5Pset_external(dcpl, ext("a.raw"), 200, 80);
    hid_t d = H5Dcreate2(f, "ext", H5T_STD_I32BE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    LOG("create: %s", RC(d));
    int v[60];
    for (int i = 0; i < 60; i++)
        v[i] = i * 3 - 50;
    LOG("write all: %s", RC(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v)));
    log_file("a.raw");
    log_file("b.raw");
    log_read(d, "after write");
    /* A hyperslab and points, converted from double. */
    hid_t   fs = H5Dget_space(d);
    hsize_t st[2] = {1, 2}, ct[2] = {4, 5};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, st, NULL, ct, NULL);
    hid_t  ms = H5Screate_simple(2, ct, NULL);
    double w[20];
    for (int i = 0; i < 20; i++)
        w[i] = 1000.5 + i;
    LOG("write hyperslab: %s", RC(H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, w)));
    hsize_t pts[3][2] = {{5, 9}, {0, 0}, {3, 4}};
    H5Sselect_elements(fs, H5S_SELECT_SET, 3, &pts[0][0]);
    hsize_t three = 3;
    hid_t   m3 = H5Screate_simple(1, &three, NULL);
    short   p[3] = {-1, -2, -3};
    LOG("write points: %s", RC(H5Dwrite(d, H5T_NATIVE_SHORT, m3, fs, H5P_DEFAULT, p)));
    short back[3] = {0};
    LOG("read points: %s %d %d %d", RC(H5Dread(d, H5T_NATIVE_SHORT, m3, fs, H5P_DEFAULT, back)), back[0], back[1],
        back[2]);
    log_file("a.raw");
    log_file("b.raw");
    log_read(d, "after partial writes");
    H5Sclose(m3);
    H5Sclose(ms);
    H5Sclose(fs);
    hid_t rcpl = H5Dget_create_plist(d);
    LOG("external count %d", H5Pget_external_count(rcpl));
    for (int i = 0; i < H5Pget_external_count(rcpl); i++) {
        char    nm[4200] = "";
        off_t   off      = -1;
        hsize_t sz       = 0;
        H5Pget_external(rcpl, (unsigned)i, sizeof nm, nm, &off, &sz);
        LOG("  %d: %s offset %lld size %llu", i, strrchr(nm, '_') ? strrchr(nm, '_') + 1 : nm, (long long)off,
            (unsigned long long)sz);
    }
    H5Pclose(rcpl);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(s);

    /* Extendible in the first dimension, unlimited last segment, relative name + prefix. */
    hsize_t gd[2] = {2, 4}, gmax[2] = {H5S_UNLIMITED, 4};
    s    = H5Screate_simple(2, gd, gmax);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    char rel[64];
    snprintf(rel, sizeof rel, "%s_grow.raw", g_tag);
    H5Pset_external(dcpl, rel, 0, H5F_UNLIMITED);
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    H5Pset_efile_prefix(dapl, "${ORIGIN}");
    d = H5Dcreate2(f, "grow", H5T_NATIVE_DOUBLE, s, H5P_DEFAULT, dcpl, dapl);
    LOG("create extendible: %s", RC(d));
    hid_t ap = H5Dget_access_plist(d);
    char  pre[4200] = "";
    H5Pget_efile_prefix(ap, pre, sizeof pre);
    LOG("reported prefix is the file's directory: %d", strcmp(pre, g_dir) == 0 || (strlen(pre) == strlen(g_dir) + 1 &&
                                                                                   !strncmp(pre, g_dir, strlen(g_dir))));
    H5Pclose(ap);
    double gv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    LOG("write grow: %s", RC(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, gv)));
    hsize_t bigger[2] = {5, 4};
    LOG("extend: %s", RC(H5Dset_extent(d, bigger)));
    log_read(d, "extended (past the file's end: zeros)");
    log_file("grow.raw");
    hsize_t wider[2] = {5, 5};
    LOG("extend second dimension: %s", RC(H5Dset_extent(d, wider)));
    H5Dclose(d);
    H5Pclose(dapl);
    H5Pclose(dcpl);
    H5Sclose(s);

    /* Refusals: too little storage; a second extendible dimension; finite storage for an
     * unlimited dimension. */
    s    = H5Screate_simple(2, dims, NULL);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_external(dcpl, ext("small.raw"), 0, 100);
    d = H5Dcreate2(f, "small", H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    LOG("create with too little storage: %s", RC(d));
    if (d >= 0)
        H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(s);
    hsize_t m2[2] = {6, H5S_UNLIMITED}, m1[2] = {H5S_UNLIMITED, 10};
    s    = H5Screate_simple(2, dims, m2);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_external(dcpl, ext("c.raw"), 0, H5F_UNLIMITED);
    d = H5Dcreate2(f, "second", H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    LOG("create with the second dimension extendible: %s", RC(d));
    if (d >= 0)
        H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(s);
    s    = H5Screate_simple(2, dims, m1);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_external(dcpl, ext("c.raw"), 0, 4096);
    d = H5Dcreate2(f, "finite", H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    LOG("create unlimited with finite storage: %s", RC(d));
    if (d >= 0)
        H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(s);
    H5Fclose(f);

    /* Reopened: the data is what the files hold; a removed file is an error. */
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    d = H5Dopen2(f, "ext", H5P_DEFAULT);
    log_read(d, "reopened");
    unlink(ext("b.raw"));
    log_read(d, "b.raw removed");
    H5Dclose(d);
    dapl = H5Pcreate(H5P_DATASET_ACCESS);
    H5Pset_efile_prefix(dapl, g_dir);
    d = H5Dopen2(f, "grow", dapl);
    log_read(d, "grow with an explicit prefix");
    H5Dclose(d);
    d = H5Dopen2(f, "grow", H5P_DEFAULT);
    log_read(d, "grow without a prefix (not in the current directory)");
    H5Dclose(d);
    H5Pclose(dapl);
    H5Fclose(f);
}

int main(int argc, char **argv)
{
    return run_compared(argc > 1 ? argv[1] : ".", "test_external", run, 28, NULL);
}
