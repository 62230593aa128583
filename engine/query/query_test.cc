// Value indexes and queries (query_term.h, query.h, index_builder.h) against an
// independent model: a plain array of the current values (the fill value where nothing
// is defined), compared with long double arithmetic written here, not the engine's.
// Random element types (every integer size, float32/64, either byte order, NaN and
// infinities), 1-D to 4-D, box and point writes (dense and sparse fragments), box and
// point erases, extent changes, consolidations, flushes, reopens, index builds with
// random precision and bin limits (so bins straddle constants and candidates are
// checked), dropped indexes and index_on_write; after each step random subarray
// comparisons (strides included) are checked — counts and positions — and the
// answer's bookkeeping shows the index was used where one exists.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/index/index_format.h"
#include "engine/query/query.h"
#include "engine/index/query_parse.h"
#include "engine/testing/testutil.h"
#include "engine/index/value_bins.h"

namespace tessera {
namespace {

using testutil::Rng;
using testutil::status_str;

constexpr uint64_t kDefaultSeed = 0x9E3A16;

struct Shape {
  Coords extent, tile;
};

struct TypeCase {
  ElementKind kind;
  uint32_t size;
};

const TypeCase kTypes[] = {{ElementKind::kInt, 1},  {ElementKind::kInt, 2},  {ElementKind::kInt, 4},
                           {ElementKind::kInt, 8},  {ElementKind::kUInt, 1}, {ElementKind::kUInt, 2},
                           {ElementKind::kUInt, 4}, {ElementKind::kUInt, 8}, {ElementKind::kFloat, 4},
                           {ElementKind::kFloat, 8}};

// The model's view of one element: its exact value, or NaN.
struct Value {
  long double v = 0;
  bool nan = false;
};

Value decode(const uint8_t* p, const TypeCase& t, bool be) {
  uint8_t b[8];
  for (uint32_t i = 0; i < t.size; ++i) b[i] = be ? p[t.size - 1 - i] : p[i];
  Value out;
  switch (t.kind) {
    case ElementKind::kInt: {
      int64_t x = 0;
      if (t.size == 1) { int8_t y; std::memcpy(&y, b, 1); x = y; }
      if (t.size == 2) { int16_t y; std::memcpy(&y, b, 2); x = y; }
      if (t.size == 4) { int32_t y; std::memcpy(&y, b, 4); x = y; }
      if (t.size == 8) { std::memcpy(&x, b, 8); }
      out.v = static_cast<long double>(x);
      break;
    }
    case ElementKind::kUInt: {
      uint64_t x = 0;
      std::memcpy(&x, b, t.size);
      out.v = static_cast<long double>(x);
      break;
    }
    default: {
      double x;
      if (t.size == 4) { float y; std::memcpy(&y, b, 4); x = y; }
      else std::memcpy(&x, b, 8);
      out.nan = std::isnan(x);
      out.v = x;
    }
  }
  return out;
}

// Element bytes of a value (stored order), saturating into the type's range.
void encode(long double v, bool nan, const TypeCase& t, bool be, uint8_t* out) {
  uint8_t b[8] = {};
  if (t.kind == ElementKind::kFloat) {
    if (t.size == 4) { float y = nan ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(v); std::memcpy(b, &y, 4); }
    else { double y = nan ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(v); std::memcpy(b, &y, 8); }
  } else if (t.kind == ElementKind::kInt) {
    const long double lo = -std::ldexp(1.0L, int(t.size * 8 - 1)), hi = std::ldexp(1.0L, int(t.size * 8 - 1)) - 1;
    int64_t x = static_cast<int64_t>(std::min(std::max(v, lo), hi));
    std::memcpy(b, &x, t.size);
  } else {
    const long double hi = std::ldexp(1.0L, int(t.size * 8)) - 1;
    uint64_t x = static_cast<uint64_t>(std::min(std::max(v, 0.0L), hi));
    std::memcpy(b, &x, t.size);
  }
  for (uint32_t i = 0; i < t.size; ++i) out[i] = be ? b[t.size - 1 - i] : b[i];
}

bool model_holds(const Value& x, long double lit, bool lit_nan, CmpOp op) {
  if (x.nan || lit_nan) return op == CmpOp::kNe;
  switch (op) {
    case CmpOp::kLt: return x.v < lit;
    case CmpOp::kLe: return x.v <= lit;
    case CmpOp::kGt: return x.v > lit;
    case CmpOp::kGe: return x.v >= lit;
    case CmpOp::kEq: return x.v == lit;
    case CmpOp::kNe: return x.v != lit;
  }
  return false;
}

std::vector<uint64_t> positions(const Bitmap& b) {
  std::vector<uint64_t> v;
  b.for_each_batch([&](const uint64_t* xs, size_t n) { v.insert(v.end(), xs, xs + n); });
  return v;
}

// Positions the runs' answers decided from index bins, and values they compared.
uint64_t g_decided = 0, g_compared = 0;

class QueryRun : testutil::ArrayRun {
 public:
  QueryRun(const Shape& shape, uint64_t seed) : ArrayRun(shape.extent, seed, "tessera_query"), shape_(shape) {}

