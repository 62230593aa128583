#include "engine/fragment/block_window.h"

#include <algorithm>

namespace tessera {

namespace {

struct Planner {
  const std::vector<ByteRun>& runs;
  const WindowLimits& lim;
  WindowPlan& plan;
  size_t k;
  uint64_t skip;  // bytes of runs[k] already planned
  uint64_t pos;   // next tile byte to plan

  void scratch(uint64_t len) {
    auto& ps = plan.pieces;
    if (!ps.empty() && !ps.back().dst) ps.back().len += len;
    else ps.push_back({len, nullptr, plan.scratch_bytes});
    plan.scratch_bytes += len;
  }
  void direct(uint8_t* dst, uint64_t len) {
    auto& ps = plan.pieces;
    if (!ps.empty() && ps.back().dst && ps.back().dst + ps.back().len == dst) ps.back().len += len;
    else ps.push_back({len, dst, 0});
  }
  void copy(uint8_t* dst, uint64_t len) {
    auto& cs = plan.copies;
    if (!cs.empty() && cs.back().soff + cs.back().len == plan.scratch_bytes && cs.back().dst + cs.back().len == dst)
      cs.back().len += len;
    else cs.push_back({plan.scratch_bytes, len, dst});
    scratch(len);
  }
  // Plans the bytes of block b: runs in place (when `in_place` allows), the rest scratch.
  void block(uint64_t b, bool in_place) {
    const uint64_t end = std::min(lim.tile_size, (b + 1) * lim.block);
    while (pos < end) {
      const uint64_t roff = k < runs.size() ? runs[k].off + skip : end;
      if (roff >= end) {  // no run byte left in the block
        scratch(end - pos);
        pos = end;
        break;
      }
      if (roff > pos) {  // the gap before the run
        scratch(roff - pos);
        pos = roff;
      }
      const uint64_t take = std::min(runs[k].off + runs[k].len, end) - pos;
      uint8_t* dst = runs[k].dst + skip;
      if (in_place && runs[k].len >= lim.direct_min) direct(dst, take);
      else copy(dst, take);
      pos += take;
      skip += take;
      if (skip == runs[k].len) ++k, skip = 0;
    }
  }
};

}  // namespace

void plan_window(const std::vector<ByteRun>& runs, size_t k, uint64_t skip, const WindowLimits& lim,
                 WindowPlan* plan) {
  const uint64_t B = lim.block;
  plan->pieces.clear();
  plan->copies.clear();
  plan->scratch_bytes = 0;
  plan->b0 = (runs[k].off + skip) / B;
  const uint64_t nblocks = (lim.tile_size + B - 1) / B;
  const uint64_t last = (runs.back().off + runs.back().len - 1) / B;
  const uint64_t bmax = std::min({nblocks, last + 1, plan->b0 + std::max<uint64_t>(1, lim.max_bytes / B)});
  Planner p{runs, lim, *plan, k, skip, plan->b0 * B};
  uint64_t b = plan->b0;
  for (; b < bmax; ++b) {
    // What the plan was before this block: restored when the block does not fit.
    const size_t np = plan->pieces.size(), nc = plan->copies.size();
    const uint64_t piece_len = np ? plan->pieces.back().len : 0, copy_len = nc ? plan->copies.back().len : 0;
    const uint64_t scratch = plan->scratch_bytes;
    const Planner before = p;
    p.block(b, true);
    if (plan->pieces.size() <= lim.max_pieces && (plan->scratch_bytes <= lim.max_scratch || b == plan->b0)) continue;
    plan->pieces.resize(np);
    if (np) plan->pieces.back().len = piece_len;
    plan->copies.resize(nc);
    if (nc) plan->copies.back().len = copy_len;
    plan->scratch_bytes = scratch;
    p.k = before.k, p.skip = before.skip, p.pos = before.pos;
    if (b > plan->b0) break;
    p.block(b, false);  // the first block, too fragmented for one preadv: all through scratch
    ++b;
    break;
  }
  plan->b1 = b;
  plan->w0 = plan->b0 * B;
  plan->w1 = std::min(lim.tile_size, b * B);
  plan->next_run = p.k;
  plan->next_skip = p.skip;
}

}  // namespace tessera
