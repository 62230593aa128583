/* test_vds.c — virtual datasets (H5Pset_virtual) on tessera compared with native HDF5
 * (vol_test_log.h): limited, strided and same-file mappings; an unlimited mapping
 * following a growing source under both views; printf-style source names with a gap;
 * the mappings reported back (H5Pget_virtual_*); reads with fill values; writes through
 * the virtual dataset and writes to unmapped elements; H5Dset_extent; storage queries;
 * source files that do not exist (issue 45): HDF5's h5ex_vds-eiger (printf names, an
 * unlimited mapping, no source at all: natively the extent is 0 x 10 x 10 from creation
 * on and H5Dread of H5S_ALL leaves the buffer untouched — read here into a sentinel —
 * while a selection of the created 5 x 10 x 10 reads the fill value) and missing sources
 * behind fixed and unlimited mappings (fill value, extent kept).
 * Each file is opened afresh per view (native shares one open dataset between opens of
 * one file, whatever the second open's dapl says).
 *
 * Usage: test_vds [directory for the files]
 */
#include "vol_test_log.h"

static char g_dir[4096];
static char g_tag[16];

/* <dir>/<tag>_<name>: each run's own source files. */
static const char *src_path(const char *name)
{
    static char p[8][4200];
    static int  k;
    k = (k + 1) % 8;
    snprintf(p[k], sizeof p[k], "%s/%s_%s", g_dir, g_tag, name);
    return p[k];
}

