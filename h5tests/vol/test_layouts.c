/* test_layouts.c — every tile order (tessera_Pset_layout, docs/layouts.md) against native
 * HDF5 (vol_test_log.h): the same 3-D chunked datasets, one per layout, written with a
 * box, a strided hyperslab, a union of hyperslabs and a point selection, grown and shrunk,
 * reopened, and read back whole, as beams along each dimension, as an irregular union and
 * as points.  Native HDF5 ignores the layout property, so both logs must be identical.
 * Tessera-only checks: bad names and space-filling cell orders are HDF5 errors naming the
 * layout.
 *
 * Usage: test_layouts [directory for the files]
 */
#include "tessera/tessera.h"
#include "vol_test_log.h"

#define N0 30
#define N1 27
#define N2 22
/* Tile orders, and (":CELLS") cell orders inside tiles: "multimap" has column-major cells. */
static const char *kLayouts[] = {"row-major", "column-major", "z-order", "hilbert", "multimap",
                                 "multimap:row-major", "row-major:column-major", "hilbert:column-major"};
#define NLAYOUTS ((int)(sizeof kLayouts / sizeof kLayouts[0]))

static void log_read(hid_t d, hid_t fs, hsize_t n, const char *what)
{
    int  *buf = malloc(sizeof(int) * (n ? n : 1));
    hid_t ms  = H5Screate_simple(1, &n, NULL);
    herr_t rc = H5Dread(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, buf);
    LOG("%s: %s n=%llu hash=%llx first=%d last=%d", what, RC(rc), (unsigned long long)n,
        rc >= 0 ? fnv(buf, sizeof(int) * n) : 0ULL, rc >= 0 && n ? buf[0] : 0, rc >= 0 && n ? buf[n - 1] : 0);
    H5Sclose(ms);
    free(buf);
}

static void write_sel(hid_t d, hid_t fs, int base, const char *what)
{
    hssize_t n   = H5Sget_select_npoints(fs);
    hsize_t  m   = (hsize_t)n;
    int     *buf = malloc(sizeof(int) * (m ? m : 1));
    for (hsize_t i = 0; i < m; i++)
        buf[i] = base + (int)(i * 7 % 1000);
    hid_t ms = H5Screate_simple(1, &m, NULL);
    LOG("%s: write %llu %s", what, (unsigned long long)m, RC(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, buf)));
    H5Sclose(ms);
    free(buf);
}

static void read_all(hid_t d, const char *what)
{
    hid_t    fs = H5Dget_space(d);
    hssize_t n  = H5Sget_select_npoints(fs);
    log_read(d, fs, (hsize_t)n, what);
    /* Beams along each dimension through a fixed cell, and an irregular union. */
    hsize_t dims[3];
    H5Sget_simple_extent_dims(fs, dims, NULL);
    for (int dim = 0; dim < 3; dim++) {
        hsize_t start[3] = {dims[0] / 3, dims[1] / 2, dims[2] - 1}, count[3] = {1, 1, 1};
        start[dim] = 0;
        count[dim] = dims[dim];
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
        char w[64];
        snprintf(w, sizeof w, "%s beam %d", what, dim);
        log_read(d, fs, dims[dim], w);
    }
    hsize_t s1[3] = {1, 2, 3}, c1[3] = {5, 9, 4}, s2[3] = {4, 0, 1}, c2[3] = {dims[0] - 6, 3, 11}, st[3] = {3, 2, 5};
    hsize_t b2[3] = {2, 2, 2}, c3[3] = {3, 5, 3};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, s1, NULL, c1, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_OR, s2, NULL, c2, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_OR, s1, st, c3, b2);
    char w[64];
    snprintf(w, sizeof w, "%s union", what);
    log_read(d, fs, (hsize_t)H5Sget_select_npoints(fs), w);
    hsize_t pts[40 * 3];
    for (int i = 0; i < 40; i++) {
        pts[3 * i]     = (hsize_t)(i * 13 % dims[0]);
        pts[3 * i + 1] = (hsize_t)(i * 7 % dims[1]);
        pts[3 * i + 2] = (hsize_t)(i * 5 % dims[2]);
    }
    H5Sselect_elements(fs, H5S_SELECT_SET, 40, pts);
    snprintf(w, sizeof w, "%s points", what);
    log_read(d, fs, 40, w);
    H5Sclose(fs);
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    (void)L;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    for (int k = 0; k < NLAYOUTS; k++) {
        hsize_t dims[3] = {N0, N1, N2}, maxd[3] = {H5S_UNLIMITED, N1, N2}, chunk[3] = {4, 5, 3};
        hid_t   sp = H5Screate_simple(3, dims, maxd);
        hid_t   dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 3, chunk);
        int fill = -5;
        H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
        if (k % 2)
            H5Pset_deflate(dcpl, 1);
        LOG("%s: set layout %s", kLayouts[k], RC(tessera_Pset_layout(dcpl, kLayouts[k])));
        hid_t d = H5Dcreate2(f, kLayouts[k], H5T_NATIVE_INT, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("%s: create %s", kLayouts[k], RC(d));
        hid_t   fs = H5Dget_space(d);
        hsize_t s[3] = {2, 1, 0}, c[3] = {25, 20, 22};
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, s, NULL, c, NULL);
        write_sel(d, fs, 1000 * k, "box");
        hsize_t s2[3] = {0, 0, 1}, st[3] = {3, 4, 5}, c2[3] = {10, 7, 4};
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, s2, st, c2, NULL);
        write_sel(d, fs, 200000, "strided");
        hsize_t u1[3] = {5, 5, 5}, uc1[3] = {3, 20, 2}, u2[3] = {20, 0, 10}, uc2[3] = {9, 2, 12};
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, u1, NULL, uc1, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_OR, u2, NULL, uc2, NULL);
        write_sel(d, fs, 300000, "union");
        hsize_t pts[25 * 3];
        for (int i = 0; i < 25; i++) {
            pts[3 * i]     = (hsize_t)(i * 11 % N0);
            pts[3 * i + 1] = (hsize_t)(i * 5 % N1);
            pts[3 * i + 2] = (hsize_t)(i * 3 % N2);
        }
        H5Sselect_elements(fs, H5S_SELECT_SET, 25, pts);
        write_sel(d, fs, 400000, "points");
        H5Sclose(fs);
        read_all(d, kLayouts[k]);
        hsize_t grow[3] = {41, N1, N2}, shrink[3] = {17, N1, N2}, again[3] = {36, N1, N2};
        LOG("grow %s", RC(H5Dset_extent(d, grow)));
        fs = H5Dget_space(d);
        hsize_t s3[3] = {30, 0, 0}, c3[3] = {11, N1, 9};
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, s3, NULL, c3, NULL);
        write_sel(d, fs, 500000, "grown box");
        H5Sclose(fs);
        read_all(d, "grown");
        LOG("shrink %s regrow %s", RC(H5Dset_extent(d, shrink)), RC(H5Dset_extent(d, again)));
        read_all(d, "regrown");
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(sp);
    }
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    for (int k = 0; k < NLAYOUTS; k++) {
        hid_t d = H5Dopen2(f, kLayouts[k], H5P_DEFAULT);
        char  w[64];
        snprintf(w, sizeof w, "reopened %s", kLayouts[k]);
        read_all(d, w);
        H5Dclose(d);
    }
    H5Fclose(f);
}

