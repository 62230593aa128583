// Schema (schema.h): round trips, validation messages, and corrupt encodings.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/util/error.h"
#include "engine/schema/schema.h"

using namespace tessera;

namespace {

Schema sample() {
  Schema s;
  s.extent = {10, 0, 7};
  s.max_extent = {kUnlimited, 5, 7};
  s.tile_extent = {4, 5, 7};
  s.elem_size = 8;
  s.kind = ElementKind::kFloat;
  s.big_endian = true;
  s.fill.assign(8, 0x11);
  s.filters = FilterPipeline({{FilterType::kShuffle, 0}, {FilterType::kZlib, 3}}, 8);
  s.cell_order = Order::kColMajor;
  s.sparse_capacity = 123;
  return s;
}

Errc code_of(const Schema& s) {
  try {
    s.validate();
    return Errc::kOk;
  } catch (const Error& e) {
    return e.code();
  }
}

}  // namespace

TEST(Schema, RoundTrip) {
  for (bool compact : {false, true}) {
    Schema s = sample();
    if (compact) {
      s.max_extent = s.extent;
      s.filters = FilterPipeline({}, 8);
      s.compact = true;
    }
    std::vector<uint8_t> b = s.serialize();
    Schema r = Schema::deserialize(b.data(), b.size(), "test");
    EXPECT_EQ(r.extent, s.extent);
    EXPECT_EQ(r.max_extent, s.max_extent);
    EXPECT_EQ(r.tile_extent, s.tile_extent);
    EXPECT_EQ(r.elem_size, 8u);
    EXPECT_EQ(r.kind, ElementKind::kFloat);
    EXPECT_TRUE(r.big_endian);
    EXPECT_EQ(r.fill, s.fill);
    EXPECT_EQ(r.filters, s.filters);
    EXPECT_EQ(r.cell_order, Order::kColMajor);
    EXPECT_EQ(r.sparse_capacity, 123u);
    EXPECT_EQ(r.compact, compact);
    EXPECT_EQ(r.serialize(), b);
  }
}

TEST(Schema, DerivedValues) {
  Schema s = sample();
  EXPECT_EQ(s.tile_cells(), 140u);
  EXPECT_EQ(s.domain().cells(), 0u) << "an extent of 0 has no cells";
  EXPECT_EQ(s.fill_value()[0], 0x11);
  s.fill.clear();
  EXPECT_EQ(s.fill_value()[7], 0) << "no fill: zeros";
}

TEST(Schema, ValidationNamesTheProblem) {
  EXPECT_EQ(code_of(sample()), Errc::kOk);
  Schema s = sample();
  s.tile_extent = {4, 0, 7};
  EXPECT_EQ(code_of(s), Errc::kInvalidArgument) << "zero tile extent";
  s = sample();
  s.extent = {10, 6, 7};  // beyond the maximum 5
  EXPECT_EQ(code_of(s), Errc::kInvalidArgument) << "extent beyond max";
  s = sample();
  s.fill.assign(3, 0);
  EXPECT_EQ(code_of(s), Errc::kInvalidArgument) << "fill of the wrong size";
  s = sample();
  s.tile_extent = {4, 5};
  EXPECT_EQ(code_of(s), Errc::kInvalidArgument) << "rank mismatch";
}

TEST(Schema, CorruptEncodingsAreErrorsNotCrashes) {
  std::vector<uint8_t> b = sample().serialize();
  for (size_t n = 0; n < b.size(); ++n) {
    try {
      (void)Schema::deserialize(b.data(), n, "test");
      ADD_FAILURE() << "a schema cut at " << n << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kCorrupt) << n;
    }
  }
  for (size_t i = 0; i < b.size(); ++i) {
    std::vector<uint8_t> c = b;
    c[i] ^= 0xff;
    try {
      (void)Schema::deserialize(c.data(), c.size(), "test");
    } catch (const Error& e) {
      // (A damaged version field reads as a format this build does not know.)
      EXPECT_TRUE(e.code() == Errc::kCorrupt || e.code() == Errc::kInvalidArgument ||
                  e.code() == Errc::kUnsupported)
          << i;
    }
  }
}

// docs/format.md "Array schema": one layout, version 5 — the compact byte always, then the
// MultiMap cube for that tile order only.
TEST(Schema, OneVersionWithEveryFieldAlwaysPresent) {
  Schema s = sample();
  std::vector<uint8_t> b = s.serialize();
  uint32_t ver;
  std::memcpy(&ver, &b[8], 4);
  EXPECT_EQ(ver, 5u);
  ASSERT_GE(b.size(), 2u);
  EXPECT_EQ(b[b.size() - 2], 0) << "var";
  EXPECT_EQ(b[b.size() - 1], 0) << "compact, written although not set";
  s.set_layout(Order::kMultiMap, Order::kColMajor);
  ASSERT_EQ(s.multimap_cube.size(), 3u);
  std::vector<uint8_t> m = s.serialize();
  ASSERT_EQ(m.size(), b.size() + 3 * 8) << "the cube follows the compact byte";
  uint64_t k0;
  std::memcpy(&k0, &m[b.size()], 8);
  EXPECT_EQ(k0, s.multimap_cube[0]);
  Schema r = Schema::deserialize(m.data(), m.size(), "test");
  EXPECT_EQ(r.order(), s.order());
}

// Versions 1 to 4 came from development builds only (docs/format.md, "Format versions"):
// refused, naming the record, the version found and the one read; a newer one likewise.
TEST(Schema, OtherVersionsAreRefusedNamingBoth) {
  const std::vector<uint8_t> good = sample().serialize();
  for (uint32_t v : {1u, 2u, 3u, 4u, 6u}) {
    std::vector<uint8_t> b = good;
    std::memcpy(&b[8], &v, 4);
    try {
      (void)Schema::deserialize(b.data(), b.size(), "array schema 'x/schema'");
      ADD_FAILURE() << "version " << v << " was read";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_EQ(e.code(), Errc::kUnsupported) << m;
      EXPECT_NE(m.find("array schema 'x/schema'"), std::string::npos) << m;
      EXPECT_NE(m.find("format version " + std::to_string(v) + " is not supported"), std::string::npos) << m;
      EXPECT_NE(m.find("reads version 5 only"), std::string::npos) << m;
      EXPECT_EQ(m.find("development build") != std::string::npos, v < 5) << m;
    }
  }
}
