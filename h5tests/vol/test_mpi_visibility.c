/* test_mpi_visibility.c — what PHDF5 programs assume about raw data, on tessera and on
 * native PHDF5, each checked against a model the test computes itself.
 *
 * Run under mpirun (CTest: -n 2 and -n 4).  Three scenarios, each run on a tessera
 * container and on a native HDF5 file (the connector chosen per file by the fapl):
 *
 *  same_handle  every rank writes its rows of a dataset (collective or independent
 *               transfer, chunked or contiguous), MPI_Barrier, then every rank reads the
 *               whole dataset through the handle it wrote with — it must see every rank's
 *               rows (HDF5's t_shapesame, t_span_tree do exactly this).  A second round
 *               overwrites another rank's rows: the later write wins.
 *  small_pieces every rank makes many small independent H5Dwrites (its own band, the next
 *               rank's, its own again over the next round's pieces), MPI_Barrier, and every
 *               rank reads them all; again after H5Fflush, H5Dclose + reopen, file reopen.
 *  ser2par      rank 0 writes a file serially (a chunked dataset allocated early with one
 *               chunk written, a deflate dataset written whole, a small one), then every
 *               rank opens it in parallel, reads it, extends it, writes interleaved
 *               chunks, closes and reopens it — HDF5's testphdf5 calloc,
 *               chkallocser2par and fltread.
 *  ocopy        H5Ocopy of a dataset (and of a group holding one) in a parallel file.
 *  objflush     H5Oflush, H5Dflush, H5Gflush, H5Tflush in a parallel file: native PHDF5
 *               refuses them all (testphdf5 h5oflusherror); tessera must too.
 *  fileops      H5Fdelete is collective and H5Fis_accessible fails once the file is gone
 *               (testphdf5 delete); the fapl/fcpl settings native PHDF5 refuses — evict on
 *               close, page buffering, non-default file space settings with a pre-1.10
 *               high bound (page_buffer, invlibverassert, evictparassert) — succeed or fail
 *               as natively.
 *  causes       H5Pget_mpio_no_collective_cause / H5Pget_no_selection_io_cause after writes
 *               and reads of several kinds (testphdf5 nocolcause): as natively.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NY 24
#define CH 100     /* ser2par chunk size (elements) */
#define NCH_SER 8  /* chunks per rank when written serially */
#define NCH_PAR 12 /* chunks per rank after the parallel extend */

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

/* Reads all of d (n ints) and compares with model; returns the number of mismatches. */
static int check_all(hid_t d, hid_t dxpl, const int *model, size_t n, const char *what)
{
    int *got = malloc(n * sizeof(int));
    for (size_t k = 0; k < n; k++) got[k] = -777;
    herr_t rc = H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, dxpl, got);
    expect(rc >= 0, "%s: read", what);
    int bad = 0;
    for (size_t k = 0; k < n && rc >= 0; k++)
        if (got[k] != model[k]) {
            if (bad++ == 0) expect(0, "%s: cell %zu is %d, expected %d", what, k, got[k], model[k]);
        }
    if (bad > 1) expect(0, "%s: %d cells differ from the model", what, bad);
    free(got);
    return bad;
}

/* ---------------------------------------------------------------- same_handle */

static void write_rows(hid_t d, int row_owner, int writer, int round, hid_t dxpl, int *model)
{
    hid_t fs = H5Dget_space(d);
    hsize_t start[2] = {(hsize_t)row_owner * 2, 0}, count[2] = {2, NY};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(2, count, NULL);
    int buf[2 * NY];
    for (int k = 0; k < 2 * NY; k++) {
        buf[k] = round * 100000 + (writer + 1) * 1000 + k;
        model[row_owner * 2 * NY + k] = buf[k];
    }
    if (writer == rank)
        expect(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, dxpl, buf) >= 0, "write rows %d round %d", row_owner, round);
    H5Sclose(ms);
    H5Sclose(fs);
}

