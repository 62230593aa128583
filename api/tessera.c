/* tessera.c — libtessera_api: see tessera.h.
 *
 * Each call checks that the object is served by the tessera connector, finds the
 * connector's dataset optional operation by name (include/tessera/sparse_ops.h) and runs it through
 * H5VLdataset_optional_op, so the work happens in the connector, under HDF5's API lock,
 * with its errors on HDF5's error stack.  This library only adds its own records for
 * what it finds wrong before the call (an error class "tessera API"). */
#include "tessera/tessera.h"

#include <H5VLconnector.h> /* H5VLfind_opt_operation, H5VLdataset_optional_op */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/layout_prop.h"
#include "tessera/query_ops.h"
#include "tessera/sparse_ops.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static hid_t g_class = H5I_INVALID_HID, g_major = H5I_INVALID_HID, g_minor = H5I_INVALID_HID;

static void register_class(void) {
    g_class = H5Eregister_class("tessera API", "tessera", "0.1.0");
    if (g_class < 0) return;
    g_major = H5Ecreate_msg(g_class, H5E_MAJOR, "tessera API");
    g_minor = H5Ecreate_msg(g_class, H5E_MINOR, "not possible on this object");
}

/* Pushes "tessera: <message>" (under HDF5's own class if ours could not be registered). */
static void push(const char *func, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_once(&g_once, register_class);
    if (g_class >= 0 && g_major >= 0 && g_minor >= 0)
        H5Epush2(H5E_DEFAULT, "tessera.c", func, __LINE__, g_class, g_major, g_minor, "tessera: %s", msg);
    else
        H5Epush2(H5E_DEFAULT, "tessera.c", func, __LINE__, H5E_ERR_CLS, H5E_VOL, H5E_UNSUPPORTED, "tessera: %s", msg);
}

htri_t tessera_is_tessera(hid_t obj_id) {
    char name[64] = "";
    if (H5VLget_connector_name(obj_id, name, sizeof name) < 0) return -1;
    return strcmp(name, "tessera") == 0;
}

/* The operation's value, after checking that `id` is an object of the expected kind
 * (a dataset; or a file or group for the query) that tessera serves. */
