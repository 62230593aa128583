// Catalog log (catalog.log: framed batches of puts and deletes, docs/format.md "Catalog")
// replayed by a read-only open, then the commit records it holds (cm/<seq>, sys/commit:
// engine/catalog/history.h) decoded the way `tessera log` and open-as-of do.
#include "engine/catalog/catalog.h"
#include "engine/catalog/history.h"
#include "fuzz/fuzz_util.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    std::string d = join_path(fuzz::scratch_dir(), "catalog");
    make_dirs(Env::posix(), d);
    return d;
  }();
  fuzz::put_file(join_path(dir, "catalog.log"), data, size);
  fuzz::expect_clean([&] {
    auto cat = Catalog::open(dir, Catalog::Mode::kReadOnly, /*create=*/false);
    uint64_t bytes = 0;
    for (auto& [k, v] : cat->scan("")) bytes += k.size() + v.size();
    (void)bytes;
    fuzz::expect_clean([&] { (void)list_commits(*cat); });
    fuzz::expect_clean([&] { (void)last_commit(*cat); });
    CommitInfo c;
    fuzz::expect_clean([&] { (void)find_commit(*cat, "1", &c); });
    fuzz::expect_clean([&] { (void)find_commit(*cat, "@1700000000000000000", &c); });
  });
  return 0;
}
