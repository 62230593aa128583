// query_parse.h — the query expression language (docs/queries.md, "Grammar").
//
//   expr       := or
//   or         := and ( "||" and )*
//   and        := unary ( "&&" unary )*
//   unary      := "!" unary | "(" expr ")" | comparison
//   comparison := variable op number | number op variable
//   op         := "<" | "<=" | ">" | ">=" | "==" | "!="
//   variable   := name [ "[" slice ( "," slice )* "]" ]
//   name       := path | '"' quoted path '"' | 're"' regular expression '"'
//   slice      := index | [index] ":" [index] [ ":" [index] ]     (start:end:stride)
//   number     := [+-] digits [. digits] [e [+-] digits] | inf | nan
//
// A path is letters, digits and _ . / - (starting with a letter, _ or /); anything else
// goes in double quotes (\" and \\ escape).  Every error names the character (1-based)
// where the text stops making sense.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/index/value_type.h"

namespace tessera {

struct QuerySlice {
  bool single = false;              // one index (the dimension stays, with one element)
  std::optional<uint64_t> start, end, stride;
  size_t pos = 0;                   // 1-based character of the slice
};

struct QueryVar {
  std::string name;
  bool regex = false;
  size_t pos = 0;                   // 1-based character of the name
  std::vector<QuerySlice> slices;   // empty: the whole dataset
  std::string text;                 // as written (messages)
};

struct QueryNode {
  enum Kind { kCmp, kAnd, kOr, kNot } kind = kCmp;
  size_t var = 0;  // kCmp: index into ParsedQuery::vars
  CmpOp op = CmpOp::kLt;
  Literal lit;
  std::unique_ptr<QueryNode> a, b;  // operands (kNot: a only)
  size_t pos = 0;
};

struct ParsedQuery {
  std::string text;
  std::vector<QueryVar> vars;  // in order of appearance, one per comparison
  std::unique_ptr<QueryNode> root;
};

// Throws kInvalidArgument: 'query "<text>": at character N: <what was expected>, found <what>'.
ParsedQuery parse_query(const std::string& text);

}  // namespace tessera
