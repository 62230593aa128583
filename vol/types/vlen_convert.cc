// vlen_convert.cc — see vlen_convert.h.
#include "vol/types/vlen_convert.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "vol/base/error.h"  // fail_arg
#include "vol/types/type_conv.h"
#include "vol/types/vlen.h"

namespace tessera_vol {

namespace {

// Releases the variable-length parts of n elements of `type` at buf on scope exit.
class Reclaim {
 public:
  Reclaim(hid_t type, size_t n, void* buf) : type_(type), n_(n), buf_(buf) {}
  ~Reclaim() {
    if (!buf_ || n_ == 0 || type_ < 0) return;
    hsize_t dims = n_;
    hid_t space = H5Screate_simple(1, &dims, nullptr);
    if (space < 0) return;
    H5Treclaim(type_, space, H5P_DEFAULT, buf_);
    H5Sclose(space);
  }
  Reclaim(const Reclaim&) = delete;
  Reclaim& operator=(const Reclaim&) = delete;

 private:
  hid_t type_;
  size_t n_;
  void* buf_;
};

class OwnedType {
 public:
  explicit OwnedType(hid_t id = H5I_INVALID_HID) : id_(id) {}
  ~OwnedType() {
    if (id_ >= 0) H5Tclose(id_);
  }
  OwnedType(const OwnedType&) = delete;
  OwnedType& operator=(const OwnedType&) = delete;
  hid_t get() const { return id_; }

