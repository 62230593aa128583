/* test_chunk_io.c — direct chunk I/O (H5Dwrite_chunk, H5Dread_chunk) and the chunk
 * queries (H5Dget_chunk_storage_size, H5Dget_num_chunks, H5Dget_chunk_info,
 * H5Dget_chunk_info_by_coord, H5Dchunk_iter), tessera compared with native HDF5
 * (vol_test_log.h).
 *
 * Compressed bytes are each library's own (tessera's deflate is libdeflate's, native's
 * zlib's), so where bytes would differ the log holds what they decode to — decoded by a
 * native in-memory dataset with the same filters, in both runs — and whether a chunk read
 * returns the very bytes that were written.  Chunk addresses are each library's own and
 * never logged; sizes are logged where both libraries produce the same bytes.
 *
 * Usage: test_chunk_io [directory for the files]
 */
#include "vol_test_log.h"

#define R 40
#define C 40
#define CR 10
#define CC 8

/* A native in-memory dataset of one chunk with the filters of `dcpl`: encodes cells
 * into chunk bytes and decodes chunk bytes into cells, as HDF5's pipeline does. */
typedef struct {
    hid_t f, d;
} aux_t;

static aux_t aux_open(hid_t dcpl_src, hid_t type)
{
    static int n;
    char       name[64];
    snprintf(name, sizeof name, "chunk-io-aux-%d", n++);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_core(fapl, 1 << 16, 0);
    H5Pset_vol(fapl, H5VL_NATIVE, NULL);
    aux_t a;
    a.f          = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t dims[2] = {CR, CC};
    hid_t   s       = H5Screate_simple(2, dims, NULL);
    hid_t   dcpl    = H5Pcopy(dcpl_src);
    H5Pset_chunk(dcpl, 2, dims);
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    H5Pset_chunk_cache(dapl, 0, 0, 1.0);
    a.d = H5Dcreate2(a.f, "c", type, s, H5P_DEFAULT, dcpl, dapl);
    H5Pclose(dapl);
    H5Pclose(dcpl);
    H5Sclose(s);
    H5Pclose(fapl);
    return a;
}

static void aux_close(aux_t a)
{
    H5Dclose(a.d);
    H5Fclose(a.f);
}

static size_t aux_encode(aux_t a, const int *cells, unsigned char *out, uint32_t *mask)
{
    hsize_t zero[2] = {0, 0}, n = 0;
    H5Dwrite(a.d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, cells);
    H5Dget_chunk_storage_size(a.d, zero, &n);
    H5Dread_chunk(a.d, H5P_DEFAULT, zero, mask, out);
    return (size_t)n;
}

static herr_t aux_decode(aux_t a, const void *bytes, size_t n, uint32_t mask, int *cells)
{
    hsize_t zero[2] = {0, 0};
    if (H5Dwrite_chunk(a.d, H5P_DEFAULT, mask, zero, n, bytes) < 0)
        return -1;
    return H5Dread(a.d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, cells);
}

static void log_values(hid_t d, const char *when)
{
    hid_t   s = H5Dget_space(d);
    hsize_t dims[2];
    H5Sget_simple_extent_dims(s, dims, NULL);
    H5Sclose(s);
    size_t n   = (size_t)(dims[0] * dims[1]);
    int   *buf = calloc(n ? n : 1, sizeof(int));
    herr_t rc  = H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    LOG("%s: read %s %llux%llu hash %016llx first %d last %d", when, RC(rc), (unsigned long long)dims[0],
        (unsigned long long)dims[1], fnv(buf, n * sizeof(int)), n ? buf[0] : 0, n ? buf[n - 1] : 0);
    free(buf);
}

/* A chunk read: mask, and — through `a` — what the bytes decode to; the size and the
 * bytes themselves only when `same_bytes` (both libraries produce identical bytes). */
static void log_chunk(hid_t d, aux_t a, hsize_t r, hsize_t c, int same_bytes, const char *when)
{
    hsize_t off[2] = {r, c}, n = 0;
    herr_t  rs     = H5Dget_chunk_storage_size(d, off, &n);
    LOG("%s chunk %llu,%llu: storage size %s %s", when, (unsigned long long)r, (unsigned long long)c, RC(rs),
        n == 0 ? "zero" : "nonzero");
    if (rs < 0 || n == 0) {
        unsigned char tiny[16];
        uint32_t      m = 0;
        LOG("%s chunk %llu,%llu: read of an unallocated chunk %s", when, (unsigned long long)r,
            (unsigned long long)c, RC(H5Dread_chunk(d, H5P_DEFAULT, off, &m, tiny)));
        return;
    }
    unsigned char *bytes = malloc((size_t)n);
    uint32_t       mask  = 0;
    herr_t         rc    = H5Dread_chunk(d, H5P_DEFAULT, off, &mask, bytes);
    int            cells[CR * CC];
    memset(cells, 0, sizeof cells);
    herr_t dc = rc >= 0 ? aux_decode(a, bytes, (size_t)n, mask, cells) : -1;
    LOG("%s chunk %llu,%llu: read %s mask %u decode %s hash %016llx", when, (unsigned long long)r,
        (unsigned long long)c, RC(rc), mask, RC(dc), fnv(cells, sizeof cells));
    if (same_bytes)
        LOG("%s chunk %llu,%llu: %llu bytes hash %016llx", when, (unsigned long long)r, (unsigned long long)c,
            (unsigned long long)n, fnv(bytes, (size_t)n));
    free(bytes);
}

