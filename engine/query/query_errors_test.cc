// Query errors: malformed expressions name the position, resolution and shape errors
// name the dataset (query.h, query_parse.h).
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

TEST(Query, MalformedExpressionsNameThePosition) {
  struct Case {
    const char* text;
    const char* pos;   // "at character N"
    const char* says;  // part of the message
  };
  const Case cases[] = {
      {"T >", "at character 4", "expected a number"},
      {"T > 3 &&", "at character 9", "expected a comparison"},
      {"T[0:5) > 3", "at character 6", "expected ',' or ']'"},
      {"T = 3", "at character 3", "'=' alone is not one"},
      {"(T > 3", "at character 7", "to close the '(' at character 1"},
      {"T > P", "at character 5", "comparing two datasets is not supported"},
      {"T > 3 P", "at character 7", "expected '&&', '||' or the end"},
      {"T[-1] > 0", "at character 3", "negative indices"},
      {"T[::0] > 0", "at character 5", "stride of 1 or more"},
      {"\"T > 3", "at character 1", "never closed"},
      {"T > 1.2.3", "at character 5", "expected a number"},
      {"", "at character 1", "expected a comparison"},
      {"3 < 4", "at character 5", "expected a dataset"},
  };
  for (const Case& c : cases) {
    try {
      parse_query(c.text);
      ADD_FAILURE() << c.text << ": parsed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kInvalidArgument) << c.text;
      const std::string m = e.what();
      EXPECT_NE(m.find(c.pos), std::string::npos) << c.text << ": " << m;
      EXPECT_NE(m.find(c.says), std::string::npos) << c.text << ": " << m;
    }
  }
  // A good one: every construct.
  ParsedQuery q = parse_query(" !(T[0:5, :, ::2] >= -1.5e3) || (re\"^/a/.*x$\"[1] != nan && 270 < \"w e\") ");
  ASSERT_EQ(q.vars.size(), 3u);
  EXPECT_EQ(q.vars[0].name, "T");
  EXPECT_EQ(q.vars[0].slices.size(), 3u);
  EXPECT_TRUE(q.vars[1].regex);
  EXPECT_TRUE(q.vars[1].slices[0].single);
  EXPECT_EQ(q.vars[2].name, "w e");
  EXPECT_EQ(q.root->kind, QueryNode::kOr);
  EXPECT_EQ(q.root->b->b->op, CmpOp::kGt) << "270 < x is x > 270";
}

TEST(Query, ResolutionAndShapeErrors) {
  testutil::TempDir dir("tessera_query");
  std::unique_ptr<Container> cont;
  ASSERT_TRUE(Container::create(dir.sub("c.tsr"), Container::CreateMode::kExclusive, &cont).ok());
  auto make = [&](Coords ext, ElementKind kind, uint32_t es) {
    Schema s;
    s.extent = s.max_extent = ext;
    s.tile_extent = ext;
    s.elem_size = es;
    s.kind = kind;
    uint64_t id;
    EXPECT_TRUE(cont->create_array(s, &id).ok());
    std::unique_ptr<Array> a;
    EXPECT_TRUE(cont->open_array(id, true, ArrayOptions{}, &a).ok());
    return std::shared_ptr<Array>(std::move(a));
  };
  std::map<std::string, std::shared_ptr<Array>> all = {{"/x", make({10, 4}, ElementKind::kInt, 4)},
                                                      {"/y", make({40}, ElementKind::kFloat, 8)},
                                                      {"/z", make({10, 4}, ElementKind::kOpaque, 3)},
                                                      {"/x2", make({10, 4}, ElementKind::kInt, 4)}};
  QueryResolver resolve = [&](const std::string& name, bool regex) {
    std::vector<QueryDataset> out;
    for (auto& [p, a] : all)
      if (regex ? std::regex_search(p, std::regex(name)) : p == name) out.push_back({p, a});
    return out;
  };
  auto expect_error = [&](const char* text, Errc code, const char* says) {
    QueryResult r;
    Status st = run_query(text, resolve, true, &r);
    EXPECT_EQ(st.code(), code) << text << ": " << st.message();
    EXPECT_NE(st.message().find(says), std::string::npos) << text << ": " << st.message();
  };
  expect_error("/nope > 1", Errc::kNotFound, "at character 1: no dataset '/nope'");
  expect_error("re\"x\" > 1", Errc::kInvalidArgument, "matches 2 datasets (/x, /x2)");
  expect_error("/x[0:5] > 1 && /y > 2", Errc::kInvalidArgument, "/y has 40 elements but /x[0:5] has 20");
  expect_error("/x[1,2,3] > 1", Errc::kInvalidArgument, "has 3 indices, but /x has 2 dimensions");
  expect_error("/x[10] > 1", Errc::kInvalidArgument, "index 10 is outside dimension 0");
  expect_error("/z > 1", Errc::kUnsupported, "need integer or floating-point elements");
  // Python slicing: an end past the extent is clipped, start >= end is empty.
  QueryResult r;
  ASSERT_TRUE(run_query("/x[5:100] >= 0", resolve, true, &r).ok());
  EXPECT_EQ(r.count, 20u) << "fill value 0 everywhere";
  ASSERT_TRUE(run_query("/x[7:3] >= 0", resolve, true, &r).ok());
  EXPECT_EQ(r.count, 0u);
}

}  // namespace
}  // namespace tessera
