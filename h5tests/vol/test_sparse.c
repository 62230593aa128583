/* test_sparse.c — tessera_Dget_defined and tessera_Derase (include/tessera/tessera.h) through the
 * public HDF5 API, against an independent model: an array of values plus a "defined" flag
 * per element, updated by every write (defined), erase (undefined) and extent change
 * (cut elements undefined).  Random hyperslab (strided), union-of-hyperslabs and point
 * writes and erases, H5S_ALL erases, H5Dset_extent, H5Fflush and file reopens, on 1-D to
 * 4-D chunked datasets; after every step: H5Dread of the whole dataset (the fill value
 * where undefined), the defined selection of H5S_ALL, of a random hyperslab and of a
 * point list (order kept), and H5Dget_num_chunks (chunks holding a defined element).
 * Then what must fail, with a message on the error stack: a native file's dataset, a
 * compact dataset, a read-only file, a selection outside the extent.
 *
 * Usage: test_sparse [directory for the files]   (TESSERA_TEST_SEED: the random seed)
 */
#include <stdint.h>

#include "tessera/tessera.h"
#include "vol_test_log.h"

#define MAXR 4
#define FILL (-7)


typedef struct {
    int     rank;
    hsize_t cap[MAXR], dims[MAXR], chunk[MAXR];
    int    *val;     /* over cap, row-major */
    char   *def;     /* defined flags over cap */
    size_t  ncap;
} model_t;

static size_t lin(const model_t *m, const hsize_t *c)
{
    size_t o = 0;
    for (int d = 0; d < m->rank; d++)
        o = o * m->cap[d] + c[d];
    return o;
}

static int inside(const model_t *m, const hsize_t *c)
{
    for (int d = 0; d < m->rank; d++)
        if (c[d] >= m->dims[d])
            return 0;
    return 1;
}

/* Calls f for every element of the selection of `space` (rank m->rank), in HDF5's
 * iteration order for point lists, block order for hyperslabs. */
static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

typedef void (*cell_fn)(model_t *m, const hsize_t *c, size_t k, void *ctx);
static size_t each_selected(model_t *m, hid_t space, cell_fn f, void *ctx)
{
    size_t k = 0;
    int    r = m->rank;
    if (H5Sget_select_type(space) == H5S_SEL_POINTS) {
        hssize_t n = H5Sget_select_elem_npoints(space);
        hsize_t *p = malloc((size_t)(n > 0 ? n : 1) * r * sizeof(hsize_t));
        H5Sget_select_elem_pointlist(space, 0, (hsize_t)n, p);
        for (hssize_t i = 0; i < n; i++)
            f(m, p + i * r, k++, ctx);
        free(p);
        return k;
    }
    if (H5Sget_select_type(space) == H5S_SEL_ALL) {
        hsize_t c[MAXR] = {0};
        size_t  n = 1;
        for (int d = 0; d < r; d++)
            n *= m->dims[d];
        for (size_t i = 0; i < n; i++) {
            size_t rem = i;
            for (int d = r - 1; d >= 0; d--) {
                c[d] = rem % m->dims[d];
                rem /= m->dims[d];
            }
            f(m, c, k++, ctx);
        }
        return k;
    }
    if (H5Sget_select_type(space) != H5S_SEL_HYPERSLABS)
        return 0;
    /* HDF5 pairs the elements of a hyperslab selection in row-major order over the whole
     * selection, not block by block: collect them, sort by row-major index, then visit. */
    hssize_t nb = H5Sget_select_hyper_nblocks(space);
    hsize_t *b = malloc((size_t)(nb > 0 ? nb : 1) * 2 * r * sizeof(hsize_t));
    H5Sget_select_hyper_blocklist(space, 0, (hsize_t)nb, b);
    size_t  n = (size_t)H5Sget_select_npoints(space), got = 0;
    size_t *cells = malloc((n ? n : 1) * sizeof(size_t));
    for (hssize_t i = 0; i < nb; i++) {
        const hsize_t *lo = b + i * 2 * r, *hi = lo + r;
        hsize_t        c[MAXR];
        memcpy(c, lo, r * sizeof(hsize_t));
        for (;;) {
            if (got < n)
                cells[got++] = lin(m, c);
            int d = r - 1;
            for (; d >= 0; d--) {
                if (++c[d] <= hi[d])
                    break;
                c[d] = lo[d];
            }
            if (d < 0)
                break;
        }
    }
    free(b);
    qsort(cells, got, sizeof(size_t), cmp_size);
    for (size_t i = 0; i < got; i++) {
        hsize_t c[MAXR];
        size_t  rem = cells[i];
        for (int d = r - 1; d >= 0; d--) {
            c[d] = rem % m->cap[d];
            rem /= m->cap[d];
        }
        f(m, c, k++, ctx);
    }
    free(cells);
    return k;
}

