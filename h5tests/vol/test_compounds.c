/* test_compounds.c — compound types with variable-length members (vlen strings, vlen
 * sequences of numbers and of compounds), fixed strings, arrays of compounds and nested
 * compounds, in datasets and attributes, tessera compared with native HDF5
 * (vol_test_log.h).  What an experienced HDF5 user does with them:
 *
 *   - the full memory struct written and read back, whole and through hyperslab and
 *     point selections (memory selections scattered in a larger buffer too);
 *   - a memory type that is a member subset of the stored compound, with its members
 *     reordered, at other offsets and of other numeric types (int -> double, BE <-> LE,
 *     vlen of int read as vlen of double), read and written (the members the memory
 *     type lacks keep their stored values, as HDF5's background buffer keeps them);
 *   - elements rewritten (the old vlen data replaced), H5Dvlen_get_buf_size, H5Treclaim,
 *     H5Dget_type compared with H5Tequal, reopen in a new file handle;
 *   - fill values of variable-length types (vlen string, vlen sequence, compound with
 *     vlen members): never-written elements and elements exposed by H5Dset_extent read
 *     as native reads them, through the stored type and through converted ones.
 *
 * Every value read is LOGged through a generic walk of the memory type (log_value), so
 * the comparison covers every byte native returns.  Run under ASan by
 * scripts/test --sanitize (leaks, double frees of converted vlen data).
 *
 * Usage: test_compounds [directory for the files]
 */
#include "compound_model.h"

/* ---- scenarios ---------------------------------------------------------------------- */