static void same_handle(const char *path, int tessera)
{
    const char *who = tessera ? "tessera" : "native";
    hid_t fapl = make_fapl(tessera, 1);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    expect(f >= 0, "%s: parallel create of %s", who, path);
    if (f < 0) MPI_Abort(MPI_COMM_WORLD, 2);
    size_t n = (size_t)nranks * 2 * NY;
    int *model = malloc(n * sizeof(int));
    for (int layout = 0; layout < 2; layout++)
        for (int coll = 0; coll < 2; coll++) {
            char name[64], what[128];
            snprintf(name, sizeof name, "%s_%s", layout ? "chunked" : "contig", coll ? "coll" : "indep");
            hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
            if (layout) H5Pset_chunk(dcpl, 2, (hsize_t[]){1, NY / 2});
            int fill = -1;
            H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
            hid_t s = H5Screate_simple(2, (hsize_t[]){(hsize_t)nranks * 2, NY}, NULL);
            hid_t d = H5Dcreate2(f, name, H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
            expect(d >= 0, "%s %s: create", who, name);
            H5Sclose(s);
            H5Pclose(dcpl);
            hid_t dxpl = make_dxpl(coll);
            /* Round 1: each rank its own rows.  Round 2: each rank the next rank's rows. */
            for (int round = 1; round <= 2; round++) {
                for (int r = 0; r < nranks; r++) write_rows(d, round == 1 ? r : (r + 1) % nranks, r, round, dxpl, model);
                MPI_Barrier(MPI_COMM_WORLD);
                snprintf(what, sizeof what, "%s %s round %d, same handle", who, name, round);
                check_all(d, dxpl, model, n, what);
                MPI_Barrier(MPI_COMM_WORLD);  /* nobody writes round 2 before all read round 1 */
            }
            H5Pclose(dxpl);
            H5Dclose(d);
        }
    expect(H5Fclose(f) >= 0, "%s: close", who);
    free(model);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---------------------------------------------------------------- small_pieces */

#define SP_ROWS 16 /* rows of each rank's band */
#define SP_COLS 64
#define SP_PIECES 60

/* Piece k of `writer` in `round`: a box of 1-4 rows x 1-16 columns inside rank `band`'s
 * band (deterministic, so every rank knows every rank's pieces for its model). */
static void sp_piece(int writer, int round, int k, int band, hsize_t *start, hsize_t *count)
{
    unsigned x = (unsigned)(writer * 7919 + round * 104729 + k * 31 + 1);
    x = x * 1103515245u + 12345u;
    count[0] = 1 + (x >> 8) % 4;
    x = x * 1103515245u + 12345u;
    count[1] = 1 + (x >> 8) % 16;
    x = x * 1103515245u + 12345u;
    start[0] = (hsize_t)band * SP_ROWS + (x >> 8) % (SP_ROWS - count[0] + 1);
    x = x * 1103515245u + 12345u;
    start[1] = (x >> 8) % (SP_COLS - count[1] + 1);
}

/* One round: every rank writes SP_PIECES small pieces, each its own independent H5Dwrite,
 * into rank (r + shift)'s band; the model applies every rank's pieces in write order. */
static void sp_round(hid_t d, int round, int shift, int *model)
{
    for (int w = 0; w < nranks; w++)
        for (int k = 0; k < SP_PIECES; k++) {
            hsize_t start[2], count[2];
            sp_piece(w, round, k, (w + shift) % nranks, start, count);
            int buf[4 * 16];
            for (hsize_t i = 0; i < count[0]; i++)
                for (hsize_t j = 0; j < count[1]; j++) {
                    int v = round * 1000000 + (w + 1) * 10000 + k * 100 + (int)(i * count[1] + j);
                    buf[i * count[1] + j] = v;
                    model[(start[0] + i) * SP_COLS + start[1] + j] = v;
                }
            if (w != rank) continue;
            hid_t fs = H5Dget_space(d), ms = H5Screate_simple(2, count, NULL);
            H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
            hid_t dxpl = make_dxpl(0);
            expect(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, dxpl, buf) >= 0, "small piece %d of round %d", k, round);
            H5Pclose(dxpl);
            H5Sclose(ms);
            H5Sclose(fs);
        }
}

/* Many small independent writes per rank (tessera shares them through share logs and
 * spills each rank's run as one fragment): after a barrier every rank reads every rank's
 * pieces through the handle it wrote with; a second round overwrites pieces of the next
 * rank's band, a third the rank's own band again (over the other ranks' second-round
 * pieces: the later write wins); then after H5Fflush, after H5Dclose and reopen, and
 * after the file is closed and reopened. */
static void small_pieces(const char *path, int tessera)
{
    const char *who = tessera ? "tessera" : "native";
    char what[160];
    hid_t fapl = make_fapl(tessera, 1);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    expect(f >= 0, "%s: parallel create of %s", who, path);
    if (f < 0) MPI_Abort(MPI_COMM_WORLD, 2);
    const size_t n = (size_t)nranks * SP_ROWS * SP_COLS;
    int *model = malloc(n * sizeof(int));
    for (size_t k = 0; k < n; k++) model[k] = -1;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, (hsize_t[]){8, 32});
    int fill = -1;
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
    hid_t s = H5Screate_simple(2, (hsize_t[]){(hsize_t)nranks * SP_ROWS, SP_COLS}, NULL);
    hid_t d = H5Dcreate2(f, "pieces", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    expect(d >= 0, "%s: create", who);
    H5Sclose(s);
    H5Pclose(dcpl);
    const int shifts[3] = {0, 1, 0};
    for (int round = 0; round < 3; round++) {
        sp_round(d, round, shifts[round], model);
        MPI_Barrier(MPI_COMM_WORLD);
        snprintf(what, sizeof what, "%s small_pieces round %d, same handle", who, round);
        check_all(d, H5P_DEFAULT, model, n, what);
        MPI_Barrier(MPI_COMM_WORLD); /* nobody writes the next round before all have read */
    }
    expect(H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0, "%s: flush", who);
    snprintf(what, sizeof what, "%s small_pieces after H5Fflush", who);
    check_all(d, H5P_DEFAULT, model, n, what);
    MPI_Barrier(MPI_COMM_WORLD);
    sp_round(d, 3, 1, model); /* after the flush: H5Dclose publishes these */
    H5Dclose(d);
    MPI_Barrier(MPI_COMM_WORLD);
    d = H5Dopen2(f, "pieces", H5P_DEFAULT);
    snprintf(what, sizeof what, "%s small_pieces after H5Dclose and reopen", who);
    check_all(d, H5P_DEFAULT, model, n, what);
    H5Dclose(d);
    expect(H5Fclose(f) >= 0, "%s: close", who);
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    expect(f >= 0, "%s: reopen", who);
    d = H5Dopen2(f, "pieces", H5P_DEFAULT);
    snprintf(what, sizeof what, "%s small_pieces after the file's reopen", who);
    check_all(d, H5P_DEFAULT, model, n, what);
    H5Dclose(d);
    H5Fclose(f);
    H5Pclose(fapl);
    free(model);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---------------------------------------------------------------- ser2par */

static void ser2par(const char *path, int tessera)
{
    const char *who = tessera ? "tessera" : "native";
    char what[160];
    const size_t n_ser = (size_t)nranks * NCH_SER * CH, n_par = (size_t)nranks * NCH_PAR * CH;
    int *chunked = malloc(n_par * sizeof(int)), *deflated = malloc(n_ser * sizeof(int));
    int small[16];
    for (size_t k = 0; k < n_par; k++) chunked[k] = -5;                                   /* fill */
    for (size_t k = 0; k < (size_t)CH; k++) chunked[(size_t)(nranks * NCH_SER - 2) * CH + k] = 100; /* sec_last */
    for (size_t k = 0; k < n_ser; k++) deflated[k] = (int)(k % 97) * 3 - 50;
    for (int k = 0; k < 16; k++) small[k] = 7 * k + 1;

    if (rank == 0) {
        hid_t fapl = make_fapl(tessera, 0);
        hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        H5Pclose(fapl);
        expect(f >= 0, "%s: serial create", who);
        hsize_t dim = n_ser, maxdim = H5S_UNLIMITED, ch = CH;
        hid_t s = H5Screate_simple(1, &dim, &maxdim);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, &ch);
        H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
        int fill = -5;
        H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
        hid_t d = H5Dcreate2(f, "chunked", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &ch, NULL);
        hsize_t off = (hsize_t)(nranks * NCH_SER - 2) * CH;
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &off, NULL, &ch, NULL);
        expect(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, chunked + off) >= 0, "%s: serial write", who);
        H5Sclose(fs);
        H5Sclose(ms);
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(s);

        s = H5Screate_simple(1, (hsize_t[]){n_ser}, NULL);
        dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, (hsize_t[]){CH});
        H5Pset_deflate(dcpl, 6);
        d = H5Dcreate2(f, "deflated", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        expect(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, deflated) >= 0, "%s: deflate write", who);
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(s);

        s = H5Screate_simple(1, (hsize_t[]){16}, NULL);
        d = H5Dcreate2(f, "small", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        expect(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, small) >= 0, "%s: small write", who);
        H5Dclose(d);
        H5Sclose(s);
        expect(H5Fclose(f) >= 0, "%s: serial close", who);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Parallel: read everything, extend, write interleaved chunks on the same handle. */
    hid_t fapl = make_fapl(tessera, 1);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, fapl);
    expect(f >= 0, "%s: parallel open", who);
    if (f < 0) MPI_Abort(MPI_COMM_WORLD, 2);
    hid_t d = H5Dopen2(f, "deflated", H5P_DEFAULT);
    snprintf(what, sizeof what, "%s ser2par deflated", who);
    check_all(d, H5P_DEFAULT, deflated, n_ser, what);
    H5Dclose(d);
    d = H5Dopen2(f, "small", H5P_DEFAULT);
    snprintf(what, sizeof what, "%s ser2par small", who);
    check_all(d, H5P_DEFAULT, small, 16, what);
    H5Dclose(d);
    d = H5Dopen2(f, "chunked", H5P_DEFAULT);
    snprintf(what, sizeof what, "%s ser2par chunked as written serially", who);
    int *model_ser = malloc(n_ser * sizeof(int));
    memcpy(model_ser, chunked, n_ser * sizeof(int));
    check_all(d, H5P_DEFAULT, model_ser, n_ser, what);
    free(model_ser);
    MPI_Barrier(MPI_COMM_WORLD);
    hsize_t ext = n_par, ch = CH;
    expect(H5Dset_extent(d, &ext) >= 0, "%s: parallel extend", who);
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &ch, NULL);
    int buf[CH];
    for (int i = 0; i < nranks * NCH_PAR; i++) {
        if (i % 3 == 2) continue; /* some chunks stay fill (some of them new ones) */
        int w = i % nranks;
        for (int k = 0; k < CH; k++) chunked[(size_t)i * CH + k] = (w + 1) * 10000 + i;
        if (w != rank) continue;
        memcpy(buf, chunked + (size_t)i * CH, sizeof buf);
        hsize_t off = (hsize_t)i * CH;
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &off, NULL, &ch, NULL);
        expect(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, buf) >= 0, "%s: chunk %d write", who, i);
    }
    H5Sclose(fs);
    H5Sclose(ms);
    MPI_Barrier(MPI_COMM_WORLD);
    snprintf(what, sizeof what, "%s ser2par chunked extended and written, same handle", who);
    check_all(d, H5P_DEFAULT, chunked, n_par, what);
    H5Dclose(d);
    expect(H5Fclose(f) >= 0, "%s: parallel close", who);

    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    expect(f >= 0, "%s: parallel reopen", who);
    d = H5Dopen2(f, "chunked", H5P_DEFAULT);
    snprintf(what, sizeof what, "%s ser2par chunked after reopen", who);
    check_all(d, H5P_DEFAULT, chunked, n_par, what);
    H5Dclose(d);
    H5Fclose(f);
    free(chunked);
    free(deflated);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---------------------------------------------------------------- ocopy */

