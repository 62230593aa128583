// history.cc — history.h.
#include "engine/catalog/history.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "engine/util/bytes.h"

namespace tessera {

namespace {

const char kPrefix[] = "cm/";

std::string key_of(uint64_t seq) {
  char b[32];
  std::snprintf(b, sizeof b, "cm/%016llx", static_cast<unsigned long long>(seq));
  return b;
}

CommitInfo decode(const std::string& key, const std::string& value) {
  CommitInfo c;
  c.seq = std::strtoull(key.c_str() + sizeof kPrefix - 1, nullptr, 16);
  ByteReader r(value.data(), value.size(), "catalog record '" + key + "'");
  c.ts_ns = r.u64();
  c.fragments = r.u32();
  c.arrays = r.u32();
  return c;
}

// "2026-11-26 10:41:09.5Z" -> ns since the epoch (UTC); false if it is not such a time.
bool parse_time(const std::string& s, uint64_t* ns) {
  int y, mo, d, h, mi;
  double sec = 0;
  char sep;
  int used = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%c%2d:%2d%n", &y, &mo, &d, &sep, &h, &mi, &used) != 6 ||
      (sep != 'T' && sep != ' '))
    return false;
  std::string rest = s.substr(used);
  if (!rest.empty() && rest[0] == ':') {
    char* end = nullptr;
    sec = std::strtod(rest.c_str() + 1, &end);
    rest = end;
  }
  if (!rest.empty() && rest != "Z" && rest != "z" && rest != " UTC") return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec < 0 || sec >= 61) return false;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  const time_t t = timegm(&tm);
  if (t < 0) return false;
  *ns = static_cast<uint64_t>(t) * 1000000000ull + static_cast<uint64_t>(sec * 1e9 + 0.5);
  return true;
}

}  // namespace

std::vector<CommitInfo> list_commits(const Catalog& cat) {
  std::vector<CommitInfo> out;
  for (auto& [k, v] : cat.scan(kPrefix)) out.push_back(decode(k, v));
  return out;
}

CommitInfo last_commit(const Catalog& cat) {
  auto v = cat.get(Catalog::kCommitKey);
  if (!v) return CommitInfo{};
  const uint64_t seq = std::strtoull(v->c_str(), nullptr, 10);
  auto rec = cat.get(key_of(seq));
  if (!rec) return CommitInfo{seq, 0, 0, 0};
  return decode(key_of(seq), *rec);
}

CommitInfo add_commit(const Catalog& cat, CatalogBatch& b, uint64_t ts_ns, uint32_t fragments, uint32_t arrays) {
  CommitInfo c{last_commit(cat).seq + 1, ts_ns, fragments, arrays};
  ByteWriter w;
  w.u64(c.ts_ns);
  w.u32(c.fragments);
  w.u32(c.arrays);
  b.put(key_of(c.seq), std::string(w.buf().begin(), w.buf().end()));
  b.put(Catalog::kCommitKey, std::to_string(c.seq));
  return c;
}

Status find_commit(const Catalog& cat, const std::string& when, CommitInfo* out) {
  return guard([&] {
    std::string w = when;
    if (!w.empty() && w[0] == '#') w = w.substr(1);
    const std::vector<CommitInfo> all = list_commits(cat);
    if (all.empty()) throw_error(Errc::kNotFound, "the container '" + cat.log_path() + "' records no commits yet");
    uint64_t ns = 0;
    if (!w.empty() && w.find_first_not_of("0123456789") == std::string::npos) {
      const uint64_t seq = std::strtoull(w.c_str(), nullptr, 10);
      for (const CommitInfo& c : all)
        if (c.seq == seq) {
          *out = c;
          return;
        }
      throw_error(Errc::kNotFound, "no commit " + w + " (commits " + std::to_string(all.front().seq) + " to " +
                                       std::to_string(all.back().seq) + " are recorded)");
    }
    if (w.size() > 1 && w[0] == '@' && w.find_first_not_of("0123456789", 1) == std::string::npos) {
      ns = std::strtoull(w.c_str() + 1, nullptr, 10);
    } else if (!parse_time(w, &ns)) {
      throw_error(Errc::kInvalidArgument, "'" + when +
                                              "' names no commit: give its number (12), a UTC time "
                                              "(2026-11-26T10:41:09Z) or @<ns since the epoch>");
    }
    const CommitInfo* best = nullptr;
    for (const CommitInfo& c : all)
      if (c.ts_ns <= ns) best = &c;
    if (!best) throw_error(Errc::kNotFound, "no commit at or before " + when + " (the first is later)");
    *out = *best;
  });
}

}  // namespace tessera
