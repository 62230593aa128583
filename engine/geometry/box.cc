#include "engine/geometry/box.h"

#include <algorithm>

#include "engine/util/error.h"

namespace tessera {

uint64_t Box::cells() const {
  uint64_t n = 1;
  for (size_t d = 0; d < lo.size(); ++d) {
    if (hi[d] < lo[d]) return 0;
    uint64_t len = hi[d] - lo[d] + 1;
    if (len == 0 || n > UINT64_MAX / len) return UINT64_MAX;
    n *= len;
  }
  return n;
}

bool Box::contains(const uint64_t* c) const {
  for (size_t d = 0; d < lo.size(); ++d)
    if (c[d] < lo[d] || c[d] > hi[d]) return false;
  return true;
}

bool Box::contains(const Box& b) const {
  for (size_t d = 0; d < lo.size(); ++d)
    if (b.lo[d] < lo[d] || b.hi[d] > hi[d]) return false;
  return true;
}

bool Box::intersects(const Box& b) const {
  for (size_t d = 0; d < lo.size(); ++d)
    if (b.hi[d] < lo[d] || b.lo[d] > hi[d]) return false;
  return true;
}

std::string Box::to_string() const {
  std::string s = "[";
  for (size_t d = 0; d < lo.size(); ++d) {
    if (d) s += ", ";
    s += std::to_string(lo[d]) + ":" + std::to_string(hi[d]);
  }
  return s + "]";
}

bool intersect(const Box& a, const Box& b, Box* out) {
  const size_t r = a.lo.size();
  out->lo.resize(r);
  out->hi.resize(r);
  for (size_t d = 0; d < r; ++d) {
    out->lo[d] = std::max(a.lo[d], b.lo[d]);
    out->hi[d] = std::min(a.hi[d], b.hi[d]);
    if (out->lo[d] > out->hi[d]) return false;
  }
  return true;
}

void extend(Box& bb, bool& any, const Box& b) {
  if (!any) {
    bb = b;
    any = true;
    return;
  }
  for (int d = 0; d < b.rank(); ++d) {
    bb.lo[d] = std::min(bb.lo[d], b.lo[d]);
    bb.hi[d] = std::max(bb.hi[d], b.hi[d]);
  }
}

void BoundingBox::add(const Box& b) { extend(box, any, b); }

void BoundingBox::add(const uint64_t* cell, int rank) {
  if (!any) {
    box = Box(Coords(cell, cell + rank), Coords(cell, cell + rank));
    any = true;
    return;
  }
  for (int d = 0; d < rank; ++d) {
    box.lo[d] = std::min(box.lo[d], cell[d]);
    box.hi[d] = std::max(box.hi[d], cell[d]);
  }
}

void subtract(const Box& a, const Box& b, std::vector<Box>* out) {
  Box inter;
  if (!intersect(a, b, &inter)) {
    out->push_back(a);
    return;
  }
  // Peel slabs off dimension by dimension: below and above the intersection in dim d,
  // restricted to the intersection's range in the dims already peeled.
  Box rest = a;
  for (size_t d = 0; d < a.lo.size(); ++d) {
    if (rest.lo[d] < inter.lo[d]) {
      Box s = rest;
      s.hi[d] = inter.lo[d] - 1;
      out->push_back(std::move(s));
    }
    if (rest.hi[d] > inter.hi[d]) {
      Box s = rest;
      s.lo[d] = inter.hi[d] + 1;
      out->push_back(std::move(s));
    }
    rest.lo[d] = inter.lo[d];
    rest.hi[d] = inter.hi[d];
  }
}

void DimSelection::finalize() {
  rank0.resize(ivs.size());
  count = 0;
  for (size_t i = 0; i < ivs.size(); ++i) {
    rank0[i] = count;
    count += ivs[i].len();
  }
}

size_t DimSelection::lower(uint64_t x) const {
  auto it = std::lower_bound(ivs.begin(), ivs.end(), x,
                             [](const Interval& iv, uint64_t v) { return iv.hi < v; });
  return static_cast<size_t>(it - ivs.begin());
}

bool DimSelection::rank_of(uint64_t x, uint64_t* rank) const {
  size_t i = lower(x);
  if (i == ivs.size() || ivs[i].lo > x) return false;
  *rank = rank0[i] + (x - ivs[i].lo);
  return true;
}

Selection Selection::from_box(const Box& b) {
  Selection s;
  s.dims_.resize(b.lo.size());
  for (size_t d = 0; d < b.lo.size(); ++d) {
    if (b.lo[d] > b.hi[d]) throw_error(Errc::kInvalidArgument, "empty box " + b.to_string());
    s.dims_[d].ivs.push_back({b.lo[d], b.hi[d]});
  }
  s.finish();
  return s;
}

Selection Selection::from_hyperslab(const Coords& start, const Coords& stride, const Coords& count,
                                    const Coords& block) {
  const size_t r = start.size();
  if (stride.size() != r || count.size() != r || block.size() != r)
    throw_error(Errc::kInvalidArgument, "hyperslab: start/stride/count/block ranks differ");
  std::vector<std::vector<Interval>> dims(r);
  for (size_t d = 0; d < r; ++d) {
    if (count[d] == 0 || block[d] == 0)
      throw_error(Errc::kInvalidArgument, "hyperslab: zero count or block");
    if (count[d] > 1 && block[d] > stride[d])
      throw_error(Errc::kInvalidArgument, "hyperslab: blocks overlap (block > stride)");
    if (count[d] > (uint64_t{1} << 40)) throw_error(Errc::kInvalidArgument, "hyperslab: count too large");
    if (block[d] > (kUnlimited - start[d]) / count[d])
      throw_error(Errc::kInvalidArgument, "hyperslab: extends past 2^64 cells");
    if (count[d] == 1 || stride[d] == block[d]) {
      // Adjacent blocks are one interval: HDF5 normalizes a plain box selection to
      // count = extent, stride = block = 1 (a 2048-row box would be 2048 intervals).
      dims[d].push_back({start[d], start[d] + count[d] * block[d] - 1});
      continue;
    }
    dims[d].reserve(count[d]);
    for (uint64_t i = 0; i < count[d]; ++i) {
      uint64_t lo = start[d] + i * stride[d];
      dims[d].push_back({lo, lo + block[d] - 1});
    }
  }
  return from_intervals(std::move(dims));
}

Selection Selection::from_intervals(std::vector<std::vector<Interval>> dims) {
  Selection s;
  s.dims_.resize(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    auto& v = dims[d];
    for (auto& iv : v)
      if (iv.lo > iv.hi) throw_error(Errc::kInvalidArgument, "selection: interval with lo > hi");
    std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.lo < b.lo; });
    auto& out = s.dims_[d].ivs;
    for (const auto& iv : v) {
      if (!out.empty() && iv.lo <= out.back().hi + 1 && out.back().hi != UINT64_MAX) {
        out.back().hi = std::max(out.back().hi, iv.hi);
      } else {
        out.push_back(iv);
      }
    }
  }
  s.finish();
  return s;
}

