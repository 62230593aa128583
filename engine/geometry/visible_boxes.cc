// visible_boxes.cc — see visible_boxes.h.
#include "engine/geometry/visible_boxes.h"

namespace tessera {

bool visible_boxes(const std::vector<Box>& in, size_t max_out, std::vector<VisibleBox>* out) {
  out->clear();
  std::vector<VisibleBox> next;
  std::vector<Box> parts;
  for (size_t i = 0; i < in.size(); ++i) {
    const Box& b = in[i];
    next.clear();
    for (VisibleBox& v : *out) {
      if (!v.box.intersects(b)) {
        next.push_back(std::move(v));
        continue;
      }
      parts.clear();
      subtract(v.box, b, &parts);  // what of the older write b leaves visible
      for (Box& p : parts) next.push_back({std::move(p), v.src});
    }
    next.push_back({b, i});
    // Boxes never merge again once split, so the count only grows with more inputs.
    if (next.size() > max_out) return false;
    out->swap(next);
  }
  return true;
}

}  // namespace tessera
