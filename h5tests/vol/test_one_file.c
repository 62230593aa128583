/* test_one_file.c — a one-file container (docs/format.md, "The one-file container") seen
 * by HDF5 itself, without the connector: the path is one regular file that begins with a
 * valid HDF5 file; the native library opens it, finds the root attribute `tessera` saying
 * what it is, and may even open it read-write and add a dataset — after which tessera
 * still reads every byte it wrote, and the native dataset survives tessera writing more.
 *
 * The connector makes one-file containers here because the test's environment sets
 * TESSERA_ONE_FILE=1 (the setting one_file).  Usage: test_one_file [directory]
 */
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_failed;

static void check(int ok, const char *what, const char *run)
{
    printf("  [%s] %s (%s)\n", ok ? "PASS" : "FAIL", what, run);
    if (!ok)
        g_failed++;
}

#define N 5000

static hid_t fapl_of(hid_t vol)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_vol(fapl, vol, NULL);
    return fapl;
}

static int write_ints(hid_t f, const char *name, int n, int seed)
{
    hsize_t dims[1] = {(hsize_t)n};
    int    *v       = malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++)
        v[i] = i * seed + 3;
    hid_t  s  = H5Screate_simple(1, dims, NULL);
    hid_t  d  = H5Dcreate2(f, name, H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = d < 0 ? -1 : H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    if (d >= 0)
        H5Dclose(d);
    H5Sclose(s);
    free(v);
    return rc >= 0;
}

static int reads_ints(hid_t f, const char *name, int n, int seed)
{
    int   *v  = calloc((size_t)n, sizeof(int));
    int    ok = 0;
    hid_t  d;
    H5E_BEGIN_TRY { d = H5Dopen2(f, name, H5P_DEFAULT); }
    H5E_END_TRY
    if (d >= 0 && H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0) {
        ok = 1;
        for (int i = 0; i < n; i++)
            ok &= v[i] == i * seed + 3;
    }
    if (d >= 0)
        H5Dclose(d);
    free(v);
    return ok;
}

/* The root attribute a native program finds: a string naming the connector. */
static int has_notice(hid_t f)
{
    char  text[1024] = {0};
    hid_t a;
    H5E_BEGIN_TRY { a = H5Aopen(f, "tessera", H5P_DEFAULT); }
    H5E_END_TRY
    if (a < 0)
        return 0;
    hid_t t  = H5Aget_type(a);
    int   ok = H5Tget_class(t) == H5T_STRING && H5Tget_size(t) < sizeof text &&
             H5Aread(a, t, text) >= 0 && strstr(text, "HDF5_VOL_CONNECTOR=tessera") != NULL &&
             strstr(text, "tessera export") != NULL;
    H5Tclose(t);
    H5Aclose(a);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    hid_t vol = H5VLregister_connector_by_name("tessera", H5P_DEFAULT);
    if (vol < 0) {
        printf("FAIL: cannot register the tessera connector (HDF5_PLUGIN_PATH?)\n");
        return 1;
    }
    const char *path = "test_one_file.h5";
    hid_t       tess = fapl_of(vol), native = fapl_of(H5VL_NATIVE);

    printf("tessera writes a container\n");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, tess);
    check(f >= 0 && write_ints(f, "d", N, 7), "create and write a dataset", "tessera");
    if (H5Fclose(f) < 0) { printf("  [FAIL] H5Fclose at line %d\n", __LINE__); g_failed++; }
    struct stat st;
    check(stat(path, &st) == 0 && S_ISREG(st.st_mode), "the container is one regular file", "file system");
    check(H5Fis_accessible(path, native) > 0, "native HDF5 recognises the file as HDF5", "native");

    printf("native HDF5 opens it without the connector\n");
    f = H5Fopen(path, H5F_ACC_RDONLY, native);
    H5G_info_t gi = {0};
    check(f >= 0 && has_notice(f), "the root attribute says what the file is and how to read it", "native");
    check(f >= 0 && H5Gget_info(f, &gi) >= 0 && gi.nlinks == 0, "the native root group is empty", "native");
    if (H5Fclose(f) < 0) { printf("  [FAIL] H5Fclose at line %d\n", __LINE__); g_failed++; }

    printf("native HDF5 opens it read-write and adds a dataset\n");
    f = H5Fopen(path, H5F_ACC_RDWR, native);
    check(f >= 0 && write_ints(f, "native", 3000, 11), "a native program writes a dataset", "native");
    if (H5Fclose(f) < 0) { printf("  [FAIL] H5Fclose at line %d\n", __LINE__); g_failed++; }

    f = H5Fopen(path, H5F_ACC_RDWR, tess);
    check(f >= 0 && reads_ints(f, "d", N, 7), "tessera's data is intact after the native write", "tessera");
    check(f >= 0 && write_ints(f, "d2", 2 * N, 5), "tessera writes more", "tessera");
    if (H5Fclose(f) < 0) { printf("  [FAIL] H5Fclose at line %d\n", __LINE__); g_failed++; }

    f = H5Fopen(path, H5F_ACC_RDONLY, native);
    check(f >= 0 && reads_ints(f, "native", 3000, 11), "the native dataset survives tessera's writes", "native");
    check(f >= 0 && has_notice(f), "the root attribute is still there", "native");
    if (H5Fclose(f) < 0) { printf("  [FAIL] H5Fclose at line %d\n", __LINE__); g_failed++; }

    f = H5Fopen(path, H5F_ACC_RDONLY, tess);
    check(f >= 0 && reads_ints(f, "d", N, 7) && reads_ints(f, "d2", 2 * N, 5), "tessera reads all it wrote",
          "tessera");
    hsize_t size = 0;
    check(f >= 0 && H5Fget_filesize(f, &size) >= 0 && stat(path, &st) == 0 && size == (hsize_t)st.st_size,
          "H5Fget_filesize is the file's size", "tessera");
    if (H5Fclose(f) < 0) { printf("  [FAIL] H5Fclose at line %d\n", __LINE__); g_failed++; }

    H5Pclose(tess);
    H5Pclose(native);
    H5VLclose(vol);
    printf("%s (%d failed)\n", g_failed ? "FAIL" : "PASS", g_failed);
    return g_failed ? 1 : 0;
}
