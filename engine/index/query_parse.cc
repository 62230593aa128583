// query_parse.cc — see query_parse.h.  A recursive-descent parser over the characters
// themselves (the language is small enough that a separate lexer would only move the
// position bookkeeping around).
#include "engine/index/query_parse.h"

#include <cctype>

#include "engine/util/error.h"

namespace tessera {

namespace {

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '/'; }
bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '/' || c == '.' || c == '-';
}

class Parser {
 public:
  explicit Parser(const std::string& t) : t_(t) {}

  ParsedQuery run() {
    ParsedQuery q;
    q.text = t_;
    out_ = &q;
    skip();
    if (i_ == t_.size()) fail("expected a comparison such as 'T > 270'");
    q.root = parse_or();
    skip();
    if (i_ != t_.size()) fail("expected '&&', '||' or the end of the query");
    return q;
  }

 private:
  [[noreturn]] void fail(const std::string& expected) const { fail_at(i_, expected); }
  [[noreturn]] void fail_at(size_t at, const std::string& expected) const {
    std::string found = at >= t_.size() ? "the end of the query" : "'" + t_.substr(at, 1) + "'";
    throw_error(Errc::kInvalidArgument, "query \"" + t_ + "\": at character " + std::to_string(at + 1) + ": " +
                                            expected + ", found " + found);
  }
  void skip() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
  }
  bool eat(const char* s) {
    skip();
    size_t n = 0;
    while (s[n]) ++n;
    if (t_.compare(i_, n, s) != 0) return false;
    i_ += n;
    return true;
  }
  char peek() {
    skip();
    return i_ < t_.size() ? t_[i_] : '\0';
  }

  std::unique_ptr<QueryNode> binary(QueryNode::Kind k, std::unique_ptr<QueryNode> a, std::unique_ptr<QueryNode> b,
                                    size_t pos) {
    auto n = std::make_unique<QueryNode>();
    n->kind = k;
    n->a = std::move(a);
    n->b = std::move(b);
    n->pos = pos;
    return n;
  }
  std::unique_ptr<QueryNode> parse_or() {
    auto left = parse_and();
    for (;;) {
      skip();
      const size_t at = i_;
      if (!eat("||")) return left;
      left = binary(QueryNode::kOr, std::move(left), parse_and(), at + 1);
    }
  }
  std::unique_ptr<QueryNode> parse_and() {
    auto left = parse_unary();
    for (;;) {
      skip();
      const size_t at = i_;
      if (!eat("&&")) return left;
      left = binary(QueryNode::kAnd, std::move(left), parse_unary(), at + 1);
    }
  }
  std::unique_ptr<QueryNode> parse_unary() {
    skip();
    const size_t at = i_;
    if (peek() == '!' && t_.compare(i_, 2, "!=") != 0) {
      ++i_;
      auto n = std::make_unique<QueryNode>();
      n->kind = QueryNode::kNot;
      n->a = parse_unary();
      n->pos = at + 1;
      return n;
    }
    if (peek() == '(') {
      ++i_;
      auto n = parse_or();
      if (!eat(")")) fail("expected ')' (to close the '(' at character " + std::to_string(at + 1) + ")");
      return n;
    }
    if (i_ >= t_.size()) fail("expected a comparison, '!' or '('");
    return parse_comparison();
  }

  // An operand: a number (true) or a variable.
  bool number_ahead() {
    skip();
    if (i_ >= t_.size()) return false;
    char c = t_[i_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return true;
    if ((c == '+' || c == '-') && i_ + 1 < t_.size()) {
      char d = t_[i_ + 1];
      return std::isdigit(static_cast<unsigned char>(d)) || d == '.' || std::isalpha(static_cast<unsigned char>(d));
    }
    // inf / nan (as words: a dataset of that name must be quoted)
    size_t j = i_;
    while (j < t_.size() && name_char(t_[j])) ++j;
    std::string w = t_.substr(i_, j - i_);
    for (char& ch : w) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return w == "inf" || w == "infinity" || w == "nan";
  }
  Literal parse_number() {
    skip();
    const size_t at = i_;
    size_t j = i_;
    if (j < t_.size() && (t_[j] == '+' || t_[j] == '-')) ++j;
    while (j < t_.size()) {
      char c = t_[j];
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '.') {
        ++j;
      } else if ((c == '+' || c == '-') && (t_[j - 1] == 'e' || t_[j - 1] == 'E')) {
        ++j;
      } else {
        break;
      }
    }
    Literal l;
    if (!Literal::parse(t_.substr(at, j - at), &l))
      fail_at(at, "expected a number (such as 270, -1.5, 2e-3, inf or nan)");
    i_ = j;
    return l;
  }
  bool parse_op(CmpOp* op) {
    skip();
    static const std::pair<const char*, CmpOp> ops[] = {{"<=", CmpOp::kLe}, {">=", CmpOp::kGe}, {"==", CmpOp::kEq},
                                                        {"!=", CmpOp::kNe}, {"<", CmpOp::kLt},  {">", CmpOp::kGt}};
    for (auto& [s, o] : ops)
      if (eat(s)) {
        *op = o;
        return true;
      }
    return false;
  }
  static CmpOp mirror(CmpOp op) {  // `3 < T` is `T > 3`
    switch (op) {
      case CmpOp::kLt: return CmpOp::kGt;
      case CmpOp::kLe: return CmpOp::kGe;
      case CmpOp::kGt: return CmpOp::kLt;
      case CmpOp::kGe: return CmpOp::kLe;
      default: return op;
    }
  }
  std::unique_ptr<QueryNode> parse_comparison() {
    skip();
    const size_t at = i_;
    auto n = std::make_unique<QueryNode>();
    n->pos = at + 1;
    const bool number_first = number_ahead();
    if (number_first) n->lit = parse_number();
    else n->var = parse_variable();
    skip();
    if (!parse_op(&n->op)) {
      if (i_ < t_.size() && t_[i_] == '=') fail("expected a comparison operator ('==' compares, '=' alone is not one)");
      fail("expected a comparison operator (<, <=, >, >=, ==, !=)");
    }
    if (number_first) {
      if (number_ahead()) fail("expected a dataset (a comparison needs one dataset and one number)");
      n->var = parse_variable();
      n->op = mirror(n->op);
    } else {
      if (!number_ahead()) {
        skip();
        if (i_ < t_.size() && (name_start(t_[i_]) || t_[i_] == '"'))
          fail("expected a number (comparing two datasets is not supported)");
        fail("expected a number");
      }
      n->lit = parse_number();
    }
    return n;
  }

  std::string quoted() {  // at the opening quote
    const size_t open = i_;
    ++i_;
    std::string s;
    while (i_ < t_.size() && t_[i_] != '"') {
      if (t_[i_] == '\\' && i_ + 1 < t_.size()) ++i_;
      s += t_[i_++];
    }
    if (i_ >= t_.size()) fail_at(open, "this quote is never closed");
    ++i_;
    return s;
  }
  size_t parse_variable() {
    skip();
    QueryVar v;
    v.pos = i_ + 1;
    const size_t begin = i_;
    if (t_.compare(i_, 3, "re\"") == 0) {
      i_ += 2;
      v.regex = true;
      v.name = quoted();
      if (v.name.empty()) fail_at(begin, "expected a regular expression inside re\"...\"");
    } else if (i_ < t_.size() && t_[i_] == '"') {
      v.name = quoted();
      if (v.name.empty()) fail_at(begin, "expected a dataset name inside the quotes");
    } else if (i_ < t_.size() && name_start(t_[i_])) {
      while (i_ < t_.size() && name_char(t_[i_])) v.name += t_[i_++];
    } else {
      fail("expected a dataset name (a path such as /group/T, or \"any name\", or re\"regex\") or a number");
    }
    if (i_ < t_.size() && t_[i_] == '[') {
      ++i_;
      for (;;) {
        v.slices.push_back(parse_slice());
        if (eat(",")) continue;
        if (eat("]")) break;
        fail("expected ',' or ']' after a subarray index");
      }
    }
    v.text = t_.substr(begin, i_ - begin);
    out_->vars.push_back(std::move(v));
    return out_->vars.size() - 1;
  }
  std::optional<uint64_t> index() {
    skip();
    if (i_ < t_.size() && t_[i_] == '-') fail("expected an index of 0 or more (negative indices are not supported)");
    if (i_ >= t_.size() || !std::isdigit(static_cast<unsigned char>(t_[i_]))) return std::nullopt;
    const size_t at = i_;
    uint64_t v = 0;
    while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_]))) {
      const uint64_t d = static_cast<uint64_t>(t_[i_] - '0');
      if (v > (UINT64_MAX - d) / 10) fail_at(at, "expected an index below 2^64");
      v = v * 10 + d;
      ++i_;
    }
    return v;
  }
  QuerySlice parse_slice() {
    skip();
    QuerySlice s;
    s.pos = i_ + 1;
    s.start = index();
    if (!eat(":")) {
      if (!s.start) fail("expected an index or a slice start:end:stride");
      s.single = true;
      return s;
    }
    s.end = index();
    if (eat(":")) {
      skip();
      const size_t at = i_;
      s.stride = index();
      if (s.stride && *s.stride == 0) fail_at(at, "expected a stride of 1 or more");
    }
    return s;
  }

  const std::string& t_;
  size_t i_ = 0;
  ParsedQuery* out_ = nullptr;
};

}  // namespace

ParsedQuery parse_query(const std::string& text) { return Parser(text).run(); }

}  // namespace tessera
