/* test_error_codes.c — engine errors keep their code on HDF5's error stack
 * (vol/base/error.h): each failure below must leave a record of the "tessera" class whose
 * minor code names what went wrong, not one generic code for everything.
 *
 *   a container that does not exist        -> "not found"
 *   a fragment with a flipped byte         -> "corrupt or truncated data"
 *   a chunk rank that does not match       -> "invalid argument"
 *   H5Fmount                               -> "unsupported operation"
 *
 * Usage: test_error_codes [directory]   (HDF5_VOL_CONNECTOR=tessera in the environment)
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_failed;

static void check(int ok, const char *what)
{
    printf("  [%s] %s\n", ok ? "PASS" : "FAIL", what);
    if (!ok)
        g_failed++;
}

typedef struct {
    char minors[1024];
} walk_t;

static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    (void)n;
    walk_t *w = data;
    char    cls[64] = "", minor[128] = "";
    H5Eget_class_name(e->cls_id, cls, sizeof cls);
    if (strcmp(cls, "tessera") != 0)
        return 0;
    H5Eget_msg(e->min_num, NULL, minor, sizeof minor);
    strncat(w->minors, minor, sizeof w->minors - strlen(w->minors) - 2);
    strcat(w->minors, ";");
    return 0;
}

/* The tessera minor codes on the current error stack (then cleared). */
static void minors(walk_t *w)
{
    w->minors[0] = '\0';
    hid_t st = H5Eget_current_stack();
    H5Ewalk2(st, H5E_WALK_DOWNWARD, walk_cb, w);
    H5Eclose_stack(st);
}

static char g_frag[4096];

static int find_frag(const char *path, const struct stat *sb, int type, struct FTW *f)
{
    (void)sb;
    (void)f;
    size_t n = strlen(path);
    if (type == FTW_F && n > 4 && strcmp(path + n - 4, ".tfr") == 0 && !strstr(path, "/.")) {
        snprintf(g_frag, sizeof g_frag, "%s", path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    char        path[4096], missing[4096];
    snprintf(path, sizeof path, "%s/test_error_codes.h5", dir);
    snprintf(missing, sizeof missing, "%s/no_such_container.h5", dir);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    walk_t w;

    hid_t f = H5Fopen(missing, H5F_ACC_RDONLY, H5P_DEFAULT);
    minors(&w);
    printf("missing: %s\n", w.minors);
    check(f < 0 && strstr(w.minors, "not found") != NULL, "a missing container is 'not found'");

    f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    char cname[64] = "";
    H5VLget_connector_name(f, cname, sizeof cname);
    check(strcmp(cname, "tessera") == 0, "the file uses the tessera connector");
    hsize_t dims[1] = {100000}, ch[1] = {50000};
    hid_t   s    = H5Screate_simple(1, dims, NULL);
    hid_t   dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, ch);
    hid_t d   = H5Dcreate2(f, "d", H5T_NATIVE_INT, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int  *buf = calloc(100000, sizeof(int));
    for (int i = 0; i < 100000; i++)
        buf[i] = i;
    H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    H5Dclose(d);

    /* A chunk rank that does not match the dataspace. */
    hsize_t ch2[2] = {10, 10};
    hid_t   bad    = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(bad, 2, ch2);
    d = H5Dcreate2(f, "bad", H5T_NATIVE_INT, s, H5P_DEFAULT, bad, H5P_DEFAULT);
    minors(&w);
    printf("bad chunk rank: %s\n", w.minors);
    check(d < 0 && strstr(w.minors, "invalid argument") != NULL, "a bad chunk rank is 'invalid argument'");
    H5Pclose(bad);

    /* Mounting is not supported. */
    hid_t g = H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t f2 = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    herr_t rc = H5Fmount(g, ".", f2, H5P_DEFAULT);
    minors(&w);
    printf("mount: %s\n", w.minors);
    check(rc < 0 && strstr(w.minors, "unsupported operation") != NULL, "H5Fmount is 'unsupported operation'");
    if (f2 >= 0)
        H5Fclose(f2);
    H5Gclose(g);
    H5Pclose(dcpl);
    H5Sclose(s);
    H5Fclose(f);

    /* A flipped byte in a fragment file. */
    g_frag[0] = '\0';
    nftw(path, find_frag, 16, FTW_PHYS);
    check(g_frag[0] != '\0', "the dataset has a fragment file");
    if (g_frag[0]) {
        FILE *fp = fopen(g_frag, "r+b");
        fseek(fp, 5000, SEEK_SET);
        int c = fgetc(fp);
        fseek(fp, 5000, SEEK_SET);
        fputc(c ^ 0x5a, fp);
        fclose(fp);
        f      = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        d      = H5Dopen2(f, "d", H5P_DEFAULT);
        herr_t r = H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
        minors(&w);
        printf("corrupt: %s\n", w.minors);
        check(r < 0 && strstr(w.minors, "corrupt or truncated data") != NULL,
              "a damaged fragment is 'corrupt or truncated data'");
        H5Dclose(d);
        H5Fclose(f);
    }
    free(buf);
    printf(g_failed ? "[FAIL] error codes\n" : "[PASS] error codes\n");
    return g_failed != 0;
}