  void run(int steps) {
    ASSERT_TRUE(Container::create(dir_.sub("c.tsr"), Container::CreateMode::kExclusive, &cont_).ok());
    type_ = kTypes[rng_.below(sizeof kTypes / sizeof kTypes[0])];
    be_ = rng_.chance(0.2);
    Schema s;
    s.extent = s.max_extent = shape_.extent;
    s.tile_extent = shape_.tile;
    s.elem_size = type_.size;
    s.kind = type_.kind;
    s.big_endian = be_;
    s.sparse_capacity = 1 + rng_.below(20);
    fill_.assign(type_.size, 0);
    if (rng_.chance(0.5)) {
      encode(random_value(), false, type_, be_, fill_.data());
      s.fill = fill_;
    }
    if (rng_.chance(0.3)) s.filters = FilterPipeline({{FilterType::kDeflate, 1}}, type_.size);
    ASSERT_TRUE(cont_->create_array(s, &id_).ok());
    opts_.durable_writes = rng_.chance(0.3);
    opts_.direct_cells = 1 + rng_.below(64);
    opts_.buffer_budget = rng_.chance(0.5) ? 300 : (64 << 20);
    opts_.inline_fragment_bytes = rng_.chance(0.6) ? 0 : (64 << 10);
    opts_.index_on_write = rng_.chance(0.3);
    opts_.index = random_index_options();
    uint64_t cells = 1;
    for (uint64_t e : shape_.extent) cells *= e;
    model_.resize(cells * type_.size);
    for (uint64_t i = 0; i < cells; ++i) std::memcpy(&model_[i * type_.size], fill_.data(), type_.size);
    reopen();
    for (int step = 0; step < steps && !::testing::Test::HasFailure(); ++step) {
      op();
      for (int k = 0; k < 4 && !::testing::Test::HasFailure(); ++k) check_query();
      if (::testing::Test::HasFailure())
        ADD_FAILURE() << "seed " << seed_ << " rank " << rank_ << " type " << int(type_.kind) << "/" << type_.size
                      << (be_ ? " big-endian" : "") << " failed at step " << step << "; ops:\n" << log_;
    }
  }

