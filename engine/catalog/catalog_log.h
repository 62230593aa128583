// catalog_log.h — how the catalog log is framed on disk (catalog.cc writes and replays
// it, catalog_history.cc reads archived ones): a file header, then checksummed records.
#pragma once
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "engine/util/bytes.h"
#include "engine/util/checksum.h"

namespace tessera {
namespace catalog_log {
constexpr char kMagic[8] = {'T', 'S', 'R', 'A', 'C', 'A', 'T', 'L'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kFileHeaderSize = 16;  // magic + u32 version + u32 reserved
constexpr uint64_t kRecordHeaderSize = 16;  // u32 len + u64 payload xxh3 + u32 header check
constexpr uint64_t kCompactSlack = 64 * 1024;

inline std::vector<uint8_t> file_header() {
  ByteWriter w;
  w.bytes(kMagic, sizeof kMagic);
  w.u32(kVersion);
  w.u32(0);
  return std::move(w.buf());
}

inline uint32_t header_check(const uint8_t* first12) {
  return static_cast<uint32_t>(checksum64(first12, 12));
}

// A record is framed as [u32 len][u64 xxh3(payload)][u32 low32(xxh3(previous 12 bytes))]
// followed by the payload (Catalog::write_record).  Fills in that header at h.
inline void make_header(uint8_t* h, uint64_t len, uint64_t sum) {
  uint32_t len32 = static_cast<uint32_t>(len);
  std::memcpy(h, &len32, 4);
  std::memcpy(h + 4, &sum, 8);
  uint32_t check = header_check(h);
  std::memcpy(h + 12, &check, 4);
}

// Bytes one live pair costs in a compacted log (op byte + two length-prefixed strings).
inline uint64_t entry_bytes(std::string_view k, std::string_view v) {
  return 1 + 4 + k.size() + 4 + v.size();
}

inline bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i]) return false;
  return true;
}

struct RecordView {
  enum Kind { kGood, kTruncated, kBadHeader, kBadPayload } kind;
  uint64_t end = 0;  // offset after the record (valid for kGood / kBadPayload)
};

// Classifies the record starting at `off` within buf[0, n).
inline RecordView inspect(const uint8_t* buf, uint64_t n, uint64_t off) {
  if (n - off < kRecordHeaderSize) return {RecordView::kTruncated};
  const uint8_t* h = buf + off;
  uint32_t len, check;
  uint64_t sum;
  std::memcpy(&len, h, 4);
  std::memcpy(&sum, h + 4, 8);
  std::memcpy(&check, h + 12, 4);
  if (check != header_check(h)) return {RecordView::kBadHeader};
  if (len > n - off - kRecordHeaderSize) return {RecordView::kTruncated};
  uint64_t end = off + kRecordHeaderSize + len;
  if (checksum64(h + kRecordHeaderSize, len) != sum) return {RecordView::kBadPayload, end};
  return {RecordView::kGood, end};
}

}  // namespace catalog_log
}  // namespace tessera
