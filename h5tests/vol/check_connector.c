/* check_connector — asserts which VOL connector HDF5 selects from the environment.
 *
 * The connector is chosen ONLY by the environment (HDF5_VOL_CONNECTOR, HDF5_PLUGIN_PATH);
 * this program never names it.  If the plugin fails to load HDF5 silently falls back to
 * the native connector, which is exactly what this check catches.
 *
 *   check_connector [--expect tessera|native]     (default: tessera)
 *
 * With --expect tessera it checks:
 *   1. H5Pget_vol_id on a new file-access plist names the connector "tessera";
 *   2. H5Pget_vol_cap_flags succeeds;
 *   3. H5Fcreate makes a tessera container (a directory with tessera.container) and
 *      H5VLget_connector_name on the file id answers "tessera";
 *   4. H5Fis_accessible on a plain (non-tessera) file returns 0 or negative, no crash;
 *   5. H5Fis_accessible on the container is true;
 *   6. H5Fopen opens it and H5Fdelete removes it;
 *   7. H5Fopen of a missing path fails with "errno = 2" on the error stack.
 * With --expect native it checks 1 and 2 for "native", and that the native connector
 * creates, recognises and deletes a real HDF5 file (proving the checks can tell them apart).
 *
 * Prints one line per check and exits 0 only if every check passed.
 */
#include <hdf5.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int g_passed = 0;
static int g_failed = 0;

static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("  [%s] ", ok ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (ok)
        g_passed++;
    else
        g_failed++;
    fflush(stdout);
}

/* ---------------------------------------------------------------- error stack capture */
/* The walk callback must not call HDF5 API functions: most of them clear the default
 * error stack on entry, i.e. the stack being walked.  So the callback only copies the
 * records; class names are looked up afterwards. */
#define MAX_RECORDS 32
typedef struct {
    hid_t    cls_id;
    unsigned n;
    char     func[128];
    char     desc[512];
} record_t;

typedef struct {
    record_t rec[MAX_RECORDS];
    int      n_records;
    char     text[8192]; /* all records: "#n [class] func(): desc\n" */
} errinfo_t;

static herr_t walk_cb(unsigned n, const H5E_error2_t *err, void *client_data)
{
    errinfo_t *ei = (errinfo_t *)client_data;
    record_t  *r;
    if (ei->n_records >= MAX_RECORDS)
        return 0;
    r         = &ei->rec[ei->n_records++];
    r->cls_id = err->cls_id;
    r->n      = n;
    snprintf(r->func, sizeof r->func, "%s", err->func_name ? err->func_name : "?");
    snprintf(r->desc, sizeof r->desc, "%s", err->desc ? err->desc : "");
    return 0;
}

static void capture_errors(errinfo_t *ei)
{
    size_t len = 0;
    memset(ei, 0, sizeof *ei);
    if (H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_cb, ei) < 0) {
        snprintf(ei->text, sizeof ei->text, "      (H5Ewalk2 failed)\n");
        return;
    }
    H5Eclear2(H5E_DEFAULT);
    for (int i = 0; i < ei->n_records; i++) {
        record_t *r       = &ei->rec[i];
        char      cls[64] = "?";
        if (H5Eget_class_name(r->cls_id, cls, sizeof cls) < 0)
            snprintf(cls, sizeof cls, "?");
        if (len < sizeof ei->text - 1) {
            int w = snprintf(ei->text + len, sizeof ei->text - len, "      #%03u [%s] %s(): %s\n", r->n, cls,
                             r->func, r->desc);
            if (w > 0)
                len = len + (size_t)w < sizeof ei->text - 1 ? len + (size_t)w : sizeof ei->text - 1;
        }
    }
}

/* ---------------------------------------------------------------- helpers */
/* The name of the default connector of `fapl`.
 *
 * H5VLget_connector_name() takes an *object* ID (file, group, dataset, ...), not a
 * connector ID, and no file can be created yet: so compare the plist's connector class
 * with the registered connectors of each candidate name (H5VLcmp_connector_cls).  The
 * candidates are only looked up if already registered — this never loads a plugin. */
