/* test_vstr_equal.c — variable-length string attributes and datasets written and read
 * with memory string types that differ from the stored one in character set, padding,
 * byte order or kind (fixed-length, Fortran), tessera vs native HDF5 (vol_test_log.h).
 *
 * The connector decides whether a memory type equals the stored type of a
 * variable-length string without decoding the stored type (vol/types/stored_type.h: two
 * calls where H5Tequal against a decoded copy was about 8,000 instructions; issue 20).
 * Every pair here goes through that decision, and what is written, read and refused
 * must be what native HDF5 does.
 *
 * Usage: test_vstr_equal [directory for the files]
 */
#include "vol_test_log.h"

#define NTYPES 7

/* 0-3: variable-length C strings (ASCII/UTF-8 x null-terminated/space-padded), 4: one
 * in big-endian order, 5: a Fortran variable-length string, 6: fixed-length, 16 bytes. */
static hid_t make_type(int i)
{
    hid_t t = H5Tcopy(i == 5 ? H5T_FORTRAN_S1 : H5T_C_S1);
    if (i == 6) {
        H5Tset_size(t, 16);
        return t;
    }
    H5Tset_size(t, H5T_VARIABLE);
    if (i < 4) {
        H5Tset_cset(t, (i & 1) ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
        H5Tset_strpad(t, (i & 2) ? H5T_STR_SPACEPAD : H5T_STR_NULLTERM);
    }
    if (i == 4)
        H5Tset_order(t, H5T_ORDER_BE);
    return t;
}

static void log_read(hid_t obj, int is_attr, const char *name)
{
    hid_t t  = is_attr ? H5Aget_type(obj) : H5Dget_type(obj);
    hid_t mt = H5Tcopy(t);
    if (H5Tis_variable_str(mt) > 0) {
        char  *v[2] = {0, 0};
        herr_t rc   = is_attr ? H5Aread(obj, mt, v) : H5Dread(obj, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
        LOG("%s read %s: '%s' '%s' (cset %d pad %d)", name, RC(rc), v[0] ? v[0] : "(null)",
            v[1] ? v[1] : "(null)", (int)H5Tget_cset(t), (int)H5Tget_strpad(t));
        hid_t sp = is_attr ? H5Aget_space(obj) : H5Dget_space(obj);
        if (rc >= 0)
            H5Treclaim(mt, sp, H5P_DEFAULT, v);
        H5Sclose(sp);
    }
    H5Tclose(mt);
    H5Tclose(t);
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    (void)L;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    LOG("file create %s", RC(f));
    if (f < 0)
        return;
    hsize_t two = 2;
    hid_t   sp  = H5Screate_simple(1, &two, NULL);
    char    name[32];
    for (int s = 0; s < NTYPES - 1; s++) { /* stored: the variable-length ones */
        hid_t st = make_type(s);
        for (int m = 0; m < NTYPES; m++) {
            hid_t       mt         = make_type(m);
            const char *v[2]       = {"alpha  ", "beta"};
            char        fixed[2][16] = {"alpha  ", "beta"};
            const void *buf        = m == 6 ? (const void *)fixed : (const void *)v;
            snprintf(name, sizeof name, "a_%d_%d", s, m);
            hid_t a = H5Acreate2(f, name, st, sp, H5P_DEFAULT, H5P_DEFAULT);
            LOG("%s create %s write %s", name, RC(a), RC(H5Awrite(a, mt, buf)));
            H5Aclose(a);
            snprintf(name, sizeof name, "d_%d_%d", s, m);
            hid_t d = H5Dcreate2(f, name, st, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            LOG("%s create %s write %s", name, RC(d), RC(H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf)));
            H5Dclose(d);
            H5Tclose(mt);
        }
        H5Tclose(st);
    }
    /* One string type ID changed between creations: each attribute keeps the type it
     * was created with (the connector encodes a variable-length string once per
     * character set, padding and order). */
    hid_t one = H5Tcopy(H5T_C_S1);
    H5Tset_size(one, H5T_VARIABLE);
    for (int step = 0; step < 5; step++) {
        if (step == 1)
            H5Tset_cset(one, H5T_CSET_UTF8);
        if (step == 2)
            H5Tset_strpad(one, H5T_STR_NULLPAD);
        if (step == 3)
            H5Tset_order(one, H5T_ORDER_BE);
        if (step == 4) {
            H5Tset_cset(one, H5T_CSET_ASCII);
            H5Tset_strpad(one, H5T_STR_NULLTERM);
            H5Tset_order(one, H5T_ORDER_LE);
        }
        const char *v[2] = {"one", "two"};
        snprintf(name, sizeof name, "same_id_%d", step);
        hid_t a = H5Acreate2(f, name, one, sp, H5P_DEFAULT, H5P_DEFAULT);
        LOG("%s create %s write %s", name, RC(a), RC(H5Awrite(a, one, v)));
        H5Aclose(a);
    }
    H5Tclose(one);
    H5Sclose(sp);
    LOG("close %s", RC(H5Fclose(f)));
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    LOG("reopen %s", RC(f));
    for (int s = 0; f >= 0 && s < NTYPES - 1; s++)
        for (int m = 0; m < NTYPES; m++) {
            snprintf(name, sizeof name, "a_%d_%d", s, m);
            hid_t a = H5Aopen(f, name, H5P_DEFAULT);
            if (a >= 0) {
                log_read(a, 1, name);
                H5Aclose(a);
            }
            snprintf(name, sizeof name, "d_%d_%d", s, m);
            hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
            if (d >= 0) {
                log_read(d, 0, name);
                H5Dclose(d);
            }
        }
    for (int step = 0; f >= 0 && step < 5; step++) {
        snprintf(name, sizeof name, "same_id_%d", step);
        hid_t a = H5Aopen(f, name, H5P_DEFAULT);
        hid_t t = H5Aget_type(a);
        LOG("%s type: variable %d cset %d pad %d order %d", name, (int)H5Tis_variable_str(t), (int)H5Tget_cset(t),
            (int)H5Tget_strpad(t), (int)H5Tget_order(t));
        log_read(a, 1, name);
        H5Tclose(t);
        H5Aclose(a);
    }
    if (f >= 0)
        H5Fclose(f);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    return run_compared(dir, "test_vstr_equal", run, 150, NULL);
}
