// transform.cc — see transform.h.
#include "vol/types/transform.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <tuple>
#include <type_traits>
#include <vector>

#include "vol/base/error.h"  // fail_arg, fail_unsupported

namespace tessera_vol {

// Kinds as in H5Ztrans.c's parse tree; kNone is the missing left operand of a unary op.
enum class Kind { kNone, kInteger, kFloat, kSymbol, kPlus, kMinus, kMult, kDivide };

struct DataTransform::Node {
  Kind kind;
  long ival = 0;
  double fval = 0;
  int symbol = -1;  // kSymbol: which copy of the data
  std::unique_ptr<Node> l, r;
  explicit Node(Kind k) : kind(k) {}
  bool number() const { return kind == Kind::kInteger || kind == Kind::kFloat; }
  double as_double() const { return kind == Kind::kInteger ? static_cast<double>(ival) : fval; }
};

namespace {

using Node = DataTransform::Node;
using NodePtr = std::unique_ptr<Node>;

enum class Tok { kEnd, kInteger, kFloat, kSymbol, kPlus, kMinus, kMult, kDivide, kLParen, kRParen };

[[noreturn]] void syntax(const std::string& expr, const std::string& what) {
  fail_arg("data transform '" + expr + "': " + what);
}

// The tokenizer of H5Ztrans.c (H5Z__get_token) with one token of look-back.
class Lexer {
 public:
  explicit Lexer(const std::string& e) : e_(e) {}
  Tok next() {
    last_ = {tok_, begin_, end_};
    size_t p = end_;
    while (p < e_.size() && std::isspace(static_cast<unsigned char>(e_[p]))) ++p;
    begin_ = p;
    if (p >= e_.size()) return tok_ = Tok::kEnd, end_ = p, tok_;
    char c = e_[p];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      size_t q = p;
      tok_ = Tok::kInteger;
      if (e_[q] != '.')
        while (q < e_.size() && std::isdigit(static_cast<unsigned char>(e_[q]))) ++q;
      if (q < e_.size() && (e_[q] == '.' || e_[q] == 'e' || e_[q] == 'E')) {
        tok_ = Tok::kFloat;
        if (e_[q] == '.')
          do ++q;
          while (q < e_.size() && std::isdigit(static_cast<unsigned char>(e_[q])));
        if (q < e_.size() && (e_[q] == 'e' || e_[q] == 'E')) {
          ++q;
          if (q < e_.size() && (e_[q] == '-' || e_[q] == '+')) ++q;
          if (q >= e_.size() || !std::isdigit(static_cast<unsigned char>(e_[q])))
            syntax(e_, "invalidly formatted floating point number");
          while (q < e_.size() && std::isdigit(static_cast<unsigned char>(e_[q]))) ++q;
        }
        if (q < e_.size() && (std::isalpha(static_cast<unsigned char>(e_[q])) || e_[q] == '.'))
          syntax(e_, "invalidly formatted floating point number");
      }
      end_ = q;
      return tok_;
    }
    if (std::isalpha(static_cast<unsigned char>(c))) {
      size_t q = p;
      while (q < e_.size() && std::isalnum(static_cast<unsigned char>(e_[q]))) ++q;
      end_ = q;
      return tok_ = Tok::kSymbol;
    }
    end_ = p + 1;
    switch (c) {
      case '+': return tok_ = Tok::kPlus;
      case '-': return tok_ = Tok::kMinus;
      case '*': return tok_ = Tok::kMult;
      case '/': return tok_ = Tok::kDivide;
      case '(': return tok_ = Tok::kLParen;
      case ')': return tok_ = Tok::kRParen;
      default: syntax(e_, std::string("unknown token '") + c + "'");
    }
  }
  void unget() { std::tie(tok_, begin_, end_) = last_; }
  const char* text() const { return e_.c_str() + begin_; }

 private:
  const std::string& e_;
  Tok tok_ = Tok::kEnd;
  size_t begin_ = 0, end_ = 0;
  std::tuple<Tok, size_t, size_t> last_{Tok::kEnd, 0, 0};
};

// H5Z__parse_expression / _term / _factor.
class Parser {
 public:
  explicit Parser(const std::string& e) : e_(e), lex_(e) {}
  NodePtr parse() {
    NodePtr n = expression();
    if (!n) syntax(e_, "empty expression");
    return n;
  }
  int symbols() const { return symbols_; }

