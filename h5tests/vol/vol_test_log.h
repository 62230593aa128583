/* vol_test_log.h — the log-and-compare harness of the C connector tests.
 *
 * A test program runs the same HDF5 calls once on a native file and once on a tessera
 * container, LOGs every observation of each run into its own log_t, and compares the two
 * logs line by line at the end; check() records pass/fail verdicts that are not
 * comparisons with native (e.g. "the error message names the file").  Header-only
 * (static functions): each test program includes it once.
 */
#ifndef TESSERA_VOL_TEST_LOG_H
#define TESSERA_VOL_TEST_LOG_H

#include <hdf5.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char  *buf;
    size_t len, cap;
} log_t;

static log_t *g_log;    /* the run's log LOG() appends to */
static int    g_failed; /* failed check()s */

static void logf_(const char *fmt, ...)
{
    char    line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line)
        n = sizeof line - 1;
    if (g_log->len + (size_t)n + 2 > g_log->cap) {
        g_log->cap = (g_log->cap + (size_t)n + 2) * 2;
        g_log->buf = realloc(g_log->buf, g_log->cap);
    }
    memcpy(g_log->buf + g_log->len, line, (size_t)n);
    g_log->len += (size_t)n;
    g_log->buf[g_log->len++] = '\n';
    g_log->buf[g_log->len]   = '\0';
}
#define LOG(...) logf_(__VA_ARGS__)

/* FNV-1a of n bytes: logs a buffer's content in one line. */
static inline unsigned long long fnv(const void *p, size_t n)
{
    const unsigned char *b = p;
    unsigned long long   h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}
#define RC(x)    ((x) >= 0 ? "ok" : "fail")

static void check(int ok, const char *what, const char *run)
{
    printf("  [%s] %s (%s)\n", ok ? "PASS" : "FAIL", what, run);
    if (!ok)
        g_failed++;
}

/* The model tests' random numbers: xorshift64, seeded from TESSERA_TEST_SEED when set
 * (seed_rng prints the seed, so a failure can be replayed). */
static uint64_t g_rng = 88172645463325252ull;
static inline uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
static inline uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }
static inline void seed_rng(const char *prog, uint64_t dflt)
{
    const char *seed = getenv("TESSERA_TEST_SEED");
    g_rng            = seed ? strtoull(seed, NULL, 0) | 1 : dflt;
    printf("%s: seed %llu\n", prog, (unsigned long long)g_rng);
}

/* The current error stack holds a record whose description contains `text` (a refusal
 * said what it had to say). */
static herr_t find_text_(unsigned n, const H5E_error2_t *e, void *ctx)
{
    (void)n;
    const char **t = ctx;
    if (e->desc && strstr(e->desc, t[0]))
        t[1] = "found";
    return 0;
}
static inline int stack_says(const char *text)
{
    const char *t[2] = {text, NULL};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, find_text_, t);
    return t[1] != NULL;
}

/* The file-access plists of the two runs: native HDF5, and the tessera connector (found
 * through HDF5_PLUGIN_PATH; *vol is its id, for H5VLclose).  -1 with a message if the
 * connector does not load. */
static int make_fapls(hid_t *native, hid_t *tess, hid_t *vol)
{
    *native = H5Pcreate(H5P_FILE_ACCESS);
    *tess   = H5Pcreate(H5P_FILE_ACCESS);
    *vol    = H5VLregister_connector_by_name("tessera", H5P_DEFAULT);
    if (*vol < 0 || H5Pset_vol(*tess, *vol, NULL) < 0) {
        printf("FAIL: cannot load the tessera connector (HDF5_PLUGIN_PATH?)\n");
        return -1;
    }
    return 0;
}

/* Compares the two runs' logs line by line, printing each differing line; returns the
 * number of differences and sets *lines to the number of lines compared.  With the
 * environment variable `verbose_env` set, the native log is printed too. */
static int compare_logs(const log_t *native, const log_t *tess, const char *verbose_env, int *lines)
{
    const char *a = native->buf ? native->buf : "", *b = tess->buf ? tess->buf : "";
    int         line = 1, diffs = 0;
    while (*a || *b) {
        const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
        size_t      la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
        if (la != lb || memcmp(a, b, la) != 0) {
            printf("  DIFF line %d\n    native : %.*s\n    tessera: %.*s\n", line, (int)la, a, (int)lb, b);
            diffs++;
        }
        a += la + (ea ? 1 : 0);
        b += lb + (eb ? 1 : 0);
        line++;
    }
    if (getenv(verbose_env))
        printf("--- native log ---\n%s", native->buf ? native->buf : "");
    *lines = line - 1;
    printf("%d log lines compared, %d differ; %d checks failed\n", *lines, diffs, g_failed);
    return diffs;
}

/* A scenario: the same HDF5 calls on the file at `path` opened/created with `fapl`,
 * every observation LOGged into L (g_log is set to L before the call). */
typedef void (*scenario_run_fn)(const char *path, hid_t fapl, log_t *L);

/* The usual program: runs `run` on <dir>/<stem>_native.h5 (native connector) and on
 * <dir>/<stem>_tessera.h5 (tessera), with the error stack silenced (failures are logged
 * as observations), checks that the container really uses tessera, compares the two
 * logs (at least `min_lines` of them; TESSERA_TEST_VERBOSE prints the native log) and
 * then runs `extra` (may be NULL) for tessera-only checks.  Returns the exit status. */
static inline int run_compared(const char *dir, const char *stem, scenario_run_fn run, int min_lines,
                        void (*extra)(hid_t tess_fapl, const char *dir))
{
    hid_t native, tess, vol;
    if (make_fapls(&native, &tess, &vol) < 0)
        return 1;
    char pn[4096], pt[4096];
    snprintf(pn, sizeof pn, "%s/%s_native.h5", dir, stem);
    snprintf(pt, sizeof pt, "%s/%s_tessera.h5", dir, stem);
    log_t ln = {0}, lt = {0};
    /* TESSERA_TEST_ERRORS=1 prints HDF5's error stacks (for debugging a difference). */
    H5E_auto2_t efunc = NULL;
    void       *edata = NULL;
    H5Eget_auto2(H5E_DEFAULT, &efunc, &edata);
    if (!getenv("TESSERA_TEST_ERRORS"))
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    g_log = &ln;
    run(pn, native, &ln);
    g_log = &lt;
    run(pt, tess, &lt);
    H5Eset_auto2(H5E_DEFAULT, efunc, edata);
    hid_t f         = H5Fopen(pt, H5F_ACC_RDONLY, tess);
    char  cname[64] = "";
    H5VLget_connector_name(f, cname, sizeof cname);
    check(strcmp(cname, "tessera") == 0, "the container uses the tessera connector", "tessera");
    H5Fclose(f);
    if (extra)
        extra(tess, dir);
    int lines = 0;
    int diffs = compare_logs(&ln, &lt, "TESSERA_TEST_VERBOSE", &lines);
    check(lines >= min_lines, "enough observations were compared", "compare");
    int bad = diffs || g_failed;
    printf(bad ? "[FAIL] %s differs from native\n" : "[PASS] %s identical to native\n", stem);
    free(ln.buf);
    free(lt.buf);
    H5Pclose(native);
    H5Pclose(tess);
    H5VLclose(vol);
    return bad;
}

#endif