static void set_defined(model_t *m, const hsize_t *c, size_t k, void *ctx)
{
    const int *v       = ctx;
    m->val[lin(m, c)]  = v[k];
    m->def[lin(m, c)]  = 1;
}
static void set_undefined(model_t *m, const hsize_t *c, size_t k, void *ctx)
{
    (void)k;
    (void)ctx;
    m->def[lin(m, c)] = 0;
}

/* A random selection of the dataset's space: a strided hyperslab, a union of two, or a
 * point list (duplicates allowed only when `dups`). */
static hid_t random_selection(model_t *m, hid_t space, int dups, char *what)
{
    int     r = m->rank, kind = (int)below(3);
    hsize_t start[MAXR], stride[MAXR], count[MAXR], block[MAXR];
    if (kind == 2) {
        size_t   n = 1 + below(12);
        hsize_t *p = malloc(n * r * sizeof(hsize_t));
        for (size_t i = 0; i < n; i++)
            for (int d = 0; d < r; d++)
                p[i * r + d] = (dups && i > 0 && below(4) == 0) ? p[(i - 1) * r + d] : below(m->dims[d]);
        if (!dups) { /* drop repeats: HDF5 would write them twice, erase does not care */
            size_t w = 0;
            for (size_t i = 0; i < n; i++) {
                int seen = 0;
                for (size_t j = 0; j < w && !seen; j++)
                    seen = memcmp(p + j * r, p + i * r, r * sizeof(hsize_t)) == 0;
                if (!seen)
                    memmove(p + w++ * r, p + i * r, r * sizeof(hsize_t));
            }
            n = w;
        }
        H5Sselect_elements(space, H5S_SELECT_SET, n, p);
        free(p);
        sprintf(what, "%zu points", n);
        return space;
    }
    for (int u = 0; u <= (kind == 1); u++) {
        for (int d = 0; d < r; d++) {
            block[d]  = 1 + below(m->dims[d] > 3 ? 3 : m->dims[d]);
            stride[d] = block[d] + below(3);
            hsize_t span = block[d] + below(m->dims[d]);
            if (span > m->dims[d])
                span = m->dims[d];
            start[d]  = below(m->dims[d] - span + 1);
            count[d]  = 1 + (span - block[d]) / stride[d];
        }
        H5Sselect_hyperslab(space, u == 0 ? H5S_SELECT_SET : H5S_SELECT_OR, start, stride, count, block);
    }
    /* HDF5 1.14.5 mis-merges some ORs of regular hyperslabs (the union of start 0,
     * stride 4, count 3, block 2 with the same at count 5 iterates 20,21,24,25 instead of
     * 12,13,16,17): keep only unions whose blocks account for every element. */
    hssize_t nb = H5Sget_select_hyper_nblocks(space), sum = 0;
    hsize_t *bl = malloc((size_t)(nb > 0 ? nb : 1) * 2 * r * sizeof(hsize_t));
    H5Sget_select_hyper_blocklist(space, 0, (hsize_t)nb, bl);
    for (hssize_t i = 0; i < nb; i++) {
        hssize_t c = 1;
        for (int d = 0; d < r; d++)
            c *= (hssize_t)(bl[i * 2 * r + r + d] - bl[i * 2 * r + d] + 1);
        sum += c;
    }
    free(bl);
    if (kind == 1 && sum != H5Sget_select_npoints(space)) {
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start, stride, count, block);
        kind = 0;
    }
    sprintf(what, "%s", kind == 1 ? "union of hyperslabs" : "hyperslab");
    return space;
}

typedef struct {
    int   bad;
    char *seen;
} defctx_t;
static void note_defined(model_t *m, const hsize_t *c, size_t k, void *ctx)
{
    (void)k;
    defctx_t *x = ctx;
    if (!inside(m, c) || !m->def[lin(m, c)])
        x->bad++;
    else
        x->seen[lin(m, c)]++;
}
static void count_defined(model_t *m, const hsize_t *c, size_t k, void *ctx)
{
    (void)k;
    size_t *n = ctx;
    *n += inside(m, c) && m->def[lin(m, c)];
}