 private:
  NodePtr binary(Kind k, NodePtr l, NodePtr r) {
    if (!r) syntax(e_, "missing operand");
    auto n = std::make_unique<Node>(k);
    n->l = std::move(l), n->r = std::move(r);
    return n;
  }
  NodePtr expression() {
    NodePtr e = term();
    for (;;) {
      switch (lex_.next()) {
        case Tok::kPlus: e = binary(Kind::kPlus, std::move(e), term()); break;
        case Tok::kMinus: e = binary(Kind::kMinus, std::move(e), term()); break;
        case Tok::kRParen: lex_.unget(); return e;
        case Tok::kEnd: return e;
        default: syntax(e_, "error parsing the expression");
      }
    }
  }
  NodePtr term() {
    NodePtr t = factor();
    for (;;) {
      switch (lex_.next()) {
        case Tok::kMult: t = binary(Kind::kMult, std::move(t), factor()); break;
        case Tok::kDivide: t = binary(Kind::kDivide, std::move(t), factor()); break;
        case Tok::kEnd: return t;
        default: lex_.unget(); return t;  // ')', a number, a name, + - ( end the term
      }
    }
  }
  NodePtr factor() {
    switch (lex_.next()) {
      case Tok::kInteger: {
        auto n = std::make_unique<Node>(Kind::kInteger);
        n->ival = std::strtol(lex_.text(), nullptr, 10);
        return n;
      }
      case Tok::kFloat: {
        auto n = std::make_unique<Node>(Kind::kFloat);
        n->fval = std::strtod(lex_.text(), nullptr);
        return n;
      }
      case Tok::kSymbol: {
        auto n = std::make_unique<Node>(Kind::kSymbol);
        n->symbol = symbols_++;
        return n;
      }
      case Tok::kLParen: {
        NodePtr n = expression();
        if (!n || lex_.next() != Tok::kRParen) syntax(e_, "syntax error (unbalanced parentheses)");
        return n;
      }
      case Tok::kPlus:
      case Tok::kMinus: {
        Kind k = lex_.text()[0] == '+' ? Kind::kPlus : Kind::kMinus;
        NodePtr c = factor();
        // Native takes a sign only before a number or the data, not before "(...)".
        if (!c || !(c->number() || c->kind == Kind::kSymbol)) syntax(e_, "error parsing the expression");
        auto n = std::make_unique<Node>(k);
        n->r = std::move(c);
        return n;
      }
      case Tok::kEnd: return nullptr;
      default: syntax(e_, "invalid token");
    }
  }

