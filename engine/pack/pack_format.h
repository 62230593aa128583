// pack_format.h — the bytes of a one-file container (docs/format.md, "The one-file
// container"): the HDF5 wrapper's end-of-file address, the anchor's two header slots, and
// the journal records that change the virtual tree.  Encoding and validation only; what
// the records mean is pack_tree.h, where they go is pack_store.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {
namespace pack {

constexpr uint64_t kBlock = 4096;            // extents and allocations are whole blocks
constexpr uint64_t kAnchorBytes = 4096;      // two slots, the rest zero
constexpr uint64_t kSlotStride = 512;
constexpr size_t kSlotBytes = 80;
constexpr uint64_t kMaxAnchor = 1u << 20;    // openers look for the anchor up to here
constexpr uint64_t kEoaOffset = 40;          // HDF5 superblock v0: end-of-file address
constexpr size_t kRecordHeader = 16;         // u32 length, u16 type, u16 0, u64 seq
constexpr size_t kMaxRecord = 3 * 4096 + 64; // two paths of at most 4096 bytes and fields
constexpr size_t kMaxPath = 4096;

inline uint64_t round_up(uint64_t v) { return (v + kBlock - 1) / kBlock * kBlock; }

// A range of the pack file.
struct Range {
  uint64_t off = 0, len = 0;
  uint64_t end() const { return off + len; }
};

// The current checkpoint and where the journal after it starts.
struct Slot {
  uint64_t generation = 0;
  uint64_t checkpoint_off = 0, checkpoint_len = 0;
  uint64_t journal_off = 0, journal_len = 0;  // the first journal block
  uint64_t journal_seq = 0, journal_salt = 0;
};
std::vector<uint8_t> encode_slot(const Slot& s);
// False when the bytes are not a valid slot (magic, version, checksum).
bool decode_slot(const uint8_t* p, size_t n, Slot* s);

enum class RecordType : uint16_t {
  kMake = 1, kLink = 2, kRename = 3, kRemove = 4, kExtent = 5,
  kSize = 6, kNext = 7, kEoa = 8, kForeign = 9, kTrim = 10,
};
const char* record_name(RecordType t);

// One journal record.  Fields by type (docs/format.md):
//   make: a ino, kind, path      link/rename: path -> path2      remove: path
//   extent: a ino, b file offset, c pack offset, d length
//   size: a ino, b size          next: a offset, b length, c salt of the new block
//   eoa: a                       foreign: a start, b end        trim: a ino, b capacity
struct Record {
  RecordType type = RecordType::kMake;
  uint64_t seq = 0;
  uint64_t a = 0, b = 0, c = 0, d = 0;
  uint8_t kind = 0;
  std::string path, path2;
};

// The record's bytes; its checksum is seeded by the journal block's salt, so stale
// records of a block's earlier life never validate.
std::vector<uint8_t> encode_record(const Record& r, uint64_t salt);

enum class Parse { kOk, kNeedMore, kEnd };
// Parses the record at p (n bytes available).  kNeedMore: *len is the whole record's
// length, read that much and call again; kEnd: not an intact record with sequence `seq`
// (a torn or stale record, or zeros: the journal ends here).  A record that validates but
// does not parse (unknown type, trailing bytes) is kEnd too, with *bad set: corruption.
Parse parse_record(const uint8_t* p, size_t n, uint64_t salt, uint64_t seq, Record* r, size_t* len, bool* bad);

// The anchor offset for a wrapper of `wrapper_bytes` (0 without one): the smallest
// 4096·2^k at or past its end.
uint64_t anchor_offset(uint64_t wrapper_bytes);
// Empty when the bytes can be a pack's wrapper (an HDF5 superblock version 0 at offset 0,
// 8-byte offsets and lengths, base address 0), else why not.
std::string check_wrapper(const std::vector<uint8_t>& w);
bool is_hdf5_signature(const uint8_t* p, size_t n);

}  // namespace pack
}  // namespace tessera