 private:
  IndexOptions random_index_options() {
    IndexOptions o;
    o.precision = static_cast<uint32_t>(rng_.range(1, 4));
    o.max_bins = static_cast<uint32_t>(rng_.chance(0.5) ? rng_.range(2, 8) : rng_.range(16, 1024));
    o.chunk_cells = rng_.chance(0.5) ? rng_.range(1, 64) : 1 << 16;
    return o;
  }
  long double random_value() {
    const uint64_t r = rng_.below(10);
    if (type_.kind != ElementKind::kFloat) {
      if (r == 0) return rng_.chance(0.5) ? -1e30L : 1e30L;  // saturates to the type's extremes
      const long double v = static_cast<long double>(static_cast<int64_t>(rng_.below(41)) - 20);
      return type_.kind == ElementKind::kUInt ? v + 20 : v;
    }
    if (r == 0) return static_cast<long double>(rng_.gen()()) * 1e-10L - 3e8L;
    if (r == 1) return rng_.chance(0.5) ? HUGE_VALL : -HUGE_VALL;
    return static_cast<long double>(static_cast<int64_t>(rng_.below(81)) - 40) / 8;
  }
  void random_element(uint8_t* out) {
    const bool nan = type_.kind == ElementKind::kFloat && rng_.chance(0.05);
    encode(random_value(), nan, type_, be_, out);
  }
  uint64_t lin(const uint64_t* c) const {
    uint64_t k = 0;
    for (int d = 0; d < rank_; ++d) k = k * shape_.extent[d] + c[d];
    return k;
  }
  template <class F>
  static void each_cell(const Box& b, F f) {
    testutil::each_cell(b, f);
  }
  void set_fill(const Coords& c) { std::memcpy(&model_[lin(c.data()) * type_.size], fill_.data(), type_.size); }

  void op() {
    const size_t es = type_.size;
    const uint64_t r = rng_.below(100);
    if (r < 25) {
      Box b = random_box(rng_.chance(0.4) ? 3 : 64);
      std::vector<uint8_t> v(b.cells() * es);
      size_t i = 0;
      // Runs of equal values now and then: bins of smooth data hold runs.
      each_cell(b, [&](const Coords& c) {
        if (i == 0 || rng_.chance(0.5)) random_element(&v[i * es]);
        else std::memcpy(&v[i * es], &v[(i - 1) * es], es);
        std::memcpy(&model_[lin(c.data()) * es], &v[i * es], es);
        ++i;
      });
      log_ += "write " + b.to_string() + "\n";
      expect_ok(arr_->write(Selection::from_box(b), v.data()), "write");
    } else if (r < 38) {
      size_t n = rng_.range(1, 30);
      std::vector<uint64_t> pts;
      std::vector<uint8_t> v(n * es);
      for (size_t i = 0; i < n; ++i) {
        Coords c = random_cell();
        pts.insert(pts.end(), c.begin(), c.end());
        random_element(&v[i * es]);
        std::memcpy(&model_[lin(c.data()) * es], &v[i * es], es);
      }
      log_ += "write " + std::to_string(n) + " points\n";
      expect_ok(arr_->write_points(pts.data(), n, v.data()), "write_points");
    } else if (r < 46) {
      Box b = random_box(rng_.chance(0.5) ? 4 : 64);
      each_cell(b, [&](const Coords& c) { set_fill(c); });
      log_ += "erase " + b.to_string() + "\n";
      expect_ok(arr_->erase({b}), "erase");
    } else if (r < 52) {
      size_t n = rng_.range(1, 20);
      std::vector<uint64_t> pts;
      for (size_t i = 0; i < n; ++i) {
        Coords c = random_cell();
        pts.insert(pts.end(), c.begin(), c.end());
        set_fill(c);
      }
      log_ += "erase " + std::to_string(n) + " points\n";
      expect_ok(arr_->erase_points(pts.data(), n), "erase_points");
    } else if (r < 60) {
      size_t n = arr_->fragments().size();
      log_ += "consolidate\n";
      if (n >= 2 && rng_.chance(0.5)) {
        size_t first = rng_.below(n), last = std::min(n - 1, first + rng_.below(4));
        expect_ok(arr_->consolidate(first, last), "consolidate");
      } else {
        expect_ok(arr_->consolidate_all(), "consolidate_all");
      }
    } else if (r < 64) {
      Coords e(rank_);
      for (int d = 0; d < rank_; ++d) e[d] = rng_.range(1, shape_.extent[d]);
      Box all(Coords(rank_, 0), shape_.extent);
      for (auto& x : all.hi) --x;
      each_cell(all, [&](const Coords& c) {
        for (int d = 0; d < rank_; ++d)
          if (c[d] >= e[d]) return set_fill(c);
      });
      extent_ = e;
      log_ += "set_extent\n";
      expect_ok(arr_->set_extent(e), "set_extent");
    } else if (r < 82) {
      IndexBuild b;
      b.rebuild = rng_.chance(0.2);
      log_ += "build_index\n";
      expect_ok(arr_->build_index(random_index_options(), &b), "build_index");
      IndexInfo info;
      expect_ok(arr_->index_info(&info), "index_info");
      EXPECT_EQ(info.indexed, info.fragments) << "every file fragment has an index after build_index";
      EXPECT_EQ(info.unindexed_cells, 0u);
    } else if (r < 86) {
      log_ += "drop_index\n";
      expect_ok(arr_->drop_index(), "drop_index");
    } else if (r < 93) {
      log_ += "flush\n";
      expect_ok(arr_->flush(), "flush");
    } else {
      log_ += "reopen\n";
      reopen();
    }
  }

