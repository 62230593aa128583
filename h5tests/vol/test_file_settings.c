/* test_file_settings.c — file-level settings that shape only HDF5's own format or caches
 * (vol/base/file_settings.h), tessera compared with native HDF5 (vol_test_log.h): page
 * buffering and its rules, the file space strategy and page size, metadata block size,
 * alignment, sieve buffer, small data block, userblock, libver bounds, the metadata cache
 * configuration (H5Fget/set_mdc_config), file locking flags across two opens, the core
 * driver without backing store (nothing left on disk) and the split driver (the metadata
 * member's name).  Every value is read back through the get_* calls, as set.
 *
 * Usage: test_file_settings [directory for the files]
 */
#include <sys/stat.h>
#include <unistd.h>

#include "vol_test_log.h"

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static void log_fapl(hid_t f, const char *when)
{
    hid_t        fapl = H5Fget_access_plist(f);
    size_t       pbs  = 0;
    unsigned     mm = 0, mr = 0;
    hsize_t      mbs = 0, thr = 0, al = 0, sdb = 0;
    size_t       sieve = 0;
    H5F_libver_t lo = H5F_LIBVER_ERROR, hi = H5F_LIBVER_ERROR;
    H5Pget_page_buffer_size(fapl, &pbs, &mm, &mr);
    H5Pget_meta_block_size(fapl, &mbs);
    H5Pget_alignment(fapl, &thr, &al);
    H5Pget_sieve_buf_size(fapl, &sieve);
    H5Pget_small_data_block_size(fapl, &sdb);
    H5Pget_libver_bounds(fapl, &lo, &hi);
    LOG("%s: page buffer %zu %u %u meta block %llu alignment %llu/%llu sieve %zu small data %llu", when, pbs, mm,
        mr, (unsigned long long)mbs, (unsigned long long)thr, (unsigned long long)al, sieve,
        (unsigned long long)sdb);
    H5Pclose(fapl);
    hid_t                 fcpl = H5Fget_create_plist(f);
    H5F_fspace_strategy_t st   = H5F_FSPACE_STRATEGY_NTYPES;
    hbool_t               persist = 0;
    hsize_t               threshold = 0, page = 0, ub = 0;
    H5Pget_file_space_strategy(fcpl, &st, &persist, &threshold);
    H5Pget_file_space_page_size(fcpl, &page);
    H5Pget_userblock(fcpl, &ub);
    LOG("%s: strategy %d persist %d threshold %llu page %llu userblock %llu", when, (int)st, (int)persist,
        (unsigned long long)threshold, (unsigned long long)page, (unsigned long long)ub);
    H5Pclose(fcpl);
}

