// link_storage.cc — see link_storage.h.
#include "vol/model/link_storage.h"

#include <string>

#include "vol/model/object_model.h"

namespace tessera_vol {

namespace {

std::string key(uint64_t group) { return id_key("gs/", group); }

// The group's phase-change limits (H5Pget_link_phase_change; HDF5's defaults 8 and 6).
void phase_change(SharedFile& f, uint64_t group, unsigned* max_compact, unsigned* min_dense) {
  *max_compact = 8, *min_dense = 6;
  hid_t cpl = H5I_INVALID_HID;
  if (group == kRootOid) {
    cpl = f.fcpl();
  } else if (auto r = f.find_object(group); r && !r->cpl.empty()) {
    cpl = f.decoded_plist(r->cpl);  // owned by f
  }
  if (cpl >= 0) H5Pget_link_phase_change(cpl, max_compact, min_dense);
}

uint64_t committed_links(SharedFile& f, uint64_t group, uint64_t limit) {
  return f.container().catalog().count(id_key("l/", group, "/"), limit);
}

char state(SharedFile& f, uint64_t group) {
  auto v = f.container().catalog().get(key(group));
  return v && v->size() == 1 ? (*v)[0] : '\0';
}

}  // namespace

void link_storage_created(SharedFile& f, tessera::CatalogBatch& b, uint64_t group, hid_t gcpl) {
  bool new_style = false;
  H5F_libver_t low = H5F_LIBVER_EARLIEST, high = H5F_LIBVER_LATEST;
  if (f.fapl() >= 0 && H5Pget_libver_bounds(f.fapl(), &low, &high) >= 0 && low >= H5F_LIBVER_V18) new_style = true;
  if (gcpl >= 0 && gcpl != H5P_DEFAULT) {
    unsigned corder = 0;
    if (H5Pget_link_creation_order(gcpl, &corder) >= 0 && (corder & H5P_CRT_ORDER_TRACKED)) new_style = true;
    if (H5Pget_nfilters(gcpl) > 0) new_style = true;
  }
  b.put(key(group), new_style ? "c" : "s");
}

void link_storage_adding(SharedFile& f, tessera::CatalogBatch& b, uint64_t group) {
  if (state(f, group) != 'c') return;
  unsigned max_compact, min_dense;
  phase_change(f, group, &max_compact, &min_dense);
  // Native keeps link messages while the group holds fewer than max_compact links
  // before the insert (H5G_obj_insert).
  if (committed_links(f, group, max_compact) >= max_compact) b.put(key(group), "d");
}

void link_storage_removing(SharedFile& f, tessera::CatalogBatch& b, uint64_t group) {
  if (state(f, group) != 'd') return;
  unsigned max_compact, min_dense;
  phase_change(f, group, &max_compact, &min_dense);
  // After the removal, fewer than min_dense links: back to link messages
  // (H5G__obj_remove_update_linfo).
  if (committed_links(f, group, min_dense + 1) - 1 < min_dense) b.put(key(group), "c");
}

void link_storage_deleted(tessera::CatalogBatch& b, uint64_t group) { b.del(key(group)); }

std::optional<H5G_storage_type_t> link_storage(SharedFile& f, uint64_t group) {
  switch (state(f, group)) {
    case 's': return H5G_STORAGE_TYPE_SYMBOL_TABLE;
    case 'c': return H5G_STORAGE_TYPE_COMPACT;
    case 'd': return H5G_STORAGE_TYPE_DENSE;
    default: return std::nullopt;
  }
}

}  // namespace tessera_vol
