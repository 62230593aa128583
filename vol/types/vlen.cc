// vlen.cc — serialization of variable-length data; see vlen.h.
#include "vol/types/vlen.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "vol/base/error.h"

namespace tessera_vol {

namespace {

constexpr uint64_t kNull = UINT64_MAX;  // a NULL char* (never written, or written as NULL)

// The type, reduced to what the walk needs, so H5T calls happen once per type, not per
// element.  kFixed covers every part without variable-length data inside: copied as bytes.
struct Node {
  enum Kind { kFixed, kVStr, kVSeq, kCompound, kArray } kind = kFixed;
  size_t size = 0;                          // memory size of one element
  std::unique_ptr<Node> base;               // kVSeq, kArray
  size_t count = 0;                         // kArray: elements
  std::vector<std::pair<size_t, Node>> members;  // kCompound: (offset, member)
  // Byte offsets of the H5T_STD_REF values (H5R_ref_t) in this node's fixed bytes — all
  // of it for kFixed, the fixed copy kCompound writes first — for reference.h (issue 45).
  std::vector<size_t> refs;
};

// Closes an hid on scope exit.
struct Tid {
  hid_t id;
  ~Tid() {
    if (id >= 0) H5Tclose(id);
  }
};

Node build(hid_t t, int depth) {
  if (depth > 64) fail_arg("datatype nested too deeply");
  Node n;
  n.size = H5Tget_size(t);
  if (n.size == 0) fail_arg("invalid datatype");
  switch (H5Tget_class(t)) {
    case H5T_STRING:
      if (H5Tis_variable_str(t) > 0) n.kind = Node::kVStr;
      break;
    case H5T_REFERENCE:
      if (H5Tequal(t, H5T_STD_REF) > 0) n.refs.push_back(0);
      break;
    case H5T_VLEN: {
      Tid super{H5Tget_super(t)};
      if (super.id < 0) fail_arg("vlen type without base type");
      n.kind = Node::kVSeq;
      n.base = std::make_unique<Node>(build(super.id, depth + 1));
      break;
    }
    case H5T_ARRAY: {
      Tid super{H5Tget_super(t)};
      if (super.id < 0) fail_arg("array type without base type");
      Node b = build(super.id, depth + 1);
      const size_t count = b.size ? n.size / b.size : 0;
      if (b.kind == Node::kFixed) {
        for (size_t i = 0; i < count; ++i)
          for (size_t r : b.refs) n.refs.push_back(i * b.size + r);
        break;
      }
      n.kind = Node::kArray;
      n.count = count;
      n.base = std::make_unique<Node>(std::move(b));
      break;
    }
    case H5T_COMPOUND: {
      int nm = H5Tget_nmembers(t);
      bool any = false;
      for (int i = 0; i < nm; ++i) {
        Tid mt{H5Tget_member_type(t, static_cast<unsigned>(i))};
        if (mt.id < 0) fail_arg("compound member type unreadable");
        Node m = build(mt.id, depth + 1);
        any = any || m.kind != Node::kFixed;
        const size_t off = H5Tget_member_offset(t, static_cast<unsigned>(i));
        if (m.kind == Node::kFixed)
          for (size_t r : m.refs) n.refs.push_back(off + r);
        n.members.emplace_back(off, std::move(m));
      }
      if (any) n.kind = Node::kCompound;
      else n.members.clear();
      break;
    }
    default:
      break;
  }
  return n;
}

void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

void ser(const Node& n, const char* p, std::string& out) {
  switch (n.kind) {
    case Node::kFixed:
      out.append(p, n.size);
      return;
    case Node::kVStr: {
      const char* s;
      std::memcpy(&s, p, sizeof s);
      if (!s) return put_u64(out, kNull);
      size_t len = std::strlen(s);
      put_u64(out, len);
      out.append(s, len);
      return;
    }
    case Node::kVSeq: {
      hvl_t v;
      std::memcpy(&v, p, sizeof v);
      if (v.len && !v.p) fail_arg("variable-length sequence of length " + std::to_string(v.len) + " has a NULL pointer");
      put_u64(out, v.len);
      const char* e = static_cast<const char*>(v.p);
      for (size_t i = 0; i < v.len; ++i) ser(*n.base, e + i * n.base->size, out);
      return;
    }
    case Node::kArray:
      for (size_t i = 0; i < n.count; ++i) ser(*n.base, p + i * n.base->size, out);
      return;
    case Node::kCompound: {
      // Bytes between and after members (padding) are kept so that reads return them
      // as they were written, like native HDF5 does for fixed-size data.
      std::string fixed(p, n.size);
      for (auto& [off, m] : n.members)
        if (m.kind != Node::kFixed) std::memset(&fixed[off], 0, m.size);
      out += fixed;
      for (auto& [off, m] : n.members)
        if (m.kind != Node::kFixed) ser(m, p + off, out);
      return;
    }
  }
}

struct Reader {
  const char* data;
  size_t size;
  size_t pos = 0;
  void need(size_t k) {
    if (k > size - pos) fail_arg("stored variable-length data is truncated (corrupt catalog record)");
  }
  uint64_t u64() {
    need(8);
    uint64_t v;
    std::memcpy(&v, data + pos, 8);
    pos += 8;
    return v;
  }
  const char* take(size_t k) {
    need(k);
    const char* p = data + pos;
    pos += k;
    return p;
  }
};

void deser(const Node& n, Reader& r, char* p, const VlenAlloc& alloc) {
  switch (n.kind) {
    case Node::kFixed:
      std::memcpy(p, r.take(n.size), n.size);
      return;
    case Node::kVStr: {
      uint64_t len = r.u64();
      char* s = nullptr;
      if (len != kNull) {
        const char* src = r.take(len);
        s = static_cast<char*>(alloc(len + 1));
        if (!s) throw std::bad_alloc();
        std::memcpy(s, src, len);
        s[len] = '\0';
      }
      std::memcpy(p, &s, sizeof s);
      return;
    }
    case Node::kVSeq: {
      uint64_t len = r.u64();
      if (len > r.size) fail_arg("stored variable-length sequence has an implausible length");
      hvl_t v{len, nullptr};
      if (len) {
        v.p = alloc(len * n.base->size);
        if (!v.p) throw std::bad_alloc();
        std::memset(v.p, 0, len * n.base->size);
        for (size_t i = 0; i < len; ++i) deser(*n.base, r, static_cast<char*>(v.p) + i * n.base->size, alloc);
      }
      std::memcpy(p, &v, sizeof v);
      return;
    }
    case Node::kArray:
      for (size_t i = 0; i < n.count; ++i) deser(*n.base, r, p + i * n.base->size, alloc);
      return;
    case Node::kCompound:
      std::memcpy(p, r.take(n.size), n.size);
      for (auto& [off, m] : n.members)
        if (m.kind != Node::kFixed) deser(m, r, p + off, alloc);
      return;
  }
}

// Appends where the H5T_STD_REF values of one element of `n` sit in the stream `r` reads.
void ref_positions(const Node& n, Reader& r, std::vector<size_t>& out) {
  switch (n.kind) {
    case Node::kFixed:
    case Node::kCompound: {
      const size_t at = r.pos;
      r.take(n.size);
      for (size_t o : n.refs) out.push_back(at + o);
      for (auto& [off, m] : n.members)
        if (m.kind != Node::kFixed) ref_positions(m, r, out);
      return;
    }
    case Node::kVStr: {
      uint64_t len = r.u64();
      if (len != kNull) r.take(len);
      return;
    }
    case Node::kVSeq: {
      uint64_t len = r.u64();
      if (len > r.size) fail_arg("stored variable-length sequence has an implausible length");
      for (uint64_t i = 0; i < len; ++i) ref_positions(*n.base, r, out);
      return;
    }
    case Node::kArray:
      for (size_t i = 0; i < n.count; ++i) ref_positions(*n.base, r, out);
      return;
  }
}

// Whether the node holds references anywhere.
bool has_refs(const Node& n) {
  if (!n.refs.empty()) return true;
  if (n.base && has_refs(*n.base)) return true;
  for (auto& [off, m] : n.members)
    if (has_refs(m)) return true;
  return false;
}

size_t file_size(hid_t t, int depth) {
  if (depth > 64) fail_arg("datatype nested too deeply");
  size_t size = H5Tget_size(t);
  switch (H5Tget_class(t)) {
    case H5T_STRING:
      return H5Tis_variable_str(t) > 0 ? 16 : size;
    case H5T_VLEN:
      return 16;
    case H5T_ARRAY: {
      Tid super{H5Tget_super(t)};
      size_t b = H5Tget_size(super.id);
      return b ? size / b * file_size(super.id, depth + 1) : size;
    }
    case H5T_COMPOUND: {
      // HDF5 moves later members by the change in size of earlier ones (H5T__set_loc).
      int nm = H5Tget_nmembers(t);
      for (int i = 0; i < nm; ++i) {
        Tid mt{H5Tget_member_type(t, static_cast<unsigned>(i))};
        size_t ms = H5Tget_size(mt.id);
        size_t fs = file_size(mt.id, depth + 1);
        size = size + fs - ms;
      }
      return size;
    }
    default:
      return size;
  }
}

}  // namespace

void* VlenAlloc::operator()(size_t n) const {
  if (n == 0) n = 1;
  return alloc ? alloc(n, info) : std::malloc(n);
}

VlenAlloc vlen_allocator(hid_t dxpl) {
  VlenAlloc a;
  H5MM_free_t free_fn = nullptr;
  void* free_info = nullptr;
  if (H5Pget_vlen_mem_manager(dxpl == H5P_DEFAULT ? H5P_DATASET_XFER_DEFAULT : dxpl, &a.alloc, &a.info, &free_fn,
                              &free_info) < 0)
    fail_arg("cannot read the vlen memory manager of the transfer property list");
  return a;
}

bool type_has_vlen(hid_t type) { return build(type, 0).kind != Node::kFixed; }

std::string vlen_serialize(hid_t type, size_t n, const void* buf) {
  Node root = build(type, 0);
  std::string out;
  const char* p = static_cast<const char*>(buf);
  for (size_t i = 0; i < n; ++i) ser(root, p + i * root.size, out);
  return out;
}

void vlen_deserialize(hid_t type, size_t n, const std::string& bytes, void* buf, const VlenAlloc& alloc) {
  Node root = build(type, 0);
  Reader r{bytes.data(), bytes.size()};
  char* p = static_cast<char*>(buf);
  std::memset(p, 0, n * root.size);
  for (size_t i = 0; i < n; ++i) deser(root, r, p + i * root.size, alloc);
  if (r.pos != bytes.size()) fail_arg("stored variable-length data has trailing bytes (corrupt catalog record)");
}

size_t file_type_size(hid_t type) { return file_size(type, 0); }

std::vector<size_t> fixed_ref_offsets(hid_t type) {
  Node root = build(type, 0);
  if (root.kind != Node::kFixed) fail_arg("fixed_ref_offsets: the type has variable-length parts");
  return root.refs;
}

std::vector<size_t> stream_ref_offsets(hid_t type, size_t n, const uint8_t* stream, size_t size, size_t from) {
  Node root = build(type, 0);
  std::vector<size_t> out;
  if (!has_refs(root)) return out;
  if (from > size) fail_arg("stored variable-length data is truncated (corrupt catalog record)");
  Reader r{reinterpret_cast<const char*>(stream), size, from};
  for (size_t i = 0; i < n; ++i) ref_positions(root, r, out);
  return out;
}

}  // namespace tessera_vol