void Selection::finish() {
  bbox_.lo.assign(dims_.size(), 0);
  bbox_.hi.assign(dims_.size(), 0);
  for (size_t d = 0; d < dims_.size(); ++d) {
    dims_[d].finalize();
    if (!dims_[d].ivs.empty()) {
      bbox_.lo[d] = dims_[d].ivs.front().lo;
      bbox_.hi[d] = dims_[d].ivs.back().hi;
    }
  }
}

uint64_t Selection::cells() const {
  uint64_t n = 1;
  for (const auto& d : dims_) {
    if (d.count == 0) return 0;
    if (n > UINT64_MAX / d.count) return UINT64_MAX;
    n *= d.count;
  }
  return n;
}

bool Selection::empty() const {
  for (const auto& d : dims_)
    if (d.count == 0) return true;
  return false;
}

bool Selection::is_box() const {
  for (const auto& d : dims_)
    if (d.ivs.size() != 1) return false;
  return true;
}

void Selection::dense_strides(uint64_t* out) const {
  uint64_t s = 1;
  for (int d = rank() - 1; d >= 0; --d) {
    out[d] = s;
    s *= dims_[d].count;
  }
}

bool Selection::position_of(const uint64_t* c, uint64_t* pos) const {
  uint64_t p = 0;
  for (size_t d = 0; d < dims_.size(); ++d) {
    uint64_t r;
    if (!dims_[d].rank_of(c[d], &r)) return false;
    p = p * dims_[d].count + r;
  }
  *pos = p;
  return true;
}

}  // namespace tessera
