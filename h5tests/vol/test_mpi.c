/* test_mpi.c — Parallel HDF5 on tessera and on native PHDF5, checked against a model.
 *
 * Run under mpirun (CTest: -n 2 and -n 4).  The same scenario runs twice: on a tessera
 * container and on a native HDF5 file, the connector chosen per file by the fapl
 * (H5Pset_fapl_mpio + H5Pset_vol).  Every rank writes its own part of each dataset — a
 * disjoint block of rows, a strided interleaving of columns, or random points — with a
 * collective or an independent transfer, deflate or not; after H5Fflush every rank writes
 * a box over another rank's earlier data (later epochs must win), then every rank reads the
 * whole dataset and compares it with a model the test computes itself.  Groups and
 * attributes are created collectively; an extent shrink + grow must read back as fill.
 * After the parallel close rank 0 opens the file serially and checks everything again.
 * Native PHDF5 refuses independent writes to deflate datasets, so those cases run on
 * tessera only; every case run on both must read back identical bytes.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NX 64
#define NY 48
#define CX 16
#define CY 16
#define FILLV (-1)
#define NCASES 12

static int rank, nranks, fails;
static hid_t tessera_vol;

static void expect(int ok, const char *fmt, ...)
{
    if (ok) return;
    va_list ap;
    va_start(ap, fmt);
    printf("[rank %d] FAIL: ", rank);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    fails++;
}

enum { SLAB, STRIDED, POINTS };
static const char *pattern_name[] = {"slab", "strided", "points"};

struct Case {
    int pattern, collective, deflate;
    char name[64];
    int model[NX][NY];
};
static struct Case cases[NCASES];
static int tessera_read[NCASES][NX][NY]; /* what tessera read back, for the native pass */

static int value(int phase, int r, int i, int j) { return phase * 1000000 + (r + 1) * 10000 + i * NY + j; }

/* The same pseudo-random permutation of all cells on every rank (fixed seed). */
static int perm[NX * NY];
static void make_perm(void)
{
    unsigned s = 12345;
    for (int k = 0; k < NX * NY; k++) perm[k] = k;
    for (int k = NX * NY - 1; k > 0; k--) {
        s = s * 1103515245u + 12345u;
        int m = (int)((s >> 8) % (unsigned)(k + 1));
        int t = perm[k]; perm[k] = perm[m]; perm[m] = t;
    }
}

static hid_t make_fapl(int tessera, int mpio)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (mpio) H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    H5Pset_vol(fapl, tessera ? tessera_vol : H5VL_NATIVE, NULL);
    return fapl;
}

static hid_t make_dxpl(int collective)
{
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
    return dxpl;
}

/* Rank r's phase-0 write of case c (and the model update for every rank's write). */
static void write_pattern(hid_t d, struct Case *c, int r, hid_t dxpl, int apply_only)
{
    hid_t fs = H5Screate_simple(2, (hsize_t[]){NX, NY}, NULL), ms = -1;
    int *buf = NULL;
    size_t n = 0;
    if (c->pattern == SLAB) {
        int lo = r * NX / nranks, hi = (r + 1) * NX / nranks;
        for (int i = lo; i < hi; i++)
            for (int j = 0; j < NY; j++) c->model[i][j] = value(0, r, i, j);
        if (apply_only) goto out;
        hsize_t start[2] = {(hsize_t)lo, 0}, count[2] = {(hsize_t)(hi - lo), NY};
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
        buf = malloc(sizeof(int) * (size_t)(hi - lo) * NY);
        for (int i = lo; i < hi; i++)
            for (int j = 0; j < NY; j++) buf[n++] = value(0, r, i, j);
    } else if (c->pattern == STRIDED) {
        int cols = (NY - r + nranks - 1) / nranks;
        for (int i = 0; i < NX; i++)
            for (int j = r; j < NY; j += nranks) c->model[i][j] = value(0, r, i, j);
        if (apply_only) goto out;
        hsize_t start[2] = {0, (hsize_t)r}, stride[2] = {1, (hsize_t)nranks}, count[2] = {NX, (hsize_t)cols};
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, stride, count, NULL);
        buf = malloc(sizeof(int) * NX * (size_t)cols);
        for (int i = 0; i < NX; i++)
            for (int j = r; j < NY; j += nranks) buf[n++] = value(0, r, i, j);
    } else {
        int total = NX * NY / 3;
        hsize_t *coords = malloc(sizeof(hsize_t) * 2 * (size_t)total);
        buf = malloc(sizeof(int) * (size_t)total);
        for (int k = r; k < total; k += nranks) {
            int i = perm[k] / NY, j = perm[k] % NY;
            c->model[i][j] = value(0, r, i, j);
            coords[2 * n] = (hsize_t)i;
            coords[2 * n + 1] = (hsize_t)j;
            buf[n++] = value(0, r, i, j);
        }
        if (!apply_only) H5Sselect_elements(fs, H5S_SELECT_SET, n, coords);
        free(coords);
        if (apply_only) goto out;
    }
    ms = H5Screate_simple(1, (hsize_t[]){n}, NULL);
    expect(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, dxpl, buf) >= 0, "%s: phase-0 write", c->name);