static void run(const char *path, hid_t fapl_in, log_t *L)
{
    g_log      = L;
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    H5Pset_file_space_strategy(fcpl, H5F_FSPACE_STRATEGY_PAGE, 0, 1);
    H5Pset_file_space_page_size(fcpl, 8192);
    H5Pset_userblock(fcpl, 16384);
    hid_t fapl = H5Pcopy(fapl_in);
    H5Pset_page_buffer_size(fapl, 3 * 8192 + 100, 20, 30);
    H5Pset_meta_block_size(fapl, 4096);
    H5Pset_alignment(fapl, 1000, 4096);
    H5Pset_sieve_buf_size(fapl, 128 * 1024);
    H5Pset_small_data_block_size(fapl, 4096);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
    LOG("create with paged strategy and page buffer: %s", RC(f));
    log_fapl(f, "created");

    /* The metadata cache configuration, as set. */
    H5AC_cache_config_t c;
    memset(&c, 0, sizeof c);
    c.version = H5AC__CURR_CACHE_CONFIG_VERSION;
    LOG("get mdc config: %s", RC(H5Fget_mdc_config(f, &c)));
    c.set_initial_size = 1;
    c.initial_size     = 3 * 1024 * 1024;
    c.max_size         = 8 * 1024 * 1024;
    LOG("set mdc config: %s", RC(H5Fset_mdc_config(f, &c)));
    H5AC_cache_config_t back;
    memset(&back, 0, sizeof back);
    back.version = H5AC__CURR_CACHE_CONFIG_VERSION;
    H5Fget_mdc_config(f, &back);
    LOG("mdc config back: initial %zu max %zu min %zu", back.initial_size, back.max_size, back.min_size);
    c.min_clean_fraction = 7.0; /* invalid: HDF5 refuses it */
    LOG("set invalid mdc config: %s", RC(H5Fset_mdc_config(f, &c)));
    LOG("reset mdc hit rate: %s", RC(H5Freset_mdc_hit_rate_stats(f)));
    double hr = -1;
    LOG("get mdc hit rate: %s", RC(H5Fget_mdc_hit_rate(f, &hr)));
    size_t   mx = 0, mc = 0, cur = 0;
    int      n  = 0;
    LOG("get mdc size: %s", RC(H5Fget_mdc_size(f, &mx, &mc, &cur, &n)));
    unsigned acc[2], hits[2], miss[2], ev[2], byp[2];
    LOG("page buffering stats: %s", RC(H5Fget_page_buffering_stats(f, acc, hits, miss, ev, byp)));

    /* A second open of the open file: locking flags must match. */
    hid_t nolock = H5Pcopy(fapl_in);
    H5Pset_file_locking(nolock, 0, 0);
    hid_t f2 = H5Fopen(path, H5F_ACC_RDONLY, nolock);
    LOG("second open without locking: %s", RC(f2));
    if (f2 >= 0)
        H5Fclose(f2);
    f2 = H5Fopen(path, H5F_ACC_RDONLY, fapl_in);
    LOG("second open with the same locking: %s", RC(f2));
    if (f2 >= 0)
        H5Fclose(f2);
    H5Pclose(nolock);
    H5Fclose(f);

    /* Reopened with page buffers smaller and larger than a page. */
    size_t sizes[] = {8192 - 100, 2 * 8192 - 1, 0};
    for (int i = 0; i < 3; i++) {
        hid_t a = H5Pcopy(fapl_in);
        H5Pset_page_buffer_size(a, sizes[i], 0, 0);
        f = H5Fopen(path, H5F_ACC_RDONLY, a);
        char when[64];
        snprintf(when, sizeof when, "reopened pbs %zu", sizes[i]);
        LOG("%s: %s", when, RC(f));
        if (f >= 0) {
            log_fapl(f, when);
            H5Fclose(f);
        }
        H5Pclose(a);
    }

    /* A userblock that is not a whole number of pages (of the alignment): refused. */
    char ubad[4200];
    snprintf(ubad, sizeof ubad, "%s.ub", path);
    hid_t ucpl = H5Pcreate(H5P_FILE_CREATE);
    H5Pset_userblock(ucpl, 1024);
    hid_t ual = H5Pcopy(fapl_in);
    H5Pset_alignment(ual, 0, 4096);
    hid_t u = H5Fcreate(ubad, H5F_ACC_TRUNC, ucpl, ual);
    LOG("userblock 1024 with alignment 4096: %s", RC(u));
    if (u >= 0)
        H5Fclose(u);
    H5Pset_userblock(ucpl, 8192);
    u = H5Fcreate(ubad, H5F_ACC_TRUNC, ucpl, ual);
    LOG("userblock 8192 with alignment 4096: %s", RC(u));
    if (u >= 0)
        H5Fclose(u);
    H5Pclose(ual);
    H5Pclose(ucpl);

    /* Page buffering without the paged strategy: refused at create, ignored at open. */
    char other[4200];
    snprintf(other, sizeof other, "%s.nopage", path);
    hid_t pb = H5Pcopy(fapl_in);
    H5Pset_page_buffer_size(pb, 16384, 0, 0);
    hid_t g = H5Fcreate(other, H5F_ACC_TRUNC, H5P_DEFAULT, pb);
    LOG("create with page buffer, no paged strategy: %s", RC(g));
    if (g >= 0)
        H5Fclose(g);
    g = H5Fcreate(other, H5F_ACC_TRUNC, H5P_DEFAULT, fapl_in);
    H5Fclose(g);
    g = H5Fopen(other, H5F_ACC_RDONLY, pb);
    LOG("open non-paged file with page buffer: %s", RC(g));
    if (g >= 0) {
        log_fapl(g, "non-paged");
        H5Fclose(g);
    }
    H5Pclose(pb);

    /* The core driver without backing store leaves nothing; the split driver names the
     * metadata member. */
    char core[4200], split[4200], meta[4300];
    snprintf(core, sizeof core, "%s.core", path);
    hid_t cf = H5Pcopy(fapl_in);
    H5Pset_fapl_core(cf, 1 << 16, 0);
    g = H5Fcreate(core, H5F_ACC_TRUNC, H5P_DEFAULT, cf);
    LOG("core create: %s driver is core %d", RC(g), H5Pget_driver(cf) == H5FD_CORE);
    hsize_t one = 4;
    hid_t   s   = H5Screate_simple(1, &one, NULL);
    hid_t   d   = H5Dcreate2(g, "d", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int     v[4] = {1, 2, 3, 4}, w[4] = {0};
    H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, w);
    LOG("core read back: %d %d %d %d", w[0], w[1], w[2], w[3]);
    H5Dclose(d);
    H5Sclose(s);
    H5Fclose(g);
    LOG("core file exists after close: %d", exists(core));
    H5Pclose(cf);
    snprintf(split, sizeof split, "%s.split", path);
    hid_t sp = H5Pcopy(fapl_in);
    H5Pset_fapl_split(sp, "-m.h5", H5P_DEFAULT, "-r.h5", H5P_DEFAULT);
    g = H5Fcreate(split, H5F_ACC_TRUNC, H5P_DEFAULT, sp);
    H5Fclose(g);
    snprintf(meta, sizeof meta, "%s-m.h5", split);
    LOG("split create: %s metadata member exists %d", RC(g), exists(meta));
    g = H5Fopen(split, H5F_ACC_RDONLY, sp);
    LOG("split reopen: %s", RC(g));
    if (g >= 0)
        H5Fclose(g);
    H5Pclose(sp);
    H5Pclose(fapl);
    H5Pclose(fcpl);
}

int main(int argc, char **argv)
{
    return run_compared(argc > 1 ? argv[1] : ".", "test_file_settings", run, 30, NULL);
}