static void datasets(hid_t f, hid_t ft, hid_t mt, hid_t at, hid_t st)
{
    hsize_t n = N;
    hid_t   s = H5Screate_simple(1, &n, NULL);
    hid_t   d = H5Dcreate2(f, "recs", ft, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("create %s", RC(d));
    hid_t dt = H5Dget_type(d);
    log_type("dataset type", dt, ft);
    H5Tclose(dt);
    rec_t w[N];
    fill_recs(w, 0);
    LOG("write all %s", RC(H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, w)));
    read_log("all", d, 0, mt, H5S_ALL, H5S_ALL, N);
    read_log("alt", d, 0, at, H5S_ALL, H5S_ALL, N);
    read_log("sub", d, 0, st, H5S_ALL, H5S_ALL, N);

    /* Member subset (reordered, converted) written to points: the rest keep theirs. */
    alt_t   aw[2];
    double  dv[2][3] = {{1.5, -2.25, 3e100}, {0, 0, 0}};
    int     sq[2][2] = {{-7, 32767}, {1, 2}};
    char   *nm0[2]   = {"alt-a", NULL};
    memset(aw, 0, sizeof aw);
    for (int i = 0; i < 2; i++) {
        aw[i].num         = 2.5f + (float)i;
        aw[i].names[0]    = nm0[i];
        aw[i].names[1]    = "second";
        aw[i].nest.seq.len = (size_t)(2 - i);
        aw[i].nest.seq.p  = sq[i];
        aw[i].nest.tag    = i ? "tag-alt" : NULL;
        aw[i].nest.id     = 12345.75 * (i + 1); /* truncated to int */
        aw[i].vi.len      = (size_t)(3 * (1 - i));
        aw[i].vi.p        = aw[i].vi.len ? dv[i] : NULL;
        aw[i].vs          = i ? NULL : "alt vs";
    }
    hsize_t pts[2] = {4, 0}, two = 2;
    hid_t   fs     = H5Scopy(s);
    H5Sselect_elements(fs, H5S_SELECT_SET, 2, pts);
    hid_t ms2 = H5Screate_simple(1, &two, NULL);
    LOG("write alt points %s", RC(H5Dwrite(d, at, ms2, fs, H5P_DEFAULT, aw)));
    read_log("after alt", d, 0, mt, H5S_ALL, H5S_ALL, N);

    /* Rewrite elements 1..2 with new data (old vlen data replaced), full type. */
    rec_t w2[N];
    fill_recs(w2, 1);
    hsize_t start = 1, cnt = 2;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &cnt, NULL);
    LOG("rewrite slab %s", RC(H5Dwrite(d, mt, ms2, fs, H5P_DEFAULT, w2 + 3)));
    read_log("after rewrite", d, 0, mt, H5S_ALL, H5S_ALL, N);

    /* Subset write of sub_t (vlen of compound with vlen inside) through a memory
     * selection scattered in a larger buffer. */
    sub_t   sw[5];
    kv_t    kvs[2] = {{-1, "minus one"}, {-2, NULL}};
    memset(sw, 0, sizeof sw);
    sw[1].vc.len = 2;
    sw[1].vc.p   = kvs;
    sw[1].vs     = "sub-1";
    sw[3].vs     = "sub-3";
    hsize_t five = 5, mstart = 1, mstride = 2, mcount = 2;
    hid_t   ms5  = H5Screate_simple(1, &five, NULL);
    H5Sselect_hyperslab(ms5, H5S_SELECT_SET, &mstart, &mstride, &mcount, NULL);
    hsize_t fstart = 2, fstride = 3;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &fstart, &fstride, &mcount, NULL);
    LOG("write sub scattered %s", RC(H5Dwrite(d, st, ms5, fs, H5P_DEFAULT, sw)));
    read_log("after sub", d, 0, mt, H5S_ALL, H5S_ALL, N);

    /* Reads through selections: hyperslab into a scattered memory selection (the other
     * memory elements keep the caller's values: zero here), points out of order. */
    {
        alt_t ar[5];
        memset(ar, 0, sizeof ar);
        herr_t rc = H5Dread(d, at, ms5, fs, H5P_DEFAULT, ar);
        LOG("read alt scattered %s", RC(rc));
        log_elems("alt scattered", at, ar, 5);
        H5Treclaim(at, ms5, H5P_DEFAULT, ar);
    }
    hsize_t pts3[3] = {5, 1, 3}, three = 3;
    H5Sselect_elements(fs, H5S_SELECT_SET, 3, pts3);
    hid_t ms3 = H5Screate_simple(1, &three, NULL);
    read_log("points", d, 0, mt, ms3, fs, 3);
    read_log("points sub", d, 0, st, ms3, fs, 3);

    /* H5Dvlen_get_buf_size counts the vlen data as the memory type holds it. */
    hsize_t size = 0;
    { /* the call before the LOG: argument evaluation order is unspecified */
        herr_t brc = H5Dvlen_get_buf_size(d, mt, s, &size);
        LOG("buf_size mt %s %llu", RC(brc), (unsigned long long)size);
    }
    size = 0;
    { /* the call before the LOG: argument evaluation order is unspecified */
        herr_t brc = H5Dvlen_get_buf_size(d, at, s, &size);
        LOG("buf_size alt %s %llu", RC(brc), (unsigned long long)size);
    }
    size = 0;
    { /* the call before the LOG: argument evaluation order is unspecified */
        herr_t brc = H5Dvlen_get_buf_size(d, st, fs, &size);
        LOG("buf_size sub points %s %llu", RC(brc), (unsigned long long)size);
    }

    /* Attributes of the same types: full write, reads through every memory type, a
     * subset write. */
    hid_t a = H5Acreate2(d, "recs", ft, s, H5P_DEFAULT, H5P_DEFAULT);
    LOG("attr create %s", RC(a));
    hid_t atype = H5Aget_type(a);
    log_type("attr type", atype, ft);
    H5Tclose(atype);
    LOG("attr write %s", RC(H5Awrite(a, mt, w)));
    read_log("attr", a, 1, mt, 0, 0, N);
    read_log("attr alt", a, 1, at, 0, 0, N);
    read_log("attr sub", a, 1, st, 0, 0, N);
    {
        alt_t all[N];
        memset(all, 0, sizeof all);
        for (int i = 0; i < N; i++)
            all[i] = aw[i % 2];
        LOG("attr write alt %s", RC(H5Awrite(a, at, all)));
        read_log("attr after alt", a, 1, mt, 0, 0, N);
        LOG("attr rewrite %s", RC(H5Awrite(a, mt, w2)));
        read_log("attr after rewrite", a, 1, mt, 0, 0, N);
    }
    H5Aclose(a);
    /* A scalar attribute of a vlen of the compound. */
    {
        hid_t vt = H5Tvlen_create(ft), vm = H5Tvlen_create(mt), sc = H5Screate(H5S_SCALAR);
        hid_t a2 = H5Acreate2(d, "vlen of recs", vt, sc, H5P_DEFAULT, H5P_DEFAULT);
        hvl_t v  = {3, w2};
        LOG("vlen attr write %s", RC(H5Awrite(a2, vm, &v)));
        read_log("vlen attr", a2, 1, vm, 0, 0, 1);
        H5Aclose(a2);
        H5Sclose(sc);
        H5Tclose(vt);
        H5Tclose(vm);
    }
    H5Sclose(ms3);
    H5Sclose(ms5);
    H5Sclose(ms2);
    H5Sclose(fs);
    H5Dclose(d);
    H5Sclose(s);
}