/* The defined selection of `sel` equals the model's defined elements of `sel`. */
static int check_defined(model_t *m, hid_t dset, hid_t sel, const char *what, char *fail)
{
    hid_t dsp = tessera_Dget_defined(dset, sel, H5P_DEFAULT);
    if (dsp < 0) {
        sprintf(fail, "defined(%s) failed", what);
        return 0;
    }
    defctx_t x = {0, calloc(m->ncap, 1)};
    size_t   got = each_selected(m, dsp, note_defined, &x), want = 0;
    if (sel == H5S_ALL) {
        hid_t all = H5Screate_simple(m->rank, m->dims, NULL);
        each_selected(m, all, count_defined, &want);
        H5Sclose(all);
    }
    else {  /* a point list's repeats are kept in the answer, and counted here */
        each_selected(m, sel, count_defined, &want);
    }
    int dup = 0;
    for (size_t i = 0; i < m->ncap; i++)
        dup |= x.seen[i] > 1 && H5Sget_select_type(dsp) != H5S_SEL_POINTS;
    int ok = x.bad == 0 && !dup && got == want;
    if (!ok)
        sprintf(fail, "defined(%s): %zu elements (%d not defined in the model, dup %d), model says %zu", what, got,
                x.bad, dup, want);
    free(x.seen);
    H5Sclose(dsp);
    return ok;
}

static int check_all(model_t *m, hid_t dset, char *fail)
{
    size_t n = 1;
    for (int d = 0; d < m->rank; d++)
        n *= m->dims[d];
    int *got = malloc((n ? n : 1) * sizeof(int));
    if (n && H5Dread(dset, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) < 0) {
        sprintf(fail, "read failed");
        free(got);
        return 0;
    }
    hsize_t c[MAXR] = {0};
    for (size_t i = 0; i < n; i++) {
        size_t rem = i;
        for (int d = m->rank - 1; d >= 0; d--) {
            c[d] = rem % m->dims[d];
            rem /= m->dims[d];
        }
        size_t o    = lin(m, c);
        int    want = m->def[o] ? m->val[o] : FILL;
        if (got[i] != want) {
            sprintf(fail, "element %zu reads %d, the model says %d", i, got[i], want);
            free(got);
            return 0;
        }
    }
    free(got);
    if (!check_defined(m, dset, H5S_ALL, "H5S_ALL", fail))
        return 0;
    char  what[64];
    hid_t s = H5Dget_space(dset);
    random_selection(m, s, 1, what);
    int ok = check_defined(m, dset, s, what, fail);
    H5Sclose(s);
    if (!ok)
        return 0;
    /* Chunks holding a defined element. */
    size_t want = 0, nch = 1;
    hsize_t per[MAXR];
    for (int d = 0; d < m->rank; d++)
        nch *= per[d] = (m->dims[d] + m->chunk[d] - 1) / m->chunk[d];
    for (size_t ci = 0; ci < nch; ci++) {
        hsize_t t[MAXR], lo[MAXR], e[MAXR];
        size_t  rem = ci, cells = 1;
        for (int d = m->rank - 1; d >= 0; d--) {
            t[d] = rem % per[d];
            rem /= per[d];
        }
        for (int d = 0; d < m->rank; d++) {
            lo[d] = t[d] * m->chunk[d];
            e[d]  = lo[d] + m->chunk[d] > m->dims[d] ? m->dims[d] - lo[d] : m->chunk[d];
            cells *= e[d];
        }
        int any = 0;
        for (size_t k = 0; k < cells && !any; k++) {
            size_t  r2 = k;
            hsize_t cc[MAXR];
            for (int d = m->rank - 1; d >= 0; d--) {
                cc[d] = lo[d] + r2 % e[d];
                r2 /= e[d];
            }
            any = m->def[lin(m, cc)];
        }
        want += any;
    }
    hsize_t got_chunks = 0;
    if (H5Dget_num_chunks(dset, H5S_ALL, &got_chunks) < 0 || got_chunks != want) {
        sprintf(fail, "%llu chunks allocated, %zu hold defined elements", (unsigned long long)got_chunks, want);
        return 0;
    }
    return 1;
}