static int connector_name_of_fapl(hid_t fapl, char *name, size_t size)
{
    static const char *const candidates[] = {"tessera", "native"};
    hid_t                    vol_id       = H5I_INVALID_HID;
    int                      rc           = -1;
    snprintf(name, size, "unknown");
    if (H5Pget_vol_id(fapl, &vol_id) < 0)
        return -1;
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        hid_t cid;
        int   cmp = 1;
        if (H5VLis_connector_registered_by_name(candidates[i]) <= 0)
            continue;
        if ((cid = H5VLget_connector_id_by_name(candidates[i])) < 0)
            continue;
        if (H5VLcmp_connector_cls(&cmp, vol_id, cid) >= 0 && cmp == 0) {
            snprintf(name, size, "%s", candidates[i]);
            rc = 0;
        }
        H5VLclose(cid);
        if (rc == 0)
            break;
    }
    if (rc != 0)
        rc = 0; /* "unknown": a valid answer that the caller reports as a mismatch */
    H5VLclose(vol_id);
    return rc;
}

static int write_plain_file(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs("this is a plain text file, neither HDF5 nor a tessera container\n", f);
    return fclose(f);
}

static const char *marker_of_created(const char *dir)
{
    static char p[4096];
    snprintf(p, sizeof p, "%s/tessera.container", dir);
    return p;
}

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [--expect tessera|native]\n", argv0);
}