  const std::string& e_;
  Lexer lex_;
  int symbols_ = 0;
};

// H5Z__do_op: folds an operator node whose operands are numbers.
void fold(Node& n) {
  const bool unary = !n.l;
  const bool ints = (unary || n.l->kind == Kind::kInteger) && n.r->kind == Kind::kInteger;
  auto set_int = [&](long v) { n.kind = Kind::kInteger, n.ival = v; };
  auto set_float = [&](double v) { n.kind = Kind::kFloat, n.fval = v; };
  const double a = unary ? 0.0 : n.l->as_double(), b = n.r->as_double();
  switch (n.kind) {
    case Kind::kMult: ints ? set_int(n.l->ival * n.r->ival) : set_float(a * b); break;
    case Kind::kDivide:
      if (ints && n.r->ival == 0) fail_arg("data transform divides an integer by zero");
      ints ? set_int(n.l->ival / n.r->ival) : set_float(a / b);
      break;
    case Kind::kPlus:
      if (unary) ints ? set_int(+n.r->ival) : set_float(+n.r->fval);
      else ints ? set_int(n.l->ival + n.r->ival) : set_float(a + b);
      break;
    case Kind::kMinus:
      if (unary) ints ? set_int(-n.r->ival) : set_float(-n.r->fval);
      else ints ? set_int(n.l->ival - n.r->ival) : set_float(a - b);
      break;
    default: return;
  }
  n.l.reset(), n.r.reset();
}

bool both_numbers(const Node& n) { return n.l && n.l->number() && n.r && n.r->number(); }
bool numbers_or_unary(const Node& n) { return (!n.l && n.r && n.r->number()) || both_numbers(n); }

// H5Z__xform_reduce_tree, step for step (which subtrees it folds decides the values).
void reduce(Node* n) {
  if (!n) return;
  bool (*ready)(const Node&) = nullptr;
  if (n->kind == Kind::kMult || n->kind == Kind::kDivide) ready = both_numbers;
  else if (n->kind == Kind::kPlus || n->kind == Kind::kMinus) ready = numbers_or_unary;
  else return;
  if (ready(*n)) return fold(*n);
  reduce(n->l.get());
  if (ready(*n)) return fold(*n);
  reduce(n->r.get());
  if (ready(*n)) fold(*n);
}

// One evaluation result: a constant or one copy of the data (H5Z_result).
struct Result {
  Kind kind = Kind::kNone;
  long ival = 0;
  double fval = 0;
  void* data = nullptr;
};

template <typename T>
T op_data(T a, T b, Kind k) {
  switch (k) {
    case Kind::kPlus: return static_cast<T>(a + b);
    case Kind::kMinus: return static_cast<T>(a - b);
    case Kind::kMult: return static_cast<T>(a * b);
    default:
      if constexpr (std::is_integral_v<T>) {
        if (b == 0) fail_arg("data transform divides by a data value of 0");
      }
      return static_cast<T>(a / b);
  }
}

double op_double(double a, double b, Kind k) {
  switch (k) {
    case Kind::kPlus: return a + b;
    case Kind::kMinus: return a - b;
    case Kind::kMult: return a * b;
    default: return a / b;
  }
}

template <typename T>
Result eval(const Node& n, size_t count, std::vector<void*>& copies) {
  Result res;
  switch (n.kind) {
    case Kind::kInteger: res.kind = Kind::kInteger, res.ival = n.ival; return res;
    case Kind::kFloat: res.kind = Kind::kFloat, res.fval = n.fval; return res;
    case Kind::kSymbol: res.kind = Kind::kSymbol, res.data = copies[static_cast<size_t>(n.symbol)]; return res;
    default: break;
  }
  Result l = n.l ? eval<T>(*n.l, count, copies) : Result{};
  Result r = eval<T>(*n.r, count, copies);
  auto value = [](const Result& x) {
    return x.kind == Kind::kInteger ? static_cast<double>(x.ival) : x.kind == Kind::kFloat ? x.fval : 0.0;
  };
  if (l.kind == Kind::kSymbol && r.kind != Kind::kSymbol) {
    T* p = static_cast<T*>(l.data);
    const double v = value(r);
    for (size_t u = 0; u < count; ++u) p[u] = static_cast<T>(op_double(static_cast<double>(p[u]), v, n.kind));
  } else if (r.kind == Kind::kSymbol && l.kind != Kind::kSymbol) {
    T* p = static_cast<T*>(r.data);
    const double v = value(l);  // 0 for the missing left operand of -x, +x
    for (size_t u = 0; u < count; ++u) p[u] = static_cast<T>(op_double(v, static_cast<double>(p[u]), n.kind));
  } else if (l.kind == Kind::kSymbol && r.kind == Kind::kSymbol) {
    T* pl = static_cast<T*>(l.data);
    const T* pr = static_cast<const T*>(r.data);
    for (size_t u = 0; u < count; ++u) pl[u] = op_data<T>(pl[u], pr[u], n.kind);
  } else {
    fail_arg("data transform: unexpected constant operation");
  }
  res.kind = Kind::kSymbol;
  res.data = l.kind == Kind::kSymbol ? l.data : r.data;
  return res;
}

template <typename T>
void apply_typed(const Node& root, int symbols, void* buf, size_t n) {
  T* a = static_cast<T*>(buf);
  if (root.number()) {  // no data in the expression: every element becomes the constant
    const T v = root.kind == Kind::kInteger ? static_cast<T>(root.ival) : static_cast<T>(root.fval);
    for (size_t u = 0; u < n; ++u) a[u] = v;
    return;
  }
  // One occurrence of the data works in place; several each work on their own copy.
  std::vector<std::vector<T>> owned;
  std::vector<void*> copies;
  if (symbols == 1) {
    copies.push_back(buf);
  } else {
    owned.reserve(static_cast<size_t>(symbols));
    for (int i = 0; i < symbols; ++i) {
      owned.emplace_back(a, a + n);
      copies.push_back(owned.back().data());
    }
  }
  Result r = eval<T>(root, n, copies);
  if (symbols > 1) std::memcpy(buf, r.data, n * sizeof(T));
}

}  // namespace