typedef struct {
    int    n;
    int    sizes;
    hid_t  d;
    log_t *L;
} iter_t;

static int iter_cb(const hsize_t *offset, unsigned mask, haddr_t addr, hsize_t size, void *op_data)
{
    iter_t *it = op_data;
    hsize_t info_size = 0;
    haddr_t info_addr = HADDR_UNDEF;
    unsigned info_mask = 99;
    H5Dget_chunk_info_by_coord(it->d, offset, &info_mask, &info_addr, &info_size);
    LOG("  iter %d: offset %llu,%llu mask %u addr %s size %s%llu agrees-with-info %d", it->n,
        (unsigned long long)offset[0], (unsigned long long)offset[1], mask,
        addr == HADDR_UNDEF ? "undef" : "defined", it->sizes ? "" : "(not compared) ",
        it->sizes ? (unsigned long long)size : 0ULL,
        info_addr == addr && info_size == size && info_mask == mask);
    it->n++;
    return it->n >= 1000 ? 1 : 0;
}

static void log_index(hid_t d, int sizes, const char *when)
{
    hsize_t n = 0;
    herr_t  rc = H5Dget_num_chunks(d, H5S_ALL, &n);
    LOG("%s: num chunks %s %llu", when, RC(rc), (unsigned long long)n);
    for (hsize_t i = 0; i <= n && i < 64; i++) {
        hsize_t  off[2] = {99, 99}, size = 0;
        unsigned mask = 99;
        haddr_t  addr = 0;
        rc            = H5Dget_chunk_info(d, H5S_ALL, i, off, &mask, &addr, &size);
        if (i == n)
            LOG("  info %llu (past the end): %s addr %s size %llu", (unsigned long long)i, RC(rc),
                addr == HADDR_UNDEF ? "undef" : "defined", (unsigned long long)size);
        else
            LOG("  info %llu: %s offset %llu,%llu mask %u addr %s size %llu", (unsigned long long)i, RC(rc),
                (unsigned long long)off[0], (unsigned long long)off[1], mask,
                addr == HADDR_UNDEF ? "undef" : "defined", sizes ? (unsigned long long)size : 0ULL);
    }
    iter_t it = {0, sizes, d, g_log};
    rc        = H5Dchunk_iter(d, H5P_DEFAULT, iter_cb, &it);
    LOG("%s: chunk_iter %s visited %d", when, RC(rc), it.n);
}

static void fill_cells(int *cells, int seed)
{
    for (int i = 0; i < CR * CC; i++)
        cells[i] = seed * 1000 + i % 37;
}

/* Chunked R x C int32 dataset with dcpl filters `kind`: 0 none, 1 shuffle+deflate,
 * 2 fletcher32+deflate (a pipeline tessera applies through HDF5), 3 scale-offset. */