static void run_shape(const char *dir, int rank, const hsize_t *cap, const hsize_t *chunk, int steps, hid_t fapl)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/sparse_%dd.h5", dir, rank);
    model_t m = {.rank = rank};
    m.ncap    = 1;
    for (int d = 0; d < rank; d++) {
        m.cap[d] = m.dims[d] = cap[d];
        m.chunk[d]           = chunk[d];
        m.ncap *= cap[d];
    }
    m.val   = calloc(m.ncap, sizeof(int));
    m.def   = calloc(m.ncap, 1);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t sp = H5Screate_simple(rank, m.dims, m.cap);
    hid_t p  = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(p, rank, chunk);
    int fill = FILL;
    H5Pset_fill_value(p, H5T_NATIVE_INT, &fill);
    hid_t ds = H5Dcreate2(f, "d", H5T_STD_I32LE, sp, H5P_DEFAULT, p, H5P_DEFAULT);
    H5Sclose(sp);
    H5Pclose(p);
    char fail[512] = "", what[64], log[8192] = "";
    int  step;
    for (step = 0; step < steps; step++) {
        int op = (int)below(100);
        if (op < 35) { /* write */
            hid_t s = H5Dget_space(ds);
            random_selection(&m, s, 1, what);
            hsize_t n = (hsize_t)H5Sget_select_npoints(s);
            int    *v = malloc((n ? n : 1) * sizeof(int));
            for (hsize_t i = 0; i < n; i++)
                v[i] = (int)(rnd() & 0x7fffffff);
            hid_t ms = H5Screate_simple(1, &n, NULL);
            if (H5Dwrite(ds, H5T_NATIVE_INT, ms, s, H5P_DEFAULT, v) < 0)
                snprintf(fail, sizeof fail, "write of %s failed", what);
            each_selected(&m, s, set_defined, v);
            snprintf(log + strlen(log), sizeof log - strlen(log), "write %s\n", what);
            free(v);
            H5Sclose(ms);
            H5Sclose(s);
        }
        else if (op < 65) { /* erase */
            hid_t s = H5Dget_space(ds);
            if (below(15) == 0) {
                sprintf(what, "H5S_ALL");
                if (tessera_Derase(ds, H5S_ALL, H5P_DEFAULT) < 0)
                    snprintf(fail, sizeof fail, "erase of H5S_ALL failed");
                H5Sselect_all(s);
            }
            else {
                random_selection(&m, s, 0, what);
                if (tessera_Derase(ds, s, H5P_DEFAULT) < 0)
                    snprintf(fail, sizeof fail, "erase of %s failed", what);
            }
            each_selected(&m, s, set_undefined, NULL);
            snprintf(log + strlen(log), sizeof log - strlen(log), "erase %s\n", what);
            H5Sclose(s);
        }
        else if (op < 77) { /* extent change: cut elements become undefined */
            hsize_t nd[MAXR];
            for (int d = 0; d < rank; d++)
                nd[d] = 1 + below(m.cap[d]);
            for (size_t i = 0; i < m.ncap; i++) {
                hsize_t c[MAXR];
                size_t  rem = i;
                for (int d = rank - 1; d >= 0; d--) {
                    c[d] = rem % m.cap[d];
                    rem /= m.cap[d];
                }
                for (int d = 0; d < rank; d++)
                    if (c[d] >= nd[d])
                        m.def[i] = 0;
            }
            memcpy(m.dims, nd, sizeof nd);
            if (H5Dset_extent(ds, nd) < 0)
                snprintf(fail, sizeof fail, "set_extent failed");
            snprintf(log + strlen(log), sizeof log - strlen(log), "set_extent\n");
        }
        else if (op < 88) {
            H5Fflush(f, H5F_SCOPE_GLOBAL);
            snprintf(log + strlen(log), sizeof log - strlen(log), "flush\n");
        }
        else { /* reopen */
            H5Dclose(ds);
            H5Fclose(f);
            f  = H5Fopen(path, H5F_ACC_RDWR, fapl);
            ds = H5Dopen2(f, "d", H5P_DEFAULT);
            snprintf(log + strlen(log), sizeof log - strlen(log), "reopen\n");
        }
        if (strlen(log) > 6000)
            memmove(log, log + 3000, strlen(log + 3000) + 1);
        if (fail[0] || !check_all(&m, ds, fail))
            break;
    }
    char name[64];
    snprintf(name, sizeof name, "%d-D model, %d steps", rank, steps);
    check(!fail[0], name, fail[0] ? fail : "tessera");
    if (fail[0])
        printf("    last operations:\n%s", log);
    H5Dclose(ds);
    H5Fclose(f);
    free(m.val);
    free(m.def);
}

