// array_files.cc — see array_files.h.
#include "engine/array/array_files.h"

#include <cstring>

#include "engine/util/bytes.h"
#include "engine/util/checksum.h"
#include "engine/util/error.h"
#include "engine/util/file_io.h"

namespace tessera {
namespace array_files {

bool is_rank_journal(const std::string& name) {
  const size_t p = sizeof kRankJournalPrefix - 1, q = sizeof kJournalSuffix - 1;
  return name.size() > p + q && name.compare(0, p, kRankJournalPrefix) == 0 &&
         name.compare(name.size() - q, q, kJournalSuffix) == 0 &&
         name.find_first_not_of("0123456789", p) == name.size() - q;
}

namespace {
constexpr char kSharedSuffix[] = ".tfr.shared.tmp";
constexpr size_t kSharedSuffixLen = sizeof kSharedSuffix - 1;
}  // namespace

std::string shared_name(const FragmentId& id) { return "." + id.name() + kSharedSuffix; }

bool parse_shared_name(const std::string& name, FragmentId* id) {
  if (name.size() != 1 + 43 + kSharedSuffixLen || name[0] != '.' ||
      name.compare(44, kSharedSuffixLen, kSharedSuffix) != 0)
    return false;
  return FragmentId::parse(name.substr(1, 43), id);
}

std::vector<uint8_t> schema_file_bytes(const Schema& s, const FragmentId& extent_id) {
  std::vector<uint8_t> body = s.serialize();
  ByteWriter w;
  w.u32(static_cast<uint32_t>(body.size()));
  w.bytes(body.data(), body.size());
  w.u64(extent_id.ts);
  w.u32(extent_id.rank);
  w.u32(extent_id.seq);
  w.u32(extent_id.gen);
  w.u64(checksum64(w.buf().data(), w.size()));
  return std::move(w.buf());
}

Schema parse_schema_file(const std::vector<uint8_t>& b, const std::string& what, FragmentId* extent_id) {
  if (b.size() < 8) throw_error(Errc::kCorrupt, what + ": file truncated");
  uint64_t ck;
  std::memcpy(&ck, b.data() + b.size() - 8, 8);
  if (checksum64(b.data(), b.size() - 8) != ck) throw_error(Errc::kCorrupt, what + ": checksum mismatch");
  ByteReader r(b.data(), b.size() - 8, what);
  uint32_t n = r.u32();
  if (n > r.remaining()) r.fail("schema truncated");
  Schema s = Schema::deserialize(b.data() + 4, n, what);
  std::vector<uint8_t> skip(n);
  r.bytes(skip.data(), n);
  extent_id->ts = r.u64();
  extent_id->rank = r.u32();
  extent_id->seq = r.u32();
  extent_id->gen = r.u32();
  if (!r.done()) r.fail("trailing bytes");
  return s;
}

void write_schema(Env& env, const std::string& dir, const Schema& s, const FragmentId& extent_id, bool durable, bool fresh) {
  std::vector<uint8_t> b = schema_file_bytes(s, extent_id);
  if (fresh) {
    File f = File::open_rw(env, join_path(dir, kSchemaFile), /*create=*/true, /*exclusive=*/true);
    f.pwrite_all(b.data(), b.size(), 0);
    f.close();
    return;
  }
  write_file_atomic(env, join_path(dir, kSchemaFile), b.data(), b.size(), durable);
}

Schema read_schema(Env& env, const std::string& dir, FragmentId* extent_id) {
  std::string path = join_path(dir, kSchemaFile);
  return parse_schema_file(read_file(env, path), "array schema '" + path + "'", extent_id);
}

}  // namespace array_files
}  // namespace tessera
