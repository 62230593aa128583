// region_store.cc — see region_store.h.
#include "vol/model/region_store.h"

#include <algorithm>
#include <cstring>

#include "vol/model/object_model.h"
#include "vol/base/opt_ops.h"

namespace tessera_vol {

namespace {

int g_put = -1, g_get = -1;

std::string key(uint64_t id) { return id_key("rg/", id); }

}  // namespace

void register_region_ops() {
  g_put = register_opt_op(H5VL_SUBCLS_OBJECT, TESSERA_OP_REGION_PUT);
  g_get = register_opt_op(H5VL_SUBCLS_OBJECT, TESSERA_OP_REGION_GET);
}

void unregister_region_ops() {
  unregister_opt_op(H5VL_SUBCLS_OBJECT, TESSERA_OP_REGION_PUT, &g_put);
  unregister_opt_op(H5VL_SUBCLS_OBJECT, TESSERA_OP_REGION_GET, &g_get);
}

bool is_region_op(int op_type) { return op_type > 0 && (op_type == g_put || op_type == g_get); }

std::string region_selection(SharedFile& f, uint32_t id) {
  auto v = f.container().catalog().get(key(id));
  if (!v) fail_arg("no stored selection for region reference " + std::to_string(id));
  return *v;
}

bool region_op(SharedFile& f, int op_type, void* args) {
  if (!is_region_op(op_type)) return false;
  if (!args) fail_arg("NULL region operation arguments");
  if (op_type == g_put) {
    auto* a = static_cast<tessera_region_put_t*>(args);
    if (!a->enc || a->size == 0) fail_arg("empty region selection");
    f.require_writable("region reference create");
    tessera::CatalogBatch b;
    uint64_t id = f.allocate_oid(b);
    if (id > UINT32_MAX) fail_unsupported("more than 2^32 identifiers used: old-style region references full");
    b.put(key(id), std::string(static_cast<const char*>(a->enc), a->size));
    f.commit(b);
    a->id = static_cast<uint32_t>(id);
    return true;
  }
  auto* a = static_cast<tessera_region_get_t*>(args);
  std::string s = region_selection(f, a->id);
  if (a->buf && a->buf_size > 0) std::memcpy(a->buf, s.data(), std::min(s.size(), a->buf_size));
  a->size = s.size();
  return true;
}

}  // namespace tessera_vol
