/* An HDF5 application that knows nothing of tessera (issue 45): it writes a file with
 * the C and HL APIs, reopens it and prints what it reads.  run_consumer.sh runs it
 * natively and with HDF5_VOL_CONNECTOR=tessera; every line but the first (the
 * connector of the file) must be the same.  Usage: consumer FILE */
#include <hdf5.h>
#include <hdf5_hl.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                        \
  do {                                                                  \
    if ((x) < 0) {                                                      \
      fprintf(stderr, "consumer: %s failed (line %d)\n", #x, __LINE__); \
      exit(1);                                                          \
    }                                                                   \
  } while (0)

static herr_t print_link(hid_t g, const char *name, const H5L_info2_t *info, void *op) {
  (void)g; (void)op;
  printf("link %s type %d\n", name, (int)info->type);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer FILE\n");
    return 2;
  }
  const char *path = argv[1];
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  CHECK(f);
  char conn[64] = "";
  CHECK(H5VLget_connector_name(f, conn, sizeof conn));
  printf("connector %s\n", conn);

  /* A chunked, deflated 2-D dataset written only in part: the rest reads as fill. */
  hsize_t dims[2] = {12, 10}, chunk[2] = {5, 4};
  hid_t space = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  int fill = -7;
  CHECK(H5Pset_chunk(dcpl, 2, chunk));
  CHECK(H5Pset_deflate(dcpl, 4));
  CHECK(H5Pset_fill_value(dcpl, H5T_NATIVE_INT, &fill));
  hid_t g = H5Gcreate2(f, "grid", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  CHECK(g);
  hid_t d = H5Dcreate2(g, "values", H5T_STD_I32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  CHECK(d);
  hsize_t start[2] = {2, 3}, stride[2] = {3, 2}, count[2] = {3, 3}, block[2] = {2, 1};
  int wbuf[18];
  for (int i = 0; i < 18; i++) wbuf[i] = 100 + i;
  hid_t mspace = H5Screate_simple(1, (hsize_t[]){18}, NULL);
  CHECK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, stride, count, block));
  CHECK(H5Dwrite(d, H5T_NATIVE_INT, mspace, space, H5P_DEFAULT, wbuf));
  CHECK(H5LTset_attribute_string(g, "values", "units", "kelvin"));
  double scale[3] = {0.5, 1.5, 2.5};
  CHECK(H5LTset_attribute_double(g, "values", "scale", scale, 3));
  CHECK(H5LTmake_dataset_int(f, "axis", 1, (hsize_t[]){10}, (int[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  CHECK(H5Sclose(mspace));
  CHECK(H5Dclose(d));
  CHECK(H5Gclose(g));
  CHECK(H5Pclose(dcpl));
  CHECK(H5Sclose(space));
  CHECK(H5Fclose(f));

  f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  CHECK(f);
  CHECK(H5Literate2(f, H5_INDEX_NAME, H5_ITER_INC, NULL, print_link, NULL));
  int rbuf[120];
  CHECK(H5LTread_dataset_int(f, "grid/values", rbuf));
  for (int r = 0; r < 12; r++) {
    printf("row %2d:", r);
    for (int c = 0; c < 10; c++) printf(" %4d", rbuf[r * 10 + c]);
    printf("\n");
  }
  char units[32] = "";
  CHECK(H5LTget_attribute_string(f, "grid/values", "units", units));
  double rscale[3];
  CHECK(H5LTget_attribute_double(f, "grid/values", "scale", rscale));
  printf("units %s scale %g %g %g\n", units, rscale[0], rscale[1], rscale[2]);
  hsize_t rdims[2];
  H5T_class_t cls;
  size_t tsize;
  int rank;
  CHECK(H5LTget_dataset_ndims(f, "grid/values", &rank));
  CHECK(H5LTget_dataset_info(f, "grid/values", rdims, &cls, &tsize));
  printf("grid/values rank %d dims %llu x %llu class %d size %zu\n", rank,
         (unsigned long long)rdims[0], (unsigned long long)rdims[1], (int)cls, tsize);
  d = H5Dopen2(f, "grid/values", H5P_DEFAULT);
  CHECK(d);
  dcpl = H5Dget_create_plist(d);
  hsize_t rchunk[2];
  int rfill = 0;
  CHECK(H5Pget_chunk(dcpl, 2, rchunk));
  CHECK(H5Pget_fill_value(dcpl, H5T_NATIVE_INT, &rfill));
  printf("chunk %llu x %llu fill %d filters %d\n", (unsigned long long)rchunk[0],
         (unsigned long long)rchunk[1], rfill, H5Pget_nfilters(dcpl));
  CHECK(H5Pclose(dcpl));
  CHECK(H5Dclose(d));
  int axis[10];
  CHECK(H5LTread_dataset_int(f, "axis", axis));
  printf("axis");
  for (int i = 0; i < 10; i++) printf(" %d", axis[i]);
  printf("\n");
  CHECK(H5Fclose(f));
  return 0;
}
