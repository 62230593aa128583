/* test_query.c — value indexes and queries through the public API (include/tessera/tessera.h):
 * tessera_Dbuild_index / Ddrop_index / Dget_index_info, tessera_Fquery_count, tessera_Fquery
 * (a selection) and tessera_Fquery_positions, against an independent model, and against
 * native HDF5.
 *
 * Three datasets of 75000 elements — /T float32 300x250, /g/P int16 big-endian 300x250, /g/Q float64 —
 * are written the same way into a native file and a tessera container (several hyperslab
 * writes, overwrites, point writes; erased elements in the container are written with the
 * fill value in the native file), partly indexed.  Random expressions over subarrays of
 * 200 elements of each (&&, ||, !, strides, regular expressions, relative paths from a
 * group) are evaluated by the model; the container must give the same count, positions
 * and selection, and reading the native file's dataset with the container's selection
 * must give the model's values.  Then what must fail, with a message: a native file, a
 * malformed expression (naming the character), a dataset of strings.
 *
 * Usage: test_query [directory for the files]   (TESSERA_TEST_SEED: the random seed)
 */
#include <math.h>
#include <stdint.h>

#include "tessera/tessera.h"
#include "vol_test_log.h"

/* Large enough that the first writes are fragment files (smaller ones are inline in the
 * catalog and always scanned). */
#define ROWS 300
#define COLS 250
#define N (ROWS * COLS)
static float   g_T[N];
static short   g_P[N];
static double  g_Q[N];

/* Writes the same data to both files: a hyperslab of T and P (ROWS x COLS) and the same
 * elements of Q (in row-major order of that grid). */
static void write_block(hid_t fn, hid_t ft, hsize_t r0, hsize_t c0, hsize_t nr, hsize_t nc, int erase)
{
    hid_t   files[2] = {fn, ft};
    static float  t[N];
    static short  p[N];
    static double q[N];
    hsize_t n = nr * nc;
    for (hsize_t i = 0; i < nr; i++)
        for (hsize_t j = 0; j < nc; j++) {
            size_t at = (size_t)((r0 + i) * COLS + c0 + j), k = (size_t)(i * nc + j);
            t[k] = erase ? 0.0f : (float)(below(80)) / 4.0f; /* 0: the fill value */
            p[k] = erase ? 0 : (short)((int)below(200) - 100);
            q[k] = erase ? 0.0 : (below(20) == 0 ? NAN : (double)below(1000) / 8.0);
            g_T[at] = t[k];
            g_P[at] = p[k];
            g_Q[at] = q[k];
        }
    for (int w = 0; w < 2; w++) {
        hid_t   dt = H5Dopen2(files[w], "/T", H5P_DEFAULT), dp = H5Dopen2(files[w], "/g/P", H5P_DEFAULT),
              dq = H5Dopen2(files[w], "/g/Q", H5P_DEFAULT);
        hsize_t start[2] = {r0, c0}, count[2] = {nr, nc};
        hid_t   s = H5Dget_space(dt), m = H5Screate_simple(1, &n, NULL);
        H5Sselect_hyperslab(s, H5S_SELECT_SET, start, NULL, count, NULL);
        if (erase && w == 1) { /* the container erases; native gets the fill value */
            tessera_Derase(dt, s, H5P_DEFAULT);
            tessera_Derase(dp, s, H5P_DEFAULT);
        }
        else {
            H5Dwrite(dt, H5T_NATIVE_FLOAT, m, s, H5P_DEFAULT, t);
            H5Dwrite(dp, H5T_NATIVE_SHORT, m, s, H5P_DEFAULT, p);
        }
        /* Q: the same elements in row-major order of the 60x50 grid, as a point list. */
        hsize_t *pts = malloc(n * sizeof(hsize_t));
        for (hsize_t i = 0; i < nr; i++)
            for (hsize_t j = 0; j < nc; j++)
                pts[i * nc + j] = (r0 + i) * COLS + c0 + j;
        hid_t sq = H5Dget_space(dq);
        H5Sselect_elements(sq, H5S_SELECT_SET, n, pts);
        if (erase && w == 1)
            tessera_Derase(dq, sq, H5P_DEFAULT);
        else
            H5Dwrite(dq, H5T_NATIVE_DOUBLE, m, sq, H5P_DEFAULT, q);
        free(pts);
        H5Sclose(sq);
        H5Sclose(s);
        H5Sclose(m);
        H5Dclose(dt);
        H5Dclose(dp);
        H5Dclose(dq);
    }
}

