/* test_huge_extents.c — the limits of a dataspace, on tessera compared with native HDF5
 * (vol_test_log.h), issue 45: element counts past 2^63 and past 2^64 (netCDF's
 * tst_chunks2 dims {1804289383, 846930886, 1681692777}; {2^32, 2^32-1}), extents of 2^63
 * (native's largest: its chunk cache rounds each dimension up to a power of two) and
 * 2^64-2 (the largest HDF5 can express; 2^64-1 is H5S_UNLIMITED), unlimited dimensions
 * grown there and shrunk, rank 32, huge coordinates in hyperslab and point selections,
 * attributes and contiguous and compact datasets of such spaces.
 *
 * Every step's outcome is compared with native's: what native does, tessera must do
 * alike (same result, same values).  Where native refuses a step, tessera may refuse it
 * too — with an error message, never a crash — or do it; the line then says only
 * "refused natively", and what tessera did goes to stdout and must agree with the model
 * this program keeps of the values written (fill value elsewhere, newest write wins,
 * elements cut off by a shrink read as fill).  Native's own results are checked against
 * the same model.
 *
 * Usage: test_huge_extents [directory for the files]
 */
#include "vol_test_log.h"

#include <sys/resource.h>

#include "tessera/tessera.h"

#define U64MAX 18446744073709551615ull
#define FILL   (-3)

static int g_native; /* this run is native's */

/* Native's outcome of each step, by label, for the tessera run that follows. */
static struct {
    char label[128];
    int  ok;
} g_steps[256];
static int g_nsteps;
/* The current dataset went past what native does: what follows it is tessera's alone. */
static int g_beyond;

/* Logs an observation; past native's limits (g_beyond) it is printed instead. */
#define OBS(...)                                                                                         \
    do {                                                                                                 \
        if (g_beyond) {                                                                                  \
            printf("  (beyond native) ");                                                                \
            printf(__VA_ARGS__);                                                                         \
            printf("\n");                                                                                \
        }                                                                                                \
        else                                                                                             \
            LOG(__VA_ARGS__);                                                                            \
    } while (0)

/* A step that succeeded (ok) or failed, logged in both runs as native's outcome: the
 * tessera run logs the same line where native succeeded (and "FAILED" if it did not),
 * and "refused natively" where native failed, printing what tessera did (and prints
 * alone the steps native never reached, having refused an earlier one).  From a step
 * native refused on, the dataset's values may differ between the runs (tessera may have
 * done it): both runs then print their observations (OBS) instead of logging them, and
 * the model alone judges them.  A failure must leave a message on the error stack. */
static int step(const char *label, int ok)
{
    if (!ok && H5Eget_num(H5E_DEFAULT) <= 0)
        check(0, "a refusal leaves an error message", label);
    if (g_native) {
        if (g_nsteps < 256) {
            snprintf(g_steps[g_nsteps].label, sizeof g_steps[0].label, "%s", label);
            g_steps[g_nsteps++].ok = ok;
        }
        LOG("%s: %s", label, ok ? "ok" : "refused natively");
        if (!ok)
            g_beyond = 1;
        return ok;
    }
    int native_ok = -1;
    for (int i = 0; i < g_nsteps; i++)
        if (strcmp(g_steps[i].label, label) == 0)
            native_ok = g_steps[i].ok;
    if (native_ok == 0) {
        LOG("%s: refused natively", label);
        printf("  %s: tessera %s\n", label, ok ? "does it (beyond native)" : "refuses it too");
        g_beyond = 1;
        return ok;
    }
    if (native_ok < 0) { /* native never got here: an earlier step it refused */
        printf("  (beyond native) %s: %s\n", label, ok ? "ok" : "failed");
        return ok;
    }
    LOG("%s: %s", label, ok ? "ok" : "FAILED where native did it");
    return ok;
}

/* The model: the values written to the current dataset, newest last. */
static struct {
    hsize_t c[32];
    int     v;
} g_model[64];
static int g_nmodel, g_rank;

