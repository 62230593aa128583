/* test_group_storage.c — H5Gget_info's storage type and link counts, tessera compared
 * with native HDF5 (vol_test_log.h).
 *
 * Native HDF5 keeps a group's links as a symbol table (old-style groups), as link
 * messages ("compact") or in a fractal heap ("dense"), switching between the last two
 * at the gcpl's phase-change limits, with hysteresis.  The scenarios cross the limits
 * both ways, with the default and custom limits, in files with the default and the
 * latest library-version bounds, with creation-order-tracking gcpls, through H5Lmove,
 * H5Ldelete and intermediate groups, and read the types back after reopening.
 *
 * Usage: test_group_storage [directory for the files]
 */
#include "vol_test_log.h"

static void log_info(hid_t loc, const char *name)
{
    H5G_info_t gi;
    memset(&gi, 0, sizeof gi);
    herr_t rc = H5Gget_info_by_name(loc, name, &gi, H5P_DEFAULT);
    LOG("info %s rc=%s nlinks=%llu storage=%d", name, RC(rc), (unsigned long long)gi.nlinks, (int)gi.storage_type);
}

static void add(hid_t g, int i)
{
    char n[32];
    snprintf(n, sizeof n, "c%03d", i);
    hid_t c = H5Gcreate2(g, n, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(c);
}

static void del(hid_t g, int i)
{
    char n[32];
    snprintf(n, sizeof n, "c%03d", i);
    LOG("delete %s %s", n, RC(H5Ldelete(g, n, H5P_DEFAULT)));
}

/* Grows `name` to `up` links logging each step, then shrinks it to 0. */
static void cycle(hid_t f, const char *name, hid_t gcpl, int up)
{
    hid_t g = H5Gcreate2(f, name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
    LOG("create %s %s", name, RC(g));
    log_info(f, name);
    for (int i = 0; i < up; i++) {
        add(g, i);
        log_info(f, name);
    }
    for (int i = up - 1; i >= 0; i--) {
        del(g, i);
        log_info(f, name);
    }
    for (int i = 0; i < up; i++) /* grown again: stays for the reopen check */
        add(g, i);
    H5Gclose(g);
}

static void scenario(const char *path, hid_t fapl, int latest, log_t *L)
{
    g_log       = L;
    hid_t fa    = H5Pcopy(fapl);
    if (latest)
        H5Pset_libver_bounds(fa, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fa);
    LOG("file latest=%d %s", latest, RC(f));
    log_info(f, "/");
    hid_t dflt = H5Pcreate(H5P_GROUP_CREATE);
    cycle(f, "default", dflt, 11);
    hid_t phase = H5Pcreate(H5P_GROUP_CREATE);
    H5Pset_link_phase_change(phase, 5, 3);
    cycle(f, "phase", phase, 7);
    hid_t order = H5Pcreate(H5P_GROUP_CREATE);
    H5Pset_link_creation_order(order, H5P_CRT_ORDER_TRACKED);
    cycle(f, "ordered", order, 10);
    /* Moves out of and into a group across its limit. */
    hid_t g = H5Gopen2(f, "phase", H5P_DEFAULT);
    LOG("move out %s", RC(H5Lmove(g, "c006", f, "moved", H5P_DEFAULT, H5P_DEFAULT)));
    log_info(f, "phase");
    LOG("move in %s", RC(H5Lmove(f, "moved", g, "back", H5P_DEFAULT, H5P_DEFAULT)));
    log_info(f, "phase");
    H5Gclose(g);
    /* Intermediate groups. */
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    g = H5Gcreate2(f, "a/b/c", lcpl, H5P_DEFAULT, H5P_DEFAULT);
    LOG("intermediate %s", RC(g));
    H5Gclose(g);
    log_info(f, "a");
    log_info(f, "a/b");
    log_info(f, "/");
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    LOG("reopen %s", RC(f));
    const char *names[] = {"/", "default", "phase", "ordered", "a", "a/b", "a/b/c"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        log_info(f, names[i]);
    H5Fclose(f);
    H5Pclose(lcpl);
    H5Pclose(dflt);
    H5Pclose(phase);
    H5Pclose(order);
    H5Pclose(fa);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    hid_t       native, tess, vol;
    if (make_fapls(&native, &tess, &vol) < 0)
        return 1;
    int bad = 0;
    for (int latest = 0; latest < 2; latest++) {
        char  pn[4096], pt[4096];
        log_t ln = {0}, lt = {0};
        snprintf(pn, sizeof pn, "%s/test_group_storage_native_%d.h5", dir, latest);
        snprintf(pt, sizeof pt, "%s/test_group_storage_tessera_%d.h5", dir, latest);
        scenario(pn, native, latest, &ln);
        scenario(pt, tess, latest, &lt);
        int lines = 0;
        bad |= compare_logs(&ln, &lt, "TEST_GROUP_STORAGE_VERBOSE", &lines) != 0;
        free(ln.buf);
        free(lt.buf);
        check(lines > 100, "enough observations were compared", latest ? "latest" : "default bounds");
    }
    /* The tessera runs really used tessera: a container is a directory. */
    char pt[4096];
    snprintf(pt, sizeof pt, "%s/test_group_storage_tessera_0.h5/.", dir);
    FILE *probe = fopen(pt, "r");
    check(probe != NULL, "the tessera file is a container (directory)", "tessera");
    if (probe)
        fclose(probe);
    bad |= g_failed != 0;
    printf(bad ? "[FAIL] group storage differs from native\n" : "[PASS] group storage identical to native\n");
    return bad;
}
