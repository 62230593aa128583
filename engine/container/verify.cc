// verify.cc — verify_container (verify.h).
#include "engine/container/verify.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "engine/array/array_files.h"
#include "engine/container/container.h"
#include "engine/container/one_file.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment.h"
#include "engine/schema/layout.h"
#include "engine/publish/publish_journal.h"
#include "engine/publish/publish_log.h"
#include "engine/fragment/var_heap.h"

namespace tessera {

using namespace array_files;

namespace {

const char kArraysDir[] = "arrays";

bool hex16_name(const std::string& name, uint64_t* id) {
  if (name.size() != 16 || name.find_first_not_of("0123456789abcdef") != std::string::npos) return false;
  *id = std::strtoull(name.c_str(), nullptr, 16);
  return true;
}

std::string hex16(uint64_t id) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(id));
  return b;
}

// One array's pieces, listed before anything is read (for the progress total).
struct ArrayPlan {
  uint64_t id = 0;
  std::string dir, label;
  bool in_catalog = false;  // a schema record (else a schema file, or nothing)
  std::vector<std::string> files;                          // frag/*.tfr paths
  std::vector<std::pair<std::string, std::string>> inl;    // (key, value) inline fragments
  std::map<FragmentId, uint64_t> recorded;                 // "file/" records
  bool files_complete = false;  // the records name every committed file (array_store.h)
  bool files_logged = false;    // every committed file is recorded or logged (publish_log.h)
  std::map<FragmentId, uint64_t> logged;                   // publish log entries
  std::vector<std::string> journals;                       // frag/*.journal paths
  uint64_t tmp_files = 0;                                  // frag/.*.tmp
};

class Verifier {
 public:
  Verifier(Container& c, const VerifyOptions& o, VerifyReport* r) : c_(c), o_(o), r_(*r) {}

  void run() {
    std::vector<ArrayPlan> plans = plan();
    for (auto& p : plans) {
      for (auto& f : p.files) total_ += file_size(f);
      for (auto& kv : p.inl) total_ += kv.second.size();
    }
    for (auto& p : plans) check_array(p);
  }

 private:
  uint64_t file_size(const std::string& path) {
    try {
      return File::open_read(c_.env(), path).size();
    } catch (const Error&) {
      return 0;
    }
  }

