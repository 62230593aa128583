// Another rank's share log (frag/.r<rank>.share.tmp: docs/format.md "Share logs"), read
// the way a rank of the job reads it: an open of the array by rank 0 of 2 polls rank 1's
// log, opens each fragment record as an in-memory fragment, follows kShared
// names and kList records, and the array is read whole; then more bytes are appended to
// the log (a writer that goes on) and the handle is refreshed and read again, so records
// split across polls, a record caught mid-append and kClosed are reached too.
// Input: [u32 n][the log's first n bytes][the bytes appended later].
#include "engine/array/array.h"
#include "engine/array/array_files.h"
#include "engine/publish/share_log.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/share_log_array.h"

using namespace tessera;

namespace {

// A Status from bad bytes: any error but kInternal.
void expect_clean_status(const Status& st) {
  if (!st.ok() && st.code() == Errc::kInternal) {
    std::fprintf(stderr, "kInternal from bad bytes: %s\n", st.message().c_str());
    std::abort();
  }
}

void read_whole(Array& a) {
  const Coords& e = a.schema().extent;
  std::vector<int32_t> v(e[0] * e[1]);
  expect_clean_status(a.read(Selection::from_box(Box({0, 0}, {e[0] - 1, e[1] - 1})), v.data()));
}

void append(const std::string& path, const std::vector<uint8_t>& b) {
  std::FILE* f = std::fopen(path.c_str(), "ab");
  if (!f) std::abort();
  if (!b.empty() && std::fwrite(b.data(), 1, b.size(), f) != b.size()) std::abort();
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::shared_ptr<Context> ctx = fuzz::small_context();
  static const std::string dir = [] {
    const std::string d = join_path(fuzz::scratch_dir(), "share");
    if (!Array::create(d, fuzz::share_log_schema()).ok()) std::abort();
    return d;
  }();
  fuzz::Parts parts(data, size);
  std::vector<uint8_t> first;
  if (!parts.next(&first)) return 0;
  const std::vector<uint8_t> later = parts.rest();
  const std::string frag = join_path(dir, array_files::kFragDir);
  const std::string log = join_path(frag, share_log_name(1));
  fuzz::put_file(log, first.data(), first.size());
  ArrayOptions o = fuzz::share_log_rank(0, 2);
  // A writing rank (only those read share logs: a read-only job's ranks write none), a
  // shadow so that no journal recovery or cleanup runs: only the log is read.
  o.shadow = true;
  o.context = ctx;
  std::unique_ptr<Array> a;
  const Status st = Array::open(dir, /*writable=*/true, o, &a);
  expect_clean_status(st);
  if (st.ok()) {
    read_whole(*a);
    append(log, later);
    expect_clean_status(a->refresh_fragments());
    read_whole(*a);
  }
  remove_file(Env::posix(), log);
  return 0;
}
