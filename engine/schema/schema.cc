#include "engine/schema/schema.h"

#include <cctype>

#include "engine/util/bytes.h"
#include "engine/util/error.h"
#include "engine/schema/multimap.h"

namespace tessera {

namespace {
const char* const kOrderNames[] = {"row-major", "column-major", "z-order", "hilbert", "multimap"};
}

const char* order_name(Order o) {
  const auto i = static_cast<unsigned>(o);
  return i <= kLastOrder ? kOrderNames[i] : "unknown";
}

const char* order_names() { return "row-major, column-major, z-order, hilbert, multimap"; }

bool parse_order(const std::string& name, Order* out) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (unsigned i = 0; i <= kLastOrder; ++i)
    if (n == kOrderNames[i]) return *out = static_cast<Order>(i), true;
  if (n == "row") return *out = Order::kRowMajor, true;
  if (n == "column" || n == "col") return *out = Order::kColMajor, true;
  if (n == "zorder" || n == "morton") return *out = Order::kZOrder, true;
  return false;
}

bool parse_layout(const std::string& spec, Order* tile, Order* cell, std::string* why) {
  const size_t colon = spec.find(':');
  const std::string t = spec.substr(0, colon);
  if (!parse_order(t, tile)) {
    *why = "unknown layout '" + spec + "' (known: " + order_names() +
           ", each optionally followed by :row-major or :column-major)";
    return false;
  }
  if (colon == std::string::npos) {
    *cell = default_cell_order(*tile);
    return true;
  }
  const std::string c = spec.substr(colon + 1);
  if (!parse_order(c, cell)) {
    *why = "unknown cell order '" + c + "' in layout '" + spec + "' (known: row-major, column-major)";
    return false;
  }
  if (*cell != Order::kRowMajor && *cell != Order::kColMajor) {
    // Not a missing feature that silently falls back: refused, with the reason.
    *why = std::string("cell order ") + order_name(*cell) + " in layout '" + spec +
           "' is not supported: cells inside a tile are row-major or column-major, whose beams read the "
           "fewest 64 KiB blocks (docs/layouts.md)";
    return false;
  }
  return true;
}

Order default_cell_order(Order tile) { return tile == Order::kMultiMap ? Order::kColMajor : Order::kRowMajor; }

std::string layout_name(Order tile, Order cell) {
  std::string n = order_name(tile);
  if (cell != default_cell_order(tile)) n += std::string(":") + order_name(cell);
  return n;
}

void StorageOrder::validate(int rank) const {
  auto bad = [](const std::string& m) { throw_error(Errc::kInvalidArgument, "schema: " + m); };
  if (cell != Order::kRowMajor && cell != Order::kColMajor)
    bad(std::string("cell order must be row-major or column-major (") + order_name(cell) +
        " is a tile order: docs/layouts.md)");
  if (static_cast<uint8_t>(tile) > kLastOrder) bad("unknown tile order");
  if ((tile == Order::kMultiMap) != !cube.empty())
    bad("a MultiMap basic cube is given exactly when the tile order is multimap");
  if (!cube.empty()) {
    if (cube.size() != static_cast<size_t>(rank)) bad("MultiMap basic cube rank differs");
    uint64_t cells = 1;
    for (uint64_t k : cube) {
      if (k == 0 || k > (uint64_t{1} << 20)) bad("MultiMap basic cube extents must be 1..2^20 tiles");
      cells *= k;
      if (cells > (uint64_t{1} << 32)) bad("MultiMap basic cube holds more than 2^32 tiles");
    }
  }
}

void Schema::set_tile_order(Order o) {
  tile_order = o;
  multimap_cube = o == Order::kMultiMap ? choose_multimap_cube(*this) : Coords();
}

Box Schema::domain() const {
  Box b;
  b.lo.assign(extent.size(), 0);
  b.hi.resize(extent.size());
  for (size_t d = 0; d < extent.size(); ++d) b.hi[d] = extent[d] == 0 ? 0 : extent[d] - 1;
  for (size_t d = 0; d < extent.size(); ++d)
    if (extent[d] == 0) b.lo[d] = 1;  // lo > hi marks the box empty
  return b;
}

uint64_t Schema::tile_cells() const {
  uint64_t n = 1;
  for (uint64_t t : tile_extent) n *= t;
  return n;
}

const uint8_t* Schema::fill_value() const {
  static const uint8_t zeros[1 << 20] = {};  // elem_size <= 1 MiB (validate); zero pages cost nothing
  if (!fill.empty()) return fill.data();
  return zeros;
}