  std::vector<ArrayPlan> plan() {
    std::map<uint64_t, ArrayPlan> arrays;
    Catalog& cat = c_.catalog();
    // Catalog-bound arrays: "arr/<hex16>/schema" (and their other records).
    for (auto& [key, value] : cat.scan("arr/")) {
      uint64_t id;
      if (key.size() < 21 || !hex16_name(key.substr(4, 16), &id) || key[20] != '/') {
        r_.problems.push_back("catalog '" + cat.log_path() + "': record '" + key + "' is not an array record");
        continue;
      }
      ArrayPlan& p = arrays[id];
      p.id = id;
      const std::string rest = key.substr(21);
      if (rest == "schema") p.in_catalog = true;
      else if (rest == kFilesCompleteKey) p.files_complete = true;
      else if (rest == kFilesLoggedKey) p.files_logged = true;
      else if (rest.compare(0, 5, "frag/") == 0) p.inl.emplace_back(key, value);
      else if (rest.compare(0, 7, "retire/") == 0 || rest == "merges") {
        // Automatic consolidation's records (merge_records.h): their form only; a retire
        // record naming no file present is dropped by the writer's next merge.
        FragmentId fid;
        const bool ok = rest == "merges" ? value.size() == 48 : FragmentId::parse(rest.substr(7), &fid) && value.size() == 8;
        if (!ok)
          r_.problems.push_back("catalog '" + cat.log_path() + "': record '" + key +
                                "' is not a record of automatic consolidation");
      }
      else if (rest.compare(0, 5, "file/") == 0) {
        FragmentId fid;
        if (!FragmentId::parse(rest.substr(5), &fid) || value.size() != 8) {
          r_.problems.push_back("catalog '" + cat.log_path() + "': record '" + key + "' is not a fragment file record");
          continue;
        }
        uint64_t size;
        std::memcpy(&size, value.data(), 8);
        p.recorded[fid] = size;
      }
    }
    const std::string root = join_path(c_.path(), kArraysDir);
    if (is_directory(c_.env(), root))
      for (const std::string& name : list_dir(c_.env(), root)) {
        uint64_t id;
        if (!hex16_name(name, &id)) continue;
        arrays[id].id = id;
      }
    uint64_t next = 1;
    if (auto v = cat.get("sys/next_array_id")) next = std::strtoull(v->c_str(), nullptr, 10);
    std::vector<ArrayPlan> out;
    for (auto& [id, p] : arrays) {
      p.dir = c_.array_dir(id);
      p.label = "array " + hex16(id);
      const std::string frag = join_path(p.dir, kFragDir);
      if (!p.in_catalog && !path_exists(c_.env(), join_path(p.dir, kSchemaFile))) {
        if (!p.inl.empty() || !p.recorded.empty()) {
          r_.problems.push_back(p.label + ": its schema is missing (no catalog record 'arr/" + hex16(id) +
                                "/schema', no file '" + join_path(p.dir, kSchemaFile) + "')");
        } else if (id >= next) {
          r_.notes.push_back(p.label + ": directory '" + p.dir +
                             "' was left by a writer that crashed before its first flush (the next dataset "
                             "created replaces it)");
        } else {
          // A dataset that is deleted: its files are kept for reads of earlier commits.
          // (A dataset whose array is gone is the object check's to report.)
          r_.notes.push_back(p.label + ": the files of a deleted dataset, kept for reads as of earlier commits "
                                       "until `tessera vacuum`");
        }
        continue;
      }
      std::vector<std::string> names;
      if (is_directory(c_.env(), frag)) names = list_dir(c_.env(), frag);
      if (p.files_logged) {
        try {
          p.logged = read_publish_logs(c_.env(), frag, names);
        } catch (const Error& e) {
          r_.problems.push_back(p.label + ": " + e.what());
        }
      }
      if (!names.empty())
        for (const std::string& name : names) {
          FragmentId fid;
          if (name.size() == 47 && name.compare(43, 4, ".tfr") == 0 && FragmentId::parse(name.substr(0, 43), &fid))
            p.files.push_back(join_path(frag, name));
          else if (name.find(".journal") != std::string::npos)
            p.journals.push_back(join_path(frag, name));
          else if (name.size() > 4 && name[0] == '.' && name.compare(name.size() - 4, 4, ".tmp") == 0)
            p.tmp_files++;
        }
      out.push_back(std::move(p));
    }
    return out;
  }

