// A variable-length cell read through its 32-byte descriptor from a heap file
// (<array>/heap/<id>.thp: docs/format.md "Heap files"), as reads and verify do.
// Input: [32-byte descriptor][heap file].  The heap is written under the name the
// descriptor points at.
#include "engine/fragment/var_heap.h"
#include "fuzz/fuzz_util.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < sizeof(VarDescriptor)) return 0;
  VarDescriptor d;
  std::memcpy(&d, data, sizeof d);
  static const std::string dir = [] {
    std::string x = join_path(fuzz::scratch_dir(), "heap");
    make_dirs(Env::posix(), x);
    return x;
  }();
  const std::string path = join_path(dir, HeapReader::file_name(FragmentId{d.ts, d.rank, d.seq, 0}));
  fuzz::put_file(path, data + sizeof d, size - sizeof d);
  fuzz::expect_clean([&] {
    HeapReader r(Env::posix(), dir);
    std::vector<uint8_t> out;
    r.read(d, nullptr, &out);
    r.read(d, nullptr, &out);  // the second read goes through the kept-open file
  });
  ::unlink(path.c_str());
  return 0;
}