static void refusals(const char *dir, hid_t native, hid_t tess)
{
    char path[4200];
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    /* A native file's dataset. */
    snprintf(path, sizeof path, "%s/sparse_native.h5", dir);
    hsize_t dims[2] = {8, 8}, chunk[2] = {4, 4};
    hid_t   f  = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, native);
    hid_t   sp = H5Screate_simple(2, dims, NULL);
    hid_t   p  = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(p, 2, chunk);
    hid_t ds = H5Dcreate2(f, "d", H5T_NATIVE_INT, sp, H5P_DEFAULT, p, H5P_DEFAULT);
    check(tessera_is_tessera(ds) == 0, "a native dataset is not tessera's", "native");
    herr_t rc = tessera_Derase(ds, H5S_ALL, H5P_DEFAULT);
    check(rc < 0 && stack_says("needs a dataset stored by tessera"), "erase on a native dataset fails clearly",
          "native");
    hid_t dsp = tessera_Dget_defined(ds, H5S_ALL, H5P_DEFAULT);
    check(dsp < 0 && stack_says("needs a dataset stored by tessera"), "defined on a native dataset fails clearly",
          "native");
    H5Dclose(ds);
    H5Fclose(f);
    /* A compact dataset, a selection outside the extent, a read-only file. */
    snprintf(path, sizeof path, "%s/sparse_refusals.h5", dir);
    f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, tess);
    hid_t c = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_layout(c, H5D_COMPACT);
    hid_t cd = H5Dcreate2(f, "compact", H5T_NATIVE_INT, sp, H5P_DEFAULT, c, H5P_DEFAULT);
    ds       = H5Dcreate2(f, "d", H5T_NATIVE_INT, sp, H5P_DEFAULT, p, H5P_DEFAULT);
    check(tessera_is_tessera(ds) > 0, "a tessera dataset is tessera's", "tessera");
    int v[64];
    for (int i = 0; i < 64; i++)
        v[i] = i;
    H5Dwrite(cd, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    H5Dwrite(ds, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    rc = tessera_Derase(cd, H5S_ALL, H5P_DEFAULT);
    check(rc < 0 && stack_says("compact array"), "erase on a compact dataset fails clearly", "tessera");
    dsp = tessera_Dget_defined(cd, H5S_ALL, H5P_DEFAULT);
    check(dsp >= 0 && H5Sget_select_npoints(dsp) == 64, "a written compact dataset is defined everywhere", "tessera");
    if (dsp >= 0)
        H5Sclose(dsp);
    hsize_t big[2] = {16, 16};
    hid_t   other = H5Screate_simple(2, big, NULL);
    hsize_t start[2] = {6, 6}, cnt[2] = {4, 4};
    H5Sselect_hyperslab(other, H5S_SELECT_SET, start, NULL, cnt, NULL);
    rc = tessera_Derase(ds, other, H5P_DEFAULT);
    check(rc < 0, "erase of a selection outside the extent fails", "tessera");
    check(tessera_Derase(sp, H5S_ALL, H5P_DEFAULT) < 0 && stack_says("not a dataset"),
          "erase on a dataspace id fails clearly", "tessera");
    H5Sclose(other);
    H5Dclose(cd);
    H5Dclose(ds);
    H5Fclose(f);
    f  = H5Fopen(path, H5F_ACC_RDONLY, tess);
    ds = H5Dopen2(f, "d", H5P_DEFAULT);
    rc = tessera_Derase(ds, H5S_ALL, H5P_DEFAULT);
    check(rc < 0 && stack_says("read-only"), "erase in a read-only file fails clearly", "tessera");
    dsp = tessera_Dget_defined(ds, H5S_ALL, H5P_DEFAULT);
    check(dsp >= 0 && H5Sget_select_npoints(dsp) == 64, "defined works in a read-only file", "tessera");
    if (dsp >= 0)
        H5Sclose(dsp);
    H5Dclose(ds);
    H5Fclose(f);
    H5Pclose(c);
    H5Pclose(p);
    H5Sclose(sp);
}

int main(int argc, char **argv)
{
    (void)logf_; /* vol_test_log.h: this test checks a model, it has no log to compare */
    const char *dir = argc > 1 ? argv[1] : ".";
    seed_rng("test_sparse", 88172645463325252ull);
    hid_t native, tess, vol;
    if (make_fapls(&native, &tess, &vol) < 0)
        return 1;
    const hsize_t cap1[1] = {61}, ch1[1] = {8};
    const hsize_t cap2[2] = {17, 23}, ch2[2] = {4, 6};
    const hsize_t cap3[3] = {7, 9, 6}, ch3[3] = {3, 4, 2};
    const hsize_t cap4[4] = {4, 5, 3, 6}, ch4[4] = {2, 2, 3, 4};
    for (int k = 0; k < 3; k++) {
        run_shape(dir, 1, cap1, ch1, 120, tess);
        run_shape(dir, 2, cap2, ch2, 120, tess);
        run_shape(dir, 3, cap3, ch3, 80, tess);
        run_shape(dir, 4, cap4, ch4, 80, tess);
    }
    refusals(dir, native, tess);
    H5Pclose(native);
    H5Pclose(tess);
    H5VLclose(vol);
    printf("%d failed\n", g_failed);
    return g_failed ? 1 : 0;
}