static int find_op_of(const char *func, hid_t id, H5VL_subclass_t subcls, const char *op_name) {
    H5E_auto2_t saved;
    void *saved_data;
    H5I_type_t t = H5Iget_type(id);
    const int want_dataset = subcls == H5VL_SUBCLS_DATASET;
    if (want_dataset ? t != H5I_DATASET : (t != H5I_FILE && t != H5I_GROUP)) {
        H5Eclear2(H5E_DEFAULT);
        push(func, "%s: not a %s identifier", func, want_dataset ? "dataset" : "file or group");
        return -1;
    }
    char name[64] = "";
    if (H5VLget_connector_name(id, name, sizeof name) < 0) return -1;
    if (strcmp(name, "tessera") != 0) {
        H5Eclear2(H5E_DEFAULT);
        push(func,
             "%s needs a %s stored by tessera; this one's file is opened with the '%s' connector "
             "(open the file with HDF5_VOL_CONNECTOR=tessera)",
             func, want_dataset ? "dataset" : "file", name);
        return -1;
    }
    int op = 0;
    H5Eget_auto2(H5E_DEFAULT, &saved, &saved_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    herr_t rc = H5VLfind_opt_operation(subcls, op_name, &op);
    H5Eset_auto2(H5E_DEFAULT, saved, saved_data);
    if (rc < 0 || op <= 0) {
        H5Eclear2(H5E_DEFAULT);
        push(func, "the loaded tessera connector does not provide '%s' (an older plugin?)", op_name);
        return -1;
    }
    return op;
}

static int find_op(const char *func, hid_t dset_id, const char *op_name) {
    return find_op_of(func, dset_id, H5VL_SUBCLS_DATASET, op_name);
}

hid_t tessera_Dget_defined(hid_t dset_id, hid_t file_space_id, hid_t dxpl_id) {
    int op = find_op(__func__, dset_id, TESSERA_OP_DEFINED);
    if (op < 0) return H5I_INVALID_HID;
    tessera_defined_args_t a = {file_space_id, H5I_INVALID_HID};
    H5VL_optional_args_t args = {op, &a};
    if (H5VLdataset_optional_op(dset_id, &args, dxpl_id, H5ES_NONE) < 0) return H5I_INVALID_HID;
    return a.defined_space;
}

herr_t tessera_Derase(hid_t dset_id, hid_t file_space_id, hid_t dxpl_id) {
    int op = find_op(__func__, dset_id, TESSERA_OP_ERASE);
    if (op < 0) return -1;
    tessera_erase_args_t a = {file_space_id};
    H5VL_optional_args_t args = {op, &a};
    return H5VLdataset_optional_op(dset_id, &args, dxpl_id, H5ES_NONE);
}

herr_t tessera_Pset_as_of(hid_t fapl_id, const char *when) {
    if (!when || !*when || strpbrk(when, " \t\n,")) {
        push(__func__, "tessera_Pset_as_of: `when` must be a commit number, @<ns> or a UTC time without blanks");
        return -1;
    }
    hid_t vol = H5VLregister_connector_by_name("tessera", H5P_DEFAULT);
    if (vol < 0) {
        H5Eclear2(H5E_DEFAULT);
        push(__func__, "tessera_Pset_as_of: the tessera connector cannot be loaded (HDF5_PLUGIN_PATH?)");
        return -1;
    }
    /* The settings the fapl already gives tessera, then as_of (the later one wins). */
    char *old = NULL;
    hid_t cur = H5I_INVALID_HID;
    void *info = NULL;
    if (H5Pget_vol_id(fapl_id, &cur) >= 0 && cur >= 0) {
        char name[64] = "";
        if (H5VLget_connector_name(cur, name, sizeof name) >= 0 && strcmp(name, "tessera") == 0 &&
            H5Pget_vol_info(fapl_id, &info) >= 0 && info) {
            H5VLconnector_info_to_str(info, cur, &old);
            H5VLfree_connector_info(cur, info);
        }
        H5VLclose(cur);
    }
    H5Eclear2(H5E_DEFAULT);
    size_t n = (old ? strlen(old) : 0) + strlen(when) + 16;
    char *settings = malloc(n);
    herr_t rc = -1;
    if (settings) {
        snprintf(settings, n, "%s%sas_of=%s", old ? old : "", old && *old ? " " : "", when);
        void *new_info = NULL;
        if (H5VLconnector_str_to_info(settings, vol, &new_info) >= 0) {
            rc = H5Pset_vol(fapl_id, vol, new_info);
            H5VLfree_connector_info(vol, new_info);
        }
        free(settings);
    }
    if (old) H5free_memory(old);
    H5VLclose(vol);
    return rc;
}

herr_t tessera_Pset_layout(hid_t dcpl_id, const char *layout) {
    if (H5Pisa_class(dcpl_id, H5P_DATASET_CREATE) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        push(__func__, "tessera_Pset_layout: not a dataset creation property list");
        return -1;
    }
    if (!layout || !*layout || strlen(layout) >= TESSERA_LAYOUT_PROP_SIZE) {
        push(__func__, "tessera_Pset_layout: the layout name must have 1 to %d characters",
             TESSERA_LAYOUT_PROP_SIZE - 1);
        return -1;
    }
    char value[TESSERA_LAYOUT_PROP_SIZE] = {0};
    strcpy(value, layout);
    htri_t have = H5Pexist(dcpl_id, TESSERA_LAYOUT_PROP);
    if (have < 0) return -1;
    /* A temporary property: copied with the list (H5Pcopy), never encoded. */
    if (have) return H5Pset(dcpl_id, TESSERA_LAYOUT_PROP, value);
    return H5Pinsert2(dcpl_id, TESSERA_LAYOUT_PROP, sizeof value, value, NULL, NULL, NULL, NULL, NULL, NULL);
}

ssize_t tessera_Pget_layout(hid_t dcpl_id, char *buf, size_t size) {
    htri_t have = H5Pexist(dcpl_id, TESSERA_LAYOUT_PROP);
    if (have < 0) return -1;
    char value[TESSERA_LAYOUT_PROP_SIZE] = {0};
    if (have && H5Pget(dcpl_id, TESSERA_LAYOUT_PROP, value) < 0) return -1;
    value[sizeof value - 1] = 0;
    if (buf && size) snprintf(buf, size, "%s", value);
    return (ssize_t)strlen(value);
}

/* ---- value indexes and queries (query_ops.h) ---- */

herr_t tessera_Dbuild_index(hid_t dset_id, const tessera_index_config_t *config, hid_t dxpl_id) {
    int op = find_op(__func__, dset_id, TESSERA_OP_BUILD_INDEX);
    if (op < 0) return -1;
    tessera_build_index_args_t a = {config, 0, 0, 0};
    H5VL_optional_args_t args = {op, &a};
    return H5VLdataset_optional_op(dset_id, &args, dxpl_id, H5ES_NONE);
}

herr_t tessera_Ddrop_index(hid_t dset_id, hid_t dxpl_id) {
    int op = find_op(__func__, dset_id, TESSERA_OP_DROP_INDEX);
    if (op < 0) return -1;
    tessera_drop_index_args_t a = {0};
    H5VL_optional_args_t args = {op, &a};
    return H5VLdataset_optional_op(dset_id, &args, dxpl_id, H5ES_NONE);
}

herr_t tessera_Dget_index_info(hid_t dset_id, tessera_index_info_t *info) {
    int op = find_op(__func__, dset_id, TESSERA_OP_INDEX_INFO);
    if (op < 0) return -1;
    if (!info) {
        push(__func__, "%s: NULL info", __func__);
        return -1;
    }
    tessera_index_info_args_t a = {info};
    H5VL_optional_args_t args = {op, &a};
    return H5VLdataset_optional_op(dset_id, &args, H5P_DEFAULT, H5ES_NONE);
}

/* Runs the query operation on the location (a file or group: name "."). */
static herr_t run_query(const char *func, hid_t loc_id, const char *expr, hid_t dxpl_id, tessera_query_args_t *a) {
    int op = find_op_of(func, loc_id, H5VL_SUBCLS_OBJECT, TESSERA_OP_QUERY);
    if (op < 0) return -1;
    if (!expr) {
        push(func, "%s: NULL expression", func);
        return -1;
    }
    a->expr = expr;
    H5VL_optional_args_t args = {op, a};
    return H5VLobject_optional_op(loc_id, ".", H5P_DEFAULT, &args, dxpl_id, H5ES_NONE);
}

hssize_t tessera_Fquery_count(hid_t loc_id, const char *expr, hid_t dxpl_id) {
    tessera_query_args_t a = {NULL, TESSERA_QUERY_COUNT, 0, H5I_INVALID_HID, NULL};
    if (run_query(__func__, loc_id, expr, dxpl_id, &a) < 0) return -1;
    return (hssize_t)a.count;
}

hid_t tessera_Fquery(hid_t loc_id, const char *expr, hid_t dxpl_id) {
    tessera_query_args_t a = {NULL, TESSERA_QUERY_SPACE, 0, H5I_INVALID_HID, NULL};
    if (run_query(__func__, loc_id, expr, dxpl_id, &a) < 0) return H5I_INVALID_HID;
    return a.space;
}

herr_t tessera_Fquery_positions(hid_t loc_id, const char *expr, hid_t dxpl_id, tessera_query_result_t *result) {
    if (!result) {
        push(__func__, "%s: NULL result", __func__);
        return -1;
    }
    memset(result, 0, sizeof *result);
    tessera_query_args_t a = {NULL, TESSERA_QUERY_POSITIONS, 0, H5I_INVALID_HID, result};
    return run_query(__func__, loc_id, expr, dxpl_id, &a);
}

void tessera_query_result_free(tessera_query_result_t *result) {
    if (!result) return;
    if (result->dataset) H5free_memory(result->dataset);
    if (result->positions) H5free_memory(result->positions);
    result->dataset = NULL;
    result->positions = NULL;
    result->count = 0;
}