static void model_reset(int rank) { g_nmodel = 0, g_rank = rank; }
static void model_put(const hsize_t *c, int v)
{
    if (g_nmodel < 64) {
        memcpy(g_model[g_nmodel].c, c, (size_t)g_rank * sizeof *c);
        g_model[g_nmodel++].v = v;
    }
}
static int model_get(const hsize_t *c)
{
    for (int i = g_nmodel - 1; i >= 0; i--)
        if (memcmp(g_model[i].c, c, (size_t)g_rank * sizeof *c) == 0)
            return g_model[i].v;
    return FILL;
}
/* A shrink: the elements cut off read as fill if the extent grows back. */
static void model_shrink(const hsize_t *dims)
{
    for (int i = 0; i < g_nmodel; i++)
        for (int k = 0; k < g_rank; k++)
            if (g_model[i].c[k] >= dims[k])
                g_model[i].v = FILL;
}
/* The k-th element of box (start, count) in row-major order. */
static void box_elem(const hsize_t *start, const hsize_t *count, hsize_t k, hsize_t *c)
{
    for (int i = g_rank - 1; i >= 0; i--) {
        c[i] = start[i] + k % count[i];
        k /= count[i];
    }
}

static void log_space(hid_t d, const char *what)
{
    hid_t   s = H5Dget_space(d);
    hsize_t dims[H5S_MAX_RANK], maxd[H5S_MAX_RANK];
    int     r = H5Sget_simple_extent_dims(s, dims, maxd);
    char    line[900] = "";
    size_t  len       = 0;
    for (int i = 0; i < r && i < 4; i++) /* rank 32's dims are all alike */
        len += (size_t)snprintf(line + len, sizeof line - len, " %llu/%llu", (unsigned long long)dims[i],
                                (unsigned long long)maxd[i]);
    OBS("%s: rank %d dims%s%s npoints %lld", what, r, line, r > 4 ? " ..." : "",
        (long long)H5Sget_simple_extent_npoints(s));
    H5Sclose(s);
}

/* Writes base, base+1, ... into the box (start, count) of d, then reads a box one
 * element larger on each side (in the first three dimensions) and compares it with the
 * model. */
static void write_read_box(hid_t d, const hsize_t *start, const hsize_t *count, int base, const char *what)
{
    int     rank = g_rank;
    hsize_t n = 1, bs[H5S_MAX_RANK], bc[H5S_MAX_RANK], bn = 1, dims[H5S_MAX_RANK], c[H5S_MAX_RANK];
    for (int i = 0; i < rank; i++)
        n *= count[i];
    int *w = malloc(n * sizeof(int));
    for (hsize_t i = 0; i < n; i++)
        w[i] = base + (int)i;
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &n, NULL);
    H5Sget_simple_extent_dims(fs, dims, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    char label[160];
    snprintf(label, sizeof label, "%s write", what);
    if (step(label, H5Dwrite(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, w) >= 0))
        for (hsize_t k = 0; k < n; k++) {
            box_elem(start, count, k, c);
            model_put(c, w[k]);
        }
    for (int i = 0; i < rank; i++) {
        bs[i]       = i < 3 && start[i] > 0 ? start[i] - 1 : start[i];
        hsize_t end = i < 3 && start[i] + count[i] < dims[i] ? start[i] + count[i] + 1 : start[i] + count[i];
        bc[i]       = end - bs[i];
        bn *= bc[i];
    }
    int  *r   = malloc(bn * sizeof(int));
    hid_t ms2 = H5Screate_simple(1, &bn, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, bs, NULL, bc, NULL);
    memset(r, 0x55, bn * sizeof(int));
    snprintf(label, sizeof label, "%s read", what);
    if (step(label, H5Dread(d, H5T_NATIVE_INT, ms2, fs, H5P_DEFAULT, r) >= 0)) {
        int agree = 1;
        for (hsize_t k = 0; k < bn; k++) {
            box_elem(bs, bc, k, c);
            agree = agree && r[k] == model_get(c);
        }
        check(agree, "the values read agree with the model", what);
        OBS("%s: %llu values, hash %016llx", what, (unsigned long long)bn, fnv(r, bn * sizeof(int)));
    }
    free(w);
    free(r);
    H5Sclose(ms);
    H5Sclose(ms2);
    H5Sclose(fs);
}

