// stored_type.cc — see stored_type.h.
#include "vol/stored_type.h"

#include "vol/object_model.h"
#include "vol/vlen.h"

namespace tessera_vol {

StoredType::StoredType(std::string enc, const std::string& what) : enc_(std::move(enc)) {
  if (enc_.empty()) fail_arg(what + " has no stored datatype");
  TypeId id(*this);  // validates the encoding once
  learn(id);
}

StoredType StoredType::of(hid_t type) {
  size_t sz = 0;
  StoredType t;
  if (H5Tencode(type, nullptr, &sz) < 0 || sz == 0) fail_arg("cannot encode the datatype");
  t.enc_.resize(sz);
  if (H5Tencode(type, t.enc_.data(), &sz) < 0) fail_arg("cannot encode the datatype");
  t.learn(type);
  return t;
}

void StoredType::learn(hid_t id) {
  size_ = H5Tget_size(id);
  if (size_ == 0) fail_arg("invalid datatype");
  vlen_ = type_has_vlen(id);
  file_size_ = file_type_size(id);
}

bool StoredType::equal(hid_t mtype) const {
  for (auto& [id, eq] : eq_cache_)
    if (id == mtype) return eq;
  TypeId mine(*this);
  htri_t eq = H5Tequal(mtype, mine);
  if (eq < 0) fail_arg("invalid memory datatype");
  // IDs are never reused while the library runs, and one without application references
  // belongs to the library (predefined types): immutable, so its answer stays true.
  // Bounded: a handful of memory types per dataset in practice.
  if (eq_cache_.size() < 16 && H5Iget_ref(mtype) == 0) eq_cache_.emplace_back(mtype, eq > 0);
  return eq > 0;
}

TypeId::TypeId(const StoredType& t) {
  if (!t.valid()) fail_arg("no datatype stored");
  id_ = H5Tdecode(t.encoding().data());
  if (id_ < 0) fail_arg("unreadable stored datatype encoding");
}

TypeId::~TypeId() {
  if (id_ >= 0) H5Tclose(id_);
}

}  // namespace tessera_vol
