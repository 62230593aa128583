#include "engine/pack/pack_format.h"

#include <cstring>

#include "engine/util/bytes.h"
#include "engine/util/checksum.h"

namespace tessera {
namespace pack {

namespace {

const char kSlotMagic[] = "TSRAPACK";
constexpr uint32_t kVersion = 1;
const uint8_t kHdf5Sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

uint64_t salted(uint64_t salt, const uint8_t* p, size_t n) {
  const ByteSpan spans[2] = {{&salt, 8}, {p, n}};
  return checksum64_spans(spans, 2);
}

}  // namespace

std::vector<uint8_t> encode_slot(const Slot& s) {
  ByteWriter w;
  w.bytes(kSlotMagic, 8);
  w.u32(kVersion);
  w.u32(0);
  for (uint64_t v : {s.generation, s.checkpoint_off, s.checkpoint_len, s.journal_off, s.journal_len,
                     s.journal_seq, s.journal_salt})
    w.u64(v);
  w.u64(checksum64(w.buf().data(), w.size()));
  return w.buf();
}

bool decode_slot(const uint8_t* p, size_t n, Slot* s) {
  if (n < kSlotBytes || std::memcmp(p, kSlotMagic, 8) != 0) return false;
  uint64_t ck;
  std::memcpy(&ck, p + kSlotBytes - 8, 8);
  if (checksum64(p, kSlotBytes - 8) != ck) return false;
  uint32_t ver;
  std::memcpy(&ver, p + 8, 4);
  if (ver != kVersion) return false;
  uint64_t v[7];
  std::memcpy(v, p + 16, sizeof v);
  *s = Slot{v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
  return true;
}

const char* record_name(RecordType t) {
  switch (t) {
    case RecordType::kMake: return "make";
    case RecordType::kLink: return "link";
    case RecordType::kRename: return "rename";
    case RecordType::kRemove: return "remove";
    case RecordType::kExtent: return "extent";
    case RecordType::kSize: return "size";
    case RecordType::kNext: return "next";
    case RecordType::kEoa: return "eoa";
    case RecordType::kForeign: return "foreign";
    case RecordType::kTrim: return "trim";
  }
  return "?";
}

std::vector<uint8_t> encode_record(const Record& r, uint64_t salt) {
  ByteWriter w;
  w.u32(0);  // length, below
  w.bytes(&r.type, 2);
  w.bytes("\0\0", 2);
  w.u64(r.seq);
  switch (r.type) {
    case RecordType::kMake: w.u64(r.a); w.u8(r.kind); w.str(r.path); break;
    case RecordType::kLink:
    case RecordType::kRename: w.str(r.path); w.str(r.path2); break;
    case RecordType::kRemove: w.str(r.path); break;
    case RecordType::kExtent: w.u64(r.a); w.u64(r.b); w.u64(r.c); w.u64(r.d); break;
    case RecordType::kNext: w.u64(r.a); w.u64(r.b); w.u64(r.c); break;
    case RecordType::kEoa: w.u64(r.a); break;
    case RecordType::kSize:
    case RecordType::kForeign:
    case RecordType::kTrim: w.u64(r.a); w.u64(r.b); break;
  }
  auto& b = w.buf();
  const uint32_t payload = static_cast<uint32_t>(b.size() - kRecordHeader);
  std::memcpy(b.data(), &payload, 4);
  w.u64(salted(salt, b.data(), b.size()));
  return w.buf();
}

Parse parse_record(const uint8_t* p, size_t n, uint64_t salt, uint64_t seq, Record* r, size_t* len, bool* bad) {
  *bad = false;
  if (n < kRecordHeader) return n == 0 ? Parse::kEnd : Parse::kNeedMore;
  uint32_t payload;
  uint16_t type, zero;
  uint64_t rseq;
  std::memcpy(&payload, p, 4);
  std::memcpy(&type, p + 4, 2);
  std::memcpy(&zero, p + 6, 2);
  std::memcpy(&rseq, p + 8, 8);
  if (rseq != seq || zero != 0 || payload > kMaxRecord) return Parse::kEnd;
  *len = kRecordHeader + payload + 8;
  if (n < *len) return Parse::kNeedMore;
  uint64_t ck;
  std::memcpy(&ck, p + kRecordHeader + payload, 8);
  if (salted(salt, p, kRecordHeader + payload) != ck) return Parse::kEnd;
  // Intact: from here on a record that does not parse is corruption, not a torn tail.
  try {
    ByteReader in(p + kRecordHeader, payload, "pack journal record");
    *r = Record{};
    r->type = static_cast<RecordType>(type);
    r->seq = rseq;
    switch (r->type) {
      case RecordType::kMake: r->a = in.u64(); r->kind = in.u8(); r->path = in.str(); break;
      case RecordType::kLink:
      case RecordType::kRename: r->path = in.str(); r->path2 = in.str(); break;
      case RecordType::kRemove: r->path = in.str(); break;
      case RecordType::kExtent: r->a = in.u64(); r->b = in.u64(); r->c = in.u64(); r->d = in.u64(); break;
      case RecordType::kNext: r->a = in.u64(); r->b = in.u64(); r->c = in.u64(); break;
      case RecordType::kEoa: r->a = in.u64(); break;
      case RecordType::kSize:
      case RecordType::kForeign:
      case RecordType::kTrim: r->a = in.u64(); r->b = in.u64(); break;
      default: *bad = true; return Parse::kEnd;
    }
    if (!in.done()) *bad = true;
  } catch (const Error&) {
    *bad = true;
  }
  return *bad ? Parse::kEnd : Parse::kOk;
}

uint64_t anchor_offset(uint64_t wrapper_bytes) {
  if (wrapper_bytes == 0) return 0;
  uint64_t a = kAnchorBytes;
  while (a < wrapper_bytes) a *= 2;
  return a;
}

bool is_hdf5_signature(const uint8_t* p, size_t n) { return n >= 8 && std::memcmp(p, kHdf5Sig, 8) == 0; }

std::string check_wrapper(const std::vector<uint8_t>& w) {
  if (w.size() < 96 || !is_hdf5_signature(w.data(), w.size())) return "it does not begin with an HDF5 superblock";
  if (w[8] != 0) return "its superblock is version " + std::to_string(w[8]) + ", not 0";
  if (w[13] != 8 || w[14] != 8) return "its superblock's offsets or lengths are not 8 bytes";
  uint64_t base, eoa;
  std::memcpy(&base, w.data() + 24, 8);
  std::memcpy(&eoa, w.data() + kEoaOffset, 8);
  if (base != 0) return "its superblock's base address is not 0";
  if (eoa > w.size()) return "its end-of-file address lies past its bytes";
  if (w.size() > kMaxAnchor / 2) return "it is larger than " + std::to_string(kMaxAnchor / 2) + " bytes";
  return "";
}

}  // namespace pack
}  // namespace tessera
