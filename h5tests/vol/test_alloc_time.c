/* test_alloc_time.c — H5Dget_space_status and H5Dget_storage_size for every layout and
 * allocation time, before and after partial and full writes and extent changes, tessera
 * compared with native HDF5 (vol_test_log.h).  Filtered datasets compare the status
 * only (their storage size is each library's compressed bytes).
 *
 * Usage: test_alloc_time [directory for the files]
 */
#include "vol_test_log.h"

static void observe(hid_t d, const char *when, int size_too)
{
    H5D_space_status_t st = (H5D_space_status_t)-1;
    herr_t             rc = H5Dget_space_status(d, &st);
    LOG("%s: status rc=%s %d", when, RC(rc), (int)st);
    if (!size_too)
        return;
    /* Chunked and allocated incrementally: tessera reports the bytes it holds when sparse
     * chunks cost less than whole ones (docs/sparse.md), so both log the allocated chunks
     * and whether the size stays within them (and is zero exactly when none are). */
    hid_t            p = H5Dget_create_plist(d);
    H5D_alloc_time_t at = H5D_ALLOC_TIME_DEFAULT;
    H5Pget_alloc_time(p, &at);
    int     incr = H5Pget_layout(p) == H5D_CHUNKED && at == H5D_ALLOC_TIME_INCR;
    hsize_t chunk[2] = {1, 1}, nchunks = 0;
    if (incr)
        H5Pget_chunk(p, 2, chunk);
    H5Pclose(p);
    hsize_t size = H5Dget_storage_size(d);
    if (!incr) {
        LOG("%s: storage %llu", when, (unsigned long long)size);
        return;
    }
    hid_t fs = H5Dget_space(d);
    H5Dget_num_chunks(d, fs, &nchunks);
    H5Sclose(fs);
    hid_t  t = H5Dget_type(d);
    size_t whole = (size_t)(nchunks * chunk[0] * chunk[1] * H5Tget_size(t));
    H5Tclose(t);
    LOG("%s: %llu chunks allocated, storage %s", when, (unsigned long long)nchunks,
        size <= whole && (size > 0) == (nchunks > 0) ? "within them" : "WRONG");
}

static void write_box(hid_t d, hsize_t r0, hsize_t c0, hsize_t nr, hsize_t nc)
{
    hid_t   fs = H5Dget_space(d);
    hsize_t start[2] = {r0, c0}, count[2] = {nr, nc};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(2, count, NULL);
    int   buf[64 * 64];
    for (hsize_t i = 0; i < nr * nc; i++)
        buf[i] = (int)i;
    LOG("write %llu,%llu %llux%llu %s", (unsigned long long)r0, (unsigned long long)c0, (unsigned long long)nr,
        (unsigned long long)nc, RC(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, buf)));
    H5Sclose(ms);
    H5Sclose(fs);
}

static void scenario(hid_t f, H5D_layout_t layout, H5D_alloc_time_t at, int filtered, int *k)
{
    char name[64];
    snprintf(name, sizeof name, "d%d", (*k)++);
    hsize_t dims[2] = {20, 30}, maxd[2] = {40, H5S_UNLIMITED};
    int     chunked = layout == H5D_CHUNKED;
    hid_t   s       = H5Screate_simple(2, dims, chunked ? maxd : NULL);
    hid_t   dcpl    = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_layout(dcpl, layout);
    if (chunked) {
        hsize_t ch[2] = {8, 7};
        H5Pset_chunk(dcpl, 2, ch);
        if (filtered)
            H5Pset_deflate(dcpl, 1);
    }
    if (at != H5D_ALLOC_TIME_DEFAULT)
        H5Pset_alloc_time(dcpl, at);
    hid_t d = H5Dcreate2(f, name, H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5D_alloc_time_t got = H5D_ALLOC_TIME_ERROR;
    hid_t            p   = H5Dget_create_plist(d);
    H5Pget_alloc_time(p, &got);
    H5Pclose(p);
    LOG("dataset layout=%d alloc=%d filtered=%d create %s alloc_time=%d", (int)layout, (int)at, filtered, RC(d),
        (int)got);
    if (d < 0)
        goto out;
    int size_too = !filtered;
    observe(d, "created", size_too);
    write_box(d, 0, 0, 2, 3); /* part of one chunk */
    observe(d, "one cell block", size_too);
    write_box(d, 8, 7, 8, 7); /* exactly one chunk */
    observe(d, "one whole chunk", size_too);
    write_box(d, 0, 0, 20, 30);
    observe(d, "everything", size_too);
    if (chunked) {
        hsize_t big[2] = {33, 45};
        LOG("extend %s", RC(H5Dset_extent(d, big)));
        observe(d, "extended", size_too);
        write_box(d, 32, 44, 1, 1);
        observe(d, "corner written", size_too);
        hsize_t small[2] = {9, 8};
        LOG("shrink %s", RC(H5Dset_extent(d, small)));
        observe(d, "shrunk", size_too);
        LOG("grow back %s", RC(H5Dset_extent(d, big)));
        observe(d, "grown back", size_too);
    }
    H5Dclose(d);
out:
    H5Pclose(dcpl);
    H5Sclose(s);
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    g_log   = L;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    int   k = 0;
    H5D_alloc_time_t times[] = {H5D_ALLOC_TIME_DEFAULT, H5D_ALLOC_TIME_EARLY, H5D_ALLOC_TIME_LATE,
                                H5D_ALLOC_TIME_INCR};
    for (int t = 0; t < 4; t++) {
        scenario(f, H5D_CONTIGUOUS, times[t], 0, &k);
        scenario(f, H5D_COMPACT, times[t], 0, &k);
        scenario(f, H5D_CHUNKED, times[t], 0, &k);
        scenario(f, H5D_CHUNKED, times[t], 1, &k);
    }
    /* Variable-length strings: the file holds 16-byte heap references per element. */
    hsize_t n  = 10;
    hid_t   s  = H5Screate_simple(1, &n, NULL);
    hid_t   vs = H5Tcopy(H5T_C_S1);
    H5Tset_size(vs, H5T_VARIABLE);
    hid_t d = H5Dcreate2(f, "vlen", vs, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    observe(d, "vlen created", 1);
    const char *v[10] = {"a", "bb", "ccc", "d", "e", "f", "g", "h", "i", "j"};
    H5Dwrite(d, vs, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    observe(d, "vlen written", 1);
    H5Dclose(d);
    H5Tclose(vs);
    H5Sclose(s);
    H5Fclose(f);
    /* Reopened. */
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    for (int i = 0; i < k; i++) {
        char name[64];
        snprintf(name, sizeof name, "d%d", i);
        H5E_BEGIN_TRY { d = H5Dopen2(f, name, H5P_DEFAULT); }
        H5E_END_TRY;
        if (d < 0)
            continue;
        hid_t p = H5Dget_create_plist(d);
        int   filtered = H5Pget_nfilters(p) > 0;
        H5Pclose(p);
        observe(d, name, !filtered);
        H5Dclose(d);
    }
    H5Fclose(f);
}

int main(int argc, char **argv)
{
    return run_compared(argc > 1 ? argv[1] : ".", "test_alloc_time", run, 150, NULL);
}
