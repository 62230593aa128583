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
#define RC(x)    ((x) >= 0 ? "ok" : "fail")

static void check(int ok, const char *what, const char *run)
{
    printf("  [%s] %s (%s)\n", ok ? "PASS" : "FAIL", what, run);
    if (!ok)
        g_failed++;
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

#endif
