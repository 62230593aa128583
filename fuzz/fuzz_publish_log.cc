// Publish logs (frag/published-r<rank>.log: docs/format.md "Publish logs") read as an
// open and `tessera verify` read them, then trimmed and appended to as their writer does
// — and checked against a model: what a log permits after a trim is exactly what it
// permitted before minus what the trim was told is recorded, and an entry appended (after
// a torn or damaged tail too) is read back: a rename follows the append, so an appended
// entry that no reader sees makes committed data "not published in this container".
// Input: [u32 n][rank 0's log (n bytes)][rank 1's log]; an empty part is no log.
#include <map>

#include "engine/publish/publish_log.h"
#include "fuzz/fuzz_util.h"

using namespace tessera;

namespace {

using Entries = std::map<FragmentId, uint64_t>;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "publish log: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    const std::string d = join_path(fuzz::scratch_dir(), "frag");
    make_dirs(Env::posix(), d);
    return d;
  }();
  Env& env = Env::posix();
  for (const std::string& n : list_dir(env, dir)) remove_file(env, join_path(dir, n));
  fuzz::Parts parts(data, size);
  std::vector<uint8_t> logs[2];
  if (!parts.next(&logs[0])) return 0;
  logs[1] = parts.rest();
  for (uint32_t r = 0; r < 2; ++r)
    if (!logs[r].empty()) fuzz::put_file(join_path(dir, publish_log_name(r)), logs[r].data(), logs[r].size());
  fuzz::expect_clean([&] {
    auto read = [&](uint32_t r) { return read_publish_logs(env, dir, {publish_log_name(r)}); };
    const Entries both = read_publish_logs(env, dir, list_dir(env, dir));
    const Entries e0 = read(0), e1 = read(1);
    Entries u = e1;
    for (auto& [id, sz] : e0) u[id] = sz;
    // Entries of both logs may name one id: the union's size is the logs' last word.
    check(both.size() == u.size(), "reading both logs at once differs from reading each");
    // An append to the log as it is (its tail may be torn or damaged), then rank 0's
    // writer trims what its catalog records (every other entry, and rank 1's), then a
    // rewrite (an append after a failed append or trim).
    const FragmentId a{1700000000000000001ull, 0, 7, 0}, b{1700000000000000002ull, 0, 8, 1};
    Entries expect = e0;
    append_publish_log(env, dir, 0, {{a, 4096}});
    expect[a] = 4096;
    check(read(0) == expect, "an appended entry is not read back");
    Entries recorded = e1, kept;
    bool odd = false;
    for (auto& [id, sz] : expect) ((odd = !odd) ? recorded : kept)[id] = sz;
    for (auto& [id, sz] : e1) kept.erase(id);
    expect = kept;
    trim_publish_log(env, dir, 0, recorded);
    check(read(0) == expect, "a trim kept or dropped the wrong entries");
    check(read(1) == e1, "rank 0's trim changed rank 1's log");
    append_publish_log(env, dir, 0, {{b, 123}}, /*rewrite=*/true);
    expect[b] = 123;
    check(read(0) == expect, "an entry appended by a rewrite is not read back");
    trim_publish_log(env, dir, 0, expect);
    check(read(0).empty() && !path_exists(env, join_path(dir, publish_log_name(0))),
          "a log whose every entry is recorded stays");
  });
  return 0;
}