  void check_query() {
    // A random subarray: start, stride, count inside the current extent.
    TermQuery q;
    for (int d = 0; d < rank_; ++d) {
      const uint64_t start = rng_.below(extent_[d]);
      const uint64_t stride = rng_.chance(0.7) ? 1 : rng_.range(2, 3);
      const uint64_t max_count = (extent_[d] - 1 - start) / stride + 1;
      const uint64_t count = rng_.chance(0.3) ? max_count : rng_.range(rng_.chance(0.05) ? 0 : 1, max_count);
      q.region.start.push_back(start);
      q.region.stride.push_back(stride);
      q.region.count.push_back(count);
    }
    if (rng_.chance(0.4))  // whole extent: chunks wholly claimed (counts from rows)
      for (int d = 0; d < rank_; ++d) {
        q.region.start[d] = 0;
        q.region.stride[d] = 1;
        q.region.count[d] = extent_[d];
      }
    q.op = static_cast<CmpOp>(rng_.below(6));
    q.want_hits = rng_.chance(0.6);
    // The number: a stored value, one just beside, an integer, NaN or an infinity.
    long double lit = 0;
    bool lit_nan = false;
    std::string text;
    const uint64_t how = rng_.below(10);
    if (how < 5) {
      Value v = decode(&model_[rng_.below(model_.size() / type_.size) * type_.size], type_, be_);
      lit_nan = v.nan;
      lit = v.v;
      if (how == 4 && !lit_nan) lit += rng_.chance(0.5) ? 0.5L : -0.25L;
    } else if (how < 8) {
      lit = static_cast<long double>(static_cast<int64_t>(rng_.below(61)) - 30);
    } else if (how == 8) {
      lit_nan = true;
    } else {
      lit = rng_.chance(0.5) ? HUGE_VALL : -HUGE_VALL;
    }
    if (lit_nan) {
      text = "nan";
    } else if (std::isinf(lit)) {
      text = lit > 0 ? "inf" : "-inf";
    } else if (lit == std::floor(lit) && std::fabs(lit) < 1e18L) {
      text = std::to_string(static_cast<long long>(lit));
    } else {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(lit));
      text = buf;
      lit = std::strtod(buf, nullptr);  // the number as written
    }
    ASSERT_TRUE(Literal::parse(text, &q.lit)) << text;
    // Expected: positions of the region's cells whose value satisfies it.
    std::vector<uint64_t> want;
    uint64_t total = 1;
    for (uint64_t c : q.region.count) total *= c;
    Coords cell(rank_);
    for (uint64_t p = 0; p < total; ++p) {
      uint64_t rem = p;
      for (int d = rank_ - 1; d >= 0; --d) {
        cell[d] = q.region.start[d] + q.region.stride[d] * (rem % q.region.count[d]);
        rem /= q.region.count[d];
      }
      if (model_holds(decode(&model_[lin(cell.data()) * type_.size], type_, be_), lit, lit_nan, q.op)) want.push_back(p);
    }
    TermAnswer a;
    expect_ok(arr_->evaluate(q, &a), "evaluate");
    g_decided += a.decided;
    g_compared += a.compared;
    const std::string what = std::string("query ") + cmp_op_text(q.op) + " " + text + " over start " +
                             testutil::coords_str(q.region.start.data(), rank_) + " stride " +
                             testutil::coords_str(q.region.stride.data(), rank_) + " count " +
                             testutil::coords_str(q.region.count.data(), rank_);
    EXPECT_EQ(a.count, want.size()) << what;
    if (q.want_hits) {
      std::vector<uint64_t> got = positions(a.hits);
      EXPECT_EQ(got.size(), want.size()) << what;
      for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
        if (got[i] != want[i]) {
          ADD_FAILURE() << what << ": position " << i << " is " << got[i] << ", want " << want[i];
          break;
        }
    }
  }