 private:
  hid_t id_;
};

// For a compound file type: a compound of the same size holding only the members whose
// names the (compound) memory type also has, at the file type's offsets — the parts a
// conversion fills.  H5I_INVALID_HID when the memory type covers every member (or
// either type is not a compound): the conversion fills everything.
hid_t covered_members(hid_t ftype, hid_t mtype) {
  if (H5Tget_class(ftype) != H5T_COMPOUND || H5Tget_class(mtype) != H5T_COMPOUND) return H5I_INVALID_HID;
  int nf = H5Tget_nmembers(ftype);
  std::vector<int> covered;
  for (int i = 0; i < nf; ++i) {
    char* name = H5Tget_member_name(ftype, static_cast<unsigned>(i));
    if (!name) fail_arg("cannot read a compound member name");
    bool has = H5Tget_member_index(mtype, name) >= 0;
    H5free_memory(name);
    if (has) covered.push_back(i);
  }
  if (static_cast<int>(covered.size()) == nf) return H5I_INVALID_HID;
  hid_t sub = H5Tcreate(H5T_COMPOUND, H5Tget_size(ftype));
  if (sub < 0) fail_arg("cannot build the covered-members type");
  for (int i : covered) {
    char* name = H5Tget_member_name(ftype, static_cast<unsigned>(i));
    hid_t mt = H5Tget_member_type(ftype, static_cast<unsigned>(i));
    herr_t rc = H5Tinsert(sub, name, H5Tget_member_offset(ftype, static_cast<unsigned>(i)), mt);
    H5Tclose(mt);
    H5free_memory(name);
    if (rc < 0) {
      H5Tclose(sub);
      fail_arg("cannot build the covered-members type");
    }
  }
  return sub;
}

// Rebuilds n cells of `type` into buf (zeroed: never-written cells stay NULL/empty).
void rebuild(hid_t type, size_t es, size_t n, const std::vector<uint64_t>& lengths, const std::vector<uint8_t>& data,
             uint8_t* buf) {
  if (lengths.size() != n) fail_arg("engine returned a wrong number of variable-length values");
  size_t pos = 0;
  for (size_t i = 0; i < n; ++i) {
    if (lengths[i] > data.size() - pos) fail_arg("variable-length value out of range");
    if (lengths[i] > 0)
      vlen_deserialize(type, 1, std::string(reinterpret_cast<const char*>(data.data()) + pos, lengths[i]),
                       buf + i * es, VlenAlloc{});
    pos += lengths[i];
  }
}

}  // namespace

void vlen_write_converted(hid_t mtype, hid_t ftype, size_t n, const uint8_t* in,
                          const std::function<void(std::vector<uint64_t>*, std::vector<uint8_t>*)>& stored,
                          std::vector<uint64_t>* out_lengths, std::string* out) {
  const size_t mes = H5Tget_size(mtype), fes = H5Tget_size(ftype);
  if (mes == 0 || fes == 0) fail_arg("invalid datatype");
  std::vector<uint8_t> buf(std::max(mes, fes) * n, 0);
  std::memcpy(buf.data(), in, mes * n);
  // The compound conversion leaves its result in the background buffer too, so the
  // stored values it starts from are kept apart (`stored_values`) for their release.
  std::vector<uint8_t> bkg, stored_values;
  OwnedType covered(covered_members(ftype, mtype));
  std::unique_ptr<Reclaim> release_stored;
  if (needs_background(mtype, ftype)) {
    bkg.assign(fes * n, 0);
    if (covered.get() >= 0) {  // a member subset: the others keep their stored values
      std::vector<uint64_t> lengths;
      std::vector<uint8_t> data;
      stored(&lengths, &data);
      rebuild(ftype, fes, n, lengths, data, bkg.data());
      stored_values = bkg;
      release_stored = std::make_unique<Reclaim>(ftype, n, stored_values.data());
    }
  }
  convert(mtype, ftype, n, buf.data(), bkg.empty() ? nullptr : bkg.data(), H5P_DEFAULT);
  // What the conversion allocated: every member, or (subset) the covered ones only —
  // the others are the stored values', released with them.
  Reclaim release(covered.get() >= 0 ? covered.get() : ftype, n, buf.data());
  out_lengths->resize(n);
  for (size_t i = 0; i < n; ++i) {
    std::string e = vlen_serialize(ftype, 1, buf.data() + i * fes);
    (*out_lengths)[i] = e.size();
    *out += e;
  }
}

void vlen_split(hid_t type, size_t n, const std::string& stream, std::vector<uint64_t>* lengths,
                std::vector<uint8_t>* data) {
  lengths->assign(n, 0);
  data->clear();
  if (stream.empty() || n == 0) return;
  // Rebuilt and serialized again element by element: the stream has no index of its
  // elements, and this keeps the walk of the type in one place (vlen.cc).
  const size_t es = H5Tget_size(type);
  if (es == 0) fail_arg("invalid datatype");
  std::vector<uint8_t> buf(es * n, 0);
  vlen_deserialize(type, n, stream, buf.data(), VlenAlloc{});
  Reclaim release(type, n, buf.data());
  for (size_t i = 0; i < n; ++i) {
    std::string e = vlen_serialize(type, 1, buf.data() + i * es);
    (*lengths)[i] = e.size();
    data->insert(data->end(), e.begin(), e.end());
  }
}

void vlen_read_converted(hid_t ftype, hid_t mtype, size_t n, const std::vector<uint64_t>& lengths,
                        const std::vector<uint8_t>& data, hid_t dxpl, uint8_t* packed) {
  const size_t mes = H5Tget_size(mtype), fes = H5Tget_size(ftype);
  if (mes == 0 || fes == 0) fail_arg("invalid datatype");
  std::vector<uint8_t> buf(std::max(mes, fes) * n, 0);
  rebuild(ftype, fes, n, lengths, data, buf.data());
  // The rebuilt elements, released after the conversion replaced them in buf.
  std::vector<uint8_t> rebuilt(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(fes * n));
  Reclaim release(ftype, n, rebuilt.data());
  std::vector<uint8_t> bkg;
  if (needs_background(ftype, mtype)) bkg.assign(packed, packed + mes * n);  // the caller's values
  convert(ftype, mtype, n, buf.data(), bkg.empty() ? nullptr : bkg.data(), dxpl);
  std::memcpy(packed, buf.data(), mes * n);
}

}  // namespace tessera_vol
