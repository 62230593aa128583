// stored_space.cc — see stored_space.h.
#include "vol/stored_space.h"

#include <map>
#include <mutex>
#include <string>

namespace tessera_vol {

namespace {

struct Decoded {
  hid_t id;
  hssize_t npoints;
};

struct SpaceCache {
  std::mutex mu;
  std::map<std::string, Decoded, std::less<>> decoded;
};

SpaceCache& cache() {
  static SpaceCache* c = new SpaceCache;  // leaked: used until the last static destructor
  return *c;
}

constexpr size_t kMaxCached = 1024;

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
  hssize_t n = H5Sget_simple_extent_npoints(id);
  if (n < 0) {
    H5Sclose(id);
    return nullptr;
  }
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

void clear_space_caches() {
  SpaceCache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  close_all(c.decoded);
}

}  // namespace tessera_vol
