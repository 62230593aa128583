// tessera_vol.h — internal declarations shared by the connector's source files.
//
// The layout follows HDF5's H5VLpassthru.c: one source file per HDF5 object class
// (file.cc, dataset.cc, group.cc, ...), each defining that class's callbacks; connector.cc
// assembles them into the H5VL_class_t that the plugin entry points hand to HDF5.
//
// Nothing here is exported from the plugin: the library is built with hidden visibility
// and a version script (exports.map) that exports only tessera_vol_class (h5_runtime.cc).
#pragma once

#include <hdf5.h>
#include <H5VLconnector.h>

#include <cstdint>
#include <memory>
#include <string>

#include "vol/base/default_plists.h"  // lcpl_intermediate, lcpl_cset: shared by every link-making call

namespace tessera_vol {

// Connector identity.  The value must be >= 256 and not used by any registered
// connector (https://support.hdfgroup.org/documentation/hdf5-docs/registered_vol_connectors.html).
inline constexpr const char* kConnectorName = "tessera";
inline constexpr H5VL_class_value_t kConnectorValue = 24601;
inline constexpr unsigned kConnectorVersion = 1;

// Capability flags.  HDF5 reads them in two places: the class field and the
// introspect get_cap_flags callback (H5Pget_vol_cap_flags calls the callback), and the
// API test suite skips tests by them.  Both must report this one constant.
// What tessera implements (each flag is a promise the API test suite holds us to).
// EXTERNAL_LINKS: followed into tessera containers (elink.h).  UD_LINKS: H5Lcreate_ud works
// for HDF5's one built-in user-defined class, external links; other registered classes are
// refused, since a connector cannot reach their callbacks.
inline constexpr uint64_t kCapFlags =
    H5VL_CAP_FLAG_FILE_BASIC | H5VL_CAP_FLAG_FILE_MORE | H5VL_CAP_FLAG_GROUP_BASIC | H5VL_CAP_FLAG_GROUP_MORE |
    H5VL_CAP_FLAG_DATASET_BASIC | H5VL_CAP_FLAG_DATASET_MORE | H5VL_CAP_FLAG_ATTR_BASIC |
    H5VL_CAP_FLAG_ATTR_MORE | H5VL_CAP_FLAG_LINK_BASIC | H5VL_CAP_FLAG_LINK_MORE | H5VL_CAP_FLAG_OBJECT_BASIC |
    H5VL_CAP_FLAG_OBJECT_MORE | H5VL_CAP_FLAG_HARD_LINKS | H5VL_CAP_FLAG_SOFT_LINKS | H5VL_CAP_FLAG_ITERATE |
    H5VL_CAP_FLAG_BY_IDX | H5VL_CAP_FLAG_CREATION_ORDER | H5VL_CAP_FLAG_GET_PLIST |
    H5VL_CAP_FLAG_FLUSH_REFRESH | H5VL_CAP_FLAG_STORED_DATATYPES | H5VL_CAP_FLAG_STORAGE_SIZE |
    H5VL_CAP_FLAG_FILL_VALUES | H5VL_CAP_FLAG_FILTERS | H5VL_CAP_FLAG_EXTERNAL_LINKS | H5VL_CAP_FLAG_UD_LINKS |
    H5VL_CAP_FLAG_TRACK_TIMES;

// The connector class (defined in connector.cc).
extern const H5VL_class_t kTesseraClass;

// ---------------------------------------------------------------- introspect.cc
herr_t introspect_get_conn_cls(void* obj, H5VL_get_conn_lvl_t lvl, const H5VL_class_t** conn_cls);
herr_t introspect_get_cap_flags(const void* info, uint64_t* cap_flags);
herr_t introspect_opt_query(void* obj, H5VL_subclass_t cls, int opt_type, uint64_t* flags);

// ---------------------------------------------------------------- file.cc
void* file_create(const char* name, unsigned flags, hid_t fcpl_id, hid_t fapl_id, hid_t dxpl_id,
                  void** req);
void* file_open(const char* name, unsigned flags, hid_t fapl_id, hid_t dxpl_id, void** req);
herr_t file_get(void* obj, H5VL_file_get_args_t* args, hid_t dxpl_id, void** req);
herr_t file_specific(void* obj, H5VL_file_specific_args_t* args, hid_t dxpl_id, void** req);
herr_t file_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id, void** req);
herr_t file_close(void* file, hid_t dxpl_id, void** req);
// True if `path` names a tessera container: a directory holding a file `tessera.container`.
bool is_tessera_container(const char* path) noexcept;
inline constexpr const char* kContainerMarker = "tessera.container";

