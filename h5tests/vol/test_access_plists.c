/* test_access_plists.c — a dataset's access property list (H5Dget_access_plist) as
 * tessera reports it, compared with native HDF5 (vol_test_log.h).
 *
 * Dataset handles opened with the library's default dapl share it instead of copying it
 * (an H5Pcopy per H5Dopen was ~10 % of reopening 10,000 datasets, issue 20).  These
 * scenarios pin what that must not change: an application's own dapl is taken as it was
 * at the open (changing it afterwards changes nothing), and a change to
 * H5P_DATASET_ACCESS_DEFAULT is seen by datasets opened after it, in the same file too.
 *
 * Usage: test_access_plists [directory for the files]
 */
#include "vol_test_log.h"

static void log_dapl(const char *what, hid_t ds)
{
    hid_t p = H5Dget_access_plist(ds);
    LOG("%s: get_access_plist %s", what, RC(p));
    if (p < 0)
        return;
    size_t nslots = 0, nbytes = 0;
    double w0 = -1;
    herr_t rc = H5Pget_chunk_cache(p, &nslots, &nbytes, &w0);
    LOG("%s: chunk cache rc=%s slots=%zu bytes=%zu w0=%.3f", what, RC(rc), nslots, nbytes, w0);
    char    buf[256] = "";
    ssize_t n        = H5Pget_efile_prefix(p, buf, sizeof buf);
    LOG("%s: efile prefix n=%zd '%s'", what, n, n > 0 ? buf : "");
    buf[0] = '\0';
    n      = H5Pget_virtual_prefix(p, buf, sizeof buf);
    LOG("%s: virtual prefix n=%zd '%s'", what, n, n > 0 ? buf : "");
    H5D_vds_view_t view = (H5D_vds_view_t)-7;
    hsize_t        gap  = 7;
    rc                  = H5Pget_virtual_view(p, &view);
    herr_t rc2          = H5Pget_virtual_printf_gap(p, &gap);
    LOG("%s: view rc=%s %d gap rc=%s %llu", what, RC(rc), (int)view, RC(rc2), (unsigned long long)gap);
    H5Pclose(p);
}

static hid_t make_dataset(hid_t f, const char *name, int chunked)
{
    hsize_t dims[1] = {64}, chunk[1] = {16};
    hid_t   space   = H5Screate_simple(1, dims, NULL);
    hid_t   dcpl    = H5Pcreate(H5P_DATASET_CREATE);
    if (chunked)
        H5Pset_chunk(dcpl, 1, chunk);
    hid_t ds = H5Dcreate2(f, name, H5T_NATIVE_INT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    LOG("create %s %s", name, RC(ds));
    H5Pclose(dcpl);
    H5Sclose(space);
    return ds;
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    (void)L;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    LOG("file create %s", RC(f));
    if (f < 0)
        return;
    hid_t c = make_dataset(f, "chunked", 1), k = make_dataset(f, "contig", 0);
    log_dapl("created chunked", c);
    log_dapl("created contig", k);
    H5Dclose(c);
    H5Dclose(k);

    /* Reopened with H5P_DEFAULT (H5Dopen2 passes the library's default dapl). */
    c = H5Dopen2(f, "chunked", H5P_DEFAULT);
    log_dapl("opened chunked default", c);
    hid_t c2 = H5Dopen2(f, "chunked", H5P_DATASET_ACCESS_DEFAULT);
    log_dapl("opened chunked DEFAULT id", c2);
    H5Dclose(c2);
    H5Dclose(c);

    /* The application's own dapl: as it was at the open. */
    hid_t mine = H5Pcreate(H5P_DATASET_ACCESS);
    H5Pset_chunk_cache(mine, 101, 4096, 0.5);
    H5Pset_efile_prefix(mine, "/tmp/efile-a");
    H5Pset_virtual_prefix(mine, "/tmp/vds-a");
    H5Pset_virtual_view(mine, H5D_VDS_FIRST_MISSING);
    H5Pset_virtual_printf_gap(mine, 3);
    hid_t m = H5Dopen2(f, "chunked", mine);
    LOG("open with own dapl %s", RC(m));
    H5Pset_chunk_cache(mine, 203, 8192, 0.25);
    H5Pset_efile_prefix(mine, "/tmp/efile-b");
    H5Pset_virtual_prefix(mine, "/tmp/vds-b");
    H5Pset_virtual_printf_gap(mine, 5);
    log_dapl("own dapl, changed after the open", m);
    H5Dclose(m);
    H5Pclose(mine);

    /* A changed library default: seen by datasets opened after the change, in a file
     * whose datasets were opened with the old default before; a handle opened before
     * the change keeps what it was opened with.  (Native keeps one chunk cache per open
     * dataset, set by its first open: the datasets below are not open when the default
     * changes.) */
    c = H5Dopen2(f, "contig", H5P_DEFAULT);
    size_t nslots = 0, nbytes = 0;
    double w0 = 0;
    H5Pget_chunk_cache(H5P_DATASET_ACCESS_DEFAULT, &nslots, &nbytes, &w0);
    H5Pset_chunk_cache(H5P_DATASET_ACCESS_DEFAULT, 307, 1 << 16, 0.125);
    H5Pset_virtual_printf_gap(H5P_DATASET_ACCESS_DEFAULT, 9);
    hid_t d2 = H5Dopen2(f, "chunked", H5P_DEFAULT);
    log_dapl("opened after the default changed", d2);
    log_dapl("handle opened before the default changed", c);
    hid_t k2 = H5Dopen2(f, "contig", H5P_DEFAULT);
    log_dapl("second contig handle opened after the default changed", k2);
    hid_t n2 = make_dataset(f, "created-after", 1);
    log_dapl("created after the default changed", n2);
    H5Pset_chunk_cache(H5P_DATASET_ACCESS_DEFAULT, nslots, nbytes, w0);
    H5Pset_virtual_printf_gap(H5P_DATASET_ACCESS_DEFAULT, 0);
    log_dapl("first handle, default restored", c);
    H5Dclose(d2);
    H5Dclose(k2);
    H5Dclose(n2);
    H5Dclose(c);
    LOG("file close %s", RC(H5Fclose(f)));

    /* Reopened file, default dapl restored. */
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    c = H5Dopen2(f, "chunked", H5P_DEFAULT);
    log_dapl("reopened file", c);
    H5Dclose(c);
    H5Fclose(f);
}

int main(int argc, char **argv)
{
    return run_compared(argc > 1 ? argv[1] : ".", "test_access_plists", run, 60, NULL);
}