  void check_array(ArrayPlan& p) {
    r_.arrays++;
    r_.recorded_files += p.recorded.size();
    Schema schema;
    try {
      FragmentId extent_id;
      if (p.in_catalog) {
        auto v = c_.catalog().get("arr/" + hex16(p.id) + "/schema");
        std::vector<uint8_t> b(v->begin(), v->end());
        schema = parse_schema_file(b, "array schema record 'arr/" + hex16(p.id) + "/schema'", &extent_id);
      } else {
        schema = read_schema(c_.env(), p.dir, &extent_id);
      }
    } catch (const Error& e) {
      r_.problems.push_back(p.label + ": " + e.what());
      return;
    }
    std::vector<std::pair<std::string, FragmentId>> rolling;  // (its name now, its id)
    for (auto& j : p.journals) {
      if (j.find(".journal.tmp.") != std::string::npos) {
        r_.notes.push_back(p.label + ": '" + j + "' is an unfinished journal's temporary file (the next writer removes it)");
        continue;
      }
      try {
        std::vector<uint8_t> bytes = read_file(c_.env(), j);
        if (PublishJournal::torn(bytes)) {
          r_.notes.push_back(p.label + ": publish journal '" + j +
                             "' is empty: a flush was cut short before its first rename (the next writer drops it)");
          continue;
        }
        const PublishJournal pj = PublishJournal::decode(bytes, "publish journal '" + j + "'");
        // A committed epoch's journal rolls forward: the files it still has to rename are
        // committed (the epoch record may record them already) and checked under the
        // name they have now.
        if (pj.forward(c_.committed_epoch()))
          for (auto& [from, to] : pj.moves) {
            FragmentId id;
            const std::string name = to.substr(to.rfind('/') + 1);
            if (name.size() == 47 && FragmentId::parse(name.substr(0, 43), &id) &&
                path_exists(c_.env(), from) && !path_exists(c_.env(), to))
              rolling.emplace_back(from, id);
          }
        r_.notes.push_back(p.label + ": publish journal '" + j +
                           "' is present: a flush was interrupted (the next writer finishes or rolls it back)");
      } catch (const Error& e) {
        // Its renames may be half done: the array may show half a flush (opening it fails).
        r_.problems.push_back(p.label + ": damaged publish journal (the flush it publishes may be half done): " +
                              e.what());
      }
    }
    if (p.tmp_files)
      r_.notes.push_back(p.label + ": " + std::to_string(p.tmp_files) +
                         " temporary file(s) of an unfinished write (the next writer removes them)");
    if (schema.compact) {
      check_compact(p);
      return;
    }
    std::unique_ptr<HeapReader> heaps;
    if (schema.var) heaps = std::make_unique<HeapReader>(c_.env(), join_path(p.dir, kHeapDir));
    std::set<FragmentId> present, replaced;
    auto check_one = [&](const std::string& label, const std::function<std::shared_ptr<Fragment>()>& open,
                         const FragmentId* expect) {
      std::shared_ptr<Fragment> f;
      try {
        f = open();
      } catch (const Error& e) {
        r_.problems.push_back(e.what());
        return;
      }
      r_.fragments++;
      const FragmentMeta& m = f->meta();
      if (expect && m.id != *expect) {
        r_.problems.push_back("fragment '" + label + "': id in footer differs from its name");
        return;
      }
      if (m.rank != static_cast<uint32_t>(schema.rank()) || m.elem_size != schema.elem_size) {
        r_.problems.push_back("fragment '" + label + "': shape does not match the array schema");
        return;
      }
      present.insert(m.id);
      for (auto& r : m.replaces) replaced.insert(r);
      size_t listed = 0, more = 0;
      auto problem = [&](const std::string& s) {
        if (listed < o_.max_problems_per_fragment) {
          r_.problems.push_back(s);
          ++listed;
        } else {
          ++more;
        }
      };
      std::function<void(const uint8_t*, uint64_t)> on_values;
      if (heaps)
        on_values = [&](const uint8_t* cells, uint64_t n) {
          std::vector<uint8_t> scratch;
          for (uint64_t k = 0; k < n; ++k) {
            VarDescriptor d;
            std::memcpy(&d, cells + k * kVarDescriptorSize, sizeof d);
            if (d.length == 0) continue;
            scratch.clear();
            try {
              heaps->read(d, nullptr, &scratch);
              r_.var_values++;
            } catch (const Error& e) {
              problem("fragment '" + label + "': a variable-length value: " + e.what());
            }
          }
        };
      const uint64_t base = done_;
      try {
        f->verify(f->layout(schema), on_values, [&](uint64_t bytes) {  // in the fragment's own order
          done_ = base + bytes;
          r_.tiles++;
          if (o_.progress) o_.progress(done_, std::max(total_, done_));
        });
      } catch (const Error& e) {
        problem(e.what());
      }
      if (more) r_.problems.push_back("fragment '" + label + "': " + std::to_string(more) + " more problem(s)");
      done_ = base + f->file_size();
      r_.bytes += f->file_size();
      if (o_.progress) o_.progress(done_, std::max(total_, done_));
    };
    for (auto& path : p.files) {
      FragmentId id;
      const std::string name = path.substr(path.size() - 47);
      FragmentId::parse(name.substr(0, 43), &id);
      if (p.files_complete && !p.recorded.count(id)) {
        r_.notes.push_back("fragment '" + path + "' is recorded by no commit, so it is not read (a flush a crash cut "
                           "short before its catalog batch, or a file that does not belong to " + p.label + ")");
        continue;
      }
      if (p.files_logged && !p.files_complete && !p.recorded.count(id) && !p.logged.count(id)) {
        r_.problems.push_back("fragment '" + path + "' was not published in this container: no catalog record and "
                              "no publish log names it (a file copied in from elsewhere?); reading " + p.label +
                              " fails until it is moved away");
        continue;
      }
      check_one(path, [&] { return Fragment::open(path, c_.context()); }, &id);
      // Its size as published: the catalog record, else its publish log entry.
      const std::map<FragmentId, uint64_t>& by = p.recorded.count(id) ? p.recorded : p.logged;
      if (by.count(id)) {
        const uint64_t size = file_size(path);
        if (size != by.at(id))
          r_.problems.push_back("fragment '" + path + "': " + std::to_string(size) + " bytes, but " +
                                std::to_string(by.at(id)) + " were published");
      }
    }
    for (auto& [path, id] : rolling) {
      // (A lambda may not capture a structured binding in C++17: clang refuses it.)
      check_one(path, [&, &file = path] { return Fragment::open(file, c_.context()); }, &id);
      if (p.recorded.count(id) && file_size(path) != p.recorded[id])
        r_.problems.push_back("fragment '" + path + "': " + std::to_string(file_size(path)) + " bytes, but " +
                              std::to_string(p.recorded[id]) + " were published");
    }
    for (auto& kv : p.inl) {
      // Named references, not structured bindings: a lambda may not capture those in
      // C++17 (clang rejects it; the fuzzing build is clang's).
      const auto& key = kv.first;
      const auto& value = kv.second;
      FragmentId id;
      const std::string label = c_.catalog().log_path() + " record " + key;
      if (!FragmentId::parse(key.substr(key.rfind('/') + 1), &id)) {
        r_.problems.push_back("catalog record '" + key + "': not a fragment id");
        continue;
      }
      check_one(label,
                [&] {
                  return Fragment::open_inline(label,
                                               std::make_shared<const std::vector<uint8_t>>(value.begin(), value.end()),
                                               c_.context());
                },
                &id);
    }
    for (auto& [id, size] : p.recorded)
      if (!present.count(id) && !replaced.count(id))
        r_.problems.push_back("fragment '" + join_path(join_path(p.dir, kFragDir), id.name() + ".tfr") +
                              "' is missing: the catalog records it as published (" + std::to_string(size) +
                              " bytes) and no present fragment replaces it");
  }

