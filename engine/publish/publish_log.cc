// publish_log.cc — see publish_log.h.  An entry is 59 bytes: the fragment id's 43-character
// name, its file size (u64 LE), XXH3-64 of those 51 bytes (u64 LE).
#include "engine/publish/publish_log.h"

#include <cstring>

#include "engine/util/checksum.h"
#include "engine/util/error.h"
#include "engine/util/file_io.h"

namespace tessera {

namespace {

constexpr char kPrefix[] = "published-r";
constexpr char kSuffix[] = ".log";
constexpr size_t kIdChars = 43, kEntry = kIdChars + 16;

void put_u64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint64_t get_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

std::vector<uint8_t> encode(const std::vector<std::pair<FragmentId, uint64_t>>& files) {
  std::vector<uint8_t> out(files.size() * kEntry);
  uint8_t* p = out.data();
  for (auto& [id, size] : files) {
    const std::string name = id.name();
    std::memcpy(p, name.data(), kIdChars);
    put_u64(p + kIdChars, size);
    put_u64(p + kIdChars + 8, checksum64(p, kIdChars + 8));
    p += kEntry;
  }
  return out;
}

// Returns the bytes of the entries read (a whole number of entries).
size_t decode(const std::vector<uint8_t>& b, std::map<FragmentId, uint64_t>* out) {
  size_t off = 0;
  for (; off + kEntry <= b.size(); off += kEntry) {
    const uint8_t* p = b.data() + off;
    FragmentId id;
    if (get_u64(p + kIdChars + 8) != checksum64(p, kIdChars + 8) ||
        !FragmentId::parse(std::string(reinterpret_cast<const char*>(p), kIdChars), &id))
      break;  // a torn append (or damage): what follows is not trusted
    (*out)[id] = get_u64(p + kIdChars);
  }
  return off;
}

}  // namespace

std::string publish_log_name(uint32_t rank) { return kPrefix + std::to_string(rank) + kSuffix; }

bool is_publish_log(const std::string& name) {
  const size_t np = sizeof kPrefix - 1, ns = sizeof kSuffix - 1;
  if (name.size() <= np + ns || name.compare(0, np, kPrefix) != 0 || name.compare(name.size() - ns, ns, kSuffix) != 0)
    return false;
  for (size_t i = np; i < name.size() - ns; ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}

bool is_publish_log_temp(const std::string& name) {
  const size_t at = name.find(".tmp.");
  return at != std::string::npos && is_publish_log(name.substr(0, at));
}

void append_publish_log(Env& env, const std::string& frag_dir, uint32_t rank,
                        const std::vector<std::pair<FragmentId, uint64_t>>& files, bool rewrite) {
  if (files.empty()) return;
  const std::string path = join_path(frag_dir, publish_log_name(rank));
  const bool fresh = !path_exists(env, path);
  if (rewrite) {
    std::map<FragmentId, uint64_t> entries;
    if (!fresh) decode(read_file(env, path), &entries);
    for (auto& [id, size] : files) entries[id] = size;
    const std::vector<uint8_t> b = encode({entries.begin(), entries.end()});
    write_file_atomic(env, path, b.data(), b.size(), /*durable=*/true);
    return;
  }
  // Appended right after the entries a reader takes: whatever follows them — a torn
  // entry a crash left, or whole-sized entries a torn multi-entry append left zeroed —
  // stops every reader there, so new entries written after it would permit nothing
  // (their files, renamed next, would read as "not published in this container").
  std::map<FragmentId, uint64_t> old;
  const uint64_t end = fresh ? 0 : decode(read_file(env, path), &old);
  File f = File::open_rw(env, path, /*create=*/true);
  // Cut first: entries after the damage must not come back behind the new ones.
  if (f.size() != end) f.truncate(end);
  const std::vector<uint8_t> b = encode(files);
  f.pwrite_all(b.data(), b.size(), end);
  f.sync();
  f.close();
  if (fresh) sync_dir(env, frag_dir);
}

std::map<FragmentId, uint64_t> read_publish_logs(Env& env, const std::string& frag_dir,
                                                 const std::vector<std::string>& names) {
  std::map<FragmentId, uint64_t> out;
  for (const std::string& name : names) {
    if (!is_publish_log(name)) continue;
    try {
      decode(read_file(env, join_path(frag_dir, name)), &out);
    } catch (const Error& e) {
      if (e.code() != Errc::kNotFound) throw;
    }
  }
  return out;
}

void trim_publish_log(Env& env, const std::string& frag_dir, uint32_t rank,
                      const std::map<FragmentId, uint64_t>& recorded) {
  const std::string path = join_path(frag_dir, publish_log_name(rank));
  if (!path_exists(env, path)) return;
  std::map<FragmentId, uint64_t> mine;
  decode(read_file(env, path), &mine);
  std::vector<std::pair<FragmentId, uint64_t>> keep;
  for (auto& [id, size] : mine)
    if (!recorded.count(id)) keep.emplace_back(id, size);
  if (keep.empty()) {
    remove_file(env, path);
    return;
  }
  if (keep.size() == mine.size()) return;
  const std::vector<uint8_t> b = encode(keep);
  write_file_atomic(env, path, b.data(), b.size(), /*durable=*/true);
}

}  // namespace tessera