static void ocopy(const char *path, int tessera)
{
    const char *who = tessera ? "tessera" : "native";
    char what[160];
    hid_t fapl = make_fapl(tessera, 1);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    expect(f >= 0, "%s: parallel create", who);
    if (f < 0) MPI_Abort(MPI_COMM_WORLD, 2);
    size_t n = (size_t)nranks * 2 * NY;
    int *model = malloc(n * sizeof(int));
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, (hsize_t[]){2, NY});
    hid_t s = H5Screate_simple(2, (hsize_t[]){(hsize_t)nranks * 2, NY}, NULL);
    hid_t g = H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t d = H5Dcreate2(g, "src", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    expect(d >= 0, "%s: create", who);
    hid_t dxpl = make_dxpl(1);
    for (int r = 0; r < nranks; r++) write_rows(d, r, r, 1, dxpl, model);
    hid_t as = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(d, "units", H5T_NATIVE_INT, as, H5P_DEFAULT, H5P_DEFAULT);
    int av = 42;
    expect(a >= 0 && H5Awrite(a, H5T_NATIVE_INT, &av) >= 0, "%s: attribute", who);
    H5Aclose(a);
    H5Sclose(as);
    H5Dclose(d);
    H5Gclose(g);
    H5Pclose(dcpl);
    H5Sclose(s);
    /* Copies while the source's writes are still open in the ranks' buffers. */
    expect(H5Ocopy(f, "g/src", f, "copy", H5P_DEFAULT, H5P_DEFAULT) >= 0, "%s: H5Ocopy dataset", who);
    expect(H5Ocopy(f, "g", f, "gcopy", H5P_DEFAULT, H5P_DEFAULT) >= 0, "%s: H5Ocopy group", who);
    const char *names[] = {"copy", "gcopy/src"};
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < 2; k++) {
            d = H5Dopen2(f, names[k], H5P_DEFAULT);
            expect(d >= 0, "%s: open %s", who, names[k]);
            if (d < 0) continue;
            snprintf(what, sizeof what, "%s ocopy %s%s", who, names[k], pass ? " after reopen" : "");
            check_all(d, dxpl, model, n, what);
            int got = 0;
            expect(H5Aread(a = H5Aopen(d, "units", H5P_DEFAULT), H5T_NATIVE_INT, &got) >= 0 && got == 42,
                   "%s: attribute of %s", who, names[k]);
            H5Aclose(a);
            H5Dclose(d);
        }
        if (pass == 0) {
            expect(H5Fclose(f) >= 0, "%s: close", who);
            fapl = make_fapl(tessera, 1);
            f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
            H5Pclose(fapl);
            expect(f >= 0, "%s: reopen", who);
            if (f < 0) MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    H5Pclose(dxpl);
    H5Fclose(f);
    free(model);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---------------------------------------------------------------- objflush */

static int native_flush_ok[5]; /* native runs first: what tessera must match */

static void objflush(const char *path, int tessera)
{
    const char *who = tessera ? "tessera" : "native";
    const char *what[5] = {"H5Oflush(dataset)", "H5Dflush", "H5Gflush", "H5Tflush", "H5Fflush"};
    hid_t fapl = make_fapl(tessera, 1);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    expect(f >= 0, "%s: parallel create", who);
    if (f < 0) MPI_Abort(MPI_COMM_WORLD, 2);
    hid_t s = H5Screate_simple(1, (hsize_t[]){4}, NULL);
    hid_t d = H5Dcreate2(f, "d", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t g = H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t t = H5Tcopy(H5T_NATIVE_INT);
    expect(d >= 0 && g >= 0 && H5Tcommit2(f, "t", t, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) >= 0, "%s: create", who);
    int ok[5] = {H5Oflush(d) >= 0, H5Dflush(d) >= 0, H5Gflush(g) >= 0, H5Tflush(t) >= 0,
                 H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0};
    for (int k = 0; k < 5; k++) {
        if (!tessera) native_flush_ok[k] = ok[k];
        else expect(ok[k] == native_flush_ok[k], "%s: %s %s, natively it %s", who, what[k],
                    ok[k] ? "succeeded" : "failed", native_flush_ok[k] ? "succeeds" : "fails");
    }
    H5Tclose(t);
    H5Gclose(g);
    H5Dclose(d);
    H5Sclose(s);
    expect(H5Fclose(f) >= 0, "%s: close", who);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---------------------------------------------------------------- fileops */

#define NFILEOPS 8
static int native_fileops[NFILEOPS];

static hid_t try_create(const char *path, int tessera, MPI_Comm comm, int evict, int pagebuf, int paged, int v18)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (v18) H5Pset_libver_bounds(fapl, H5F_LIBVER_EARLIEST, H5F_LIBVER_V18);
    if (evict) H5Pset_evict_on_close(fapl, 1);
    H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
    H5Pset_vol(fapl, tessera ? tessera_vol : H5VL_NATIVE, NULL);
    if (paged) H5Pset_file_space_strategy(fcpl, H5F_FSPACE_STRATEGY_PAGE, 0, 1);
    if (pagebuf) H5Pset_page_buffer_size(fapl, 4 * 4096, 0, 0);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
    H5Pclose(fapl);
    H5Pclose(fcpl);
    return f;
}

static void fileops(const char *path, int tessera)
{
    const char *who = tessera ? "tessera" : "native";
    const char *what[NFILEOPS] = {"create",       "is_accessible",      "delete",
                                  "is_accessible after delete (>= 0)", "evict on close, all ranks",
                                  "evict on close, one-rank communicator", "page buffering",
                                  "paged file space with a 1.8 high bound"};
    int got[NFILEOPS];
    hid_t fapl = make_fapl(tessera, 1);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    got[0] = f >= 0;
    if (f >= 0) H5Fclose(f);
    got[1] = H5Fis_accessible(path, fapl) > 0;
    got[2] = H5Fdelete(path, fapl) >= 0;
    got[3] = H5Fis_accessible(path, fapl) >= 0;
    H5Pclose(fapl);
    MPI_Barrier(MPI_COMM_WORLD);
    f = try_create(path, tessera, MPI_COMM_WORLD, 1, 0, 0, 1);
    got[4] = f >= 0;
    if (f >= 0) H5Fclose(f);
    char own[4200];
    snprintf(own, sizeof own, "%s.rank%d", path, rank);
    f = try_create(own, tessera, MPI_COMM_SELF, 1, 0, 0, 1);
    got[5] = f >= 0;
    if (f >= 0) H5Fclose(f);
    f = try_create(path, tessera, MPI_COMM_WORLD, 0, 1, 1, 0);
    got[6] = f >= 0;
    if (f >= 0) H5Fclose(f);
    f = try_create(path, tessera, MPI_COMM_WORLD, 0, 0, 1, 1);
    got[7] = f >= 0;
    if (f >= 0) H5Fclose(f);
    for (int k = 0; k < NFILEOPS; k++) {
        if (!tessera) native_fileops[k] = got[k];
        else expect(got[k] == native_fileops[k], "%s: %s %s, natively it %s", who, what[k],
                    got[k] ? "succeeded" : "failed", native_fileops[k] ? "succeeds" : "fails");
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---------------------------------------------------------------- causes */

#define NCAUSES 7
static uint32_t native_causes[NCAUSES][2][3];

static void causes(const char *path, int tessera)
{
    const char *who = tessera ? "tessera" : "native";
    const char *what[NCAUSES] = {"collective",          "independent",       "conversion (selection I/O default)",
                                 "conversion, selection I/O off", "transform, selection I/O off",
                                 "compact dataset",     "external storage, conversion, selection I/O off"};
    hid_t fapl = make_fapl(tessera, 1);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    expect(f >= 0, "%s: parallel create", who);
    if (f < 0) MPI_Abort(MPI_COMM_WORLD, 2);
    hsize_t n = 16;
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t compact = H5Pcreate(H5P_DATASET_CREATE), external = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_layout(compact, H5D_COMPACT);
    char ext_name[4200];
    snprintf(ext_name, sizeof ext_name, "%s.ext", path);
    H5Pset_external(external, ext_name, 0, n * sizeof(int));
    hid_t plain = H5Dcreate2(f, "plain", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t comp = H5Dcreate2(f, "compact", H5T_NATIVE_INT, s, H5P_DEFAULT, compact, H5P_DEFAULT);
    hid_t ext = H5Dcreate2(f, "external", H5T_NATIVE_INT, s, H5P_DEFAULT, external, H5P_DEFAULT);
    int buf[16] = {0};
    for (int k = 0; k < NCAUSES; k++) {
        hid_t d = k == 5 ? comp : k == 6 ? ext : plain;
        hid_t mtype = (k == 2 || k == 3 || k == 6) ? H5T_NATIVE_UINT : H5T_NATIVE_INT;
        for (int rw = 0; rw < 2; rw++) {
            hid_t dxpl = make_dxpl(k != 1);
            if (k >= 3 && k != 5) H5Pset_selection_io(dxpl, H5D_SELECTION_IO_MODE_OFF);
            if (k == 4) H5Pset_data_transform(dxpl, "x+1");
            herr_t rc = rw ? H5Dread(d, mtype, H5S_ALL, H5S_ALL, dxpl, buf)
                           : H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, dxpl, buf);
            uint32_t got[3] = {0, 0, 0};
            H5Pget_mpio_no_collective_cause(dxpl, &got[0], &got[1]);
            H5Pget_no_selection_io_cause(dxpl, &got[2]);
            expect(rc >= 0, "%s %s: %s", who, what[k], rw ? "read" : "write");
            for (int c = 0; c < 3; c++) {
                if (!tessera) native_causes[k][rw][c] = got[c];
                else expect(got[c] == native_causes[k][rw][c], "%s %s %s: %s cause %#x, natively %#x", who, what[k],
                            rw ? "read" : "write", c == 0 ? "local" : c == 1 ? "global" : "no-selection-I/O",
                            got[c], native_causes[k][rw][c]);
            }
            H5Pclose(dxpl);
        }
    }
    H5Dclose(plain);
    H5Dclose(comp);
    H5Dclose(ext);
    H5Pclose(compact);
    H5Pclose(external);
    H5Sclose(s);
    expect(H5Fclose(f) >= 0, "%s: close", who);
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
    const char *dir = argc > 1 ? argv[1] : ".";
    const char *only = argc > 2 ? argv[2] : "";
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* failures are reported by expect() */
    struct {
        const char *name;
        void (*fn)(const char *, int);
    } scenarios[] = {{"same_handle", same_handle}, {"small_pieces", small_pieces}, {"ser2par", ser2par}, {"ocopy", ocopy}, {"objflush", objflush}, {"fileops", fileops}, {"causes", causes}};
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        if (*only && strcmp(only, scenarios[i].name) != 0) continue;
        for (int tessera = 0; tessera <= 1; tessera++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/vis_%s_np%d.%s", dir, scenarios[i].name, nranks, tessera ? "tsr" : "h5");
            int before = fails;
            scenarios[i].fn(path, tessera);
            int mine = fails - before, all = 0;
            MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            if (rank == 0)
                printf("%-12s %-8s %s\n", scenarios[i].name, tessera ? "tessera" : "native", all ? "FAILED" : "ok");
        }
    }
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_mpi_visibility (%d ranks): %s (%d failures)\n", nranks, total ? "FAILED" : "ok", total);
    H5VLclose(tessera_vol);
    MPI_Finalize();
    return total ? 1 : 0;
}