/* Three points written, then read back in reverse order. */
static void write_read_points(hid_t d, const hsize_t *coords, const char *what)
{
    int     rank = g_rank, w[3] = {1000, 1001, 1002}, r[3];
    hsize_t rc[3 * H5S_MAX_RANK], n = 3;
    for (int i = 0; i < 3; i++)
        memcpy(rc + i * rank, coords + (2 - i) * rank, (size_t)rank * sizeof(hsize_t));
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &n, NULL);
    H5Sselect_elements(fs, H5S_SELECT_SET, 3, coords);
    char label[160];
    snprintf(label, sizeof label, "%s points write", what);
    if (step(label, H5Dwrite(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, w) >= 0))
        for (int i = 0; i < 3; i++)
            model_put(coords + i * rank, w[i]);
    H5Sselect_elements(fs, H5S_SELECT_SET, 3, rc);
    memset(r, 0x55, sizeof r);
    snprintf(label, sizeof label, "%s points read", what);
    if (step(label, H5Dread(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, r) >= 0)) {
        int agree = 1;
        for (int i = 0; i < 3; i++)
            agree = agree && r[i] == model_get(rc + i * rank);
        check(agree, "the points read agree with the model", what);
        OBS("%s: points %d %d %d", what, r[0], r[1], r[2]);
    }
    H5Sclose(ms);
    H5Sclose(fs);
}

/* One element read and compared with the model. */
static void read_one(hid_t d, const hsize_t *c, const char *what)
{
    hsize_t ones[H5S_MAX_RANK];
    for (int i = 0; i < g_rank; i++)
        ones[i] = 1;
    int   v  = 0x55555555;
    hid_t fs = H5Dget_space(d), ms = H5Screate(H5S_SCALAR);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, c, NULL, ones, NULL);
    if (step(what, H5Dread(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, &v) >= 0)) {
        check(v == model_get(c), "the element read agrees with the model", what);
        OBS("%s: %d", what, v);
    }
    H5Sclose(ms);
    H5Sclose(fs);
}

/* A chunked int dataset of dims/maxdims/chunk: created (fill -3), closed, reopened,
 * written at its far corner, in the middle and at three points, read back, flushed
 * and reopened.  `io`: 0 at rank 32, where native HDF5 1.14.5 cannot do I/O on a
 * chunked dataset (rank32_io). */