void Schema::validate() const {
  auto bad = [](const std::string& m) { throw_error(Errc::kInvalidArgument, "schema: " + m); };
  const size_t r = extent.size();
  if (r < 1 || r > static_cast<size_t>(kMaxRank)) bad("rank must be 1..32");
  if (max_extent.size() != r || tile_extent.size() != r) bad("extent/max/tile ranks differ");
  uint64_t tc = 1;
  for (size_t d = 0; d < r; ++d) {
    if (max_extent[d] != kUnlimited && extent[d] > max_extent[d])
      bad("extent exceeds maximum in dimension " + std::to_string(d));
    if (tile_extent[d] == 0) bad("tile extent is zero in dimension " + std::to_string(d));
    if (tile_extent[d] > (uint64_t{1} << 32)) bad("tile extent too large");
    if (tc > (uint64_t{1} << 40) / tile_extent[d]) bad("tile has too many cells");
    tc *= tile_extent[d];
  }
  if (elem_size == 0 || elem_size > (1u << 28)) bad("element size must be 1 byte .. 256 MiB");
  if (fill.empty() && elem_size > (1u << 20)) bad("elements over 1 MiB need an explicit fill value");
  if (tc * elem_size > (uint64_t{1} << 32)) bad("a tile may hold at most 4 GiB");
  if (!fill.empty() && fill.size() != elem_size) bad("fill value size differs from element size");
  if (kind == ElementKind::kFloat && elem_size != 4 && elem_size != 8) bad("float elements must be 4 or 8 bytes");
  if ((kind == ElementKind::kInt || kind == ElementKind::kUInt) &&
      elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8)
    bad("integer elements must be 1, 2, 4 or 8 bytes");
  if (sparse_capacity == 0 || sparse_capacity > (uint64_t{1} << 26)) bad("sparse capacity must be 1..2^26");
  if (filters.elem_size() != elem_size && !filters.empty()) bad("filter pipeline element size differs");
  if (var && (elem_size != kVarDescriptorSize || !fill.empty() || kind != ElementKind::kOpaque))
    bad("variable-length arrays have 32-byte opaque descriptors and no fill value");
  filters.validate();
  order().validate(static_cast<int>(r));
  if (compact) {
    if (var || !filters.empty()) bad("compact arrays hold fixed-size unfiltered cells");
    for (size_t d = 0; d < r; ++d)
      if (max_extent[d] != extent[d]) bad("compact arrays have a fixed extent");
    uint64_t bytes = elem_size;
    for (size_t d = 0; d < r; ++d) {
      if (extent[d] != 0 && bytes > kCompactMaxBytes / extent[d]) bad("compact arrays hold at most 64 KiB");
      bytes *= extent[d];
    }
  }
}

std::vector<uint8_t> Schema::serialize() const {
  ByteWriter w;
  w.bytes("TSRASCHM", 8);
  w.u32(kSchemaVersion);
  w.u32(static_cast<uint32_t>(extent.size()));
  for (size_t d = 0; d < extent.size(); ++d) {
    w.u64(extent[d]);
    w.u64(max_extent[d]);
    w.u64(tile_extent[d]);
  }
  w.u32(elem_size);
  w.u8(static_cast<uint8_t>(kind));
  w.u8(big_endian ? 1 : 0);
  w.u8(static_cast<uint8_t>(cell_order));
  w.u8(static_cast<uint8_t>(tile_order));
  w.u64(sparse_capacity);
  w.u32(static_cast<uint32_t>(fill.size()));
  w.bytes(fill.data(), fill.size());
  filters.serialize(w);
  w.u8(var ? 1 : 0);
  w.u8(compact ? 1 : 0);
  for (uint64_t k : multimap_cube) w.u64(k);
  return std::move(w.buf());
}

Schema Schema::deserialize(const uint8_t* p, size_t n, const std::string& what) {
  ByteReader r(p, n, what);
  char magic[8];
  r.bytes(magic, 8);
  if (std::string(magic, 8) != "TSRASCHM") r.fail("bad schema magic");
  const uint32_t ver = r.u32();
  if (ver != kSchemaVersion) throw_error(Errc::kUnsupported, unsupported_version(what, ver, kSchemaVersion));
  Schema s;
  uint32_t rank = r.u32();
  if (rank < 1 || rank > static_cast<uint32_t>(kMaxRank)) r.fail("bad rank");
  for (uint32_t d = 0; d < rank; ++d) {
    s.extent.push_back(r.u64());
    s.max_extent.push_back(r.u64());
    s.tile_extent.push_back(r.u64());
  }
  s.elem_size = r.u32();
  uint8_t kind = r.u8();
  if (kind > 3) r.fail("bad element kind");
  s.kind = static_cast<ElementKind>(kind);
  s.big_endian = r.u8() != 0;
  uint8_t co = r.u8(), to = r.u8();
  if (co > 1 || to > kLastOrder) r.fail("unknown cell/tile order");
  s.cell_order = static_cast<Order>(co);
  s.tile_order = static_cast<Order>(to);
  s.sparse_capacity = r.u64();
  uint32_t fs = r.u32();
  if (fs > r.remaining()) r.fail("fill value truncated");
  s.fill.resize(fs);
  r.bytes(s.fill.data(), fs);
  s.filters = FilterPipeline::deserialize(r);
  uint8_t var = r.u8();
  if (var > 1) r.fail("bad variable-length flag");
  s.var = var == 1;
  uint8_t compact = r.u8();
  if (compact > 1) r.fail("bad compact flag");
  s.compact = compact == 1;
  if (s.tile_order == Order::kMultiMap)
    for (uint32_t d = 0; d < rank; ++d) s.multimap_cube.push_back(r.u64());
  if (!r.done()) r.fail("trailing bytes");
  try {
    s.validate();
  } catch (const Error& e) {
    r.fail(e.what());
  }
  return s;
}

}  // namespace tessera
