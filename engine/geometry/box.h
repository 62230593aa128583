// Boxes and selections in an array's index space.
//
// A Box is a hyper-rectangle [lo, hi] (inclusive) — the shape of a dense fragment's piece
// of a tile, of an MBR, of a write.  A Selection is the Cartesian product of one sorted,
// disjoint interval list per dimension: it represents a box, a strided (regular) HDF5
// hyperslab, or any product of index sets, and its cells are ordered row-major, which is
// exactly the order in which HDF5 pairs a regular hyperslab with a memory buffer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

constexpr int kMaxRank = 32;
constexpr uint64_t kUnlimited = ~uint64_t{0};

using Coords = std::vector<uint64_t>;

struct Box {
  Coords lo, hi;  // inclusive
  Box() = default;
  Box(Coords l, Coords h) : lo(std::move(l)), hi(std::move(h)) {}
  int rank() const { return static_cast<int>(lo.size()); }
  uint64_t cells() const;  // saturates at UINT64_MAX
  bool contains(const uint64_t* c) const;
  bool contains(const Box& b) const;
  bool intersects(const Box& b) const;
  bool operator==(const Box& o) const { return lo == o.lo && hi == o.hi; }
  std::string to_string() const;
};

// Intersection of a and b; returns false if empty.
bool intersect(const Box& a, const Box& b, Box* out);
// Appends to `out` disjoint boxes whose union is a \ b (at most 2*rank boxes).
void subtract(const Box& a, const Box& b, std::vector<Box>* out);

// Grows bb to cover b; when !any, bb becomes b (and any true).
void extend(Box& bb, bool& any, const Box& b);

// The bounding box of what is added to it (empty until the first add).
struct BoundingBox {
  Box box;
  bool any = false;
  void add(const Box& b);
  void add(const uint64_t* cell, int rank);  // one cell
};

struct Interval {
  uint64_t lo, hi;  // inclusive
  uint64_t len() const { return hi - lo + 1; }
};

// One dimension of a Selection: sorted disjoint intervals plus each interval's rank
// (number of selected indices before it).
struct DimSelection {
  std::vector<Interval> ivs;
  std::vector<uint64_t> rank0;
  uint64_t count = 0;
  void finalize();  // computes rank0/count; requires sorted, disjoint, non-empty intervals
  // Index of the first interval with hi >= x (ivs.size() if none).
  size_t lower(uint64_t x) const;
  // If x is selected, sets *rank and returns true.
  bool rank_of(uint64_t x, uint64_t* rank) const;
};

class Selection {
 public:
  Selection() = default;
  static Selection from_box(const Box& b);
  // HDF5-style regular hyperslab: start, stride, count, block per dimension.
  // Throws kInvalidArgument if blocks overlap (block > stride with count > 1).
  static Selection from_hyperslab(const Coords& start, const Coords& stride, const Coords& count,
                                  const Coords& block);
  // Arbitrary per-dimension interval lists (sorted/merged here; overlaps are merged).
  static Selection from_intervals(std::vector<std::vector<Interval>> dims);

  int rank() const { return static_cast<int>(dims_.size()); }
  const DimSelection& dim(int d) const { return dims_[d]; }
  uint64_t cells() const;  // saturates
  bool empty() const;
  const Box& bbox() const { return bbox_; }
  bool is_box() const;
  // Row-major rank of a selected cell; false if not selected.
  bool position_of(const uint64_t* c, uint64_t* pos) const;
  // Element strides of a dense row-major buffer of the selection's shape.
  void dense_strides(uint64_t* out) const;

 private:
  void finish();
  std::vector<DimSelection> dims_;
  Box bbox_;
};

}  // namespace tessera