static void chunked(hid_t f, const char *name, int rank, const hsize_t *dims, const hsize_t *maxdims,
                    const hsize_t *chunk, int io)
{
    char label[160];
    g_beyond = 0;
    model_reset(rank);
    hid_t s    = H5Screate_simple(rank, dims, maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int   fill = FILL;
    H5Pset_chunk(dcpl, rank, chunk);
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
    hid_t d = H5Dcreate2(f, name, H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    snprintf(label, sizeof label, "%s create", name);
    step(label, d >= 0);
    H5Pclose(dcpl);
    H5Sclose(s);
    if (d < 0)
        return;
    H5Dclose(d);
    d = H5Dopen2(f, name, H5P_DEFAULT);
    snprintf(label, sizeof label, "%s reopen", name);
    if (!step(label, d >= 0))
        return;
    log_space(d, name);
    if (!io) {
        H5Dclose(d);
        return;
    }
    hsize_t start[H5S_MAX_RANK], count[H5S_MAX_RANK], pts[3 * H5S_MAX_RANK];
    for (int i = 0; i < rank; i++) { /* at most 8 elements */
        count[i] = dims[i] >= 2 && i < 3 ? 2 : 1;
        start[i] = dims[i] - count[i];
    }
    snprintf(label, sizeof label, "%s far corner", name);
    write_read_box(d, start, count, 10, label);
    for (int i = 0; i < rank; i++)
        start[i] = dims[i] / 2 < dims[i] - count[i] ? dims[i] / 2 : dims[i] - count[i];
    snprintf(label, sizeof label, "%s middle", name);
    write_read_box(d, start, count, 50, label);
    for (int i = 0; i < rank; i++) {
        pts[i]            = 0;
        pts[rank + i]     = dims[i] - 1;
        pts[2 * rank + i] = dims[i] / 3;
    }
    write_read_points(d, pts, name);
    hsize_t nchunks = 0;
    herr_t  nc      = H5Dget_num_chunks(d, H5S_ALL, &nchunks);
    OBS("%s: storage nonzero %d, chunks %s %llu", name, H5Dget_storage_size(d) > 0, RC(nc),
        (unsigned long long)nchunks);
    H5Dclose(d);
    H5Fflush(f, H5F_SCOPE_GLOBAL);
    d = H5Dopen2(f, name, H5P_DEFAULT);
    snprintf(label, sizeof label, "%s reopen after flush", name);
    if (step(label, d >= 0)) {
        snprintf(label, sizeof label, "%s last element", name);
        read_one(d, pts + rank, label);
        H5Dclose(d);
    }
}

/* An unlimited dataset grown from 0 to `big` by H5Dset_extent, written at its corner,
 * reopened, shrunk and grown back. */
static void grown(hid_t f, const char *name, const hsize_t *big)
{
    char label[160];
    g_beyond = 0;
    model_reset(2);
    hsize_t dims[2] = {0, 0}, maxd[2] = {H5S_UNLIMITED, H5S_UNLIMITED}, ch[2] = {16, 16};
    hid_t   s = H5Screate_simple(2, dims, maxd), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    int     fill = FILL;
    H5Pset_chunk(dcpl, 2, ch);
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
    hid_t d = H5Dcreate2(f, name, H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    H5Sclose(s);
    snprintf(label, sizeof label, "%s create", name);
    if (!step(label, d >= 0))
        return;
    snprintf(label, sizeof label, "%s set_extent", name);
    int grew = step(label, H5Dset_extent(d, big) >= 0);
    log_space(d, name);
    if (grew) {
        hsize_t start[2] = {big[0] - 3, big[1] - 6}, count[2] = {2, 3};
        snprintf(label, sizeof label, "%s corner", name);
        write_read_box(d, start, count, 500, label);
    }
    H5Dclose(d);
    d = H5Dopen2(f, name, H5P_DEFAULT);
    snprintf(label, sizeof label, "%s reopen", name);
    if (!step(label, d >= 0))
        return;
    log_space(d, name);
    hsize_t small[2] = {big[0] - 2, big[1] - 1};
    snprintf(label, sizeof label, "%s shrink", name);
    if (step(label, H5Dset_extent(d, small) >= 0))
        model_shrink(small);
    snprintf(label, sizeof label, "%s grow back", name);
    step(label, H5Dset_extent(d, big) >= 0);
    log_space(d, name);
    /* Rows big[0]-3 (kept) and big[0]-2 (cut off by the shrink, fill again). */
    hsize_t c[2] = {big[0] - 2, big[1] - 5};
    snprintf(label, sizeof label, "%s cut element", name);
    read_one(d, c, label);
    c[0] = big[0] - 3;
    snprintf(label, sizeof label, "%s kept element", name);
    read_one(d, c, label);
    H5Dclose(d);
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    (void)L;
    g_native = strstr(path, "_native") != NULL;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    LOG("create %s", RC(f));

    /* netCDF's tst_chunks2: 2.6e27 elements (mod 2^64 >= 2^63). */
    hsize_t nc_dims[3] = {1804289383, 846930886, 1681692777}, nc_chunk[3] = {64, 64, 256};
    chunked(f, "tst_chunks2", 3, nc_dims, NULL, nc_chunk, 1);
    /* 2^64 - 2^32 elements: past 2^63, below 2^64. */
    hsize_t d2[2] = {4294967296ull, 4294967295ull}, c2[2] = {1024, 1024};
    chunked(f, "two32", 2, d2, NULL, c2, 1);
    /* Native's largest extent (2^63), unlimited maximum; and 2 x 2^63 elements. */
    hsize_t d1[1] = {1ull << 63}, m1[1] = {H5S_UNLIMITED}, c1[1] = {1 << 20};
    chunked(f, "extent_2e63", 1, d1, m1, c1, 1);
    hsize_t d12[2] = {2, 1ull << 63}, c12[2] = {1, 4096};
    chunked(f, "extent_2x2e63", 2, d12, NULL, c12, 1);
    /* The largest extent HDF5 can express, 2^64-2, in one and in two dimensions, the
     * latter with chunks of one element: 2^128 elements and chunks. */
    hsize_t dmax[1] = {U64MAX - 1}, cmax[1] = {1 << 20};
    chunked(f, "extent_max", 1, dmax, m1, cmax, 1);
    hsize_t d3[2] = {U64MAX - 1, U64MAX - 1}, c3[2] = {1, 1};
    chunked(f, "extent_max_2d_unit_chunks", 2, d3, NULL, c3, 1);
    /* Rank 32: 2^32 elements, unlimited. */
    hsize_t d32[32], c32[32], m32[32];
    for (int i = 0; i < 32; i++)
        d32[i] = 2, c32[i] = 1, m32[i] = H5S_UNLIMITED;
    chunked(f, "rank32", 32, d32, m32, c32, 0);
    /* Unlimited, grown from 0: to 2^63 x 2^32 and to 2^64-2 x 2^32. */
    hsize_t g1[2] = {1ull << 63, 4294967296ull}, g2[2] = {U64MAX - 1, 4294967296ull};
    grown(f, "grown_2e63", g1);
    grown(f, "grown_max", g2);

    /* Contiguous and compact datasets and attributes of such spaces (native refuses them
     * all: no address space for them, an object header message of at most 64 KiB,
     * "dataspace is invalid"). */
    g_beyond = 0;
    {
        hid_t s  = H5Screate_simple(2, d2, NULL);
        hid_t s3 = H5Screate_simple(3, nc_dims, NULL);
        hid_t d  = H5Dcreate2(f, "contiguous_2e64", H5T_STD_I32LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        step("contiguous dataset of 2^64-2^32 ints", d >= 0);
        if (d >= 0)
            H5Dclose(d);
        d = H5Dcreate2(f, "contiguous_wrapped", H5T_STD_I32LE, s3, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        step("contiguous dataset of 2.6e27 ints", d >= 0);
        if (d >= 0)
            H5Dclose(d);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_layout(dcpl, H5D_COMPACT);
        d = H5Dcreate2(f, "compact_2e64", H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        step("compact dataset of 2^64-2^32 ints", d >= 0);
        if (d >= 0)
            H5Dclose(d);
        hsize_t big = 16384, over; /* 16384 ints: 65536 bytes, past one header message */
        hid_t   sb  = H5Screate_simple(1, &big, NULL);
        d = H5Dcreate2(f, "compact_64k", H5T_STD_I32LE, sb, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        step("compact dataset of 65536 bytes", d >= 0);
        if (d >= 0)
            H5Dclose(d);
        H5Sclose(sb);
        over = 65531; /* the largest compact data native takes (uint8) */
        sb   = H5Screate_simple(1, &over, NULL);
        d    = H5Dcreate2(f, "compact_65531", H5T_STD_U8LE, sb, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        step("compact dataset of 65531 bytes", d >= 0);
        if (d >= 0)
            H5Dclose(d);
        H5Sclose(sb);
        over = 65532;
        sb   = H5Screate_simple(1, &over, NULL);
        d    = H5Dcreate2(f, "compact_65532", H5T_STD_U8LE, sb, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        step("compact dataset of 65532 bytes", d >= 0);
        if (d >= 0)
            H5Dclose(d);
        H5Sclose(sb);
        H5Pclose(dcpl);
        hid_t a = H5Acreate2(f, "attr_2e64", H5T_STD_I32LE, s, H5P_DEFAULT, H5P_DEFAULT);
        step("attribute of 2^64-2^32 ints", a >= 0);
        if (a >= 0)
            H5Aclose(a);
        a = H5Acreate2(f, "attr_wrapped", H5T_STD_I32LE, s3, H5P_DEFAULT, H5P_DEFAULT);
        step("attribute of 2.6e27 ints", a >= 0);
        if (a >= 0)
            H5Aclose(a);
        H5Sclose(s3);
        H5Sclose(s);
    }
    H5Fclose(f);

    /* Everything that was made reopens in a new file handle. */
    f                   = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    const char *names[] = {"tst_chunks2", "two32",  "extent_2e63", "extent_2x2e63", "extent_max",
                           "extent_max_2d_unit_chunks", "rank32", "grown_2e63", "grown_max"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char label[160];
        g_beyond = 0;
        snprintf(label, sizeof label, "%s: reopen in a new file handle", names[i]);
        hid_t d = H5Dopen2(f, names[i], H5P_DEFAULT);
        if (step(label, d >= 0)) {
            log_space(d, names[i]);
            H5Dclose(d);
        }
    }
    H5Fclose(f);
}

/* Tessera only, against a model: I/O of more than one element at rank 32, which native
 * HDF5 1.14.5 cannot do on a chunked dataset (SIGFPE in H5S_select_iterate: its chunk
 * code works at rank + 1).  Point selections are left out: H5Sselect_elements itself
 * writes past its buffers at rank 32 (valgrind), whatever the connector. */
static void rank32_io(hid_t tess, const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/test_huge_extents_tessera.h5", dir);
    hid_t   f = H5Fopen(path, H5F_ACC_RDWR, tess);
    hid_t   d = H5Dopen2(f, "rank32", H5P_DEFAULT);
    hsize_t start[32], count[32], n = 8, one = 1, zero[32], ones[32];
    for (int i = 0; i < 32; i++) {
        start[i] = i < 3 ? 0 : 1, count[i] = i < 3 ? 2 : 1;
        zero[i] = 0, ones[i] = 1;
    }
    int   w[8] = {1, 2, 3, 4, 5, 6, 7, 8}, r[8], nine = 9, back = 0;
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &n, NULL), ms1 = H5Screate_simple(1, &one, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    herr_t wr = H5Dwrite(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, w);
    /* The element with every coordinate 1 is the box's last: overwritten by a later write. */
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, ones, NULL, ones, NULL);
    herr_t wr1 = H5Dwrite(d, H5T_NATIVE_INT, ms1, fs, H5P_DEFAULT, &nine);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
    f  = H5Fopen(path, H5F_ACC_RDONLY, tess);
    d  = H5Dopen2(f, "rank32", H5P_DEFAULT);
    fs = H5Dget_space(d);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    herr_t rd = H5Dread(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, r);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, zero, NULL, ones, NULL); /* never written */
    herr_t rd1 = H5Dread(d, H5T_NATIVE_INT, ms1, fs, H5P_DEFAULT, &back);
    int    ok  = wr >= 0 && wr1 >= 0 && rd >= 0 && rd1 >= 0 && back == FILL && r[7] == 9;
    for (int i = 0; i < 7; i++)
        ok = ok && r[i] == w[i];
    check(ok, "rank 32: a box of 8 elements written, one overwritten, reopened and read back", "tessera");
    H5Sclose(ms);
    H5Sclose(ms1);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
}

/* Tessera only, against the model: tessera's own operations on the huge datasets the
 * scenario wrote (docs/sparse.md, docs/queries.md) — defined elements, value queries with
 * and without an index, positions — must count right or refuse clearly, never scan 2^64
 * elements or wrap.  positions_fit: the dataset has fewer than 2^64 elements. */
static void operations(hid_t f, const char *name, hssize_t defined, int positions_fit)
{
    char  expr[64], what[320];
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    hid_t def = tessera_Dget_defined(d, H5S_ALL, H5P_DEFAULT);
    snprintf(what, sizeof what, "%s: tessera_Dget_defined selects the %lld elements written", name, (long long)defined);
    check(def >= 0 && H5Sget_select_npoints(def) == defined, what, "tessera");
    if (def >= 0)
        H5Sclose(def);
    snprintf(expr, sizeof expr, "%s > 0", name); /* every value written is positive, the fill -3 */
    for (int indexed = 0; indexed < 2; indexed++) {
        if (indexed)
            check(tessera_Dbuild_index(d, NULL, H5P_DEFAULT) >= 0, "tessera_Dbuild_index", name);
        hssize_t n = tessera_Fquery_count(f, expr, H5P_DEFAULT);
        if (positions_fit) {
            snprintf(what, sizeof what, "%s: query '%s'%s counts %lld (%lld)", name, expr,
                     indexed ? " (indexed)" : "", (long long)defined, (long long)n);
            check(n == defined, what, "tessera");
        }
        else { /* positions past 2^64: the query engine refuses the region */
            snprintf(what, sizeof what, "%s: query '%s'%s over more than 2^64 elements is refused with a message",
                     name, expr, indexed ? " (indexed)" : "");
            check(n < 0 && stack_says("2^64"), what, "tessera");
        }
    }
    /* Every other element: more than hssize_t holds. */
    snprintf(expr, sizeof expr, "%s < 0", name);
    hssize_t n = tessera_Fquery_count(f, expr, H5P_DEFAULT);
    snprintf(what, sizeof what, "%s: query '%s' (2^63 hits or more) is refused with a message (%lld)", name, expr,
             (long long)n);
    check(n < 0 && H5Eget_num(H5E_DEFAULT) > 0, what, "tessera");
    tessera_query_result_t res;
    memset(&res, 0, sizeof res);
    snprintf(expr, sizeof expr, "%s > 0", name);
    herr_t rc = tessera_Fquery_positions(f, expr, H5P_DEFAULT, &res);
    if (positions_fit) {
        snprintf(what, sizeof what, "%s: tessera_Fquery_positions gives the %lld positions", name, (long long)defined);
        check(rc >= 0 && res.count == (hsize_t)defined, what, "tessera");
    }
    else {
        snprintf(what, sizeof what, "%s: tessera_Fquery_positions refuses positions past 2^64 with a message", name);
        check(rc < 0 && H5Eget_num(H5E_DEFAULT) > 0, what, "tessera");
    }
    if (rc >= 0)
        tessera_query_result_free(&res);
    /* All of it in one H5Dread: 2^63 elements or more, refused (never a read into a
     * buffer sized by a wrapped count). */
    int small[4];
    rc = H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, small);
    snprintf(what, sizeof what, "%s: H5Dread of every element is refused with a message", name);
    check(rc < 0 && stack_says("2^63"), what, "tessera");
    /* Erase everything: nothing defined any more. */
    rc  = tessera_Derase(d, H5S_ALL, H5P_DEFAULT);
    def = tessera_Dget_defined(d, H5S_ALL, H5P_DEFAULT);
    snprintf(what, sizeof what, "%s: tessera_Derase of H5S_ALL leaves nothing defined", name);
    check(rc >= 0 && def >= 0 && H5Sget_select_npoints(def) == 0, what, "tessera");
    if (def >= 0)
        H5Sclose(def);
    H5Dclose(d);
}

/* The tessera-only checks (run_compared's `extra`). */
static void tessera_only(hid_t tess, const char *dir)
{
    rank32_io(tess, dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/test_huge_extents_tessera.h5", dir);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, tess);
    H5E_BEGIN_TRY
    {
        /* Written: the far corner's 8 and the middle's 8 elements, and 2 of the 3
         * points (the third is the corner's last element). */
        operations(f, "tst_chunks2", 18, 0);
        operations(f, "two32", 10, 1);
    }
    H5E_END_TRY
    H5Fclose(f);
}

int main(int argc, char **argv)
{
    /* A size computation that overflows can turn into a huge allocation: fail it here
     * rather than let the machine's OOM killer pick a victim. */
    struct rlimit lim = {(rlim_t)6 << 30, (rlim_t)6 << 30};
    setrlimit(RLIMIT_AS, &lim);
    return run_compared(argc > 1 ? argv[1] : ".", "test_huge_extents", run, 60, tessera_only);
}
