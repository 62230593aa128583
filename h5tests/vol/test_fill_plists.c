/* test_fill_plists.c — a dataset's fill value as H5Dget_create_plist reports it, tessera
 * compared with native HDF5 (vol_test_log.h).
 *
 * A fill value lives in the dcpl in memory form; for variable-length types that form
 * holds pointers owned by the plist.  The scenarios free the application's dcpl and its
 * strings before asking again (the use-after-free h5py's test_dataset.py hit), set the
 * fill value in a type other than the dataset's (h5py sets a fixed-length string
 * dataset's fill value as a vlen string), and read the fill value back after reopening
 * the dataset and the file.  Run under ASan by scripts/test --sanitize.
 *
 * The program ends WITHOUT closing its last file, as programs do: HDF5 closes it at exit
 * (this once touched a destroyed static registry in the connector).
 *
 * Usage: test_fill_plists [directory for the files]
 */
#include "vol_test_log.h"

static void log_fill_str(hid_t dcpl, hid_t type, int vlen)
{
    H5D_fill_value_t st = H5D_FILL_VALUE_ERROR;
    herr_t           rc = H5Pfill_value_defined(dcpl, &st);
    LOG("fill defined rc=%s status=%d", RC(rc), (int)st);
    if (vlen) {
        char *s = NULL;
        rc      = H5Pget_fill_value(dcpl, type, &s);
        LOG("vlen fill rc=%s value=%s", RC(rc), s ? s : "(null)");
        free(s);
    } else {
        char buf[16] = {0};
        rc           = H5Pget_fill_value(dcpl, type, buf);
        LOG("fixed fill rc=%s value=%.10s", RC(rc), buf);
    }
}

static void log_dataset_fill(hid_t ds, hid_t type, int vlen)
{
    hid_t p = H5Dget_create_plist(ds);
    LOG("get_create_plist %s", RC(p));
    if (p >= 0) {
        log_fill_str(p, type, vlen);
        H5D_fill_time_t ft = H5D_FILL_TIME_ERROR;
        herr_t          rc = H5Pget_fill_time(p, &ft);
        LOG("fill time rc=%s %d", RC(rc), (int)ft);
        H5Pclose(p);
    }
}

static hid_t vlen_str(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    return t;
}

static hid_t fixed_str(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 10);
    H5Tset_strpad(t, H5T_STR_NULLPAD); /* as h5py makes them */
    return t;
}

/* Creates `name` of `dtype` with the fill value "bar" given in `ftype`; the dcpl and the
 * application's string are freed before the dataset is asked. */
