// connector.cc — the tessera VOL connector class.
//
// HDF5 finds the plugin through HDF5_PLUGIN_PATH (it dlopens every lib*.so there and
// asks H5PLget_plugin_type / H5PLget_plugin_info: the loader, vol/loader/) and selects
// it by name or value, e.g. HDF5_VOL_CONNECTOR=tessera.  The class below wires every callback HDF5 can call:
// implemented ones live in one file per object class (file.cc, dataset.cc, ...);
// a NULL entry makes HDF5 fail the call with "VOL connector has no '...' method".
#include "vol/base/connector_info.h"
#include "vol/types/dcpl.h"
#include "vol/base/error.h"
#include "vol/features/query.h"
#include "vol/model/region_store.h"
#include "vol/features/sparse.h"
#include "vol/types/stored_space.h"
#include "vol/types/stored_type.h"
#include "vol/base/tessera_vol.h"


namespace tessera_vol {
namespace {

// Called once when HDF5 registers the connector (library init with HDF5_VOL_CONNECTOR
// set, or the first H5VLregister_connector_by_name/value).
herr_t connector_initialize(hid_t /*vipl_id*/) {
  if (register_error_class() < 0) return -1;
  register_region_ops();  // old-style region references (region_ops.h)
  register_sparse_ops();  // defined elements and erase (sparse_ops.h)
  register_query_ops();   // value indexes and queries (query_ops.h)
  return 0;
}

// Called when the connector is unregistered, at the latest at library shutdown.
herr_t connector_terminate() {
  clear_type_caches();
  clear_space_caches();
  clear_element_facts();
  clear_default_dcpl();
  unregister_region_ops();
  unregister_sparse_ops();
  unregister_query_ops();
  unregister_error_class();
  return 0;
}

}  // namespace

// Positional initialisation in declaration order (C++17 has no designated initialisers);
// the comments name each field as H5VLconnector.h declares it.
extern const H5VL_class_t kTesseraClass = {
    H5VL_VERSION,          // version: must equal the library's H5VL_VERSION (3 in 1.14 and 2.x)
    kConnectorValue,       // value
    kConnectorName,        // name
    kConnectorVersion,     // conn_version
    kCapFlags,             // cap_flags (get_cap_flags reports the same constant)
    connector_initialize,  // initialize
    connector_terminate,   // terminate
    {
        // info_cls: the settings of "tessera key=value ..." (connector_info.h)
        sizeof(char*),      // size: the info object holds the settings text's pointer
        info_copy_cb,       // copy
        info_cmp_cb,        // cmp
        info_free_cb,       // free
        info_to_str_cb,     // to_str
        info_from_str_cb,   // from_str
    },
    {
        // wrap_cls: only pass-through connectors implement these; a terminal connector
        // leaves them NULL and HDF5 then uses objects unwrapped.
        nullptr,  // get_object
        nullptr,  // get_wrap_ctx
        nullptr,  // wrap_object
        nullptr,  // unwrap_object
        nullptr,  // free_wrap_ctx
    },
    {
        // attr_cls (attr.cc)
        attr_create,
        attr_open,
        attr_read,
        attr_write,
        attr_get,
        attr_specific,
        attr_optional,
        attr_close,
    },
    {
        // dataset_cls (dataset.cc)
        dataset_create,
        dataset_open,
        dataset_read,
        dataset_write,
        dataset_get,
        dataset_specific,
        dataset_optional,
        dataset_close,
    },
    {
        // datatype_cls (datatype.cc)
        datatype_commit,
        datatype_open,
        datatype_get,
        datatype_specific,
        datatype_optional,
        datatype_close,
    },
    {
        // file_cls (file.cc)
        file_create,
        file_open,
        file_get,
        file_specific,
        file_optional,
        file_close,
    },
    {
        // group_cls (group.cc)
        group_create,
        group_open,
        group_get,
        group_specific,
        group_optional,
        group_close,
    },
    {
        // link_cls (link.cc)
        link_create,
        link_copy,
        link_move,
        link_get,
        link_specific,
        link_optional,
    },
    {
        // object_cls (object.cc)
        object_open,
        object_copy,
        object_get,
        object_specific,
        object_optional,
    },
    {
        // introspect_cls (introspect.cc): all three are required in practice
        introspect_get_conn_cls,
        introspect_get_cap_flags,
        introspect_opt_query,
    },
    {
        // request_cls: tessera completes every operation synchronously and never hands
        // out request tokens, so HDF5 has nothing to call these on.
        nullptr,  // wait
        nullptr,  // notify
        nullptr,  // cancel
        nullptr,  // specific
        nullptr,  // optional
        nullptr,  // free
    },
    {
        // blob_cls: used for variable-length data and references inside a file;
        // unreachable until files exist (HDF5 reports "no 'blob put' method").
        nullptr,  // put
        nullptr,  // get
        nullptr,  // specific
        nullptr,  // optional
    },
    {
        // token_cls (object.cc): tokens hold the object id; tools print and compare them.
        token_cmp,
        token_to_str,
        token_from_str,
    },
    nullptr,  // optional (catch-all)
};

}  // namespace tessera_vol

// The plugin entry points (H5PLget_plugin_type/_info) live in the loader,
// vol/loader/tessera_loader.c, which hands HDF5 this class through tessera_vol_class
// (h5_runtime.cc) once it has bound the connector to the running libhdf5.