static void create(hid_t f)
{
    hsize_t dims[2] = {ROWS, COLS}, chunk[2] = {64, 50}, n = N, qchunk = 8192;
    hid_t   s2 = H5Screate_simple(2, dims, NULL), s1 = H5Screate_simple(1, &n, NULL);
    hid_t   p2 = H5Pcreate(H5P_DATASET_CREATE), p1 = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(p2, 2, chunk);
    H5Pset_chunk(p1, 1, &qchunk);
    H5Pset_deflate(p1, 1);
    hid_t g = H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(H5Dcreate2(f, "T", H5T_IEEE_F32LE, s2, H5P_DEFAULT, p2, H5P_DEFAULT));
    H5Dclose(H5Dcreate2(g, "P", H5T_STD_I16BE, s2, H5P_DEFAULT, p2, H5P_DEFAULT));
    H5Dclose(H5Dcreate2(g, "Q", H5T_IEEE_F64LE, s1, H5P_DEFAULT, p1, H5P_DEFAULT));
    H5Gclose(g);
    H5Sclose(s1);
    H5Sclose(s2);
    H5Pclose(p1);
    H5Pclose(p2);
}

/* ------------------------------------------------------------------ the model */

typedef struct {
    char text[96];
    int  var;         /* 0 T, 1 P, 2 Q */
    int  op;          /* < <= > >= == != */
    double t;
} cmp_t;

/* The subarray of this iteration: 200 elements of each variable. */
static hsize_t g_r0, g_rs, g_c0; /* T and P: rows r0 + i*rs (10 of them), columns c0..c0+19 */
static hsize_t g_q0, g_qs;       /* Q: q0 + k*qs (200 of them) */

static double value(int var, int k)
{
    size_t at = (size_t)((g_r0 + (hsize_t)(k / 20) * g_rs) * COLS + g_c0 + (hsize_t)(k % 20));
    if (var == 0)
        return g_T[at];
    if (var == 1)
        return g_P[at];
    return g_Q[g_q0 + (hsize_t)k * g_qs];
}

static int holds(double v, int op, double t)
{
    if (isnan(v))
        return op == 5;
    switch (op) {
        case 0: return v < t;
        case 1: return v <= t;
        case 2: return v > t;
        case 3: return v >= t;
        case 4: return v == t;
        default: return v != t;
    }
}

static int g_first = -1; /* the first (leftmost) variable of the expression */
static const char *g_paths[] = {"/T", "/g/P", "/g/Q"};

/* A random expression into `text`, its truth per element into m[200]. */
static void gen(int depth, char *text, size_t cap, char *m)
{
    static const char *ops[] = {"<", "<=", ">", ">=", "==", "!="};
    unsigned           k     = depth >= 3 ? 0 : (unsigned)below(5);
    if (k <= 1) {
        int    var = (int)below(3), op = (int)below(6);
        if (g_first < 0)
            g_first = var;
        double t   = var == 1 ? (double)((int)below(200) - 100) : (double)below(80) / 4.0;
        char   name[64];
        if (var == 0)
            snprintf(name, sizeof name, "T[%llu:%llu:%llu, %llu:%llu]", (unsigned long long)g_r0,
                     (unsigned long long)(g_r0 + 10 * g_rs), (unsigned long long)g_rs, (unsigned long long)g_c0,
                     (unsigned long long)(g_c0 + 20));
        else if (var == 1)
            snprintf(name, sizeof name, "%s[%llu:%llu:%llu, %llu:%llu]", below(2) ? "/g/P" : "re\"/P$\"",
                     (unsigned long long)g_r0, (unsigned long long)(g_r0 + 10 * g_rs), (unsigned long long)g_rs,
                     (unsigned long long)g_c0, (unsigned long long)(g_c0 + 20));
        else
            snprintf(name, sizeof name, "g/Q[%llu:%llu:%llu]", (unsigned long long)g_q0,
                     (unsigned long long)(g_q0 + 200 * g_qs), (unsigned long long)g_qs);
        snprintf(text, cap, "%s %s %g", name, ops[op], t);
        for (int i = 0; i < 200; i++)
            m[i] = (char)holds(value(var, i), op, t);
        return;
    }
    char a[1500], b[1500], ma[200], mb[200];
    gen(depth + 1, a, sizeof a, ma);
    if (k == 2) {
        snprintf(text, cap, "!(%s)", a);
        for (int i = 0; i < 200; i++)
            m[i] = (char)!ma[i];
        return;
    }
    gen(depth + 1, b, sizeof b, mb);
    snprintf(text, cap, "(%s %s %s)", a, k == 3 ? "&&" : "||", b);
    for (int i = 0; i < 200; i++)
        m[i] = (char)(k == 3 ? (ma[i] && mb[i]) : (ma[i] || mb[i]));
}