  Shape shape_;
  TypeCase type_{ElementKind::kInt, 4};
  bool be_ = false;
  std::vector<uint8_t> fill_;
  std::vector<uint8_t> model_;  // every cell of the maximum extent, row-major
};

TEST(Query, ComparisonsMatchAModel) {
  const std::vector<Shape> shapes = {
      {{97}, {16}}, {{23, 19}, {8, 5}}, {{9, 10, 7}, {4, 3, 4}}, {{5, 6, 4, 5}, {2, 3, 2, 4}}, {{300, 40}, {128, 40}}};
  const uint64_t base = testutil::base_seed(kDefaultSeed);
  const int runs = testutil::kSanitized ? 3 : 8, steps = testutil::kSanitized ? 25 : 50;
  for (size_t s = 0; s < shapes.size(); ++s)
    for (int k = 0; k < runs && !::testing::Test::HasFailure(); ++k)
      QueryRun(shapes[s], base + s * 1000 + k).run(steps);
  // Both paths were taken, the index's far more than rarely.
  EXPECT_GT(g_decided, g_compared / 20) << "decided " << g_decided << ", compared " << g_compared;
  EXPECT_GT(g_compared, 0u);
  std::printf("positions decided by index bins %llu, values compared %llu\n", (unsigned long long)g_decided,
              (unsigned long long)g_compared);
}

// ----------------------------------------------------------------- expressions

// Two or three arrays of one shape (or subarrays of equal size), random expressions with
// &&, ||, ! and parentheses, evaluated by run_query and by a model interpreter.
TEST(Query, ExpressionsMatchAModel) {
  const uint64_t seed = testutil::named_seed("Query.Expressions", kDefaultSeed);
  Rng rng(seed);
  testutil::TempDir dir("tessera_query");
  std::unique_ptr<Container> cont;
  ASSERT_TRUE(Container::create(dir.sub("c.tsr"), Container::CreateMode::kExclusive, &cont).ok());
  const Coords ext = {30, 24};
  struct Ds {
    std::string name;
    std::shared_ptr<Array> arr;
    std::vector<float> v;
  };
  std::vector<Ds> ds;
  for (const char* name : {"/a/T", "/a/P", "/b/Q"}) {
    Schema s;
    s.extent = s.max_extent = ext;
    s.tile_extent = {8, 7};
    s.elem_size = 4;
    s.kind = ElementKind::kFloat;
    uint64_t id;
    ASSERT_TRUE(cont->create_array(s, &id).ok());
    std::unique_ptr<Array> a;
    ArrayOptions o;
    o.durable_writes = false;
    o.inline_fragment_bytes = 0;
    ASSERT_TRUE(cont->open_array(id, true, o, &a).ok());
    Ds d{name, std::shared_ptr<Array>(std::move(a)), std::vector<float>(30 * 24)};
    for (auto& x : d.v) x = static_cast<float>(rng.below(40)) / 4;
    ASSERT_TRUE(d.arr->write(Selection::from_box(Box({0, 0}, {29, 23})), d.v.data()).ok());
    ASSERT_TRUE(d.arr->flush().ok());
    // Half of them indexed, and a later overwrite of a corner (newest wins).
    if (rng.chance(0.5)) {
      IndexBuild b;
      IndexOptions io;
      io.max_bins = 6;
      ASSERT_TRUE(d.arr->build_index(io, &b).ok());
    }
    std::vector<float> corner(5 * 5, 1.25f);
    ASSERT_TRUE(d.arr->write(Selection::from_box(Box({0, 0}, {4, 4})), corner.data()).ok());
    for (uint64_t r = 0; r < 5; ++r)
      for (uint64_t c = 0; c < 5; ++c) d.v[r * 24 + c] = 1.25f;
    ds.push_back(std::move(d));
  }
  QueryResolver resolve = [&](const std::string& name, bool regex) {
    std::vector<QueryDataset> out;
    for (auto& d : ds) {
      const bool hit = regex ? std::regex_search(d.name, std::regex(name)) : d.name == name || "/a/" + name == d.name;
      if (hit) out.push_back({d.name, d.arr});
    }
    return out;
  };
  // Subarrays of 10 x 12 elements in each: rows r0.., columns c0..; stride 2 in one.
  struct Sub {
    const char* text;
    uint64_t r0, rs, c0, cs;
  };
  const Sub subs[] = {{"[0:10, 0:12]", 0, 1, 0, 1}, {"[10:20, 12:24]", 10, 1, 12, 1}, {"[0:20:2, 0:24:2]", 0, 2, 0, 2}};
  for (int iter = 0; iter < 300 && !::testing::Test::HasFailure(); ++iter) {
    const Sub& sub = subs[rng.below(3)];
    // A random expression as text and as a model evaluator over the 120 rows.
    std::function<std::pair<std::string, std::vector<bool>>(int)> gen = [&](int depth) -> std::pair<std::string, std::vector<bool>> {
      const uint64_t k = depth >= 3 ? 0 : rng.below(5);
      if (k <= 1) {
        const size_t which = rng.below(3);
        const char* ops[] = {"<", "<=", ">", ">=", "==", "!="};
        const int op = static_cast<int>(rng.below(6));
        const float t = static_cast<float>(rng.below(40)) / 4;
        char num[32];
        std::snprintf(num, sizeof num, "%g", t);
        const std::string name = which == 2 ? "re\"Q$\"" : (rng.chance(0.5) ? ds[which].name : ds[which].name.substr(3));
        std::vector<bool> m(120);
        for (uint64_t i = 0; i < 10; ++i)
          for (uint64_t j = 0; j < 12; ++j) {
            const float v = ds[which].v[(sub.r0 + i * sub.rs) * 24 + sub.c0 + j * sub.cs];
            bool h = false;
            switch (op) {
              case 0: h = v < t; break;
              case 1: h = v <= t; break;
              case 2: h = v > t; break;
              case 3: h = v >= t; break;
              case 4: h = v == t; break;
              case 5: h = v != t; break;
            }
            m[i * 12 + j] = h;
          }
        return {name + sub.text + " " + ops[op] + " " + num, m};
      }
      if (k == 2) {
        auto [t, m] = gen(depth + 1);
        for (size_t i = 0; i < m.size(); ++i) m[i] = !m[i];
        return {"!(" + t + ")", m};
      }
      auto [ta, ma] = gen(depth + 1);
      auto [tb, mb] = gen(depth + 1);
      for (size_t i = 0; i < ma.size(); ++i) ma[i] = k == 3 ? (ma[i] && mb[i]) : (ma[i] || mb[i]);
      return {"(" + ta + (k == 3 ? " && " : " || ") + tb + ")", ma};
    };
    auto [text, model] = gen(0);
    QueryResult r;
    const bool hits = rng.chance(0.7);
    Status st = run_query(text, resolve, hits, &r);
    ASSERT_TRUE(st.ok()) << text << ": " << status_str(st);
    uint64_t want = 0;
    for (bool b : model) want += b;
    EXPECT_EQ(r.count, want) << text;
    if (hits) {
      std::vector<uint64_t> got = positions(r.hits), exp;
      for (size_t i = 0; i < model.size(); ++i)
        if (model[i]) exp.push_back(i);
      EXPECT_EQ(got, exp) << text;
      EXPECT_EQ(r.shape, (Coords{10, 12})) << text;
      if (!got.empty()) {
        uint64_t cell[2];
        query_cell(r, got[0], cell);
        EXPECT_EQ(cell[0], sub.r0 + got[0] / 12 * sub.rs);
        EXPECT_EQ(cell[1], sub.c0 + got[0] % 12 * sub.cs);
      }
    }
  }
}

}  // namespace
}  // namespace tessera