// ---------------------------------------------------------------- attr.cc
void* attr_create(void* obj, const H5VL_loc_params_t* loc_params, const char* attr_name, hid_t type_id,
                  hid_t space_id, hid_t acpl_id, hid_t aapl_id, hid_t dxpl_id, void** req);
void* attr_open(void* obj, const H5VL_loc_params_t* loc_params, const char* attr_name, hid_t aapl_id,
                hid_t dxpl_id, void** req);
herr_t attr_read(void* attr, hid_t mem_type_id, void* buf, hid_t dxpl_id, void** req);
herr_t attr_write(void* attr, hid_t mem_type_id, const void* buf, hid_t dxpl_id, void** req);
herr_t attr_get(void* obj, H5VL_attr_get_args_t* args, hid_t dxpl_id, void** req);
herr_t attr_specific(void* obj, const H5VL_loc_params_t* loc_params, H5VL_attr_specific_args_t* args,
                     hid_t dxpl_id, void** req);
herr_t attr_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id, void** req);
herr_t attr_close(void* attr, hid_t dxpl_id, void** req);

// ---------------------------------------------------------------- dataset.cc
void* dataset_create(void* obj, const H5VL_loc_params_t* loc_params, const char* name, hid_t lcpl_id,
                     hid_t type_id, hid_t space_id, hid_t dcpl_id, hid_t dapl_id, hid_t dxpl_id,
                     void** req);
void* dataset_open(void* obj, const H5VL_loc_params_t* loc_params, const char* name, hid_t dapl_id,
                   hid_t dxpl_id, void** req);
herr_t dataset_read(size_t count, void* dset[], hid_t mem_type_id[], hid_t mem_space_id[],
                    hid_t file_space_id[], hid_t dxpl_id, void* buf[], void** req);
herr_t dataset_write(size_t count, void* dset[], hid_t mem_type_id[], hid_t mem_space_id[],
                     hid_t file_space_id[], hid_t dxpl_id, const void* buf[], void** req);
herr_t dataset_get(void* obj, H5VL_dataset_get_args_t* args, hid_t dxpl_id, void** req);
herr_t dataset_specific(void* obj, H5VL_dataset_specific_args_t* args, hid_t dxpl_id, void** req);
herr_t dataset_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id, void** req);
herr_t dataset_close(void* dset, hid_t dxpl_id, void** req);

// ---------------------------------------------------------------- datatype.cc
void* datatype_commit(void* obj, const H5VL_loc_params_t* loc_params, const char* name, hid_t type_id,
                      hid_t lcpl_id, hid_t tcpl_id, hid_t tapl_id, hid_t dxpl_id, void** req);
void* datatype_open(void* obj, const H5VL_loc_params_t* loc_params, const char* name, hid_t tapl_id,
                    hid_t dxpl_id, void** req);
herr_t datatype_get(void* obj, H5VL_datatype_get_args_t* args, hid_t dxpl_id, void** req);
herr_t datatype_specific(void* obj, H5VL_datatype_specific_args_t* args, hid_t dxpl_id, void** req);
herr_t datatype_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id, void** req);
herr_t datatype_close(void* dt, hid_t dxpl_id, void** req);

// ---------------------------------------------------------------- group.cc
void* group_create(void* obj, const H5VL_loc_params_t* loc_params, const char* name, hid_t lcpl_id,
                   hid_t gcpl_id, hid_t gapl_id, hid_t dxpl_id, void** req);
void* group_open(void* obj, const H5VL_loc_params_t* loc_params, const char* name, hid_t gapl_id,
                 hid_t dxpl_id, void** req);
herr_t group_get(void* obj, H5VL_group_get_args_t* args, hid_t dxpl_id, void** req);
herr_t group_specific(void* obj, H5VL_group_specific_args_t* args, hid_t dxpl_id, void** req);
herr_t group_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id, void** req);
herr_t group_close(void* grp, hid_t dxpl_id, void** req);

// ---------------------------------------------------------------- link.cc
herr_t link_create(H5VL_link_create_args_t* args, void* obj, const H5VL_loc_params_t* loc_params,
                   hid_t lcpl_id, hid_t lapl_id, hid_t dxpl_id, void** req);
herr_t link_copy(void* src_obj, const H5VL_loc_params_t* loc_params1, void* dst_obj,
                 const H5VL_loc_params_t* loc_params2, hid_t lcpl_id, hid_t lapl_id, hid_t dxpl_id,
                 void** req);