out:
    free(buf);
    if (ms >= 0) H5Sclose(ms);
    H5Sclose(fs);
}

/* Phase 1 (after a flush): rank r overwrites a 4x5 box in the next rank's rows. */
static void write_overlay(hid_t d, struct Case *c, int r, hid_t dxpl, int apply_only)
{
    int i0 = ((r + 1) % nranks) * NX / nranks + 1, j0 = 3;
    int buf[4 * 5], n = 0;
    for (int i = i0; i < i0 + 4; i++)
        for (int j = j0; j < j0 + 5; j++) c->model[i][j] = buf[n++] = value(1, r, i, j);
    if (apply_only) return;
    hid_t fs = H5Screate_simple(2, (hsize_t[]){NX, NY}, NULL);
    hid_t ms = H5Screate_simple(2, (hsize_t[]){4, 5}, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, (hsize_t[]){(hsize_t)i0, (hsize_t)j0}, NULL, (hsize_t[]){4, 5}, NULL);
    expect(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, dxpl, buf) >= 0, "%s: overlay write", c->name);
    H5Sclose(ms);
    H5Sclose(fs);
}

static void compare(const char *who, struct Case *c, int got[NX][NY])
{
    int bad = 0, fi = 0, fj = 0;
    for (int i = 0; i < NX; i++)
        for (int j = 0; j < NY; j++)
            if (got[i][j] != c->model[i][j] && bad++ == 0) { fi = i; fj = j; }
    expect(bad == 0, "%s %s: %d cells differ from the model, first (%d,%d): got %d want %d", who, c->name, bad,
           fi, fj, bad ? got[fi][fj] : 0, bad ? c->model[fi][fj] : 0);
}

static int ext_model(int k) /* dataset "ext" after shrink to 8 and growth to 32*n */
{
    if (k < 8) return value(0, k / 16, 0, k);
    if (k < 16 * nranks) return FILLV;
    return value(2, (k - 16 * nranks) / 16, 0, k);
}

static void check_meta(hid_t f, const char *who)
{
    hid_t g = H5Gopen2(f, "/meta/sub", H5P_DEFAULT);
    expect(g >= 0, "%s: group /meta/sub missing", who);
    if (g >= 0) H5Gclose(g);
    int a[4] = {0};
    hid_t at = H5Aopen_by_name(f, "/meta", "info", H5P_DEFAULT, H5P_DEFAULT);
    expect(at >= 0 && H5Aread(at, H5T_NATIVE_INT, a) >= 0, "%s: attribute /meta info unreadable", who);
    if (at >= 0) H5Aclose(at);
    expect(a[0] == 7 && a[1] == 8 && a[2] == 9 && a[3] == nranks, "%s: attribute holds %d %d %d %d", who, a[0],
           a[1], a[2], a[3]);
}

static void check_ext(hid_t f, const char *who)
{
    hid_t d = H5Dopen2(f, "ext", H5P_DEFAULT);
    hid_t s = H5Dget_space(d);
    hsize_t dim = 0;
    H5Sget_simple_extent_dims(s, &dim, NULL);
    expect(dim == (hsize_t)(32 * nranks), "%s ext: extent %llu", who, (unsigned long long)dim);
    int *buf = calloc((size_t)(32 * nranks), sizeof(int));
    expect(H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0, "%s ext: read", who);
    int bad = 0;
    for (int k = 0; k < 32 * nranks; k++)
        if (buf[k] != ext_model(k) && bad++ == 0)
            expect(0, "%s ext: element %d is %d, want %d", who, k, buf[k], ext_model(k));
    free(buf);
    H5Sclose(s);
    H5Dclose(d);
}

