#include "engine/array/compact_cells.h"

#include <algorithm>
#include <cstring>

#include "engine/util/error.h"
#include "engine/geometry/strided_copy.h"

namespace tessera {

namespace {
constexpr char kCellsMagic[8] = {'T', 'S', 'R', 'A', 'C', 'E', 'L', 'L'};
}  // namespace

CompactCells::CompactCells(const Schema& schema)
    : rank_(schema.rank()), es_(schema.elem_size),
      fill_(schema.fill_value(), schema.fill_value() + schema.elem_size) {
  uint64_t n = 1;
  for (int d = rank_ - 1; d >= 0; --d) {
    strides_[d] = n;
    n *= schema.extent[d];
  }
  total_ = n * es_;
}

std::string CompactCells::encode() const {
  std::string out(kCellsMagic, sizeof kCellsMagic);
  out.append(reinterpret_cast<const char*>(image()), total_);
  return out;
}

void CompactCells::decode(std::string_view record, const std::string& what) {
  if (record.size() != sizeof kCellsMagic + total_ || std::memcmp(record.data(), kCellsMagic, sizeof kCellsMagic) != 0)
    throw_error(Errc::kCorrupt, what + ": not the cells of this compact array (" + std::to_string(record.size()) +
                                    " bytes, expected " + std::to_string(sizeof kCellsMagic + total_) + ")");
  cells_.assign(record.begin() + sizeof kCellsMagic, record.end());
}

void CompactCells::materialize() {
  if (written() || total_ == 0) return;
  cells_.resize(total_);  // zeros: HDF5's default fill value, left as is
  if (std::all_of(fill_.begin(), fill_.end(), [](uint8_t b) { return b == 0; })) return;
  // One element, then doubling copies: log2(n) memcpy calls instead of one per element.
  std::memcpy(cells_.data(), fill_.data(), es_);
  for (uint64_t done = es_; done < total_; done *= 2)
    std::memcpy(cells_.data() + done, cells_.data(), std::min(done, total_ - done));
}

const uint8_t* CompactCells::image() const {
  if (written()) return cells_.data();
  if (fill_image_.size() != total_) {
    fill_image_.resize(total_);
    for (uint64_t off = 0; off < total_; off += es_) std::memcpy(fill_image_.data() + off, fill_.data(), es_);
  }
  return fill_image_.data();
}

uint64_t CompactCells::offset(const uint64_t* c) const {
  uint64_t o = 0;
  for (int d = 0; d < rank_; ++d) o += c[d] * strides_[d];
  return o * es_;
}

// A Selection is the product of one interval list per dimension: one box per combination
// of intervals (the odometer below), each copied with strided_copy.
template <class F>
void CompactCells::for_each_box(const Selection& sel, const uint64_t* sstride, F f) const {
  if (sel.empty()) return;
  uint64_t counts[kMaxRank];
  for (int d = 0; d < rank_; ++d) counts[d] = sel.dim(d).ivs.size();
  for_each_index(rank_, counts, [&](const uint64_t* iv) {
    uint64_t lo[kMaxRank], shape[kMaxRank], soff = 0;
    for (int d = 0; d < rank_; ++d) {
      const DimSelection& ds = sel.dim(d);
      lo[d] = ds.ivs[iv[d]].lo;
      shape[d] = ds.ivs[iv[d]].len();
      soff += ds.rank0[iv[d]] * sstride[d];
    }
    f(lo, shape, soff);
  });
}

void CompactCells::write(const Selection& sel, const uint8_t* src, const uint64_t* sstride) {
  materialize();
  for_each_box(sel, sstride, [&](const uint64_t* lo, const uint64_t* shape, uint64_t soff) {
    strided_copy(rank_, shape, src + soff * es_, sstride, cells_.data() + offset(lo), strides_, es_);
  });
}

void CompactCells::read(const Selection& sel, uint8_t* dst, const uint64_t* dstride) const {
  const uint8_t* img = image();
  for_each_box(sel, dstride, [&](const uint64_t* lo, const uint64_t* shape, uint64_t doff) {
    strided_copy(rank_, shape, img + offset(lo), strides_, dst + doff * es_, dstride, es_);
  });
}

void CompactCells::write_points(const uint64_t* coords, size_t n, const uint8_t* values) {
  if (n == 0) return;
  materialize();
  for (size_t i = 0; i < n; ++i) std::memcpy(cells_.data() + offset(coords + i * rank_), values + i * es_, es_);
}

void CompactCells::read_points(const uint64_t* coords, size_t n, uint8_t* dst) const {
  const uint8_t* img = image();
  for (size_t i = 0; i < n; ++i) std::memcpy(dst + i * es_, img + offset(coords + i * rank_), es_);
}

}  // namespace tessera