static void scenario(hid_t f, int kind, H5D_alloc_time_t at)
{
    char name[32];
    snprintf(name, sizeof name, "k%d_a%d", kind, (int)at);
    hsize_t dims[2] = {R - 5, C - 3}, maxd[2] = {H5S_UNLIMITED, C + 5}, ch[2] = {CR, CC};
    hid_t   s    = H5Screate_simple(2, dims, maxd);
    hid_t   dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, ch);
    if (kind == 1) {
        H5Pset_shuffle(dcpl);
        H5Pset_deflate(dcpl, 6);
    }
    else if (kind == 2) {
        H5Pset_fletcher32(dcpl);
        H5Pset_deflate(dcpl, 6);
    }
    else if (kind == 3)
        H5Pset_scaleoffset(dcpl, H5Z_SO_INT, H5Z_SO_INT_MINBITS_DEFAULT);
    if (at != H5D_ALLOC_TIME_DEFAULT)
        H5Pset_alloc_time(dcpl, at);
    int fv = -7;
    H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fv);
    hid_t d = H5Dcreate2(f, name, H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    LOG("== %s create %s", name, RC(d));
    aux_t a = aux_open(dcpl, H5T_STD_I32LE);
    /* Byte-identical chunks: no filters, or filters tessera runs through HDF5. */
    int same = kind != 1;
    log_index(d, same, "created");
    /* Before any read: native's chunk cache would otherwise hold a fill-valued chunk
     * the read created, and answer the storage size from it. */
    log_chunk(d, a, 30, 0, same, "never written");

    int           cells[CR * CC];
    unsigned char enc[CR * CC * 8 + 64];
    uint32_t      m = 0;
    /* Chunks encoded by HDF5 itself, written directly: first, inner and edge chunks. */
    hsize_t offs[4][2] = {{0, 0}, {10, 8}, {30, 32}, {20, 16}};
    for (int k = 0; k < 4; k++) {
        fill_cells(cells, k + 1);
        size_t n = aux_encode(a, cells, enc, &m);
        LOG("write_chunk %llu,%llu (%s bytes, mask %u): %s", (unsigned long long)offs[k][0],
            (unsigned long long)offs[k][1], n ? "some" : "no", m, RC(H5Dwrite_chunk(d, H5P_DEFAULT, m, offs[k], n, enc)));
        unsigned char back[CR * CC * 8 + 64];
        hsize_t       sz = 0;
        uint32_t      bm = 99;
        H5Dget_chunk_storage_size(d, offs[k], &sz);
        herr_t rc = sz <= sizeof back ? H5Dread_chunk(d, H5P_DEFAULT, offs[k], &bm, back) : -1;
        LOG("  read back: %s same size %d same bytes %d mask %u", RC(rc), sz == n, sz == n && !memcmp(back, enc, n), bm);
    }
    log_values(d, "after direct writes");
    log_index(d, same, "after direct writes");


    /* An ordinary write over parts of written and unwritten chunks. */
    {
        hid_t   fs = H5Dget_space(d);
        hsize_t st[2] = {5, 5}, cnt[2] = {12, 20};
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, st, NULL, cnt, NULL);
        hid_t ms = H5Screate_simple(2, cnt, NULL);
        int   buf[12 * 20];
        for (int i = 0; i < 12 * 20; i++)
            buf[i] = -i;
        LOG("H5Dwrite box: %s", RC(H5Dwrite(d, H5T_NATIVE_INT, ms, fs, H5P_DEFAULT, buf)));
        H5Sclose(ms);
        H5Sclose(fs);
    }
    log_values(d, "after H5Dwrite");
    log_chunk(d, a, 0, 0, same, "mixed");
    log_chunk(d, a, 10, 8, same, "mixed");
    log_chunk(d, a, 0, 16, same, "partly written");
    log_index(d, same, "after H5Dwrite");

    /* Bad offsets. */
    {
        hsize_t  mis[2] = {3, 0}, past[2] = {R + 10, 0};
        uint32_t bm;
        fill_cells(cells, 1);
        LOG("write_chunk misaligned: %s", RC(H5Dwrite_chunk(d, H5P_DEFAULT, 0, mis, sizeof cells, cells)));
        LOG("write_chunk past the extent: %s", RC(H5Dwrite_chunk(d, H5P_DEFAULT, 0, past, sizeof cells, cells)));
        LOG("read_chunk misaligned: %s", RC(H5Dread_chunk(d, H5P_DEFAULT, mis, &bm, enc)));
    }

    /* The edge chunk's cells beyond the extent appear when the extent grows. */
    hsize_t big[2] = {R + 10, C + 5};
    LOG("extend: %s", RC(H5Dset_extent(d, big)));
    log_values(d, "extended");
    log_index(d, same, "extended");
    hsize_t small[2] = {15, 12};
    LOG("shrink: %s", RC(H5Dset_extent(d, small)));
    log_values(d, "shrunk");
    log_index(d, same, "shrunk");
    log_chunk(d, a, 10, 8, same, "shrunk");
    aux_close(a);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(s);
}

/* Chunks written with filters skipped (HDF5's filter mask), read after a reopen: in the
 * writing session native 1.14 answers H5Dread_chunk from its chunk-info cache, which
 * does not carry the mask (it reports 0 and decodes the chunk with every filter). */