static void make_source(hid_t fapl, const char *file, const char *dset, hsize_t n, hsize_t maxn, int base)
{
    hid_t f = H5Fcreate(file, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t s = H5Screate_simple(1, &n, &maxn);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (maxn != n) {
        hsize_t ch = 4;
        H5Pset_chunk(dcpl, 1, &ch);
    }
    hid_t d = H5Dcreate2(f, dset, H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int  *v = malloc(n * sizeof(int));
    for (hsize_t i = 0; i < n; i++)
        v[i] = base + (int)i;
    H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    free(v);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(s);
    H5Fclose(f);
}

static void log_read(hid_t d, const char *what)
{
    hid_t   s = H5Dget_space(d);
    hsize_t dims[2] = {0, 0};
    int     r = H5Sget_simple_extent_dims(s, dims, NULL);
    size_t  n = (size_t)dims[0] * (r > 1 ? (size_t)dims[1] : 1);
    int    *v = calloc(n ? n : 1, sizeof(int));
    herr_t  rc = H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    LOG("%s: dims %llu x %llu read %s hash %016llx first %d last %d", what, (unsigned long long)dims[0],
        (unsigned long long)(r > 1 ? dims[1] : 1), RC(rc), fnv(v, n * sizeof(int)), n ? v[0] : 0,
        n ? v[n - 1] : 0);
    free(v);
    H5Sclose(s);
}

/* Reads everything (H5S_ALL) into a buffer 16 elements longer than the extent, filled
 * with a sentinel first: what a read leaves untouched shows in the hash (h5ex_vds-eiger
 * prints its buffer whatever the read did to it). */
static void log_read_sentinel(hid_t d, const char *what)
{
    hid_t   s = H5Dget_space(d);
    hsize_t dims[3] = {0, 0, 0};
    int     r = H5Sget_simple_extent_dims(s, dims, NULL);
    size_t  n = 1;
    for (int i = 0; i < r; i++)
        n *= (size_t)dims[i];
    int *v = malloc((n + 16) * sizeof(int));
    memset(v, 0x55, (n + 16) * sizeof(int));
    herr_t rc = H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    LOG("%s: rank %d dims %llu x %llu x %llu read %s hash %016llx first %d last %d", what, r,
        (unsigned long long)dims[0], (unsigned long long)dims[1], (unsigned long long)dims[2], RC(rc),
        fnv(v, (n + 16) * sizeof(int)), v[0], n ? v[n - 1] : 0);
    free(v);
    H5Sclose(s);
}

static void log_mappings(hid_t d)
{
    hid_t  dcpl = H5Dget_create_plist(d);
    size_t n    = 0;
    H5Pget_virtual_count(dcpl, &n);
    LOG("layout %d mappings %zu", (int)H5Pget_layout(dcpl), n);
    for (size_t i = 0; i < n; i++) {
        char  fn[512] = "", dn[256] = "";
        hid_t vs = H5Pget_virtual_vspace(dcpl, i), ss = H5Pget_virtual_srcspace(dcpl, i);
        H5Pget_virtual_filename(dcpl, i, fn, sizeof fn);
        H5Pget_virtual_dsetname(dcpl, i, dn, sizeof dn);
        const char *base = strrchr(fn, '_') ? strrchr(fn, '_') + 1 : fn;
        hsize_t     st[2] = {0}, sd[2] = {0}, ct[2] = {0}, bk[2] = {0};
        int         reg = H5Sis_regular_hyperslab(vs) > 0;
        if (reg)
            H5Sget_regular_hyperslab(vs, st, sd, ct, bk);
        LOG("  %zu: file *%s dset %s vsel type %d regular %d start %llu,%llu stride %llu,%llu count %llu,%llu "
            "block %llu,%llu src type %d",
            i, base, dn, (int)H5Sget_select_type(vs), reg, (unsigned long long)st[0], (unsigned long long)st[1],
            (unsigned long long)sd[0], (unsigned long long)sd[1], (unsigned long long)ct[0],
            (unsigned long long)ct[1], (unsigned long long)bk[0], (unsigned long long)bk[1],
            (int)H5Sget_select_type(ss));
        H5Sclose(vs);
        H5Sclose(ss);
    }
    H5Pclose(dcpl);
}

static hid_t open_view(const char *path, hid_t fapl, const char *name, H5D_vds_view_t view, hsize_t gap,
                       hid_t *file)
{
    *file      = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    H5Pset_virtual_view(dapl, view);
    H5Pset_virtual_printf_gap(dapl, gap);
    hid_t d = H5Dopen2(*file, name, dapl);
    H5Pclose(dapl);
    return d;
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    g_log = L;
    snprintf(g_tag, sizeof g_tag, "%s", strstr(path, "_native") ? "n" : "t");
    const char *dot = strrchr(path, '/');
    snprintf(g_dir, sizeof g_dir, "%.*s", dot ? (int)(dot - path) : 1, dot ? path : ".");

    /* Sources: s0 and s2 (s1 never written), a growing one, printf blocks p0 p1 p2 p4. */
    make_source(fapl, src_path("s0.h5"), "/data", 6, 6, 0);
    make_source(fapl, src_path("s2.h5"), "/data", 6, 6, 200);
    make_source(fapl, src_path("grow.h5"), "/g", 5, H5S_UNLIMITED, 1000);
    char pn[64];
    for (int k = 0; k < 5; k++) {
        if (k == 3)
            continue;
        snprintf(pn, sizeof pn, "p%d.h5", k);
        make_source(fapl, src_path(pn), "/data", 4, 4, 100 * k);
    }

    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    int   fill = -7;
    /* 1. Three rows from three files (one missing), the middle row also from a same-file
     *    dataset through a strided selection. */
    {
        hsize_t n = 12, six = 6;
        hid_t   s = H5Screate_simple(1, &n, NULL);
        hid_t   own = H5Dcreate2(f, "own", H5T_STD_I32LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        int     v[12];
        for (int i = 0; i < 12; i++)
            v[i] = 500 + i;
        H5Dwrite(own, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
        H5Dclose(own);
        H5Sclose(s);

        hsize_t vd[2] = {4, 6};
        hid_t   vspace = H5Screate_simple(2, vd, NULL);
        hid_t   dcpl   = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
        hid_t src = H5Screate_simple(1, &six, NULL);
        for (int row = 0; row < 3; row++) {
            hsize_t start[2] = {(hsize_t)row, 0}, count[2] = {1, 6};
            H5Sselect_hyperslab(vspace, H5S_SELECT_SET, start, NULL, count, NULL);
            snprintf(pn, sizeof pn, "s%d.h5", row);
            LOG("set_virtual row %d: %s", row, RC(H5Pset_virtual(dcpl, vspace, src_path(pn), "/data", src)));
        }
        /* Row 3: every other element of "own" (same file). */
        hsize_t start[2] = {3, 0}, count[2] = {1, 6};
        H5Sselect_hyperslab(vspace, H5S_SELECT_SET, start, NULL, count, NULL);
        hid_t   os = H5Screate_simple(1, &n, NULL);
        hsize_t ost = 1, osd = 2, oct = 6;
        H5Sselect_hyperslab(os, H5S_SELECT_SET, &ost, &osd, &oct, NULL);
        LOG("set_virtual own: %s", RC(H5Pset_virtual(dcpl, vspace, ".", "own", os)));
        H5Sselect_all(vspace);
        hid_t d = H5Dcreate2(f, "vds", H5T_STD_I32LE, vspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create vds: %s", RC(d));
        log_read(d, "vds");
        /* Partial reads: a hyperslab, and points. */
        hid_t   fs = H5Dget_space(d);
        hsize_t hs[2] = {1, 1}, hc[2] = {3, 4};
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, hs, NULL, hc, NULL);
        hid_t ms = H5Screate_simple(2, hc, NULL);
        int   part[12] = {0};
        LOG("hyperslab read %s hash %016llx", RC(H5Dread(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, part)),
            fnv(part, sizeof part));
        hsize_t pts[4][2] = {{3, 5}, {0, 0}, {1, 2}, {2, 5}};
        H5Sselect_elements(fs, H5S_SELECT_SET, 4, &pts[0][0]);
        hsize_t four = 4;
        hid_t   ms4 = H5Screate_simple(1, &four, NULL);
        int     pv[4] = {0};
        LOG("point read %s %d %d %d %d", RC(H5Dread(d, H5T_NATIVE_INT, ms4, fs, H5P_DEFAULT, pv)), pv[0], pv[1], pv[2],
            pv[3]);
        /* Writes go to the sources; unmapped elements (row 1 has a missing source file,
         * which native cannot open for writing) are refused. */
        int w[6] = {-1, -2, -3, -4, -5, -6};
        hsize_t ws[2] = {3, 0}, wc[2] = {1, 6};
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, ws, NULL, wc, NULL);
        hid_t ms6 = H5Screate_simple(2, wc, NULL);
        LOG("write row 3: %s", RC(H5Dwrite(d, H5T_NATIVE_INT, ms6, fs, H5P_DEFAULT, w)));
        hid_t own2 = H5Dopen2(f, "own", H5P_DEFAULT);
        int   back[12] = {0};
        H5Dread(own2, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back);
        LOG("own after: %d %d %d %d", back[0], back[1], back[3], back[11]);
        H5Dclose(own2);
        log_read(d, "vds after write");
        H5D_space_status_t st = H5D_SPACE_STATUS_ERROR;
        H5Dget_space_status(d, &st);
        LOG("space status %d storage %llu", (int)st, (unsigned long long)H5Dget_storage_size(d));
        hsize_t bigger[2] = {5, 6};
        LOG("set_extent 5x6: %s", RC(H5Dset_extent(d, bigger)));
        log_read(d, "vds extended");
        hsize_t smaller[2] = {3, 6};
        LOG("set_extent 3x6 (cuts a mapping): %s", RC(H5Dset_extent(d, smaller)));
        H5Sclose(ms);
        H5Sclose(ms4);
        H5Sclose(ms6);
        H5Sclose(fs);
        H5Sclose(os);
        H5Dclose(d);
        H5Sclose(src);
        H5Pclose(dcpl);
        H5Sclose(vspace);
    }
    /* 2. Unlimited: the growing source along dimension 0, twice, with a stride. */
    {
        hsize_t vd[2] = {5, 2}, vmax[2] = {H5S_UNLIMITED, 2}, sd = 5, smax = H5S_UNLIMITED;
        hid_t   vspace = H5Screate_simple(2, vd, vmax);
        hid_t   src    = H5Screate_simple(1, &sd, &smax);
        hid_t   dcpl   = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
        hsize_t start[2] = {0, 0}, count[2] = {H5S_UNLIMITED, 1}, one = 1, zero = 0, unl = H5S_UNLIMITED;
        H5Sselect_hyperslab(vspace, H5S_SELECT_SET, start, NULL, count, NULL);
        H5Sselect_hyperslab(src, H5S_SELECT_SET, &zero, NULL, &unl, &one);
        LOG("set_virtual unlimited: %s", RC(H5Pset_virtual(dcpl, vspace, src_path("grow.h5"), "/g", src)));
        hsize_t start2[2] = {0, 1}, stride2[2] = {3, 1}, count2[2] = {H5S_UNLIMITED, 1}, block2[2] = {2, 1};
        H5Sselect_hyperslab(vspace, H5S_SELECT_SET, start2, stride2, count2, block2);
        hsize_t sst = 1, ssd = 2, sct = H5S_UNLIMITED;
        H5Sselect_hyperslab(src, H5S_SELECT_SET, &sst, &ssd, &sct, NULL);
        LOG("set_virtual strided unlimited: %s", RC(H5Pset_virtual(dcpl, vspace, src_path("grow.h5"), "/g", src)));
        hid_t d = H5Dcreate2(f, "unlim", H5T_STD_I32LE, vspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create unlim: %s", RC(d));
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(src);
        H5Sclose(vspace);
    }
    /* 3. printf: blocks of 4 rows from p%b.h5. */
    {
        hsize_t vd[2] = {0, 1}, vmax[2] = {H5S_UNLIMITED, 1}, sd = 4;
        hid_t   vspace = H5Screate_simple(2, vd, vmax);
        hid_t   src    = H5Screate_simple(1, &sd, NULL);
        hid_t   dcpl   = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
        hsize_t start[2] = {0, 0}, stride[2] = {4, 1}, count[2] = {H5S_UNLIMITED, 1}, block[2] = {4, 1};
        H5Sselect_hyperslab(vspace, H5S_SELECT_SET, start, stride, count, block);
        LOG("set_virtual printf: %s", RC(H5Pset_virtual(dcpl, vspace, src_path("p%b.h5"), "/data", src)));
        hid_t d = H5Dcreate2(f, "printf", H5T_STD_I32LE, vspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create printf: %s", RC(d));
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(src);
        H5Sclose(vspace);
    }
    /* 4. h5ex_vds-eiger (HDF5's example): printf source names, an unlimited mapping, and
     *    no source file at all. */
    {
        hsize_t vd[3] = {5, 10, 10}, vmax[3] = {H5S_UNLIMITED, 10, 10}, sd[3] = {5, 10, 10};
        hid_t   vspace = H5Screate_simple(3, vd, vmax);
        hid_t   src    = H5Screate_simple(3, sd, NULL);
        hid_t   dcpl   = H5Pcreate(H5P_DATASET_CREATE);
        hsize_t start[3] = {0, 0, 0}, stride[3] = {5, 1, 1}, count[3] = {H5S_UNLIMITED, 1, 1},
                block[3] = {5, 10, 10};
        H5Sselect_hyperslab(vspace, H5S_SELECT_SET, start, stride, count, block);
        LOG("set_virtual eiger: %s", RC(H5Pset_virtual(dcpl, vspace, src_path("e-%b.h5"), "/A", src)));
        hid_t d = H5Dcreate2(f, "eiger", H5T_STD_I32LE, vspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create eiger: %s", RC(d));
        log_read_sentinel(d, "eiger as created");
        H5Dclose(d);
        H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
        d = H5Dcreate2(f, "eiger_fill", H5T_STD_I32LE, vspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        log_read_sentinel(d, "eiger with a fill value as created");
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(src);
        H5Sclose(vspace);
    }
    /* 5. Source files that do not exist behind a fixed and an unlimited (not printf)
     *    mapping, and elements no mapping covers: all read as the fill value. */
    {
        hsize_t vd[2] = {4, 3}, vmax[2] = {H5S_UNLIMITED, 3}, sd = 4, smax = H5S_UNLIMITED;
        hid_t   vspace = H5Screate_simple(2, vd, vmax);
        hid_t   dcpl   = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill);
        hid_t   fixed = H5Screate_simple(1, &sd, NULL), growing = H5Screate_simple(1, &sd, &smax);
        hsize_t start[2] = {0, 0}, count[2] = {4, 1};
        H5Sselect_hyperslab(vspace, H5S_SELECT_SET, start, NULL, count, NULL);
        LOG("set_virtual missing fixed: %s",
            RC(H5Pset_virtual(dcpl, vspace, src_path("missing_fixed.h5"), "/data", fixed)));
        hsize_t ustart[2] = {0, 1}, ucount[2] = {H5S_UNLIMITED, 1}, zero = 0, unl = H5S_UNLIMITED;
        H5Sselect_hyperslab(vspace, H5S_SELECT_SET, ustart, NULL, ucount, NULL);
        H5Sselect_hyperslab(growing, H5S_SELECT_SET, &zero, NULL, &unl, NULL);
        LOG("set_virtual missing unlimited: %s",
            RC(H5Pset_virtual(dcpl, vspace, src_path("missing_unlim.h5"), "/g", growing)));
        H5Sselect_all(vspace);
        hid_t d = H5Dcreate2(f, "missing", H5T_STD_I32LE, vspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create missing: %s", RC(d));
        log_read_sentinel(d, "missing as created");
        H5Dclose(d);
        H5Sclose(fixed);
        H5Sclose(growing);
        H5Pclose(dcpl);
        H5Sclose(vspace);
    }
    H5Fclose(f);

    /* Reopened: mappings, and every view. */
    hid_t rf = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    const char *names[] = {"vds", "unlim", "printf", "eiger", "eiger_fill", "missing"};
    for (int i = 0; i < 6; i++) {
        hid_t d = H5Dopen2(rf, names[i], H5P_DEFAULT);
        LOG("== %s", names[i]);
        log_mappings(d);
        H5Dclose(d);
    }
    H5Fclose(rf);
    for (int phase = 0; phase < 2; phase++) {
        if (phase == 1) { /* the source grows to 11 */
            hid_t   g  = H5Fopen(src_path("grow.h5"), H5F_ACC_RDWR, fapl);
            hid_t   gd = H5Dopen2(g, "/g", H5P_DEFAULT);
            hsize_t n = 11, st = 5, ct = 6;
            H5Dset_extent(gd, &n);
            hid_t fs = H5Dget_space(gd);
            H5Sselect_hyperslab(fs, H5S_SELECT_SET, &st, NULL, &ct, NULL);
            hid_t ms = H5Screate_simple(1, &ct, NULL);
            int   v[6] = {5005, 5006, 5007, 5008, 5009, 5010};
            LOG("grow source: %s", RC(H5Dwrite(gd, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, v)));
            H5Sclose(ms);
            H5Sclose(fs);
            H5Dclose(gd);
            H5Fclose(g);
        }
        for (int view = 0; view < 2; view++)
            for (hsize_t gap = 0; gap < 2; gap++)
                for (int i = 1; i < 3; i++) {
                    hid_t file;
                    hid_t d = open_view(path, fapl, names[i], view ? H5D_VDS_FIRST_MISSING : H5D_VDS_LAST_AVAILABLE,
                                        gap, &file);
                    char what[96];
                    snprintf(what, sizeof what, "phase %d %s view %d gap %llu", phase, names[i], view,
                             (unsigned long long)gap);
                    log_read(d, what);
                    H5Dclose(d);
                    H5Fclose(file);
                }
        for (int view = 0; view < 2; view++)
            for (hsize_t gap = 0; gap < 2; gap++)
                for (int i = 3; i < 6; i++) {
                    hid_t file;
                    hid_t d = open_view(path, fapl, names[i], view ? H5D_VDS_FIRST_MISSING : H5D_VDS_LAST_AVAILABLE,
                                        gap, &file);
                    char what[96];
                    snprintf(what, sizeof what, "phase %d %s view %d gap %llu", phase, names[i], view,
                             (unsigned long long)gap);
                    log_read_sentinel(d, what);
                    H5Dclose(d);
                    H5Fclose(file);
                }
    }
    /* The eiger dataset read through the extent it was created with (5 x 10 x 10): past
     * the extent it has after reopening, so refused. */
    {
        hid_t   file;
        hid_t   d = open_view(path, fapl, "eiger_fill", H5D_VDS_LAST_AVAILABLE, 0, &file);
        hsize_t dims[3] = {5, 10, 10};
        hid_t   ms = H5Screate_simple(3, dims, NULL), fs = H5Screate_simple(3, dims, NULL);
        int    *v  = malloc(500 * sizeof(int));
        memset(v, 0x55, 500 * sizeof(int));
        herr_t rc = H5Dread(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, v);
        LOG("eiger_fill read as 5x10x10: %s first %d", RC(rc), v[0]);
        free(v);
        H5Sclose(ms);
        H5Sclose(fs);
        H5Dclose(d);
        H5Fclose(file);
    }
}

/* Tessera only: a source in a native HDF5 file is refused, not read as fill values. */
static void native_source(hid_t tess, const char *dir)
{
    char src[4200], vds[4200];
    snprintf(src, sizeof src, "%s/vds_native_src.h5", dir);
    snprintf(vds, sizeof vds, "%s/vds_native_vds.h5", dir);
    hid_t nf = H5Fcreate(src, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT); /* native (no env) */
    hsize_t n = 4;
    hid_t   s = H5Screate_simple(1, &n, NULL);
    H5Dclose(H5Dcreate2(nf, "data", H5T_STD_I32LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Fclose(nf);
    hid_t f    = H5Fcreate(vds, H5F_ACC_TRUNC, H5P_DEFAULT, tess);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_virtual(dcpl, s, src, "data", s);
    hid_t d = H5Dcreate2(f, "v", H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int   v[4];
    herr_t rc;
    H5E_BEGIN_TRY { rc = H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v); }
    H5E_END_TRY;
    check(rc < 0, "a virtual dataset source in a native HDF5 file is refused", "tessera");
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(s);
    H5Fclose(f);
}

int main(int argc, char **argv)
{
    return run_compared(argc > 1 ? argv[1] : ".", "test_vds", run, 48, native_source);
}