static void run(const char *path, int tessera)
{
    const char *who = tessera ? "tessera" : "native";
    hid_t fapl = make_fapl(tessera, 1);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    expect(f >= 0, "%s: parallel create of %s", who, path);
    if (f < 0) MPI_Abort(MPI_COMM_WORLD, 2); /* nothing below could stay collective */

    /* The fapl round-trips: the driver is still MPI-IO, on a congruent communicator. */
    hid_t fa = H5Fget_access_plist(f);
    MPI_Comm fc = MPI_COMM_NULL;
    MPI_Info fi = MPI_INFO_NULL;
    int cmp = MPI_UNEQUAL;
    expect(H5Pget_driver(fa) == H5FD_MPIO && H5Pget_fapl_mpio(fa, &fc, &fi) >= 0, "%s: fapl lost MPI-IO", who);
    if (fc != MPI_COMM_NULL) {
        MPI_Comm_compare(fc, MPI_COMM_WORLD, &cmp);
        MPI_Comm_free(&fc);
    }
    if (fi != MPI_INFO_NULL) MPI_Info_free(&fi);
    expect(cmp == MPI_CONGRUENT, "%s: fapl communicator is not congruent with MPI_COMM_WORLD", who);
    H5Pclose(fa);

    /* Collective metadata: a group path and an attribute, identical on every rank. */
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t g = H5Gcreate2(f, "/meta/sub", lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Pclose(lcpl);
    expect(g >= 0, "%s: group create", who);
    H5Gclose(g);
    hid_t as = H5Screate_simple(1, (hsize_t[]){4}, NULL);
    hid_t at = H5Acreate_by_name(f, "/meta", "info", H5T_NATIVE_INT, as, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int av[4] = {7, 8, 9, nranks};
    expect(at >= 0 && H5Awrite(at, H5T_NATIVE_INT, av) >= 0, "%s: attribute write", who);
    H5Aclose(at);
    H5Sclose(as);

    hid_t dsets[NCASES];
    for (int k = 0; k < NCASES; k++) {
        struct Case *c = &cases[k];
        dsets[k] = -1;
        if (!tessera && c->deflate && !c->collective) continue; /* PHDF5 refuses these */
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 2, (hsize_t[]){CX, CY});
        int fill = FILLV;
        H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
        if (c->deflate) H5Pset_deflate(dcpl, 1);
        hid_t s = H5Screate_simple(2, (hsize_t[]){NX, NY}, NULL);
        dsets[k] = H5Dcreate2(f, c->name, H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        expect(dsets[k] >= 0, "%s %s: create", who, c->name);
        H5Sclose(s);
        H5Pclose(dcpl);
        hid_t dxpl = make_dxpl(c->collective);
        for (int i = 0; i < NX; i++)
            for (int j = 0; j < NY; j++) c->model[i][j] = FILLV;
        for (int r = 0; r < nranks; r++) write_pattern(dsets[k], c, r, dxpl, r != rank);
        H5Pclose(dxpl);
    }
    expect(H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0, "%s: flush 1", who);
    for (int k = 0; k < NCASES; k++) {
        if (dsets[k] < 0) continue;
        hid_t dxpl = make_dxpl(cases[k].collective);
        for (int r = 0; r < nranks; r++) write_overlay(dsets[k], &cases[k], r, dxpl, r != rank);
        H5Pclose(dxpl);
    }
    expect(H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0, "%s: flush 2", who);

    static int got[NX][NY];
    for (int k = 0; k < NCASES; k++) {
        if (dsets[k] < 0) continue;
        hid_t dxpl = make_dxpl(cases[k].collective);
        memset(got, 0, sizeof got);
        expect(H5Dread(dsets[k], H5T_NATIVE_INT, H5S_ALL, H5S_ALL, dxpl, got) >= 0, "%s %s: read", who,
               cases[k].name);
        compare(who, &cases[k], got);
        if (tessera) memcpy(tessera_read[k], got, sizeof got);
        else expect(memcmp(tessera_read[k], got, sizeof got) == 0, "%s: tessera and native read differently",
                    cases[k].name);
        H5Pclose(dxpl);
        H5Dclose(dsets[k]);
    }
    check_meta(f, who);

    /* Extent changes are collective: shrink (cut cells must come back as fill), grow. */
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, (hsize_t[]){8});
    int fill = FILLV;
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
    hsize_t dim = (hsize_t)(16 * nranks), maxdim = H5S_UNLIMITED;
    hid_t s = H5Screate_simple(1, &dim, &maxdim);
    hid_t d = H5Dcreate2(f, "ext", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Sclose(s);
    H5Pclose(dcpl);
    hid_t dxpl = make_dxpl(1);
    int buf[16];
    for (int k = 0; k < 16; k++) buf[k] = value(0, rank, 0, rank * 16 + k);
    hid_t ms = H5Screate_simple(1, (hsize_t[]){16}, NULL);
    hid_t fs = H5Dget_space(d);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, (hsize_t[]){(hsize_t)(rank * 16)}, NULL, (hsize_t[]){16}, NULL);
    expect(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, dxpl, buf) >= 0, "%s ext: write 1", who);
    H5Sclose(fs);
    expect(H5Dset_extent(d, (hsize_t[]){8}) >= 0, "%s ext: shrink", who);
    expect(H5Dset_extent(d, (hsize_t[]){(hsize_t)(32 * nranks)}) >= 0, "%s ext: grow", who);
    for (int k = 0; k < 16; k++) buf[k] = value(2, rank, 0, 16 * nranks + rank * 16 + k);
    fs = H5Dget_space(d);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, (hsize_t[]){(hsize_t)(16 * nranks + rank * 16)}, NULL,
                        (hsize_t[]){16}, NULL);
    expect(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, dxpl, buf) >= 0, "%s ext: write 2", who);
    H5Sclose(fs);
    H5Sclose(ms);
    H5Pclose(dxpl);
    H5Dclose(d);
    expect(H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0, "%s: flush 3", who);
    check_ext(f, who);
    expect(H5Fclose(f) >= 0, "%s: parallel close", who);

    /* A later serial reader sees the same. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        fapl = make_fapl(tessera, 0);
        f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
        H5Pclose(fapl);
        expect(f >= 0, "%s: serial open", who);
        for (int k = 0; k < NCASES && f >= 0; k++) {
            if (!tessera && cases[k].deflate && !cases[k].collective) continue;
            hid_t dd = H5Dopen2(f, cases[k].name, H5P_DEFAULT);
            memset(got, 0, sizeof got);
            expect(dd >= 0 && H5Dread(dd, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) >= 0,
                   "%s serial %s: read", who, cases[k].name);
            compare(tessera ? "tessera serial" : "native serial", &cases[k], got);
            if (dd >= 0) H5Dclose(dd);
        }
        if (f >= 0) {
            check_meta(f, who);
            check_ext(f, who);
            H5Fclose(f);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    tessera_vol = H5VLregister_connector_by_name("tessera", H5P_DEFAULT);
    if (tessera_vol < 0) {
        printf("FAIL: cannot register the tessera connector (HDF5_PLUGIN_PATH?)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    make_perm();
    int k = 0;
    for (int p = SLAB; p <= POINTS; p++)
        for (int coll = 1; coll >= 0; coll--)
            for (int defl = 0; defl <= 1; defl++, k++) {
                cases[k].pattern = p;
                cases[k].collective = coll;
                cases[k].deflate = defl;
                snprintf(cases[k].name, sizeof cases[k].name, "%s_%s%s", pattern_name[p],
                         coll ? "coll" : "indep", defl ? "_deflate" : "");
            }
    const char *dir = argc > 1 ? argv[1] : ".";
    char tpath[4096], npath[4096];
    snprintf(tpath, sizeof tpath, "%s/test_mpi_np%d.tsr", dir, nranks);
    snprintf(npath, sizeof npath, "%s/test_mpi_np%d.h5", dir, nranks);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);  /* failures are reported by expect() */
    run(tpath, 1);
    run(npath, 0);

    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_mpi (%d ranks): %s (%d failures)\n", nranks, total ? "FAILED" : "ok", total);
    H5VLclose(tessera_vol);
    MPI_Finalize();
    return total ? 1 : 0;
}
