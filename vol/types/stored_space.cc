// stored_space.cc — see stored_space.h.
#include "vol/types/stored_space.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "engine/util/checked.h"
#include "vol/base/error.h"  // fail_arg

namespace tessera_vol {

namespace {

struct Decoded {
  hid_t id;
  hssize_t npoints;
};

// What an ID's encoding was made from: an encoding stays valid while these are the same.
struct Encoded {
  SpaceExtent extent;
  std::string enc;
};

struct SpaceCache {
  std::mutex mu;
  std::map<std::string, Decoded, std::less<>> decoded;
  std::map<hid_t, Encoded> encoded;
};

SpaceCache& cache() {
  static SpaceCache* c = new SpaceCache;  // leaked: used until the last static destructor
  return *c;
}

constexpr size_t kMaxCached = 1024;

// The extent's number of elements; -1 when it is 2^63 or more (HDF5 allows extents whose
// count does not even fit in 64 bits: netCDF's tst_chunks2 has 2.6e27 elements), where
// H5Sget_simple_extent_npoints wraps.
hssize_t extent_points(const SpaceExtent& x) {
  if (x.cls == H5S_NULL) return 0;
  if (x.cls == H5S_SCALAR) return 1;
  const std::optional<uint64_t> n = tessera::checked_product(x.dims, static_cast<size_t>(std::max(x.rank, 0)));
  return n && *n <= static_cast<uint64_t>(INT64_MAX) ? static_cast<hssize_t>(*n) : -1;
}

// At library shutdown HDF5 may have closed the IDs already: skipped quietly.
void close_all(std::map<std::string, Decoded, std::less<>>& m) {
  H5E_BEGIN_TRY {
    for (auto& [enc, d] : m)
      if (H5Iis_valid(d.id) > 0) H5Sclose(d.id);
  }
  H5E_END_TRY
  m.clear();
}

// The cached entry for enc (decoded now if new), or nullptr; called with the lock held.
const Decoded* find(SpaceCache& c, std::string_view enc) {
  auto it = c.decoded.find(enc);
  if (it != c.decoded.end()) return &it->second;
  // H5Sdecode reads as many bytes as the encoding says it holds: a stored value shorter
  // than its own header is refused here rather than read past.
  if (enc.size() < 4) return nullptr;
  hid_t id = H5Sdecode(enc.data());
  if (id < 0) return nullptr;
  const SpaceExtent x = read_extent(id);
  if (x.rank < 0) {
    H5Sclose(id);
    return nullptr;
  }
  const hssize_t n = extent_points(x);
  if (c.decoded.size() >= kMaxCached) close_all(c.decoded);
  return &c.decoded.emplace(std::string(enc), Decoded{id, n}).first->second;
}

}  // namespace

hid_t decode_space(std::string_view enc) {
  SpaceCache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  const Decoded* d = find(c, enc);
  return d ? H5Scopy(d->id) : H5I_INVALID_HID;
}

hssize_t space_npoints(std::string_view enc) {
  SpaceCache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  const Decoded* d = find(c, enc);
  return d ? d->npoints : -1;
}

bool SpaceExtent::operator==(const SpaceExtent& o) const {
  if (cls != o.cls || rank != o.rank) return false;
  for (int i = 0; i < rank; ++i)
    if (dims[i] != o.dims[i] || maxdims[i] != o.maxdims[i]) return false;
  return true;
}

SpaceExtent read_extent(hid_t space) {
  SpaceExtent x;
  x.cls = H5Sget_simple_extent_type(space);
  x.rank = x.cls == H5S_NO_CLASS ? -1 : H5Sget_simple_extent_dims(space, x.dims, x.maxdims);
  return x;
}

std::string encode_space(hid_t space, hssize_t* npoints) { return encode_space(space, read_extent(space), npoints); }

std::string encode_space(hid_t space, const SpaceExtent& x, hssize_t* npoints) {
  if (npoints && x.rank >= 0) *npoints = extent_points(x);
  const bool cacheable = x.rank >= 0 && H5Sget_select_type(space) == H5S_SEL_ALL;
  SpaceCache& c = cache();
  if (cacheable) {
    std::lock_guard<std::mutex> g(c.mu);
    auto it = c.encoded.find(space);
    if (it != c.encoded.end() && it->second.extent == x) return it->second.enc;
  }
  // A null dataspace made by H5Sset_extent_none keeps its extent's old encoding version,
  // in which HDF5 1.14 writes it as a scalar (H5Sdecode then returns one element where
  // native, which raises the version when it stores the space, has none): a new null
  // dataspace is encoded instead — a null extent has nothing else to keep.
  hid_t null_space = x.cls == H5S_NULL ? H5Screate(H5S_NULL) : H5I_INVALID_HID;
  const hid_t what = x.cls == H5S_NULL ? null_space : space;
  size_t sz = 0;
  std::string enc;
  bool ok = what >= 0 && H5Sencode2(what, nullptr, &sz, H5P_DEFAULT) >= 0 && sz > 0;
  if (ok) {
    enc.assign(sz, '\0');
    ok = H5Sencode2(what, enc.data(), &sz, H5P_DEFAULT) >= 0;
  }
  if (null_space >= 0) H5Sclose(null_space);
  if (!ok) fail_arg("cannot encode the dataspace");
  if (cacheable) {
    std::lock_guard<std::mutex> g(c.mu);
    if (c.encoded.size() >= 256) c.encoded.clear();
    c.encoded[space] = Encoded{x, enc};
  }
  return enc;
}

void clear_space_caches() {
  SpaceCache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  close_all(c.decoded);
  c.encoded.clear();
}

}  // namespace tessera_vol
