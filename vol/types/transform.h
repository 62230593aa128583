// transform.h — data transforms (H5Pset_data_transform) evaluated as native HDF5 does.
//
// A transfer plist may carry an expression in x ("(x-32)*5/9") that HDF5 applies to
// every element moved: on write to the application's values in their MEMORY type before
// conversion to the file type (the application's buffer is left alone), on read after
// conversion to the memory type.  HDF5 does this in H5Dscatgath.c around its type
// conversion, which a connector replaces, so the connector must do it too — and with
// H5Ztrans.c's exact arithmetic, or values differ from native:
//
//   - the expression is parsed by H5Ztrans.c's grammar (integer and floating literals,
//     any alphanumeric name for the data, + - * /, parentheses, unary +/- on a literal
//     or a name) and constant subtrees are folded as H5Z__xform_reduce_tree folds them
//     (integer literals in `long` arithmetic, so 1/2 is 0);
//   - data OP constant is computed as (T)((double)data OP constant) and constant OP
//     data likewise; data OP data in T's own arithmetic (integer division for integer
//     types); unary minus is 0 - data;
//   - an expression without the data fills every element with the constant;
//   - only the native integer and floating types qualify (H5Z__xform_find_type); any
//     other memory type is an error, as natively.
// Native HDF5 validates the expression when it is set, so the parser here sees only
// expressions HDF5 accepted; it still refuses anything it cannot parse.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace tessera_vol {

class DataTransform {
 public:
  // The transform of a dataset transfer plist; nullopt when it has none.
  static std::optional<DataTransform> from_dxpl(hid_t dxpl);
  // Parses an expression (throws VolError on a syntax error).
  explicit DataTransform(const std::string& expression);
  ~DataTransform();
  DataTransform(DataTransform&&) noexcept;
  DataTransform& operator=(DataTransform&&) noexcept;

  // Applies the transform in place to n elements of memory type `mtype` at buf.  Throws
  // VolError for a memory type native refuses and for an integer division by zero
  // between data values (where native HDF5 would die of SIGFPE).
  void apply(hid_t mtype, void* buf, size_t n) const;

  const std::string& expression() const { return expr_; }

  struct Node;

 private:
  std::string expr_;
  std::unique_ptr<Node> root_;
  int symbols_ = 0;  // occurrences of the data: one needs no copies, more need one each
};

}  // namespace tessera_vol
