/* compat_internal.h — what the files of libtessera_compat.so share (tessera_compat.c has
 * the why and how): the table of libhdf5 functions resolved at first use, the helpers
 * that tell a non-native object and push errors, and the address <-> token mapping.
 * Hidden: the preloaded library exports only the HDF5 symbols it interposes. */
#pragma once

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <H5VLconnector.h> /* H5VLfind_opt_operation, H5VLobject_optional_op */
#include <hdf5.h>
#include <stdlib.h>

#include "tessera/region_ops.h"



#define COMPAT_FUNCS(X)                                                                        \
  /* the real v1 functions (forwarding) */                                                     \
  X(H5Literate1) X(H5Literate_by_name1) X(H5Lget_info1) X(H5Lget_info_by_idx1) X(H5Lvisit1)    \
  X(H5Lvisit_by_name1) X(H5Oopen_by_addr) X(H5Oget_info1) X(H5Oget_info_by_name1)              \
  X(H5Oget_info_by_idx1) X(H5Oget_info2) X(H5Oget_info_by_name2) X(H5Oget_info_by_idx2)        \
  X(H5Ovisit1) X(H5Ovisit_by_name1) X(H5Ovisit2) X(H5Ovisit_by_name2) X(H5Rcreate)             \
  X(H5Rdereference2) X(H5Rget_obj_type2) X(H5Rget_name) X(H5Rdereference1) X(H5Rget_obj_type1)  \
  /* the v2/v3 API used for non-native objects, and helpers */                                 \
  X(H5Literate2) X(H5Literate_by_name2) X(H5Lget_info2) X(H5Lget_info_by_idx2) X(H5Lvisit2)    \
  X(H5Lvisit_by_name2) X(H5Oopen_by_token) X(H5Oget_info3) X(H5Oget_info_by_name3)             \
  X(H5Oget_info_by_idx3) X(H5Ovisit3) X(H5Ovisit_by_name3) X(H5Oclose) X(H5Iget_name)          \
  X(H5Iget_type) X(H5Tcommitted) X(H5VLobject_is_native) X(H5Eclear2) X(H5Epush2)              \
  X(H5Eget_auto2) X(H5VLget_connector_name) X(H5Rget_region) X(H5VLfind_opt_operation)            \
  X(H5VLobject_optional_op) X(H5Sencode2) X(H5Sdecode)                                          \
  /* dimension scales: the reference style an object's DIMENSION_LIST/REFERENCE_LIST hold */   \
  X(H5Aexists) X(H5Aopen) X(H5Aget_type) X(H5Aclose) X(H5Tclose) X(H5Tget_class) X(H5Tget_size)  \
  X(H5Tget_super) X(H5Tget_nmembers) X(H5Tget_member_type)                                       \
  /* H5Fopen of a native HDF5 file while tessera is the default connector */                   \
  X(H5Fopen) X(H5open) X(H5Pget_vol_id) X(H5VLget_connector_id_by_name) X(H5VLcmp_connector_cls) \
  X(H5VLclose) X(H5Pcopy) X(H5Pclose) X(H5Pset_vol)


struct compat_api {
  int ok; /* every symbol below was found */
#define DECLARE(name) __typeof__(name)* name;
  COMPAT_FUNCS(DECLARE)
#undef DECLARE
  /* error class and messages (hid_t globals of libhdf5; valid once the library is open) */
  const hid_t *err_cls, *maj_link, *maj_ohdr, *maj_ref, *min_unsupported, *min_badvalue;
  const hid_t *default_fapl; /* H5P_FILE_ACCESS_DEFAULT */
};

#define COMPAT_HIDDEN __attribute__((visibility("hidden")))
extern COMPAT_HIDDEN struct compat_api api;

/* 1 once every symbol of the table was found (resolving it at the first call). */
COMPAT_HIDDEN int api_ready(void);
/* True when `id` is an object of a file whose terminal connector is not native. */
COMPAT_HIDDEN int is_foreign(hid_t id);
COMPAT_HIDDEN void push_error(const char *func, hid_t maj, hid_t min, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
COMPAT_HIDDEN haddr_t token_to_addr(const H5O_token_t *token);
COMPAT_HIDDEN H5O_token_t addr_to_token(haddr_t addr);

/* Every interposed function starts with this: forward unless the call is for a
 * non-native object with the arguments the v2 path needs (bad arguments are forwarded
 * too, so libhdf5 reports them with its own messages). */
#define FORWARD_UNLESS(cond, name, ...)                                  \
  do {                                                                   \
    if (!api_ready()) return -1;                                         \
    if (!(cond) || !is_foreign(loc_id)) return api.name(__VA_ARGS__);    \
  } while (0)

