/* test_dimscales.c — HDF5's dimension scales (the HL library's H5DS API) on a tessera
 * container compared with a native file (vol_test_log.h), including after reopening.
 * H5DS stores its links as object references in the DIMENSION_LIST and REFERENCE_LIST
 * attributes; on tessera they are the old-style references native files use, served by
 * the compat library (docs/compat.md), which this test therefore runs under.
 *
 * Usage: test_dimscales [directory for the files]
 */
#include <hdf5_hl.h>

#include "vol_test_log.h"

static herr_t visit(hid_t did, unsigned dim, hid_t dsid, void *data)
{
    (void)did;
    char name[128] = "";
    H5Iget_name(dsid, name, sizeof name);
    LOG("  iterate dim %u: %s", dim, name);
    (*(int *)data)++;
    return 0;
}

static void observe(hid_t f, const char *when)
{
    hid_t data = H5Dopen2(f, "data", H5P_DEFAULT);
    const char *scales[] = {"x", "y", "y2"};
    for (int s = 0; s < 3; s++) {
        hid_t sc = H5Dopen2(f, scales[s], H5P_DEFAULT);
        char  name[64] = "";
        H5DSget_scale_name(sc, name, sizeof name);
        LOG("%s %s: is_scale=%d scale_name=%s attached0=%d attached1=%d", when, scales[s], (int)H5DSis_scale(sc), name,
            (int)H5DSis_attached(data, sc, 0), (int)H5DSis_attached(data, sc, 1));
        H5Dclose(sc);
    }
    for (unsigned d = 0; d < 2; d++) {
        char label[64] = "";
        H5DSget_label(data, d, label, sizeof label);
        LOG("%s dim %u: num_scales=%d label=%s", when, d, H5DSget_num_scales(data, d), label);
        int n = 0;
        LOG("%s iterate rc=%d", when, (int)H5DSiterate_scales(data, d, NULL, visit, &n));
        LOG("%s visited %d", when, n);
    }
    /* the attributes themselves, as a generic reader sees them */
    LOG("%s DIMENSION_LIST exists=%d", when, (int)H5Aexists(data, "DIMENSION_LIST"));
    hid_t x = H5Dopen2(f, "x", H5P_DEFAULT);
    LOG("%s REFERENCE_LIST on x exists=%d CLASS exists=%d", when, (int)H5Aexists(x, "REFERENCE_LIST"),
        (int)H5Aexists(x, "CLASS"));
    H5Dclose(x);
    H5Dclose(data);
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    g_log     = L;
    hid_t   f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims[2] = {3, 4}, nx = 4, ny = 3;
    hid_t   s2 = H5Screate_simple(2, dims, NULL), sx = H5Screate_simple(1, &nx, NULL),
          sy = H5Screate_simple(1, &ny, NULL);
    hid_t data = H5Dcreate2(f, "data", H5T_NATIVE_INT, s2, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t x    = H5Dcreate2(f, "x", H5T_NATIVE_FLOAT, sx, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t y    = H5Dcreate2(f, "y", H5T_NATIVE_FLOAT, sy, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t y2   = H5Dcreate2(f, "y2", H5T_NATIVE_FLOAT, sy, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("set_scale x %d", (int)H5DSset_scale(x, "X axis"));
    LOG("set_scale y %d", (int)H5DSset_scale(y, "Y axis"));
    LOG("set_scale y2 %d", (int)H5DSset_scale(y2, NULL));
    LOG("attach x->1 %d", (int)H5DSattach_scale(data, x, 1));
    LOG("attach y->0 %d", (int)H5DSattach_scale(data, y, 0));
    LOG("attach y2->0 %d", (int)H5DSattach_scale(data, y2, 0));
    LOG("attach x->0 (wrong size) %d", (int)H5DSattach_scale(data, x, 0) >= 0);
    LOG("label 0 %d", (int)H5DSset_label(data, 0, "rows"));
    LOG("label 1 %d", (int)H5DSset_label(data, 1, "columns"));
    H5Dclose(data);
    H5Dclose(x);
    H5Dclose(y);
    H5Dclose(y2);
    observe(f, "created");
    data = H5Dopen2(f, "data", H5P_DEFAULT);
    y2   = H5Dopen2(f, "y2", H5P_DEFAULT);
    LOG("detach y2 %d", (int)H5DSdetach_scale(data, y2, 0));
    H5Dclose(y2);
    H5Dclose(data);
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    observe(f, "reopened");
    H5Fclose(f);
    H5Sclose(s2);
    H5Sclose(sx);
    H5Sclose(sy);
}

int main(int argc, char **argv)
{
    return run_compared(argc > 1 ? argv[1] : ".", "test_dimscales", run, 30, NULL);
}