/* Fill values of variable-length types. */
static void fills(hid_t f, hid_t ft, hid_t mt, hid_t at, hid_t st)
{
    hsize_t n = 4, maxd = H5S_UNLIMITED, chunk = 3;
    hid_t   s  = H5Screate_simple(1, &n, &maxd);
    hid_t   vs = vstr();
    /* vlen string, chunked + extendible, fill "bar" */
    {
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, &chunk);
        char *fv = "bar";
        LOG("set fill vstr %s", RC(H5Pset_fill_value(dcpl, vs, &fv)));
        hid_t d = H5Dcreate2(f, "fill_vstr", vs, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create fill_vstr %s", RC(d));
        read_log("vstr unwritten", d, 0, vs, H5S_ALL, H5S_ALL, 4);
        hsize_t one = 1, at1 = 2;
        hid_t   fs = H5Dget_space(d), m1 = H5Screate_simple(1, &one, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at1, NULL, &one, NULL);
        char *val = "written";
        LOG("write one %s", RC(H5Dwrite(d, vs, m1, fs, H5P_DEFAULT, &val)));
        H5Sclose(fs);
        read_log("vstr one written", d, 0, vs, H5S_ALL, H5S_ALL, 4);
        hsize_t n7 = 7;
        LOG("extend %s", RC(H5Dset_extent(d, &n7)));
        read_log("vstr extended", d, 0, vs, H5S_ALL, H5S_ALL, 7);
        /* A fixed-length string memory type: converted from the fill too. */
        hid_t fx = H5Tcopy(H5T_C_S1);
        H5Tset_size(fx, 6);
        read_log("vstr as fixed", d, 0, fx, H5S_ALL, H5S_ALL, 7);
        H5Tclose(fx);
        hsize_t size = 0;
        hid_t   sp   = H5Dget_space(d);
        { /* the call before the LOG: argument evaluation order is unspecified */
            herr_t brc = H5Dvlen_get_buf_size(d, vs, sp, &size);
            LOG("buf_size vstr %s %llu", RC(brc), (unsigned long long)size);
        }
        H5Sclose(sp);
        H5Sclose(m1);
        H5Dclose(d);
        H5Pclose(dcpl);
    }
    /* vlen string, contiguous, default fill: NULL */
    {
        hsize_t n3 = 3;
        hid_t   s3 = H5Screate_simple(1, &n3, NULL);
        hid_t   d  = H5Dcreate2(f, "nofill_vstr", vs, s3, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        read_log("vstr default fill", d, 0, vs, H5S_ALL, H5S_ALL, 3);
        H5Dclose(d);
        /* the empty string as fill */
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        char *fv   = "";
        H5Pset_fill_value(dcpl, vs, &fv);
        d = H5Dcreate2(f, "emptyfill_vstr", vs, s3, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        read_log("vstr empty fill", d, 0, vs, H5S_ALL, H5S_ALL, 3);
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(s3);
    }
    /* vlen sequence of int (stored short BE), fill {7,8,9}, read as int and as double */
    {
        hid_t vf = H5Tvlen_create(H5T_STD_I16BE), vm = H5Tvlen_create(H5T_NATIVE_INT),
              vdbl = H5Tvlen_create(H5T_NATIVE_DOUBLE);
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, &chunk);
        int   fvals[3] = {7, 8, 9};
        hvl_t fv       = {3, fvals};
        LOG("set fill vseq %s", RC(H5Pset_fill_value(dcpl, vm, &fv)));
        hid_t d = H5Dcreate2(f, "fill_vseq", vf, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create fill_vseq %s", RC(d));
        read_log("vseq unwritten", d, 0, vm, H5S_ALL, H5S_ALL, 4);
        int     wv[2] = {-1, -2};
        hvl_t   w     = {2, wv};
        hsize_t one = 1, at0 = 0;
        hid_t   fs = H5Dget_space(d), m1 = H5Screate_simple(1, &one, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at0, NULL, &one, NULL);
        LOG("write one %s", RC(H5Dwrite(d, vm, m1, fs, H5P_DEFAULT, &w)));
        H5Sclose(fs);
        hsize_t n5 = 5;
        LOG("extend %s", RC(H5Dset_extent(d, &n5)));
        read_log("vseq extended", d, 0, vm, H5S_ALL, H5S_ALL, 5);
        read_log("vseq as double", d, 0, vdbl, H5S_ALL, H5S_ALL, 5);
        hid_t p = H5Dget_create_plist(d);
        hvl_t got = {0, NULL};
        LOG("plist fill %s", RC(H5Pget_fill_value(p, vm, &got)));
        log_elems("plist fill", vm, &got, 1);
        hid_t sc = H5Screate(H5S_SCALAR);
        H5Treclaim(vm, sc, H5P_DEFAULT, &got);
        H5Sclose(sc);
        H5Pclose(p);
        H5Sclose(m1);
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Tclose(vf);
        H5Tclose(vm);
        H5Tclose(vdbl);
    }
    /* compound with vlen members, fill = a whole record; partial writes, subset types */
    {
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, &chunk);
        rec_t fr[N];
        fill_recs(fr, 3);
        LOG("set fill rec %s", RC(H5Pset_fill_value(dcpl, mt, &fr[2])));
        hid_t d = H5Dcreate2(f, "fill_rec", ft, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create fill_rec %s", RC(d));
        read_log("rec unwritten", d, 0, mt, H5S_ALL, H5S_ALL, 4);
        read_log("rec unwritten alt", d, 0, at, H5S_ALL, H5S_ALL, 4);
        /* A member subset written to an unwritten element: the others are the fill's. */
        sub_t   sw = {{0, NULL}, "only vs"};
        hsize_t one = 1, at1 = 1;
        hid_t   fs = H5Dget_space(d), m1 = H5Screate_simple(1, &one, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at1, NULL, &one, NULL);
        LOG("write sub into unwritten %s", RC(H5Dwrite(d, st, m1, fs, H5P_DEFAULT, &sw)));
        rec_t w[N];
        fill_recs(w, 0);
        hsize_t at3 = 3;
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at3, NULL, &one, NULL);
        LOG("write full one %s", RC(H5Dwrite(d, mt, m1, fs, H5P_DEFAULT, &w[5])));
        H5Sclose(fs);
        hsize_t n6 = 6;
        LOG("extend %s", RC(H5Dset_extent(d, &n6)));
        read_log("rec extended", d, 0, mt, H5S_ALL, H5S_ALL, 6);
        read_log("rec extended sub", d, 0, st, H5S_ALL, H5S_ALL, 6);
        hsize_t size = 0;
        hid_t   sp   = H5Dget_space(d);
        { /* the call before the LOG: argument evaluation order is unspecified */
            herr_t brc = H5Dvlen_get_buf_size(d, mt, sp, &size);
            LOG("buf_size rec %s %llu", RC(brc), (unsigned long long)size);
        }
        H5Sclose(sp);
        H5Sclose(m1);
        H5Dclose(d);
        H5Pclose(dcpl);
    }
    /* fill time never is refused for vlen types; alloc time early with a vlen fill */
    {
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        char *fv   = "early";
        H5Pset_fill_value(dcpl, vs, &fv);
        H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
        hsize_t n3 = 3;
        hid_t   s3 = H5Screate_simple(1, &n3, NULL);
        hid_t   d  = H5Dcreate2(f, "early_vstr", vs, s3, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create early %s", RC(d));
        read_log("vstr early", d, 0, vs, H5S_ALL, H5S_ALL, 3);
        H5Dclose(d);
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
        d = H5Dcreate2(f, "never_vstr", vs, s3, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        LOG("create fill time never %s", RC(d));
        if (d >= 0)
            H5Dclose(d);
        H5Sclose(s3);
        H5Pclose(dcpl);
    }
    H5Tclose(vs);
    H5Sclose(s);
}

/* After reopening: everything again from a new handle. */
static void reopened(hid_t f, hid_t mt, hid_t at, hid_t st)
{
    hid_t d = H5Dopen2(f, "recs", H5P_DEFAULT);
    LOG("reopen %s", RC(d));
    read_log("reopen", d, 0, mt, H5S_ALL, H5S_ALL, N);
    read_log("reopen alt", d, 0, at, H5S_ALL, H5S_ALL, N);
    hid_t a = H5Aopen(d, "recs", H5P_DEFAULT);
    read_log("reopen attr", a, 1, mt, 0, 0, N);
    H5Aclose(a);
    H5Dclose(d);
    hid_t vs = vstr();
    d        = H5Dopen2(f, "fill_vstr", H5P_DEFAULT);
    read_log("reopen vstr", d, 0, vs, H5S_ALL, H5S_ALL, 7);
    hsize_t n2 = 2, n9 = 9;
    LOG("shrink %s", RC(H5Dset_extent(d, &n2))); /* cuts off "written" at [2] */
    LOG("extend again %s", RC(H5Dset_extent(d, &n9)));
    read_log("reopen vstr extended", d, 0, vs, H5S_ALL, H5S_ALL, 9);
    H5Dclose(d);
    d = H5Dopen2(f, "fill_rec", H5P_DEFAULT);
    read_log("reopen rec", d, 0, mt, H5S_ALL, H5S_ALL, 6);
    read_log("reopen rec sub", d, 0, st, H5S_ALL, H5S_ALL, 6);
    H5Dclose(d);
    H5Tclose(vs);
}

/* A counting vlen allocator (H5Pset_vlen_mem_manager): reads allocate through it, as
 * natively, one block per string / non-empty sequence. */
typedef struct {
    size_t calls, bytes;
} counter_t;

static void *count_alloc(size_t size, void *info)
{
    counter_t *c = info;
    c->calls++;
    c->bytes += size;
    return malloc(size);
}

static void count_free(void *p, void *info)
{
    counter_t *c = info;
    c->calls += 1000000; /* frees counted apart */
    free(p);
}

static void allocators(hid_t f, hid_t mt, hid_t at)
{
    hid_t     d = H5Dopen2(f, "recs", H5P_DEFAULT);
    counter_t c = {0, 0};
    hid_t     dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_vlen_mem_manager(dxpl, count_alloc, &c, count_free, &c);
    hid_t types[2] = {mt, at};
    for (int k = 0; k < 2; k++) {
        unsigned char *buf = calloc(N, H5Tget_size(types[k]));
        c.calls = c.bytes = 0;
        herr_t rc = H5Dread(d, types[k], H5S_ALL, H5S_ALL, dxpl, buf);
        LOG("allocator read %d %s: %zu allocations, %zu bytes", k, RC(rc), c.calls, c.bytes);
        hsize_t n = N;
        hid_t   s = H5Screate_simple(1, &n, NULL);
        c.calls   = 0;
        herr_t frc = H5Treclaim(types[k], s, dxpl, buf); /* before LOG: evaluation order */
        LOG("allocator reclaim %s: %zu frees", RC(frc), c.calls / 1000000);
        H5Sclose(s);
        free(buf);
    }
    H5Pclose(dxpl);
    H5Dclose(d);
}

/* Ragged data: a vlen of vlen of int, 2-D, with a deflate filter, hyperslab writes. */
static void ragged(hid_t f)
{
    hid_t   in = H5Tvlen_create(H5T_NATIVE_INT), out = H5Tvlen_create(in);
    hid_t   fin = H5Tvlen_create(H5T_STD_I64BE), fout = H5Tvlen_create(fin);
    hsize_t dims[2] = {3, 4}, chunk[2] = {2, 2};
    hid_t   s    = H5Screate_simple(2, dims, NULL);
    hid_t   dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    H5Pset_deflate(dcpl, 6);
    hid_t d = H5Dcreate2(f, "ragged", fout, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    LOG("ragged create %s", RC(d));
    int   vals[6] = {1, -2, 3, -4, 5, 2147483647};
    hvl_t inner[4] = {{0, NULL}, {1, vals}, {2, vals + 1}, {3, vals + 3}};
    hvl_t w[6];
    for (int i = 0; i < 6; i++) {
        w[i].len = (size_t)(i % 4);
        w[i].p   = w[i].len ? inner + (i % 2) : NULL;
    }
    hsize_t start[2] = {1, 1}, cnt[2] = {2, 3};
    hid_t   fs = H5Scopy(s), ms = H5Screate_simple(2, cnt, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, cnt, NULL);
    LOG("ragged write %s", RC(H5Dwrite(d, out, ms, fs, H5P_DEFAULT, w)));
    read_log("ragged", d, 0, out, H5S_ALL, H5S_ALL, 12);
    read_log("ragged slab", d, 0, out, ms, fs, 6);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(s);
    H5Tclose(fout);
    H5Tclose(fin);
    H5Tclose(out);
    H5Tclose(in);
}

/* A memory type with members the file type lacks (ignored on write, the caller's values
 * kept on read), a scalar dataset, and a never-written attribute and dataset read through
 * member subsets. */
typedef struct {
    int   extra;
    char *vs;
    hvl_t more; /* of int: not in the file type */
    double num;
} super_t;

static void supersets(hid_t f, hid_t ft, hid_t at, hid_t st)
{
    hid_t s  = vstr();
    hid_t vi = H5Tvlen_create(H5T_NATIVE_INT);
    hid_t t  = H5Tcreate(H5T_COMPOUND, sizeof(super_t));
    H5Tinsert(t, "extra", HOFFSET(super_t, extra), H5T_NATIVE_INT);
    H5Tinsert(t, "vs", HOFFSET(super_t, vs), s);
    H5Tinsert(t, "more", HOFFSET(super_t, more), vi);
    H5Tinsert(t, "num", HOFFSET(super_t, num), H5T_NATIVE_DOUBLE);
    hid_t sc = H5Screate(H5S_SCALAR);
    hid_t d  = H5Dcreate2(f, "scalar_rec", ft, sc, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    LOG("scalar create %s", RC(d));
    read_log("scalar unwritten sub", d, 0, st, H5S_ALL, H5S_ALL, 1);
    read_log("scalar unwritten alt", d, 0, at, H5S_ALL, H5S_ALL, 1);
    int     more[2] = {5, 6};
    super_t w       = {77, "super vs", {2, more}, 6.25};
    LOG("scalar write superset %s", RC(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &w)));
    super_t r;
    memset(&r, 0, sizeof r);
    r.extra = -9;
    herr_t rc = H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &r);
    LOG("scalar read superset %s", RC(rc));
    log_elems("scalar superset", t, &r, 1);
    if (rc >= 0)
        H5Treclaim(t, sc, H5P_DEFAULT, &r);
    read_log("scalar alt", d, 0, at, H5S_ALL, H5S_ALL, 1);
    hid_t a = H5Acreate2(d, "unwritten", ft, sc, H5P_DEFAULT, H5P_DEFAULT);
    read_log("attr unwritten sub", a, 1, st, 0, 0, 1);
    read_log("attr unwritten alt", a, 1, at, 0, 0, 1);
    LOG("attr write superset %s", RC(H5Awrite(a, t, &w)));
    read_log("attr superset", a, 1, t, 0, 0, 1);
    read_log("attr superset alt", a, 1, at, 0, 0, 1);
    H5Aclose(a);
    H5Dclose(d);
    H5Sclose(sc);
    H5Tclose(t);
    H5Tclose(vi);
    H5Tclose(s);
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    g_log   = L;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    LOG("file create %s", RC(f));
    hid_t ft = rec_type(1), mt = rec_type(0), at = alt_type(), st = sub_type();
    LOG("types: file %zu mem %zu alt %zu sub %zu", H5Tget_size(ft), H5Tget_size(mt), H5Tget_size(at),
        H5Tget_size(st));
    datasets(f, ft, mt, at, st);
    fills(f, ft, mt, at, st);
    allocators(f, mt, at);
    ragged(f);
    supersets(f, ft, at, st);
    H5Fclose(f);
    f = H5Fopen(path, H5F_ACC_RDWR, fapl);
    LOG("file reopen %s", RC(f));
    reopened(f, mt, at, st);
    H5Fclose(f);
    H5Tclose(ft);
    H5Tclose(mt);
    H5Tclose(at);
    H5Tclose(st);
}

int main(int argc, char **argv)
{
    return run_compared(argc > 1 ? argv[1] : ".", "test_compounds", run, 200, NULL);
}
