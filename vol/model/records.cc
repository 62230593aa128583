// records.cc — the catalog records of HDF5 objects, links and attributes (records.h;
// byte layouts in docs/format.md, "Connector records"), and the path and key helpers.
#include "vol/model/records.h"

#include <cstring>
#include <ctime>

#include "engine/util/bytes.h"
#include "vol/base/default_plists.h"

namespace tessera_vol {

namespace {

constexpr uint8_t kRecordVersion = 1;

// `what`: a literal naming the record ("catalog record (object)"), copied only when an
// error message needs it.
tessera::ByteReader reader(std::string_view s, const char* what) {
  return tessera::ByteReader(s.data(), s.size(), what);
}

// ByteWriter's encoding (little-endian fixed-width fields, u32-length-prefixed strings)
// written straight into the record string, reserved to its final size: ByteWriter's vector
// grew several times per record and was then copied into a string (issue 20: every
// H5Dcreate, H5Acreate and H5Awrite serializes one or two records).
class RecordWriter {
 public:
  explicit RecordWriter(size_t size) { out_.reserve(size); }
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { put(&v, 4); }
  void u64(uint64_t v) { put(&v, 8); }
  void i64(int64_t v) { put(&v, 8); }
  void bytes(const void* p, size_t n) { put(p, n); }
  void str(std::string_view v) {
    u32(static_cast<uint32_t>(v.size()));
    put(v.data(), v.size());
  }
  std::string take() { return std::move(out_); }

 private:
  void put(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

}  // namespace

std::vector<std::string> path_components(const std::string& path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string p = path.substr(i, j - i);
    if (!p.empty() && p != ".") parts.push_back(p);
    i = j + 1;
  }
  return parts;
}

std::string hex16(uint64_t v) {
  // Every catalog key holds one: a plain loop, not snprintf (it showed in profiles).
  static const char kDigits[] = "0123456789abcdef";
  std::string b(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) b[i] = kDigits[v & 15];
  return b;
}

std::string id_key(std::string_view tag, uint64_t id, std::string_view tail, std::string_view name) {
  // One allocation per key: "o/" + hex16(id) + "/" + name made three or four, and every
  // create, open and attribute access builds a few keys.
  static const char kDigits[] = "0123456789abcdef";
  std::string k(tag.size() + 16 + tail.size() + name.size(), '0');
  std::memcpy(k.data(), tag.data(), tag.size());
  char* d = k.data() + tag.size();
  for (int i = 15; i >= 0; --i, id >>= 4) d[i] = kDigits[id & 15];
  if (!tail.empty()) std::memcpy(d + 16, tail.data(), tail.size());
  if (!name.empty()) std::memcpy(d + 16 + tail.size(), name.data(), name.size());
  return k;
}


// ---------------------------------------------------------------- records

std::string ObjectRecord::serialize() const {
  RecordWriter w(2 + 8 + 4 + cpl.size() + 4 + type_enc.size() + 4 + space_enc.size() + 8 + 8 + 8 + 4 +
                 comment.size() + 8 + 4 + vlen_fill.size() + 8);
  w.u8(kRecordVersion);
  w.u8(static_cast<uint8_t>(type));
  w.u64(rc);
  w.str(cpl);
  w.str(type_enc);
  w.str(space_enc);
  w.u64(array_id);
  w.i64(next_link_corder);
  w.i64(next_attr_corder);
  w.str(comment);
  w.u64(committed_type);
  w.str(vlen_fill);
  w.i64(times);
  return w.take();
}

void ObjectRecord::stamp_times(hid_t cpl) {
  hbool_t track = 1;
  if (cpl != H5P_DEFAULT && cpl >= 0 && H5Pget_obj_track_times(cpl, &track) < 0) track = 1;
  stamp_times_tracking(track != 0);
}

void ObjectRecord::stamp_times_tracking(bool track) { times = track ? static_cast<int64_t>(std::time(nullptr)) : 0; }

ObjectRecord ObjectRecord::deserialize(std::string_view s) {
  auto r = reader(s, "catalog record (object)");
  ObjectRecord o;
  if (r.u8() != kRecordVersion) r.fail("unknown record version");
  uint8_t t = r.u8();
  if (t < 1 || t > 3) r.fail("bad object type");
  o.type = static_cast<ObjType>(t);
  o.rc = r.u64();
  o.cpl = r.str();
  o.type_enc = r.str();
  o.space_enc = r.str();
  o.array_id = r.u64();
  o.next_link_corder = r.i64();
  o.next_attr_corder = r.i64();
  o.comment = r.str();
  o.committed_type = r.u64();
  o.vlen_fill = r.str();
  o.times = r.i64();
  return o;
}

std::string LinkRecord::serialize() const {
  RecordWriter w(2 + 8 + 4 + soft_path.size() + 4 + ext_obj.size() + 8 + 1 + 1);
  w.u8(kRecordVersion);
  w.u8(static_cast<uint8_t>(type));
  w.u64(target);
  w.str(soft_path);
  w.str(ext_obj);
  w.i64(corder);
  w.u8(static_cast<uint8_t>(cset));
  if (corder_kept) w.u8(1);  // optional: absent means not kept (older records too)
  return w.take();
}

LinkRecord LinkRecord::hard(uint64_t target, hid_t lcpl) {
  LinkRecord l;
  l.type = H5L_TYPE_HARD;
  l.target = target;
  l.cset = lcpl_cset(lcpl);
  return l;
}

LinkRecord LinkRecord::deserialize(std::string_view s) {
  auto r = reader(s, "catalog record (link)");
  LinkRecord l;
  if (r.u8() != kRecordVersion) r.fail("unknown record version");
  l.type = static_cast<H5L_type_t>(r.u8());
  l.target = r.u64();
  l.soft_path = r.str();
  l.ext_obj = r.str();
  l.corder = r.i64();
  l.cset = static_cast<H5T_cset_t>(r.u8());
  if (r.remaining() > 0) l.corder_kept = r.u8() != 0;
  return l;
}

std::string AttrRecord::serialize() const {
  RecordWriter w(1 + 4 + type_enc.size() + 4 + space_enc.size() + 8 + data.size() + 8 + 1 + 8);
  w.u8(kRecordVersion);
  w.str(type_enc);
  w.str(space_enc);
  w.u64(data.size());
  w.bytes(data.data(), data.size());
  w.i64(corder);
  w.u8(static_cast<uint8_t>(cset));
  w.u64(committed_type);
  return w.take();
}

AttrRecord AttrRecord::deserialize(std::string_view s) {
  auto r = reader(s, "catalog record (attribute)");
  AttrRecord a;
  if (r.u8() != kRecordVersion) r.fail("unknown record version");
  a.type_enc = r.str();
  a.space_enc = r.str();
  uint64_t n = r.count(1);
  a.data.resize(n);
  r.bytes(a.data.data(), n);
  a.corder = r.i64();
  a.cset = static_cast<H5T_cset_t>(r.u8());
  a.committed_type = r.u64();
  return a;
}

}  // namespace tessera_vol
