/* test_dcpl_reuse.c — one dcpl ID an application changes between dataset creations, and
 * what each dataset then reports and reads back, tessera vs native HDF5 (vol_test_log.h).
 *
 * The connector reads what a dcpl says (layout, chunk dims, allocation and fill time,
 * fill value state, filters, external files, time tracking, attribute creation order)
 * once per distinct encoding of the dcpl and reuses it for every dataset created with
 * the same encoding (vol/base/plist_cache.h; issue 20).  Each step here changes one of those
 * between two creations with the same ID, so a stale or wrongly keyed answer shows as
 * a difference from native: in H5Dget_create_plist, in the object's times, in the order
 * attributes iterate in, or in the values never-written elements read as.  A vlen
 * string fill value (set, reused, reset) checks that the cache never decodes a dcpl
 * holding the application's pointers.
 *
 * Usage: test_dcpl_reuse [directory for the files]
 */
#include "vol_test_log.h"

static herr_t on_attr(hid_t loc, const char *name, const H5A_info_t *info, void *op)
{
    (void)loc;
    (void)info;
    char *order = op;
    strncat(order, name, 8);
    strncat(order, " ", 2);
    return 0;
}

static void log_dataset(hid_t f, const char *name)
{
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) {
        LOG("%s: open fail", name);
        return;
    }
    hid_t            p      = H5Dget_create_plist(d);
    H5D_layout_t     layout = H5Pget_layout(p);
    hsize_t          ch[2]  = {0, 0};
    int              cr     = layout == H5D_CHUNKED ? H5Pget_chunk(p, 2, ch) : 0;
    H5D_alloc_time_t at     = H5D_ALLOC_TIME_ERROR;
    H5D_fill_time_t  ft     = H5D_FILL_TIME_ERROR;
    H5D_fill_value_t fv     = H5D_FILL_VALUE_ERROR;
    hbool_t          track  = 0;
    unsigned         order  = 0;
    H5Pget_alloc_time(p, &at);
    H5Pget_fill_time(p, &ft);
    H5Pfill_value_defined(p, &fv);
    H5Pget_obj_track_times(p, &track);
    H5Pget_attr_creation_order(p, &order);
    /* (Not the dcpl's time tracking: native reports it set whatever the dataset was
     * created with, tessera as created.  The object's times are compared below.) */
    (void)track;
    LOG("%s: layout %d chunk rank %d dims %llu,%llu alloc %d fill time %d fill %d filters %d external %d "
        "attr order %u",
        name, (int)layout, cr, (unsigned long long)ch[0], (unsigned long long)ch[1], (int)at, (int)ft, (int)fv,
        H5Pget_nfilters(p), H5Pget_external_count(p), order);
    H5O_info2_t oi;
    if (H5Oget_info3(d, &oi, H5O_INFO_TIME) >= 0)
        LOG("%s: times %s", name, oi.ctime ? "set" : "zero");
    /* Attributes b, a, c were created in that order: iterated by creation order where
     * it is tracked (native's order otherwise depends on its object header). */
    char    seen[64] = "";
    hsize_t idx      = 0;
    H5_index_t by    = (order & H5P_CRT_ORDER_TRACKED) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
    herr_t  rc       = H5Aiterate2(d, by, H5_ITER_INC, &idx, on_attr, seen);
    LOG("%s: attributes by %s %s: %s", name, by == H5_INDEX_NAME ? "name" : "creation order", RC(rc),
        rc >= 0 ? seen : "-");
    hid_t t = H5Dget_type(d);
    if (H5Tis_variable_str(t) > 0) {
        char *s[4] = {0};
        hid_t mt   = H5Tcopy(t);
        rc         = H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, s);
        LOG("%s: read %s: '%s' '%s' '%s' '%s'", name, RC(rc), s[0] ? s[0] : "(null)", s[1] ? s[1] : "(null)",
            s[2] ? s[2] : "(null)", s[3] ? s[3] : "(null)");
        hid_t sp = H5Dget_space(d);
        if (rc >= 0)
            H5Treclaim(mt, sp, H5P_DEFAULT, s);
        H5Sclose(sp);
        H5Tclose(mt);
    }
    else {
        int v[16];
        memset(v, 0x55, sizeof v);
        rc = H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
        LOG("%s: read %s: %d %d %d %d ... %d hash %llx", name, RC(rc), v[0], v[1], v[2], v[3], v[15],
            fnv(v, sizeof v));
    }
    H5Tclose(t);
    H5Pclose(p);
    H5Dclose(d);
}