int main(int argc, char **argv)
{
    const char *expect = "tessera";
    const char *env_conn = getenv("HDF5_VOL_CONNECTOR");
    const char *env_path = getenv("HDF5_PLUGIN_PATH");
    unsigned    maj = 0, min = 0, rel = 0;
    char        name[256];
    char        tmpdir[1024];
    const char *tmpbase = getenv("TMPDIR");
    hid_t       fapl;
    uint64_t    cap_flags = 0;
    int         expect_tessera;
    int         init_ok;
    H5E_auto2_t old_func = NULL;
    void       *old_data = NULL;
    errinfo_t   ei;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc)
            expect = argv[++i];
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(argv[0]);
            return 0;
        }
        else {
            usage(argv[0]);
            return 2;
        }
    }
    if (strcmp(expect, "tessera") != 0 && strcmp(expect, "native") != 0) {
        usage(argv[0]);
        return 2;
    }
    expect_tessera = strcmp(expect, "tessera") == 0;

    /* The first API call initialises the library, which loads the connector named by
     * HDF5_VOL_CONNECTOR; if that fails HDF5 prints an error stack, fails this one call
     * and then carries on with the native connector. */
    init_ok = H5get_libversion(&maj, &min, &rel) >= 0;
    printf("check_connector: HDF5 %u.%u.%u, expecting connector '%s'\n", maj, min, rel, expect);
    printf("  HDF5_VOL_CONNECTOR=%s\n", env_conn ? env_conn : "(unset)");
    printf("  HDF5_PLUGIN_PATH=%s\n", env_path ? env_path : "(unset)");
    check(init_ok, "HDF5 library initialised%s",
          init_ok ? "" : " (it failed: see the error stack above; usually the connector plugin could not be loaded)");

    /* Errors are inspected, not printed, unless a check fails. */
    H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);

    /* 1. the default connector of a fresh file-access plist */
    fapl = H5Pcreate(H5P_FILE_ACCESS);
    check(fapl >= 0, "H5Pcreate(H5P_FILE_ACCESS) succeeded");
    if (fapl < 0)
        goto done;
    if (connector_name_of_fapl(fapl, name, sizeof name) < 0) {
        check(0, "H5Pget_vol_id on the file-access plist succeeded");
        goto done;
    }
    if (strcmp(name, expect) == 0)
        check(1, "default VOL connector is '%s'", name);
    else
        check(0, "default VOL connector is '%s', expected '%s'%s", name, expect,
              expect_tessera ? " (plugin not found or failed to load: HDF5 fell back silently)" : "");

    /* 2. capability flags (H5Pget_vol_cap_flags calls the connector's get_cap_flags) */
    if (H5Pget_vol_cap_flags(fapl, &cap_flags) >= 0)
        check(1, "H5Pget_vol_cap_flags works: 0x%016llx", (unsigned long long)cap_flags);
    else
        check(0, "H5Pget_vol_cap_flags failed");

    /* A private temporary directory for the file checks. */
    snprintf(tmpdir, sizeof tmpdir, "%s/check_connector.XXXXXX", tmpbase && *tmpbase ? tmpbase : "/tmp");
    if (!mkdtemp(tmpdir)) {
        check(0, "mkdtemp(%s): %s", tmpdir, strerror(errno));
        goto done;
    }
    {
        char  h5path[2048], plain[2048], container[2048];
        hid_t fid;
        htri_t acc;
        struct stat st;

        snprintf(h5path, sizeof h5path, "%s/created.h5", tmpdir);
        snprintf(plain, sizeof plain, "%s/plain.txt", tmpdir);
        snprintf(container, sizeof container, "%s/container.h5", tmpdir);

        if (expect_tessera) {
            /* 3. H5Fcreate makes a tessera container, and the file object says so */
            fid = H5Fcreate(h5path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
            capture_errors(&ei);
            check(fid >= 0, "H5Fcreate(%s) succeeded%s%s", h5path, fid >= 0 ? "" : ":\n", fid >= 0 ? "" : ei.text);
            if (fid >= 0) {
                char conn[64] = "";
                if (H5VLget_connector_name(fid, conn, sizeof conn) < 0)
                    snprintf(conn, sizeof conn, "(error)");
                check(strcmp(conn, "tessera") == 0, "H5VLget_connector_name(file) is '%s'", conn);
                check(H5Fclose(fid) >= 0, "H5Fclose succeeded");
            }
            check(stat(marker_of_created(h5path), &st) == 0 && S_ISREG(st.st_mode),
                  "%s is a tessera container (a directory with tessera.container)", h5path);
        }
        else {
            /* native: a real HDF5 file round trip */
            fid = H5Fcreate(h5path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
            capture_errors(&ei);
            check(fid >= 0, "native H5Fcreate(%s) succeeded%s%s", h5path, fid >= 0 ? "" : ":\n", fid >= 0 ? "" : ei.text);
            if (fid >= 0)
                H5Fclose(fid);
            acc = H5Fis_accessible(h5path, fapl);
            capture_errors(&ei);
            check(acc > 0, "native H5Fis_accessible on the new HDF5 file returned %d (> 0)", (int)acc);
            unlink(h5path);
        }

        /* 4. a plain file is not ours: 0 (or an error), never a crash */
        if (write_plain_file(plain) < 0)
            check(0, "could not write %s: %s", plain, strerror(errno));
        else {
            acc = H5Fis_accessible(plain, fapl);
            capture_errors(&ei);
            check(acc <= 0, "H5Fis_accessible on a plain non-HDF5 file returned %d (0 or negative)", (int)acc);
            unlink(plain);
        }

        if (expect_tessera) {
            /* 5. the container is recognised */
            acc = H5Fis_accessible(h5path, fapl);
            capture_errors(&ei);
            check(acc > 0, "H5Fis_accessible on the tessera container returned %d (> 0)", (int)acc);

            /* 6. it opens, and H5Fdelete removes it */
            fid = H5Fopen(h5path, H5F_ACC_RDONLY, fapl);
            capture_errors(&ei);
            check(fid >= 0, "H5Fopen on the container succeeded%s%s", fid >= 0 ? "" : ":\n", fid >= 0 ? "" : ei.text);
            if (fid >= 0)
                H5Fclose(fid);
            {
                herr_t st_del = H5Fdelete(h5path, fapl);
                capture_errors(&ei);
                check(st_del >= 0 && stat(h5path, &st) != 0, "H5Fdelete removed the container (returned %d)%s%s",
                      (int)st_del, st_del >= 0 ? "" : ":\n", st_del >= 0 ? "" : ei.text);
            }

            /* 7. a missing file fails cleanly, with errno = 2 for h5py's mode 'a' */
            fid = H5Fopen(container, H5F_ACC_RDONLY, fapl);
            capture_errors(&ei);
            if (fid >= 0)
                H5Fclose(fid);
            check(fid < 0 && strstr(ei.text, "errno = 2") != NULL,
                  "H5Fopen of a missing path fails with \"errno = 2\" on the stack (returned %lld):\n%s",
                  (long long)fid, ei.text);
        }
        rmdir(tmpdir);
    }

done:
    if (fapl >= 0)
        H5Pclose(fapl);
    H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
    printf("check_connector: %d checks passed, %d failed (expected connector '%s')\n", g_passed, g_failed,
           expect);
    return g_failed == 0 && g_passed > 0 ? 0 : 1;
}
