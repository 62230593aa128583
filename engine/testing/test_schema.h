// The int32 schema the commit, fault and stress tests build their arrays from.
#pragma once
#include <utility>

#include "engine/schema/schema.h"

namespace tessera {

inline Schema int32_schema(Coords extent, Coords max, Coords tile) {
  Schema s;
  s.extent = std::move(extent);
  s.max_extent = std::move(max);
  s.tile_extent = std::move(tile);
  s.elem_size = 4;
  s.kind = ElementKind::kInt;
  return s;
}

}  // namespace tessera
