// options.cc — see options.h.
#include "engine/context/options.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "engine/schema/layout.h"
#include "engine/util/file_cache.h"


namespace tessera {

namespace {

// One setting: its name, where it lives in EngineOptions, and its valid range.
struct Setting {
  const char* name;
  uint64_t lo, hi;
  uint64_t (*get)(const EngineOptions&);
  void (*put)(EngineOptions&, uint64_t);
};

constexpr uint64_t kMiB = 1 << 20;  // the largest sizes: 1 TiB in MiB, 1 GiB in KiB

const std::vector<Setting>& settings() {
  static const std::vector<Setting> s = {
      {"threads", 0, 1024, [](const EngineOptions& o) -> uint64_t { return o.threads; },
       [](EngineOptions& o, uint64_t v) { o.threads = static_cast<unsigned>(v); }},
      {"io_threads", 1, 256, [](const EngineOptions& o) -> uint64_t { return o.io_threads; },
       [](EngineOptions& o, uint64_t v) { o.io_threads = static_cast<unsigned>(v); }},
      {"tile_cache_mb", 0, kMiB, [](const EngineOptions& o) { return o.tile_cache_mb; },
       [](EngineOptions& o, uint64_t v) { o.tile_cache_mb = v; }},
      {"write_buffer_mb", 1, kMiB, [](const EngineOptions& o) { return o.write_buffer_mb; },
       [](EngineOptions& o, uint64_t v) { o.write_buffer_mb = v; }},
      {"write_memory_mb", 1, kMiB, [](const EngineOptions& o) { return o.write_memory_mb; },
       [](EngineOptions& o, uint64_t v) { o.write_memory_mb = v; }},
      {"direct_write_cells", 1, uint64_t{1} << 40, [](const EngineOptions& o) { return o.direct_write_cells; },
       [](EngineOptions& o, uint64_t v) { o.direct_write_cells = v; }},
      {"blob_kb", 0, kMiB, [](const EngineOptions& o) { return o.blob_kb; },
       [](EngineOptions& o, uint64_t v) { o.blob_kb = v; }},
      {"inline_fragment_kb", 0, kMiB, [](const EngineOptions& o) { return o.inline_fragment_kb; },
       [](EngineOptions& o, uint64_t v) { o.inline_fragment_kb = v; }},
      {"inline_total_mb", 0, kMiB, [](const EngineOptions& o) { return o.inline_total_mb; },
       [](EngineOptions& o, uint64_t v) { o.inline_total_mb = v; }},
      {"index_on_write", 0, 1, [](const EngineOptions& o) { return o.index_on_write; },
       [](EngineOptions& o, uint64_t v) { o.index_on_write = v; }},
      {"index_precision", 1, 9, [](const EngineOptions& o) { return o.index_precision; },
       [](EngineOptions& o, uint64_t v) { o.index_precision = v; }},
      {"index_max_bins", 2, 65536, [](const EngineOptions& o) { return o.index_max_bins; },
       [](EngineOptions& o, uint64_t v) { o.index_max_bins = v; }},
      {"one_file", 0, 1, [](const EngineOptions& o) { return o.one_file; },
       [](EngineOptions& o, uint64_t v) { o.one_file = v; }},
      {"max_open_files", 0, kMiB, [](const EngineOptions& o) { return o.max_open_files; },
       [](EngineOptions& o, uint64_t v) { o.max_open_files = v; }},
      {"auto_consolidate", 0, 1, [](const EngineOptions& o) { return o.auto_consolidate; },
       [](EngineOptions& o, uint64_t v) { o.auto_consolidate = v; }},
      {"consolidate_fanin", 2, 1024, [](const EngineOptions& o) { return o.consolidate_fanin; },
       [](EngineOptions& o, uint64_t v) { o.consolidate_fanin = v; }},
      {"consolidate_ratio", 2, 1000, [](const EngineOptions& o) { return o.consolidate_ratio; },
       [](EngineOptions& o, uint64_t v) { o.consolidate_ratio = v; }},
      // At most ten years (the nanoseconds must fit 64 bits).
      {"consolidate_retain_s", 0, 315360000, [](const EngineOptions& o) { return o.consolidate_retain_s; },
       [](EngineOptions& o, uint64_t v) { o.consolidate_retain_s = v; }},
  };
  return s;
}

// A decimal integer in [lo, hi], nothing else ("-1", "4k", "" and overflow are refused).
bool parse(const std::string& text, uint64_t lo, uint64_t hi, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

// Edit distance of two short names (a misspelt setting is one or two edits away).
size_t edits(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string env_name(const char* name) {
  std::string e = "TESSERA_";
  for (const char* p = name; *p; ++p) e += static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
  return e;
}

}  // namespace

Status EngineOptions::set(const std::string& key, const std::string& value) {
  if (key == "as_of") {
    if (value.empty())
      return Status(Errc::kInvalidArgument, "setting as_of=: expected a commit number, @<ns> or a UTC time");
    as_of = value;
    return Status::OK();
  }
  if (key == "layout") {
    Order t, c;
    std::string why;
    if (!parse_layout(value, &t, &c, &why)) return Status(Errc::kInvalidArgument, "setting layout=" + value + ": " + why);
    layout = layout_name(t, c);
    return Status::OK();
  }
  for (const Setting& s : settings()) {
    if (key != s.name) continue;
    uint64_t v = 0;
    if (!parse(value, s.lo, s.hi, &v))
      return Status(Errc::kInvalidArgument, "setting " + key + "=" + value + ": expected an integer from " +
                                                std::to_string(s.lo) + " to " + std::to_string(s.hi));
    s.put(*this, v);
    return Status::OK();
  }
  std::string known;
  for (const Setting& s : settings()) known += std::string(known.empty() ? "" : ", ") + s.name;
  known += ", as_of, layout";
  return Status(Errc::kInvalidArgument, "unknown setting '" + key + "' (known: " + known + ")");
}

Status EngineOptions::apply(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (std::isspace(static_cast<unsigned char>(text[i])) || text[i] == ',')) ++i;
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j])) && text[j] != ',') ++j;
    if (j > i) {
      const std::string item = text.substr(i, j - i);
      const size_t eq = item.find('=');
      if (eq == std::string::npos)
        return Status(Errc::kInvalidArgument, "setting '" + item + "': expected key=value");
      Status st = set(item.substr(0, eq), item.substr(eq + 1));
      if (!st.ok()) return st;
    }
    i = j;
  }
  return Status::OK();
}