DataTransform::DataTransform(const std::string& expression) : expr_(expression) {
  Parser p(expr_);
  root_ = p.parse();
  symbols_ = p.symbols();
  reduce(root_.get());
}

DataTransform::~DataTransform() = default;
DataTransform::DataTransform(DataTransform&&) noexcept = default;
DataTransform& DataTransform::operator=(DataTransform&&) noexcept = default;

std::optional<DataTransform> DataTransform::from_dxpl(hid_t dxpl) {
  if (dxpl == H5P_DEFAULT || dxpl == H5P_DATASET_XFER_DEFAULT || dxpl < 0) return std::nullopt;
  ssize_t len = -1;
  H5E_BEGIN_TRY { len = H5Pget_data_transform(dxpl, nullptr, 0); }  // fails when none is set
  H5E_END_TRY;
  if (len <= 0) return std::nullopt;
  std::string e(static_cast<size_t>(len) + 1, '\0');
  if (H5Pget_data_transform(dxpl, e.data(), e.size()) < 0) fail_arg("cannot read the data transform");
  e.resize(static_cast<size_t>(len));
  return DataTransform(e);
}

void DataTransform::apply(hid_t mtype, void* buf, size_t n) const {
  // H5Z__xform_find_type's order: the first native type equal to the memory type.  The
  // type is checked even for n == 0.
  static const hid_t* const kOrder[] = {
      &H5T_NATIVE_SHORT_g, &H5T_NATIVE_INT_g,    &H5T_NATIVE_LONG_g,   &H5T_NATIVE_LLONG_g, &H5T_NATIVE_UCHAR_g,
      &H5T_NATIVE_SCHAR_g, &H5T_NATIVE_USHORT_g, &H5T_NATIVE_UINT_g,   &H5T_NATIVE_ULONG_g, &H5T_NATIVE_ULLONG_g,
      &H5T_NATIVE_FLOAT_g, &H5T_NATIVE_DOUBLE_g, &H5T_NATIVE_LDOUBLE_g};
  H5open();  // the H5T_NATIVE_*_g globals are set by the library's initialisation
  size_t k = 0;
  while (k < std::size(kOrder) && H5Tequal(mtype, *kOrder[k]) <= 0) ++k;
  if (k == std::size(kOrder))
    fail_unsupported("cannot perform data transform '" + expr_ +
                     "' on this memory type (only native integer and floating-point types)");
  if (n == 0) return;
  const Node& r = *root_;
  switch (k) {
    case 0: return apply_typed<short>(r, symbols_, buf, n);
    case 1: return apply_typed<int>(r, symbols_, buf, n);
    case 2: return apply_typed<long>(r, symbols_, buf, n);
    case 3: return apply_typed<long long>(r, symbols_, buf, n);
    case 4: return apply_typed<unsigned char>(r, symbols_, buf, n);
    case 5: return apply_typed<char>(r, symbols_, buf, n);  // native char is signed here
    case 6: return apply_typed<unsigned short>(r, symbols_, buf, n);
    case 7: return apply_typed<unsigned int>(r, symbols_, buf, n);
    case 8: return apply_typed<unsigned long>(r, symbols_, buf, n);
    case 9: return apply_typed<unsigned long long>(r, symbols_, buf, n);
    case 10: return apply_typed<float>(r, symbols_, buf, n);
    case 11: return apply_typed<double>(r, symbols_, buf, n);
    default: return apply_typed<long double>(r, symbols_, buf, n);
  }
}

}  // namespace tessera_vol