  void check_compact(const ArrayPlan& p) {
    std::unique_ptr<Array> a;
    ArrayOptions o;
    Status st = c_.open_array(p.id, false, o, &a);
    if (st.ok()) {
      const Schema& s = a->schema();
      std::vector<uint8_t> buf(s.domain().cells() * s.elem_size);
      if (!buf.empty()) st = a->read(Selection::from_box(s.domain()), buf.data());
    }
    if (!st.ok()) r_.problems.push_back(p.label + " (compact): " + st.message());
  }

  Container& c_;
  const VerifyOptions& o_;
  VerifyReport& r_;
  uint64_t total_ = 0, done_ = 0;
};

}  // namespace

Status verify_container(const std::string& path, const VerifyOptions& opts, VerifyReport* out) {
  *out = VerifyReport{};
  Env& env = Env::posix();  // the tool's (a container opened by path)
  if (is_regular_file(env, path)) {
    if (!Container::is_container(path, env))
      return Status(Errc::kNotFound, "'" + path + "' is not a tessera container (a file without a tessera anchor)");
  } else if (!is_directory(env, path) || !path_exists(env, join_path(path, "tessera.container"))) {
    return Status(Errc::kNotFound, "'" + path + "' is not a tessera container (no tessera.container in it)");
  }
  std::unique_ptr<Container> c;
  Status st = Container::open(path, false, &c);
  if (!st.ok()) {
    out->problems.push_back(st.message());  // the header or the catalog log
    return Status::OK();
  }
  return guard([&] { Verifier(*c, opts, out).run(); });
}

}  // namespace tessera