/* Bad names: tessera_Pset_layout refuses what it can check (not a dcpl, too long); an
 * unknown name fails H5Dcreate2 on tessera with a message naming it, and a bad layout=
 * connector setting fails the file's creation naming the setting. */
static void extra(hid_t tess, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/test_layouts_bad.h5", dir);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    check(tessera_Pset_layout(fapl, "hilbert") < 0, "tessera_Pset_layout refuses a fapl", "tessera");
    H5Pclose(fapl);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    check(tessera_Pset_layout(dcpl, "a-name-of-forty-characters-is-too-long!!") < 0,
          "tessera_Pset_layout refuses a name of 32+ characters", "tessera");
    char got[32] = "";
    check(tessera_Pset_layout(dcpl, "hilbert") >= 0 && tessera_Pget_layout(dcpl, got, sizeof got) == 7 &&
              strcmp(got, "hilbert") == 0,
          "tessera_Pget_layout returns what tessera_Pset_layout set", "tessera");
    hid_t copy = H5Pcopy(dcpl);
    got[0] = 0;
    check(tessera_Pget_layout(copy, got, sizeof got) == 7 && strcmp(got, "hilbert") == 0,
          "an H5Pcopy of the dcpl keeps the layout", "tessera");
    H5Pclose(copy);
    hsize_t chunk[1] = {4}, dims[1] = {40};
    H5Pset_chunk(dcpl, 1, chunk);
    tessera_Pset_layout(dcpl, "spiral");
    hid_t f  = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, tess);
    hid_t sp = H5Screate_simple(1, dims, NULL);
    hid_t d  = H5Dcreate2(f, "bad", H5T_NATIVE_INT, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    check(d < 0 && stack_says("unknown layout 'spiral'"), "H5Dcreate2 fails naming the unknown layout", "tessera");
    if (d >= 0)
        H5Dclose(d);
    check(H5Lexists(f, "bad", H5P_DEFAULT) == 0, "no dataset is left behind", "tessera");
    tessera_Pset_layout(dcpl, "multimap:z-order");
    d = H5Dcreate2(f, "bad2", H5T_NATIVE_INT, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    check(d < 0 && stack_says("cell order z-order in layout 'multimap:z-order' is not supported"),
          "H5Dcreate2 refuses a space-filling cell order, saying so", "tessera");
    if (d >= 0)
        H5Dclose(d);
    H5Sclose(sp);
    H5Fclose(f);
    H5Pclose(dcpl);
    hid_t vol  = H5VLregister_connector_by_name("tessera", H5P_DEFAULT);
    void *info = NULL;
    H5VLconnector_str_to_info("layout=spiral", vol, &info);
    fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_vol(fapl, vol, info);
    snprintf(path, sizeof path, "%s/test_layouts_bad2.h5", dir);
    f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    check(f < 0 && stack_says("layout=spiral"), "a bad layout= setting fails the file's creation, naming it", "tessera");
    if (f >= 0)
        H5Fclose(f);
    if (info)
        H5VLfree_connector_info(vol, info);
    H5Pclose(fapl);
    H5VLclose(vol);
}

int main(int argc, char **argv)
{
    return run_compared(argc > 1 ? argv[1] : ".", "test_layouts", run, 150, extra);
}