Status EngineOptions::from_env(EngineOptions* out) {
  // TESSERA_* names the project uses for other things (build scripts, tools, tests) are
  // not settings; but a variable one or two edits from a setting's name is a misspelt
  // setting, which would silently change nothing — an error naming the right one.
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (kv.compare(0, 8, "TESSERA_") != 0 || eq == std::string::npos) continue;
    const std::string var = kv.substr(0, eq);
    if (var == "TESSERA_AS_OF")
      return Status(Errc::kInvalidArgument,
                    "TESSERA_AS_OF: as_of is never read from the environment (every open of every file would read the "
                    "past); give it in the connector's settings (HDF5_VOL_CONNECTOR=\"tessera as_of=...\") or the fapl");
    bool known = false;
    const Setting* near = nullptr;
    for (const Setting& s : settings()) {
      const std::string name = env_name(s.name);
      if (var == name) known = true;
      else if (edits(var, name) <= 2) near = &s;
    }
    if (!known && near)
      return Status(Errc::kInvalidArgument, var + ": not a tessera setting; did you mean " + env_name(near->name) +
                                                "? (the settings are listed in the README)");
  }
  EngineOptions o;
  for (const Setting& s : settings()) {
    const std::string name = env_name(s.name);
    const char* v = std::getenv(name.c_str());
    if (!v) continue;
    Status st = o.set(s.name, v);
    if (!st.ok()) return Status(st.code(), name + ": " + st.message());
  }
  if (const char* v = std::getenv("TESSERA_LAYOUT")) {
    Status st = o.set("layout", v);
    if (!st.ok()) return Status(st.code(), "TESSERA_LAYOUT: " + st.message());
  }
  *out = o;
  return Status::OK();
}

std::string EngineOptions::to_string() const {
  std::string out;
  for (const Setting& s : settings())
    out += std::string(out.empty() ? "" : " ") + s.name + "=" + std::to_string(s.get(*this));
  if (!as_of.empty()) out += " as_of=" + as_of;
  if (!layout.empty()) out += " layout=" + layout;
  return out;
}

namespace {
std::mutex g_process_mu;
bool g_process_set = false;
EngineOptions g_process;
}  // namespace

void configure_process(const EngineOptions& o) {
  std::lock_guard<std::mutex> g(g_process_mu);
  if (g_process_set) return;
  g_process = o;
  g_process_set = true;
  FileCache::process().set_capacity(static_cast<size_t>(o.max_open_files));
}

const EngineOptions& process_options() {
  std::lock_guard<std::mutex> g(g_process_mu);
  if (!g_process_set) {
    // No container configured the process: the environment's settings.  A bad one is an
    // error for whoever asks (a container's open, the first array operation), never the
    // defaults in its place.
    EngineOptions o;
    Status st = EngineOptions::from_env(&o);
    if (!st.ok()) throw_error(st.code(), st.message());
    g_process = o;
    g_process_set = true;
    FileCache::process().set_capacity(static_cast<size_t>(o.max_open_files));
  }
  return g_process;
}

}  // namespace tessera