static void create(hid_t f, const char *name, hid_t dtype, hid_t ftype, int fvlen)
{
    hsize_t n    = 6;
    hid_t   s    = H5Screate_simple(1, &n, NULL);
    hid_t   dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (fvlen) {
        char *v = strdup("bar");
        LOG("set_fill_value %s", RC(H5Pset_fill_value(dcpl, ftype, &v)));
        free(v);
    } else {
        char v[10] = "bar";
        LOG("set_fill_value %s", RC(H5Pset_fill_value(dcpl, ftype, v)));
    }
    hid_t ds = H5Dcreate2(f, name, dtype, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    LOG("create %s %s", name, RC(ds));
    H5Pclose(dcpl); /* frees the plist's copy of "bar" */
    log_dataset_fill(ds, dtype, H5Tis_variable_str(dtype) > 0);
    H5Dclose(ds);
    H5Sclose(s);
}

/* Reads every element: the never-written ones must read as the fill value. */
static void log_values(hid_t ds, hid_t dtype)
{
    if (H5Tis_variable_str(dtype) > 0) {
        char  *v[6] = {0};
        herr_t rc   = H5Dread(ds, dtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
        LOG("read rc=%s %s|%s|%s|%s|%s|%s", RC(rc), v[0] ? v[0] : "(null)", v[1] ? v[1] : "(null)",
            v[2] ? v[2] : "(null)", v[3] ? v[3] : "(null)", v[4] ? v[4] : "(null)", v[5] ? v[5] : "(null)");
        for (int i = 0; i < 6; i++)
            free(v[i]);
    }
    else {
        char   v[6][10];
        herr_t rc = H5Dread(ds, dtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
        LOG("read rc=%s %.10s|%.10s|%.10s|%.10s|%.10s|%.10s", RC(rc), v[0], v[1], v[2], v[3], v[4], v[5]);
    }
}

static void reopen(hid_t f, const char *name, hid_t dtype)
{
    hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
    LOG("open %s %s", name, RC(ds));
    log_dataset_fill(ds, dtype, H5Tis_variable_str(dtype) > 0);
    if (ds >= 0)
        log_values(ds, dtype);
    H5Dclose(ds);
}

/* Writes element 2 (and, for vlen strings, a NULL element 4), leaving the rest unwritten. */
static void write_some(hid_t f, const char *name, hid_t dtype)
{
    hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
    if (ds < 0)
        return;
    hid_t   fs = H5Dget_space(ds);
    hsize_t one = 1, at = 2;
    hid_t   ms = H5Screate_simple(1, &one, NULL);
    H5Sselect_elements(fs, H5S_SELECT_SET, 1, &at);
    if (H5Tis_variable_str(dtype) > 0) {
        const char *v = "two";
        LOG("write one %s", RC(H5Dwrite(ds, dtype, ms, fs, H5P_DEFAULT, &v)));
        at = 4;
        H5Sselect_elements(fs, H5S_SELECT_SET, 1, &at);
        const char *nul = NULL;
        LOG("write NULL %s", RC(H5Dwrite(ds, dtype, ms, fs, H5P_DEFAULT, &nul)));
    }
    else {
        char v[10] = "two";
        LOG("write one %s", RC(H5Dwrite(ds, dtype, ms, fs, H5P_DEFAULT, v)));
    }
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(ds);
}

static const char *names[] = {"vlen_from_vlen", "fixed_from_vlen", "vlen_from_fixed", "fixed_from_fixed"};

static hid_t run(const char *path, hid_t fapl, log_t *L, int close_at_end)
{
    g_log      = L;
    hid_t vs = vlen_str(), fs = fixed_str();
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    LOG("file %s", RC(f));
    create(f, names[0], vs, vs, 1);
    create(f, names[1], fs, vs, 1);
    create(f, names[2], vs, fs, 0);
    create(f, names[3], fs, fs, 0);
    for (int i = 0; i < 4; i++) /* same process, handles reopened */
        reopen(f, names[i], i % 2 ? fs : vs);
    for (int i = 0; i < 4; i++)
        write_some(f, names[i], i % 2 ? fs : vs);
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    LOG("reopen file %s", RC(f));
    for (int i = 0; i < 4; i++)
        reopen(f, names[i], i % 2 ? fs : vs);
    H5Tclose(vs);
    H5Tclose(fs);
    if (close_at_end) {
        H5Fclose(f);
        return H5I_INVALID_HID;
    }
    return f;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    char        pn[4096], pt[4096];
    snprintf(pn, sizeof pn, "%s/test_fill_plists_native.h5", dir);
    snprintf(pt, sizeof pt, "%s/test_fill_plists_tessera.h5", dir);
    hid_t native, tess, vol;
    if (make_fapls(&native, &tess, &vol) < 0)
        return 1;
    log_t ln = {0}, lt = {0};
    run(pn, native, &ln, 1);
    hid_t left_open = run(pt, tess, &lt, 0);
    char  cname[64] = "";
    H5VLget_connector_name(left_open, cname, sizeof cname);
    check(strcmp(cname, "tessera") == 0, "the container uses the tessera connector", "tessera");
    int lines = 0;
    int diffs = compare_logs(&ln, &lt, "TEST_FILL_PLISTS_VERBOSE", &lines);
    check(lines > 40, "enough observations were compared", "compare");
    int bad = diffs || g_failed;
    printf(bad ? "[FAIL] fill plists differ from native\n" : "[PASS] fill plists identical to native\n");
    /* `left_open` stays open: HDF5 closes it at exit. */
    free(ln.buf);
    free(lt.buf);
    return bad;
}