static int g_progress_calls;
static int progress(hsize_t done, hsize_t total, void *udata)
{
    (void)udata;
    if (done <= total)
        g_progress_calls++;
    return 0;
}

static void queries(hid_t fn, hid_t ft, int iters)
{
    int bad = 0;
    for (int it = 0; it < iters && bad < 3; it++) {
        g_rs = 1 + below(3);
        g_r0 = below(ROWS - 9 * g_rs);
        g_c0 = below(COLS - 19);
        g_qs = 1 + below(10);
        g_q0 = below(N - 199 * g_qs);
        char text[4096], m[200];
        g_first = -1;
        gen(0, text, sizeof text, m);
        hssize_t want = 0;
        for (int i = 0; i < 200; i++)
            want += m[i];
        hssize_t got = tessera_Fquery_count(ft, text, H5P_DEFAULT);
        tessera_query_result_t r;
        herr_t rc = tessera_Fquery_positions(ft, text, H5P_DEFAULT, &r);
        int ok = got == want && rc >= 0 && (hssize_t)r.count == want && strcmp(r.dataset, g_paths[g_first]) == 0 &&
                 (g_first == 2 ? r.rank == 1 && r.shape[0] == 200 && r.start[0] == g_q0 && r.stride[0] == g_qs
                               : r.rank == 2 && r.shape[0] == 10 && r.shape[1] == 20 && r.start[0] == g_r0 &&
                                     r.stride[0] == g_rs && r.start[1] == g_c0);
        for (hsize_t i = 0, j = 0; ok && i < 200; i++)
            if (m[i]) ok = j < r.count && r.positions[j++] == i;
        tessera_query_result_free(&r);
        /* The selection of the first variable's dataset: the model's values when the
         * native file is read with it. */
        hid_t sel = tessera_Fquery(ft, text, H5P_DEFAULT);
        ok = ok && sel >= 0 && H5Sget_select_npoints(sel) == want;
        if (ok && want > 0) {
            hsize_t n = (hsize_t)want;
            double *v = malloc(n * sizeof(double));
            hid_t   ms = H5Screate_simple(1, &n, NULL), dn = H5Dopen2(fn, g_paths[g_first], H5P_DEFAULT);
            ok = H5Dread(dn, H5T_NATIVE_DOUBLE, ms, sel, H5P_DEFAULT, v) >= 0;
            for (hsize_t i = 0, j = 0; ok && i < 200; i++)
                if (m[i]) {
                    const double w = value(g_first, (int)i);
                    ok = v[j] == w || (isnan(v[j]) && isnan(w));
                    j++;
                }
            H5Dclose(dn);
            H5Sclose(ms);
            free(v);
        }
        if (sel >= 0)
            H5Sclose(sel);
        LOG("%s", text);
        if (!ok) {
            printf("    %s: count %lld, want %lld\n", text, (long long)got, (long long)want);
            bad++;
        }
    }
    check(bad == 0, "random expressions: count, positions and selection match the model and native reads", "tessera");
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    seed_rng("test_query", 0x2545F4914F6CDD1Dull);
    log_t L = {0};
    g_log   = &L; /* the expressions asked, in order (TESSERA_TEST_VERBOSE prints them) */
    hid_t native, tess, vol;
    if (make_fapls(&native, &tess, &vol) < 0)
        return 1;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    char pn[4200], pt[4200];
    snprintf(pn, sizeof pn, "%s/query_native.h5", dir);
    snprintf(pt, sizeof pt, "%s/query_tessera.h5", dir);
    hid_t fn = H5Fcreate(pn, H5F_ACC_TRUNC, H5P_DEFAULT, native);
    hid_t ft = H5Fcreate(pt, H5F_ACC_TRUNC, H5P_DEFAULT, tess);
    create(fn);
    create(ft);
    write_block(fn, ft, 0, 0, ROWS, COLS, 0);
    H5Fflush(ft, H5F_SCOPE_GLOBAL);
    /* Index T and P: the first fragment of each. */
    tessera_index_config_t cfg = {0, 0, 0, progress, NULL};
    hid_t dt = H5Dopen2(ft, "/T", H5P_DEFAULT), dp = H5Dopen2(ft, "/g/P", H5P_DEFAULT),
          dq = H5Dopen2(ft, "/g/Q", H5P_DEFAULT);
    check(tessera_Dbuild_index(dt, &cfg, H5P_DEFAULT) >= 0, "tessera_Dbuild_index(/T)", "tessera");
    check(g_progress_calls >= 2, "the progress callback is called as the build goes", "tessera");
    check(tessera_Dbuild_index(dp, NULL, H5P_DEFAULT) >= 0, "tessera_Dbuild_index(/g/P) with defaults", "tessera");
    tessera_index_info_t info;
    check(tessera_Dget_index_info(dt, &info) >= 0 && info.fragments >= 1 && info.indexed == info.fragments &&
              info.index_bytes > 0 && info.unindexed_cells == 0,
          "tessera_Dget_index_info: every fragment of /T indexed", "tessera");
    /* Newer data over the indexed fragments: overwrites, an erase, a flush in between. */
    write_block(fn, ft, 10, 5, 200, 100, 0);
    H5Fflush(ft, H5F_SCOPE_GLOBAL);
    write_block(fn, ft, 40, 0, 150, COLS, 1);
    write_block(fn, ft, 3, 40, 2, 3, 0);
    queries(fn, ft, 150);
    /* Consolidation is not reachable through HDF5: drop and rebuild instead, then again. */
    check(tessera_Ddrop_index(dt, H5P_DEFAULT) >= 0, "tessera_Ddrop_index(/T)", "tessera");
    check(tessera_Dget_index_info(dt, &info) >= 0 && info.indexed == 0, "no index left after the drop", "tessera");
    check(tessera_Dbuild_index(dq, NULL, H5P_DEFAULT) >= 0, "tessera_Dbuild_index(/g/Q)", "tessera");
    queries(fn, ft, 100);
    H5Dclose(dq);

    /* What must fail. */
    check(tessera_Fquery_count(fn, "T > 1", H5P_DEFAULT) < 0 && stack_says("opened with the 'native' connector"),
          "a native file: refused with a message", "native");
    check(tessera_Fquery_count(ft, "T[0:5) > 1", H5P_DEFAULT) < 0 && stack_says("at character 6"),
          "a malformed expression names the character", "tessera");
    check(tessera_Fquery(ft, "nope > 1", H5P_DEFAULT) < 0 && stack_says("no dataset 'nope'"),
          "an unknown dataset is named", "tessera");
    check(tessera_Fquery_count(ft, "T > 1 && g/Q[0:10] > 1", H5P_DEFAULT) < 0 && stack_says("has 10 elements"),
          "variables of different sizes are refused", "tessera");
    check(tessera_Fquery_count(dt, "T > 1", H5P_DEFAULT) < 0 && stack_says("not a file or group"),
          "a query on a dataset is refused", "tessera");
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, 8);
    hsize_t one = 4;
    hid_t   s1 = H5Screate_simple(1, &one, NULL);
    hid_t   ds = H5Dcreate2(ft, "S", str, s1, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(tessera_Dbuild_index(ds, NULL, H5P_DEFAULT) < 0 && stack_says("integer or floating-point"),
          "indexing strings is refused", "tessera");
    check(tessera_Fquery_count(ft, "S == 1", H5P_DEFAULT) < 0 && stack_says("integer or floating-point"),
          "querying strings is refused", "tessera");
    H5Dclose(ds);
    H5Sclose(s1);
    H5Tclose(str);
    H5Dclose(dt);
    H5Dclose(dp);
    H5Fclose(fn);
    H5Fclose(ft);
    /* After a reopen (read-only): the same answers, from the indexes on disk. */
    ft = H5Fopen(pt, H5F_ACC_RDONLY, tess);
    fn = H5Fopen(pn, H5F_ACC_RDONLY, native);
    queries(fn, ft, 50);
    H5Fclose(fn);
    H5Fclose(ft);
    H5Pclose(native);
    H5Pclose(tess);
    H5VLclose(vol);
    if (getenv("TESSERA_TEST_VERBOSE"))
        printf("%s", L.buf ? L.buf : "");
    free(L.buf);
    printf(g_failed ? "[FAIL] test_query\n" : "[PASS] test_query\n");
    return g_failed != 0;
}
