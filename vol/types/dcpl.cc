// dcpl.cc — HDF5 dcpl/type/space -> tessera::Schema (see dcpl.h).
#include "vol/types/dcpl.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/util/checked.h"
#include "tessera/layout_prop.h"
#include "vol/base/error.h"
#include "vol/types/stored_type.h"
#include "vol/types/vlen.h"

namespace tessera_vol {

namespace {

constexpr uint64_t kAutoTileBytes = 1 << 20;  // tile size for contiguous/compact layouts

// Tiles of about 1 MiB for a layout without chunks: whole trailing dimensions first
// (row-major, so a row-major read of the dataset touches tiles sequentially).
tessera::Coords auto_tiles(const tessera::Coords& dims, uint64_t es) {
  const int r = static_cast<int>(dims.size());
  tessera::Coords t(r, 1);
  uint64_t budget = std::max<uint64_t>(1, kAutoTileBytes / std::max<uint64_t>(es, 1));
  for (int d = r - 1; d >= 0; --d) {
    uint64_t ext = std::max<uint64_t>(dims[d], 1);
    t[d] = std::min(ext, budget);
    if (t[d] < ext) break;  // partial dimension: earlier ones stay 1
    budget /= t[d];
    if (budget <= 1) break;
  }
  return t;
}

// Lossless codecs from the registry of HDF5 filter ids (those h5py and the hdf5plugin
// package ship) mapped to the engine's codec of the same kind.  Values never change;
// only the compressed bytes differ from what the filter itself would write.
std::optional<tessera::Filter> lossless_equivalent(H5Z_filter_t id) {
  switch (id) {
    case H5Z_FILTER_SZIP: return tessera::Filter{tessera::FilterType::kDeflate, 6};
    case 307:    // bzip2
    case 32001:  // blosc
    case 32015:  // zstd
    case 32026:  // blosc2
      return tessera::Filter{tessera::FilterType::kZstd, 0};
    case 32000:  // lzf (h5py)
    case 32004:  // lz4
    case 32008:  // bitshuffle (+lz4)
      return tessera::Filter{tessera::FilterType::kLz4, 0};
    default: return std::nullopt;
  }
}

// Native's limits for the layouts without chunks (H5Dcontig.c, H5Dcompact.c), which it
// checks at create: a count of elements below 2^63 and a size below 2^64 bytes, and a
// compact dataset's data in one object header message (65531 bytes at most, measured
// with HDF5 1.14.5; h5tests/vol/test_huge_extents.c compares the boundary).
constexpr uint64_t kMaxCompactBytes = 65531;

void check_unchunked_size(const tessera::Coords& extent, hid_t type, H5D_layout_t layout) {
  const std::optional<uint64_t> n = tessera::checked_product(extent.data(), extent.size());
  if (!n || *n > static_cast<uint64_t>(INT64_MAX))
    fail_arg("a contiguous or compact dataset cannot have 2^63 elements or more (as natively; chunked layout can)");
  const std::optional<uint64_t> bytes = tessera::checked_mul(*n, file_type_size(type));
  if (!bytes) fail_arg("size of dataset's storage overflowed (2^64 bytes or more; as natively)");
  if (layout == H5D_COMPACT && *bytes > kMaxCompactBytes)
    fail_arg("compact dataset size is bigger than header message maximum size (" + std::to_string(*bytes) +
             " bytes; at most " + std::to_string(kMaxCompactBytes) + ", as natively)");
}

}  // namespace

int engine_rank(hid_t space) {
  int r = H5Sget_simple_extent_ndims(space);
  if (r < 0) fail_arg("invalid dataspace");
  return std::max(r, 1);
}

tessera::Coords engine_dims(hid_t space) {
  H5S_class_t cls = H5Sget_simple_extent_type(space);
  if (cls == H5S_SCALAR) return {1};
  if (cls == H5S_NULL) return {0};
  hsize_t d[H5S_MAX_RANK];
  int r = H5Sget_simple_extent_dims(space, d, nullptr);
  if (r < 0) fail_arg("invalid dataspace");
  return tessera::Coords(d, d + r);
}

std::string encode_plist(hid_t plist) {
  size_t sz = 0;
  if (H5Pencode2(plist, nullptr, &sz, H5P_DEFAULT) < 0) fail_arg("cannot encode property list");
  std::string s(sz, '\0');
  if (H5Pencode2(plist, s.data(), &sz, H5P_DEFAULT) < 0) fail_arg("cannot encode property list");
  return s;
}

namespace {

// What an application may change in the default dcpl that a dataset's handle reports
// (the names are HDF5's, H5Oprivate.h / H5Dprivate.h), each at most 8 bytes (checked
// with H5Pget_size when the encoding is kept).
constexpr const char* kCheckedProps[] = {"object header flags", "max compact attr", "min dense attr",
                                         "dset_oh_minimize"};
constexpr size_t kNumChecked = sizeof kCheckedProps / sizeof kCheckedProps[0];
using CheckedValues = unsigned char[kNumChecked][8];

struct DefaultDcpl {
  std::mutex mu;
  bool set = false;
  CheckedValues checked;
  std::string enc;
};
DefaultDcpl& default_dcpl() {
  static DefaultDcpl* d = new DefaultDcpl;  // never destroyed: used until library shutdown
  return *d;
}

}  // namespace

std::string dcpl_encoding(hid_t dcpl, bool* default_changed) {
  *default_changed = false;
  const hid_t def = H5P_LST_DATASET_CREATE_ID_g;  // the global: the macro calls H5open
  if (dcpl != H5P_DEFAULT && dcpl != def) return encode_plist(dcpl);
  DefaultDcpl& d = default_dcpl();
  std::lock_guard<std::mutex> g(d.mu);
  if (!d.set) {
    std::string enc = encode_plist(def);
    std::memset(d.checked, 0, sizeof d.checked);
    for (size_t i = 0; i < kNumChecked; ++i) {
      size_t sz = 0;
      // An 8-byte slot for H5Pget to copy into, should a release make one larger.
      if (H5Pget_size(def, kCheckedProps[i], &sz) < 0 || sz > sizeof d.checked[i] ||
          H5Pget(def, kCheckedProps[i], d.checked[i]) < 0)
        return enc;  // not kept: encoded at every create
    }
    d.enc = std::move(enc);
    d.set = true;
    return d.enc;
  }
  for (size_t i = 0; i < kNumChecked && !*default_changed; ++i) {
    unsigned char now[8] = {0};
    *default_changed = H5Pget(def, kCheckedProps[i], now) < 0 || std::memcmp(now, d.checked[i], sizeof now) != 0;
  }
  return d.enc;
}

void clear_default_dcpl() {
  DefaultDcpl& d = default_dcpl();
  std::lock_guard<std::mutex> g(d.mu);
  d.set = false;
  d.enc.clear();
}

std::string encode_type(hid_t type) {
  size_t sz = 0;
  if (H5Tencode(type, nullptr, &sz) < 0) fail_arg("cannot encode datatype");
  std::string s(sz, '\0');
  if (H5Tencode(type, s.data(), &sz) < 0) fail_arg("cannot encode datatype");
  return s;
}

void apply_layout(hid_t dcpl, const std::string& file_default, tessera::Schema* s) {
  // A compact dataset has no tiles to order: the setting and the property are not read
  // (an H5Pexist per small dataset; issue 20).
  if (s->compact) return;
  std::string name = file_default, from = "the connector's layout= setting";
  htri_t have = H5Pexist(dcpl, TESSERA_LAYOUT_PROP);
  if (have < 0) fail_arg("cannot read the layout from the dcpl");
  if (have > 0) {
    char v[TESSERA_LAYOUT_PROP_SIZE] = {};
    if (H5Pget(dcpl, TESSERA_LAYOUT_PROP, v) < 0) fail_arg("cannot read the layout from the dcpl");
    v[sizeof v - 1] = 0;
    name = v;
    from = "tessera_Pset_layout";
  }
  if (name.empty()) return;
  tessera::Order tile, cell;
  std::string why;
  if (!tessera::parse_layout(name, &tile, &cell, &why)) fail_arg(why + " (from " + from + ")");
  s->set_layout(tile, cell);
}

namespace {

// What the schema takes from a dataset's datatype.
struct ElementFacts {
  bool var = false;
  size_t size = 0;  // a cell's bytes (a variable-length descriptor for var)
  tessera::ElementKind kind = tessera::ElementKind::kOpaque;
  bool big_endian = false;
};

ElementFacts read_element_facts(hid_t type) {
  ElementFacts e;
  e.var = type_has_vlen(type);
  e.size = e.var ? tessera::kVarDescriptorSize : H5Tget_size(type);
  if (e.size == 0) fail_arg("invalid datatype (size 0)");
  const size_t es = e.size;
  switch (e.var ? H5T_NO_CLASS : H5Tget_class(type)) {
    case H5T_INTEGER:
      if (es == 1 || es == 2 || es == 4 || es == 8)
        e.kind = H5Tget_sign(type) == H5T_SGN_2 ? tessera::ElementKind::kInt : tessera::ElementKind::kUInt;
      break;
    case H5T_FLOAT:
      if (es == 4 || es == 8) e.kind = tessera::ElementKind::kFloat;
      break;
    default:
      break;  // opaque bytes: no statistics
  }
  if (e.kind != tessera::ElementKind::kOpaque) e.big_endian = H5Tget_order(type) == H5T_ORDER_BE;
  return e;
}

// A library-owned type (stored_type.h library_type: predefined, immutable, its ID never
// reused) is asked once per process; an application's each time (H5Tset_* may change it
// between creations).  Five API calls per dataset of a predefined type before (issue 20).
struct ElementCache {
  std::mutex mu;
  std::unordered_map<hid_t, ElementFacts> known;  // bounded: the library's predefined types
};
ElementCache& element_cache() {
  static ElementCache* c = new ElementCache;  // leaked: used until the last static destructor
  return *c;
}

ElementFacts element_facts(hid_t type) {
  if (!library_type(type)) return read_element_facts(type);
  ElementCache& c = element_cache();
  {
    std::lock_guard<std::mutex> g(c.mu);
    if (auto it = c.known.find(type); it != c.known.end()) return it->second;
  }
  ElementFacts e = read_element_facts(type);
  std::lock_guard<std::mutex> g(c.mu);
  c.known.emplace(type, e);
  return e;
}

}  // namespace

void clear_element_facts() {
  ElementCache& c = element_cache();
  std::lock_guard<std::mutex> g(c.mu);
  c.known.clear();
}

tessera::Schema schema_from_dcpl(hid_t type, const SpaceExtent& space, hid_t dcpl, const DcplFacts& facts) {
  const ElementFacts ef = element_facts(type);
  const bool var = ef.var;
  const size_t es = ef.size;
  const H5S_class_t scls = space.cls;
  if ((scls != H5S_SCALAR && scls != H5S_SIMPLE && scls != H5S_NULL) || space.rank < 0) fail_arg("invalid dataspace");

  tessera::Schema s;
  // engine_dims: a scalar is one cell, a null space none.
  if (scls == H5S_SCALAR) s.extent = {1};
  else if (scls == H5S_NULL) s.extent = {0};
  else s.extent.assign(space.dims, space.dims + space.rank);
  const int r = static_cast<int>(s.extent.size());
  s.max_extent = s.extent;
  bool extendible = false;
  if (scls == H5S_SIMPLE) {
    for (int d = 0; d < r; ++d) {
      const hsize_t mx = space.maxdims[d];
      s.max_extent[d] = mx == H5S_UNLIMITED ? tessera::kUnlimited : mx;
      extendible |= mx != space.dims[d];
    }
  }

  const H5D_layout_t layout = facts.layout;
  if (layout == H5D_VIRTUAL) {
    // No data of its own (virtual_dataset.h): an array that is never written keeps the
    // connector's per-dataset machinery uniform.
    if (facts.nfilters > 0) fail_arg("filters can only be used with chunked layout");
    s.tile_extent = auto_tiles(s.extent, es);
    s.elem_size = static_cast<uint32_t>(es);
    s.var = var;
    return s;
  }
  if (layout == H5D_COMPACT && facts.alloc_time != H5D_ALLOC_TIME_EARLY)
    fail_arg("compact dataset must have early space allocation");
  const int nfilters = facts.nfilters;
  if (layout == H5D_CHUNKED) {
    if (scls != H5S_SIMPLE) fail_arg("chunked layout requires a simple (non-scalar) dataspace");
    const int cr = static_cast<int>(facts.chunk.size());
    if (cr != r)
      fail_arg("chunk rank " + std::to_string(cr) + " differs from dataspace rank " + std::to_string(r));
    s.tile_extent.assign(facts.chunk.begin(), facts.chunk.end());
    for (int d = 0; d < r; ++d)
      if (s.max_extent[d] != tessera::kUnlimited && s.tile_extent[d] > s.max_extent[d] && s.max_extent[d] > 0)
        fail_arg("chunk size must be <= maximum dimension size for fixed-sized dimensions");
  } else {
    // As native HDF5: only chunked datasets can grow or be filtered.
    // (External storage may grow in its first dimension: external_storage.h.)
    if (extendible && facts.external_count <= 0)
      fail_arg("extendible (unlimited or max > current) dataspace requires a chunked layout");
    if (nfilters > 0) fail_arg("filters can only be used with chunked layout");
    s.tile_extent = auto_tiles(s.extent, es);
  }

  if (layout == H5D_CONTIGUOUS || layout == H5D_COMPACT) check_unchunked_size(s.extent, type, layout);
  s.elem_size = static_cast<uint32_t>(es);
  s.var = var;
  s.kind = ef.kind;
  s.big_endian = ef.big_endian;

  // Fill value: the user's, converted to the file type; else zeros (HDF5's default).
  H5D_fill_value_t fv = facts.fill_defined;
  if (facts.fill_time == H5D_FILL_TIME_NEVER) {
    // Native never writes the fill value: never-written elements hold whatever the
    // storage held (unspecified, in practice zeros or old bytes).  Tessera reads them as
    // zeros rather than as the fill value the application asked never to be written.
    fv = H5D_FILL_VALUE_DEFAULT;
  }
  if (var) {
    // Variable-length cells: the engine keeps them empty; the connector reads a user
    // fill value for never-written cells from the stream stored beside the dcpl
    // (vlen_fill.h, dataset.cc substitute_fill).
  } else if (fv == H5D_FILL_VALUE_USER_DEFINED) {
    s.fill.assign(es, 0);
    if (H5Pget_fill_value(dcpl, type, s.fill.data()) < 0) fail_arg("cannot convert the fill value to the dataset type");
  } else if (es > (1u << 20)) {
    s.fill.assign(es, 0);  // the engine's implicit zero fill covers elements up to 1 MiB
  }

  std::vector<tessera::Filter> filters;
  bool value_filter = false;
  for (int i = 0; i < nfilters; ++i) {
    unsigned flags = 0, config = 0;
    size_t nvals = 8;
    unsigned vals[8] = {};
    char name[64];
    H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &nvals, vals, sizeof name, name, &config);
    if (id < 0) fail_arg("cannot read filter " + std::to_string(i) + " of the dcpl");
    // As native (H5Z_can_apply): a mandatory filter that is not registered fails the
    // create; an optional one is skipped.
    const bool optional = (flags & H5Z_FLAG_OPTIONAL) != 0;
    if (id != H5Z_FILTER_DEFLATE && id != H5Z_FILTER_SHUFFLE && id != H5Z_FILTER_FLETCHER32 &&
        H5Zfilter_avail(id) <= 0) {
      if (optional) continue;
      fail_arg("required filter '" + std::string(name) + "' (id " + std::to_string(id) + ") is not registered");
    }
    if (id == H5Z_FILTER_DEFLATE) {
      int level = nvals > 0 ? static_cast<int>(vals[0]) : 6;
      if (level > 0) filters.push_back({tessera::FilterType::kZlib, std::min(level, 9)});
    } else if (id == H5Z_FILTER_SHUFFLE) {
      if (es > 1) filters.push_back({tessera::FilterType::kShuffle, 0});
    } else if (id == H5Z_FILTER_FLETCHER32) {
      // Engine tiles always carry checksums.
    } else if (auto codec = lossless_equivalent(id)) {
      // A lossless codec HDF5 has registered: its output never changes a value, so the
      // tile gets tessera's own codec of the same kind and the dcpl reports the filter
      // as set (docs/vol-datasets.md, "Filters").
      filters.push_back(*codec);
    } else if (var) {
      fail_unsupported("filter '" + std::string(name) + "' (id " + std::to_string(id) +
                       ") on a variable-length datatype is not supported by tessera containers");
    } else {
      // Anything else (scale-offset, n-bit, other registered filters) may change values:
      // the connector runs HDF5's own pipeline over each written chunk (value_filters.h)
      // and the engine stores the values it decodes — compressed with zstd, since the
      // application asked for a compressed dataset.
      value_filter = true;
    }
  }
  if (value_filter && std::none_of(filters.begin(), filters.end(), [](const tessera::Filter& x) {
        return x.type == tessera::FilterType::kZstd || x.type == tessera::FilterType::kDeflate ||
               x.type == tessera::FilterType::kZlib;
      }))
    filters.push_back({tessera::FilterType::kZstd, 0});
  s.filters = tessera::FilterPipeline(std::move(filters), s.elem_size);
  // Small contiguous and compact datasets (HDF5 cannot extend or filter them) become
  // compact arrays: one catalog record of all their cells (engine/array/compact_cells.h).  The
  // container keeps them ordinary when it cannot (parallel files, inline budget spent).
  if (layout != H5D_CHUNKED && !var && s.filters.empty() && facts.external_count <= 0) {
    uint64_t bytes = s.elem_size;
    bool fits = true;
    for (uint64_t e : s.extent) {
      if (e != 0 && bytes > tessera::kCompactMaxBytes / e) fits = false;
      bytes *= e;  // fits == false stops it mattering
    }
    s.compact = fits;
  }
  return s;
}

}  // namespace tessera_vol