static void masked_write(hid_t f)
{
    hsize_t dims[2] = {20, 32}, ch[2] = {CR, CC};
    hid_t   s    = H5Screate_simple(2, dims, NULL);
    hid_t   dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, ch);
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, 6);
    hid_t d = H5Dcreate2(f, "masked", H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int   cells[CR * CC];
    fill_cells(cells, 9);
    hsize_t off[2] = {0, 24};
    LOG("write_chunk all filters skipped: %s", RC(H5Dwrite_chunk(d, H5P_DEFAULT, 0x3u, off, sizeof cells, cells)));
    hid_t dp = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_deflate(dp, 3);
    aux_t         z = aux_open(dp, H5T_STD_I32LE);
    unsigned char enc[CR * CC * 8 + 64];
    uint32_t      zm = 0;
    fill_cells(cells, 11);
    size_t n = aux_encode(z, cells, enc, &zm);
    hsize_t off2[2] = {10, 0};
    LOG("write_chunk shuffle skipped: %s", RC(H5Dwrite_chunk(d, H5P_DEFAULT, 0x1u, off2, n, enc)));
    aux_close(z);
    H5Pclose(dp);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(s);
}

static void masked_read(hid_t f)
{
    hid_t d = H5Dopen2(f, "masked", H5P_DEFAULT);
    log_values(d, "masked");
    hsize_t offs[3][2] = {{0, 24}, {10, 0}, {0, 0}};
    for (int k = 0; k < 3; k++) {
        unsigned char back[CR * CC * 8 + 64];
        hsize_t       sz = 0;
        uint32_t      bm = 99;
        herr_t        rs = H5Dget_chunk_storage_size(d, offs[k], &sz);
        herr_t        rc = rs >= 0 && sz <= sizeof back ? H5Dread_chunk(d, H5P_DEFAULT, offs[k], &bm, back) : -1;
        LOG("masked chunk %llu,%llu: size %s read %s mask %u", (unsigned long long)offs[k][0],
            (unsigned long long)offs[k][1], RC(rs), RC(rc), bm);
        if (k == 0)
            LOG("  raw bytes %llu hash %016llx", (unsigned long long)sz, fnv(back, (size_t)sz));
    }
    log_index(d, 0, "masked");
    H5Dclose(d);
}

static void run(const char *path, hid_t fapl, log_t *L)
{
    g_log   = L;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    for (int kind = 0; kind < 4; kind++)
        scenario(f, kind, H5D_ALLOC_TIME_DEFAULT);
    scenario(f, 0, H5D_ALLOC_TIME_EARLY);
    scenario(f, 1, H5D_ALLOC_TIME_LATE);
    masked_write(f);
    /* A contiguous dataset has no chunks. */
    {
        hsize_t n = 10;
        hid_t   s = H5Screate_simple(1, &n, NULL);
        hid_t   d = H5Dcreate2(f, "contig", H5T_STD_I32LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        hsize_t nc = 0, off = 0;
        int     v[10] = {0};
        LOG("contiguous: num chunks %s, write_chunk %s", RC(H5Dget_num_chunks(d, H5S_ALL, &nc)),
            RC(H5Dwrite_chunk(d, H5P_DEFAULT, 0, &off, sizeof v, v)));
        H5Dclose(d);
        H5Sclose(s);
    }
    H5Fclose(f);

    /* Reopened read-only: reads and queries as before, writes refused. */
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    const char *names[] = {"k0_a0", "k1_a0", "k2_a0", "k3_a0", "k0_a1", "k1_a2"};
    for (int i = 0; i < 6; i++) {
        hid_t d = H5Dopen2(f, names[i], H5P_DEFAULT);
        hid_t p = H5Dget_create_plist(d);
        aux_t a = aux_open(p, H5T_STD_I32LE);
        int   same = strncmp(names[i], "k1", 2) != 0;
        LOG("== reopened %s", names[i]);
        log_values(d, "reopened");
        log_index(d, same, "reopened");
        log_chunk(d, a, 0, 0, same, "reopened");
        aux_close(a);
        H5Pclose(p);
        H5Dclose(d);
    }
    masked_read(f);
    H5Fclose(f);
}

/* Tessera only: a direct chunk write to a read-only file is refused.  (Not compared with
 * native: HDF5 1.14.5 refuses it too but leaks the file while doing so — it stays open
 * after H5Fclose, and the library cannot close at exit.) */
static void read_only_write(hid_t tess, const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/test_chunk_io_tessera.h5", dir);
    hid_t   f = H5Fopen(path, H5F_ACC_RDONLY, tess);
    hid_t   d = H5Dopen2(f, "k0_a0", H5P_DEFAULT);
    int     cells[CR * CC] = {0};
    hsize_t off[2] = {0, 0};
    herr_t  rc;
    H5E_BEGIN_TRY { rc = H5Dwrite_chunk(d, H5P_DEFAULT, 0, off, sizeof cells, cells); }
    H5E_END_TRY;
    check(d >= 0 && rc < 0, "a direct chunk write to a read-only file is refused", "tessera");
    H5Dclose(d);
    H5Fclose(f);
}

int main(int argc, char **argv)
{
    return run_compared(argc > 1 ? argv[1] : ".", "test_chunk_io", run, 300, read_only_write);
}
