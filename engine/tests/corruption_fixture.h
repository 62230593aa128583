// The Corruption fixture (corruption_test.cc) and what the damaged-file tests share
// (corruption_inline_test.cc): a small container built once — catalog records, four
// arrays with dense, sparse, fill and consolidated fragments, with and without filters —
// with the truth of each array and of the catalog after each commit, and the checks that
// a damaged copy reads identically or fails naming the damaged file.
#pragma once
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_format.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace corruption_rig {

using testutil::Rng;
using testutil::status_str;
using KV = std::vector<std::pair<std::string, std::string>>;

constexpr uint64_t kDefaultSeed = 0xC0DDA9;

struct ArrayTruth {
  uint64_t id;
  std::string dir;
  Schema schema;
  std::vector<uint8_t> data;      // full read of the current extent
  std::vector<uint64_t> points;   // every cell, for read_points
};

class Corruption : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = testutil::base_seed(kDefaultSeed);
    std::printf("[ seed     ] Corruption: seed %llu\n", static_cast<unsigned long long>(seed_));
    cpath_ = tmp_.sub("c");
    build();
    for (const std::string& rel : testutil::list_files(cpath_)) original_[rel] = read_file(Env::posix(), join_path(cpath_, rel));
  }

  // ---- building the container ------------------------------------------------------------
  void commit_kv(Container& c, std::vector<std::pair<std::string, std::string>> puts, std::vector<std::string> dels) {
    CatalogBatch b;
    for (auto& [k, v] : puts) b.put(k, v);
    for (auto& k : dels) b.del(k);
    c.catalog().commit(b);
    note_catalog(c);
  }
  void note_catalog(Container& c) {
    record_ends_.push_back(testutil::file_size(join_path(cpath_, "catalog.log")));
    states_.push_back(c.catalog().scan(""));
  }
  uint64_t add_array(Container& c, const Schema& s) {
    uint64_t id;
    Status st = c.create_array(s, &id);
    EXPECT_TRUE(st.ok()) << status_str(st);
    note_catalog(c);
    return id;
  }
  static Schema schema(Coords extent, Coords max, Coords tile, uint32_t es, ElementKind kind, std::vector<Filter> f) {
    Schema s;
    s.extent = std::move(extent);
    s.max_extent = std::move(max);
    s.tile_extent = std::move(tile);
    s.elem_size = es;
    s.kind = kind;
    s.fill.assign(es, 0x3C);
    s.filters = FilterPipeline(std::move(f), es);
    return s;
  }
  // Array operations commit to the catalog too (fragment file records): every commit is
  // noted, so that each catalog record has its state.
  void note_if_grown() {
    if (cur_ && testutil::file_size(join_path(cpath_, "catalog.log")) != record_ends_.back()) note_catalog(*cur_);
  }
  void write_box(Array& a, const Box& b, Rng& rng) {
    std::vector<uint8_t> v(b.cells() * a.schema().elem_size);
    rng.fill(v.data(), v.size());
    Status st = a.write(Selection::from_box(b), v.data());
    ASSERT_TRUE(st.ok()) << status_str(st);
    note_if_grown();
  }
  void write_points(Array& a, size_t n, Rng& rng, bool flush = true) {
    const int r = a.schema().rank();
    std::vector<uint64_t> c;
    for (size_t i = 0; i < n; ++i)
      for (int d = 0; d < r; ++d) c.push_back(rng.below(a.schema().extent[d]));
    std::vector<uint8_t> v(n * a.schema().elem_size);
    rng.fill(v.data(), v.size());
    ASSERT_TRUE(a.write_points(c.data(), n, v.data()).ok());
    if (flush) {
      ASSERT_TRUE(a.flush().ok());
    }
    note_if_grown();
  }

  void build() {
    Rng rng(seed_);
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(cpath_, Container::CreateMode::kExclusive, &c).ok());
    cur_ = c.get();
    note_catalog(*c);  // the empty log
    commit_kv(*c, {{"obj/root", "group"}, {"obj/a", std::string(50, 'a')}}, {});
    using F = FilterType;
    ArrayOptions o;
    o.direct_cells = 16;
    // Fragment files here (inline fragments: InlineFragments below); schema records and
    // extent changes are catalog commits, each noted as a catalog state.
    o.inline_fragment_bytes = 0;
    // A: 2-D ints, shuffle+deflate, tiles not dividing the extent; dense, sparse, consolidated.
    uint64_t a_id = add_array(*c, schema({24, 20}, {24, 20}, {8, 8}, 4, ElementKind::kInt, {{F::kShuffle, 0}, {F::kDeflate, 5}}));
    {
      std::unique_ptr<Array> a;
      ASSERT_TRUE(c->open_array(a_id, true, o, &a).ok());
      write_box(*a, Box({0, 0}, {23, 19}), rng);
      write_box(*a, Box({2, 2}, {5, 13}), rng);
      write_points(*a, 30, rng);
      ASSERT_TRUE(a->consolidate(1, 2).ok());
      note_if_grown();
      write_points(*a, 10, rng);
    }
    commit_kv(*c, {{"link/a", "1"}}, {"obj/a"});
    // B: 1-D, 12-byte opaque elements, zstd; a fill fragment from shrink + regrow and a
    // spilled dense piece.
    uint64_t b_id = add_array(*c, schema({100}, {200}, {16}, 12, ElementKind::kOpaque, {{F::kZstd, 0}}));
    {
      std::unique_ptr<Array> a;
      ASSERT_TRUE(c->open_array(b_id, true, o, &a).ok());
      write_box(*a, Box({0}, {99}), rng);
      ASSERT_TRUE(a->set_extent({60}).ok());
      note_catalog(*c);
      ASSERT_TRUE(a->set_extent({110}).ok());
      note_catalog(*c);
      write_box(*a, Box({70}, {79}), rng);  // buffered, spilled as a dense piece
      ASSERT_TRUE(a->flush().ok());
      note_if_grown();
      write_points(*a, 5, rng);
    }
    // C: 3-D, lz4, column-major cells, small sparse tiles; consolidated then more sparse.
    Schema cs = schema({6, 5, 7}, {kUnlimited, 5, 7}, {2, 3, 4}, 8, ElementKind::kUInt, {{F::kLz4, 0}});
    cs.cell_order = Order::kColMajor;
    cs.sparse_capacity = 4;
    uint64_t c_id = add_array(*c, cs);
    {
      std::unique_ptr<Array> a;
      ASSERT_TRUE(c->open_array(c_id, true, o, &a).ok());
      write_points(*a, 25, rng);
      write_box(*a, Box({1, 0, 1}, {4, 4, 5}), rng);
      ASSERT_TRUE(a->consolidate_all().ok());
      note_if_grown();
      write_points(*a, 9, rng);
    }
    // D: 1-D bytes, no filters; a dense and a sparse fragment.
    uint64_t d_id = add_array(*c, schema({50}, {50}, {10}, 1, ElementKind::kUInt, {}));
    {
      std::unique_ptr<Array> a;
      ASSERT_TRUE(c->open_array(d_id, true, o, &a).ok());
      write_box(*a, Box({5}, {44}), rng);
      write_points(*a, 12, rng);
    }
    commit_kv(*c, {{"attr/z", "last"}, {"obj/b", "dataset"}}, {});
    for (uint64_t id : {a_id, b_id, c_id, d_id}) {
      ArrayTruth t;
      t.id = id;
      t.dir = c->array_dir(id);
      std::unique_ptr<Array> a;
      ASSERT_TRUE(c->open_array(id, false, ArrayOptions(), &a).ok());
      t.schema = a->schema();
      t.data = read_all(*a, nullptr);
      ASSERT_FALSE(t.data.empty());
      t.points = all_cells(t.schema.extent);
      arrays_.push_back(std::move(t));
    }
    cur_ = nullptr;
    c.reset();
    ASSERT_EQ(states_.back(), reopen_catalog_state());
  }

  KV reopen_catalog_state() {
    std::unique_ptr<Container> c;
    EXPECT_TRUE(Container::open(cpath_, false, &c).ok());
    return c ? c->catalog().scan("") : KV{};
  }

  static std::vector<uint64_t> all_cells(const Coords& e) {
    std::vector<uint64_t> out;
    IndexSetsAll sets(e);
    testutil::for_each_product(sets.sets, [&](const uint64_t* c, const uint64_t*) {
      out.insert(out.end(), c, c + e.size());
    });
    return out;
  }
  struct IndexSetsAll {
    testutil::IndexSets sets;
    explicit IndexSetsAll(const Coords& e) : sets(e.size()) {
      for (size_t d = 0; d < e.size(); ++d)
        for (uint64_t x = 0; x < e[d]; ++x) sets[d].push_back(x);
    }
  };

  // Full read of the current extent; on error returns {} and sets *err.
 public:
  static std::vector<uint8_t> read_all_public(Array& a) { return read_all(a, nullptr); }

 protected:
  static std::vector<uint8_t> read_all(Array& a, Status* err) {
    const Schema& s = a.schema();
    Coords hi(s.rank());
    for (int d = 0; d < s.rank(); ++d) hi[d] = s.extent[d] - 1;
    std::vector<uint8_t> v(s.domain().cells() * s.elem_size);
    Status st = a.read(Selection::from_box(Box(Coords(s.rank(), 0), hi)), v.data());
    if (!st.ok()) {
      if (err) *err = st;
      else ADD_FAILURE() << status_str(st);
      return {};
    }
    return v;
  }

  // ---- checking a damaged container --------------------------------------------------------
  struct Result {
    bool any_error = false;   // some open/read failed (always naming the damaged file)
    std::string first_error;
    KV catalog;               // catalog contents (if the container opened)
    bool catalog_opened = false;
  };

  // Opens the container and every array and reads everything.  Any error must name
  // `damaged` (a path relative to the container); any data read must equal the original.
  Result open_and_read_all(const std::string& damaged, const std::string& what, bool writable_container = false) {
    Result r;
    auto check_err = [&](const Status& st, const std::string& op) {
      r.any_error = true;
      if (r.first_error.empty()) r.first_error = op + ": " + status_str(st);
      EXPECT_NE(st.message().find(damaged), std::string::npos)
          << what << ": " << op << " failed with a message that does not name the damaged file " << damaged << ": "
          << status_str(st);
      EXPECT_NE(st.code(), Errc::kInternal) << what << ": " << op << ": " << status_str(st);
    };
    std::unique_ptr<Container> c;
    {
      Status st = Container::open(cpath_, writable_container, &c);
      if (!st.ok()) {
        check_err(st, "Container::open");
        return r;  // the arrays' schemas are catalog records
      }
      r.catalog_opened = true;
      r.catalog = c->catalog().scan("");
      // A torn catalog tail is an older catalog state, and the arrays' schemas are
      // catalog records: the arrays are then in an older state too (checked above as
      // catalog states; a real crash only ever loses the commit in flight).
      if (r.catalog != states_.back()) return r;
    }
    for (const ArrayTruth& t : arrays_) {
      std::unique_ptr<Array> a;
      Status st = c->open_array(t.id, false, ArrayOptions(), &a);
      if (!st.ok()) {
        check_err(st, "Array::open " + t.dir);
        continue;
      }
      if (a->schema().extent != t.schema.extent) {
        ADD_FAILURE() << what << ": array " << t.id << " opened with a different extent";
        continue;
      }
      Status err;
      std::vector<uint8_t> got = read_all(*a, &err);
      if (!err.ok()) {
        check_err(err, "read " + t.dir);
      } else if (got != t.data) {
        ADD_FAILURE() << what << ": array " << t.id << " returned WRONG DATA without an error";
      }
      size_t n = t.points.size() / t.schema.rank();
      std::vector<uint8_t> pv(n * t.schema.elem_size);
      st = a->read_points(t.points.data(), n, pv.data());
      if (!st.ok()) {
        check_err(st, "read_points " + t.dir);
      } else if (pv != t.data) {  // all cells in row-major order == the full read
        ADD_FAILURE() << what << ": array " << t.id << " read_points returned WRONG DATA without an error";
      }
    }
    return r;
  }

  void put_file(const std::string& rel, const std::vector<uint8_t>& bytes) {
    File f = File::open_rw(Env::posix(), join_path(cpath_, rel), false);
    f.truncate(0);
    if (!bytes.empty()) f.pwrite_all(bytes.data(), bytes.size(), 0);
    f.close();
  }
  void restore(const std::string& rel) { put_file(rel, original_.at(rel)); }

  // Documented reserved / ignored fields that no check covers.  Everything else must be
  // detected (or, for the catalog's last record, handled as a torn tail).
  static bool unchecked_ok(const std::string& rel, uint64_t off, uint64_t size) {
    if (rel == "catalog.log") return off >= 12 && off < 16;  // header: u32 reserved, "ignored by readers"
    if (rel.size() > 4 && rel.compare(rel.size() - 4, 4, ".tfr") == 0) {
      if (off >= 12 && off < kFragHeaderSize) return true;  // header: u32 flags + 16 reserved bytes
      uint64_t t = size - kFragTrailerSize;
      // TODO(engine): the trailer's u32 version (trailer bytes 24..27) is never read, so it
      // is neither validated nor covered by a checksum; the u32 after it is reserved.
      if (off >= t + 24 && off < t + 32) return true;
    }
    return false;
  }

  const Schema& schema_of(const std::string& rel) const {
    const std::string full = join_path(cpath_, rel);
    for (const ArrayTruth& t : arrays_)
      if (full.compare(0, t.dir.size() + 1, t.dir + "/") == 0) return t.schema;
    ADD_FAILURE() << "no array owns " << rel;
    return arrays_[0].schema;
  }

  // Index into states_ of what catalog.log must read as when truncated to `len` bytes.
  size_t records_whole_before(uint64_t len) const {
    size_t k = 0;  // states_[k]: after the last record ending at or before len
    for (size_t i = 0; i < record_ends_.size(); ++i)
      if (record_ends_[i] <= len) k = i;
    return k;
  }

  uint64_t seed_;
  testutil::TempDir tmp_{"tessera_corrupt"};
  std::string cpath_;
  Container* cur_ = nullptr;           // the container build() writes
  std::vector<uint64_t> record_ends_;  // catalog.log size after creation and after each commit
  std::vector<KV> states_;             // catalog contents at those points
  std::vector<ArrayTruth> arrays_;
  std::map<std::string, std::vector<uint8_t>> original_;
};
}  // namespace corruption_rig
}  // namespace tessera
