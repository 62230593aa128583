// stored_type.h — the datatype of an open dataset, attribute or committed datatype, kept
// as its encoding instead of as a datatype ID.
//
// HDF5 answers H5Fget_obj_count/H5Fget_obj_ids(H5F_OBJ_DATATYPE, and H5F_OBJ_ALL) by
// counting datatype IDs that have application references, and every ID a connector
// creates through the public API (H5Tcopy, H5Tdecode) has one.  Native HDF5 holds its
// objects' types without such IDs, so a connector keeping an ID per open object would
// report open datatypes nobody opened.  An open object therefore keeps the H5Tencode
// bytes plus the facts the transfer paths need (sizes, vlen), and materializes an ID
// (TypeId) only for the duration of one call.  Type equality with a memory type — asked
// on every H5Dread/H5Dwrite — is cached for library-owned memory types (H5T_NATIVE_*
// and friends have no application reference and are immutable; user-made IDs can be
// modified with H5Tset_* between calls, so they are compared each time).
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace tessera_vol {

class StoredType {
 public:
  StoredType() = default;
  // From an encoding read from the catalog; throws VolError naming `what` if unreadable.
  StoredType(std::string_view enc, const std::string& what);
  // The same, naming `kind 'name'` (built only for an error).
  StoredType(std::string_view enc, const char* kind, std::string_view name);
  // From a datatype ID (encodes it); throws if it cannot be encoded.
  static StoredType of(hid_t type);

  bool valid() const { return enc_ && !enc_->empty(); }
  const std::string& encoding() const { return enc_ ? *enc_ : empty(); }
  size_t size() const { return size_; }            // H5Tget_size
  size_t file_size() const { return file_size_; }  // vlen.h file_type_size
  bool has_vlen() const { return vlen_; }
  bool has_std_ref() const { return std_ref_; }  // reference.h: holds H5T_STD_REF
  // H5Tequal(mtype, this type); throws for an invalid mtype.
  bool equal(hid_t mtype) const;
  // The facts learned per encoding and kept for the process (defined in stored_type.cc).
  struct Learned;

 private:
  void learn(hid_t id);
  void load(std::string_view enc, const char* kind, std::string_view name);
  // The process-wide facts learned per encoding (stored_type.cc): taken when `enc` is
  // known (true), and recorded for this type's encoding once learn() ran.
  bool adopt_learned(std::string_view enc);
  void remember_learned() const;
  // This type's facts from / as a process-wide record.
  void adopt(const Learned& l);
  Learned learned() const;
  // Records this type as the one an application's variable-length string with these
  // (character set, padding, byte order) encodes to (of()).
  void remember_vstr(const std::tuple<int, int, int>& key) const;
  static const std::string& empty();
  // One string per distinct encoding in the process (interned by the decoding cache):
  // handles copy a StoredType for every open and attribute listed, and copying the bytes
  // each time was a visible share of reopening 10,000 datasets (issue 20).
  std::shared_ptr<const std::string> enc_;
  size_t size_ = 0, file_size_ = 0;
  bool vlen_ = false, std_ref_ = false;
  // A variable-length string type: its byte order (H5Tget_order), which with
  // "variable-length string" is all H5Tequal tells two such types apart by (HDF5 1.14
  // compares neither character set nor padding of variable-length strings); -1 for
  // any other type.
  int vstr_order_ = -1;
  mutable std::vector<std::pair<hid_t, bool>> eq_cache_;  // immutable library IDs only
};

// What the transfer paths ask of a memory datatype on every H5Dread/H5Dwrite/H5Aread/
// H5Awrite.  A library-owned ID (no application reference: H5T_NATIVE_* and the other
// predefined types, immutable, and IDs are never reused while the library runs) is
// answered from a process-wide table after its first use; an application's ID can be
// changed with H5Tset_* between calls and is asked each time.  Three or four API calls
// per transfer before (issue 20).  Throws VolError for an invalid datatype.
struct MemTypeFacts {
  size_t size = 0;
  bool std_ref = false;  // holds H5T_STD_REF (reference.h)
  bool library = false;  // library-owned: the answers never change
};
MemTypeFacts mem_type_facts(hid_t mtype);
// Whether `type` is library-owned (the table above): such a type is never committed and
// never changes.  False for an invalid ID.
bool library_type(hid_t type);

// Drops the process-wide decoding caches of stored_type.cc (connector terminate).
void clear_type_caches();

// A registered datatype ID decoded from a StoredType, closed when it goes out of scope.
class TypeId {
 public:
  explicit TypeId(const StoredType& t);
  ~TypeId();
  TypeId(const TypeId&) = delete;
  TypeId& operator=(const TypeId&) = delete;
  operator hid_t() const { return id_; }
  // Hands the ID to the caller (H5Dget_type, H5Aget_type): no longer closed here.
  hid_t release() {
    hid_t id = id_;
    id_ = H5I_INVALID_HID;
    return id;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// True if `type` is, or holds, the 1.12-style reference type (H5T_STD_REF).
bool holds_std_ref(hid_t type);

}  // namespace tessera_vol