/* A 4 x 4 int dataset with row 1 written and attributes b, a, c. */
static void make(hid_t f, const char *name, hid_t dcpl)
{
    hsize_t dims[2] = {4, 4};
    hid_t   s       = H5Screate_simple(2, dims, NULL);
    hid_t   d       = H5Dcreate2(f, name, H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    LOG("create %s %s", name, RC(d));
    if (d >= 0) {
        hsize_t start[2] = {1, 0}, count[2] = {1, 4};
        hid_t   fs       = H5Dget_space(d);
        hid_t   ms       = H5Screate_simple(2, count, NULL);
        int     row[4]   = {11, 12, 13, 14};
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
        LOG("write %s %s", name, RC(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, row)));
        H5Sclose(ms);
        H5Sclose(fs);
        hid_t sc = H5Screate(H5S_SCALAR);
        for (const char *a = "bac"; *a; a++) {
            char an[2] = {*a, 0};
            hid_t at   = H5Acreate2(d, an, H5T_STD_I32LE, sc, H5P_DEFAULT, H5P_DEFAULT);
            H5Aclose(at);
        }
        H5Sclose(sc);
        H5Dclose(d);
    }
    H5Sclose(s);
}

/* A 4-element vlen string dataset with element 1 written. */
static void make_vstr(hid_t f, const char *name, hid_t dcpl, hid_t str)
{
    hsize_t n = 4;
    hid_t   s = H5Screate_simple(1, &n, NULL);
    hid_t   d = H5Dcreate2(f, name, str, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    LOG("create %s %s", name, RC(d));
    if (d >= 0) {
        hsize_t     start = 1, count = 1;
        const char *v     = "written";
        hid_t       fs    = H5Dget_space(d);
        hid_t       ms    = H5Screate_simple(1, &count, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL);
        LOG("write %s %s", name, RC(H5Dwrite(d, str, ms, fs, H5P_DEFAULT, &v)));
        H5Sclose(ms);
        H5Sclose(fs);
        H5Dclose(d);
    }
    H5Sclose(s);
}

static const char *const names[] = {"d_default", "d_chunk2", "d_chunk4x1", "d_compact", "d_contig",
                                    "d_fill7",   "d_fill_never", "d_fill_undef", "d_fill_cleared", "d_untracked",
                                    "d_ordered", "d_deflate", "d_plain_again", "v_fill", "v_fill_again",
                                    "v_cleared"};

static void run(const char *path, hid_t fapl, log_t *L)
{
    (void)L;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    LOG("file create %s", RC(f));
    if (f < 0)
        return;
    hid_t   dcpl    = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t c2[2]   = {2, 2}, c41[2] = {4, 1};
    int     seven   = 7;
    make(f, "d_default", dcpl);
    H5Pset_chunk(dcpl, 2, c2);
    make(f, "d_chunk2", dcpl);
    H5Pset_chunk(dcpl, 2, c41);  /* the same ID, other chunk dims */
    make(f, "d_chunk4x1", dcpl);
    H5Pset_layout(dcpl, H5D_COMPACT);
    make(f, "d_compact", dcpl);
    H5Pset_layout(dcpl, H5D_CONTIGUOUS);
    H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_LATE);
    make(f, "d_contig", dcpl);
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &seven);
    make(f, "d_fill7", dcpl);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    make(f, "d_fill_never", dcpl);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_IFSET);
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT, NULL); /* undefined */
    make(f, "d_fill_undef", dcpl);
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &seven);
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT, NULL);
    H5Pclose(dcpl);
    dcpl = H5Pcreate(H5P_DATASET_CREATE); /* a fresh list: the default's encoding again */
    make(f, "d_fill_cleared", dcpl);
    H5Pset_obj_track_times(dcpl, 0);
    make(f, "d_untracked", dcpl);
    H5Pset_obj_track_times(dcpl, 1);
    H5Pset_attr_creation_order(dcpl, H5P_CRT_ORDER_TRACKED);
    make(f, "d_ordered", dcpl);
    H5Pset_attr_creation_order(dcpl, 0);
    H5Pset_chunk(dcpl, 2, c2);
    H5Pset_deflate(dcpl, 4);
    make(f, "d_deflate", dcpl);
    H5Pclose(dcpl);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    make(f, "d_plain_again", dcpl);

    /* A vlen string fill value: the dcpl holds the application's pointer. */
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, H5T_VARIABLE);
    const char *fill = "fill";
    H5Pset_fill_value(dcpl, str, &fill);
    make_vstr(f, "v_fill", dcpl, str);
    make_vstr(f, "v_fill_again", dcpl, str);
    H5Pset_fill_value(dcpl, str, NULL);
    make_vstr(f, "v_cleared", dcpl, str);
    H5Pclose(dcpl);
    H5Tclose(str);

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        log_dataset(f, names[i]);
    LOG("close %s", RC(H5Fclose(f)));
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    LOG("reopen %s", RC(f));
    if (f >= 0) {
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            log_dataset(f, names[i]);
        H5Fclose(f);
    }
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    return run_compared(dir, "test_dcpl_reuse", run, 80, NULL);
}
