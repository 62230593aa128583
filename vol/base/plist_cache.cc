// plist_cache.cc — see plist_cache.h.
#include "vol/base/plist_cache.h"

#include "vol/base/error.h"  // fail_arg

namespace tessera_vol {

DcplFacts read_dcpl_facts(hid_t dcpl) {
  DcplFacts f;
  f.layout = H5Pget_layout(dcpl);
  if (f.layout < 0) fail_arg("cannot read the layout from the dcpl");
  if (H5Pget_alloc_time(dcpl, &f.alloc_time) < 0) fail_arg("cannot read the allocation time from the dcpl");
  f.nfilters = H5Pget_nfilters(dcpl);
  if (f.nfilters < 0) fail_arg("cannot read the filters from the dcpl");
  if (H5Pfill_value_defined(dcpl, &f.fill_defined) < 0) fail_arg("cannot read the fill value from the dcpl");
  if (H5Pget_fill_time(dcpl, &f.fill_time) < 0) fail_arg("cannot read the fill time from the dcpl");
  if (f.layout == H5D_CHUNKED) {
    hsize_t ch[H5S_MAX_RANK];
    const int r = H5Pget_chunk(dcpl, H5S_MAX_RANK, ch);
    if (r < 0) fail_arg("cannot read the chunk dimensions from the dcpl");
    f.chunk.assign(ch, ch + r);
  }
  f.external_count = H5Pget_external_count(dcpl);
  if (f.external_count < 0) fail_arg("cannot read the external file list from the dcpl");
  hbool_t track = 1;
  if (H5Pget_obj_track_times(dcpl, &track) < 0) fail_arg("cannot read time tracking from the dcpl");
  f.track_times = track != 0;
  unsigned order = 0;
  if (H5Pget_attr_creation_order(dcpl, &order) < 0) fail_arg("cannot read attribute creation order from the dcpl");
  f.attr_order_tracked = (order & H5P_CRT_ORDER_TRACKED) != 0;
  return f;
}

PlistCache::Entry& PlistCache::entry(const std::string& enc) {
  auto it = entries_.find(enc);
  if (it != entries_.end()) return it->second;
  if (entries_.size() >= 256) clear();  // handles keep their own references
  return entries_.emplace(enc, Entry()).first->second;
}

hid_t PlistCache::decoded(const std::string& enc) {
  Entry& e = entry(enc);
  if (!e.decoded) {
    e.decoded = true;
    e.id = H5Pdecode(enc.data());
  }
  return e.id;
}

std::shared_ptr<const DcplFacts> PlistCache::dcpl_facts(const std::string& enc, hid_t source) {
  Entry& e = entry(enc);
  if (!e.facts) {
    if (source < 0) source = decoded(enc);
    if (source < 0) fail_arg("cannot decode the dataset creation property list");
    e.facts = std::make_shared<const DcplFacts>(read_dcpl_facts(source));
  }
  return e.facts;
}

void PlistCache::clear() {
  for (auto& [enc, e] : entries_)
    if (e.id >= 0) H5Pclose(e.id);
  entries_.clear();
}

}  // namespace tessera_vol