herr_t link_move(void* src_obj, const H5VL_loc_params_t* loc_params1, void* dst_obj,
                 const H5VL_loc_params_t* loc_params2, hid_t lcpl_id, hid_t lapl_id, hid_t dxpl_id,
                 void** req);
herr_t link_get(void* obj, const H5VL_loc_params_t* loc_params, H5VL_link_get_args_t* args, hid_t dxpl_id,
                void** req);
herr_t link_specific(void* obj, const H5VL_loc_params_t* loc_params, H5VL_link_specific_args_t* args,
                     hid_t dxpl_id, void** req);
herr_t link_optional(void* obj, const H5VL_loc_params_t* loc_params, H5VL_optional_args_t* args,
                     hid_t dxpl_id, void** req);

// ---------------------------------------------------------------- object.cc
void* object_open(void* obj, const H5VL_loc_params_t* loc_params, H5I_type_t* opened_type, hid_t dxpl_id,
                  void** req);
herr_t object_copy(void* src_obj, const H5VL_loc_params_t* loc_params1, const char* src_name,
                   void* dst_obj, const H5VL_loc_params_t* loc_params2, const char* dst_name,
                   hid_t ocpypl_id, hid_t lcpl_id, hid_t dxpl_id, void** req);
herr_t object_get(void* obj, const H5VL_loc_params_t* loc_params, H5VL_object_get_args_t* args,
                  hid_t dxpl_id, void** req);
herr_t object_specific(void* obj, const H5VL_loc_params_t* loc_params, H5VL_object_specific_args_t* args,
                       hid_t dxpl_id, void** req);
herr_t object_optional(void* obj, const H5VL_loc_params_t* loc_params, H5VL_optional_args_t* args,
                       hid_t dxpl_id, void** req);

// ---------------------------------------------------------------- token (object.cc)
herr_t token_cmp(void* obj, const H5O_token_t* t1, const H5O_token_t* t2, int* cmp_value);
herr_t token_to_str(void* obj, H5I_type_t obj_type, const H5O_token_t* token, char** token_str);
herr_t token_from_str(void* obj, H5I_type_t obj_type, const char* token_str, H5O_token_t* token);

// ---------------------------------------------------------------- helpers shared by
// file.cc, group.cc, link.cc and object.cc (C++ only; these throw VolError)
class SharedFile;
// The file object HDF5 gets for "object get FILE": an open FileObj of the container if
// any (HDF5 looks its ID up by pointer), else a new one that HDF5 then registers.
void* file_object_for(const std::shared_ptr<SharedFile>& f);
// Whether the group records link creation order (gcpl, or the fcpl for the root group).
bool group_tracks_corder(SharedFile& f, uint64_t group);
// Native HDF5 refuses H5_INDEX_CRT_ORDER on groups that do not track it: so do we.
void require_index(SharedFile& f, uint64_t group, H5_index_t idx);
// Fails unless `id` is H5P_DEFAULT or a property list of class `cls` (native HDF5 fails
// on invalid access plists when it reads them; a connector must check itself).
void require_plist(hid_t id, hid_t cls, const char* what);
// The same for the link access plist a BY_NAME / BY_IDX location carries.
void require_loc_lapl(const H5VL_loc_params_t* lp);
// Opens object `oid` as the connector object of its kind (group, dataset, datatype).
void* open_object_oid(const std::shared_ptr<SharedFile>& f, uint64_t oid, const std::string& path,
                      H5I_type_t* opened_type);
// Provided by dataset.cc / datatype.cc: open a dataset / committed datatype by object id.
void* dataset_open_oid(std::shared_ptr<SharedFile> f, uint64_t oid, const std::string& path);
void* datatype_open_oid(std::shared_ptr<SharedFile> f, uint64_t oid, const std::string& path);
// datatype.cc: the committed tessera datatype of container f behind type_id, or 0
// (transient, or committed by another connector or in another container).
uint64_t committed_type_oid(hid_t type_id, SharedFile& f);
// datatype.cc: the ID H5Dget_type / H5Aget_type hand to the caller — the committed type
// the object was created with (H5Tcommitted true, as native) while it exists, else a
// transient type decoded from `enc`.
class StoredType;
// `handle`: the file handle serial of the object asked (Obj::handle).
hid_t type_id_for_caller(const std::shared_ptr<SharedFile>& f, uint64_t committed, const StoredType& enc,
                         uint64_t handle);

}  // namespace tessera_vol
