// A fragment's value index (<array>/index/<fragment id>.tix: docs/format.md "Index
// files") opened against its fragment and read whole the way a query does: every bin's
// pair rows and every (chunk, bin) bitmap.  Input: [u32 n][fragment (n bytes)]
// [element type byte][index file].
#include "engine/context/context.h"
#include "engine/fragment/fragment.h"
#include "engine/index/index_format.h"
#include "fuzz/fuzz_util.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::shared_ptr<Context> ctx = fuzz::small_context();
  static const std::string dir = [] {
    std::string x = join_path(fuzz::scratch_dir(), "array");
    make_dirs(Env::posix(), index_dir(x));
    return x;
  }();
  fuzz::Parts parts(data, size);
  std::vector<uint8_t> frag;
  uint8_t type;
  if (!parts.next(&frag) || !parts.byte(&type)) return 0;
  const std::vector<uint8_t> idx = parts.rest();
  std::shared_ptr<Fragment> f;
  try {
    f = Fragment::open_inline("fragment", std::make_shared<const std::vector<uint8_t>>(std::move(frag)), ctx);
  } catch (const Error&) {
    return 0;  // fuzz_fragment's ground
  }
  const NumType t = static_cast<NumType>(1 + type % 10);
  const std::string path = index_path(dir, f->meta().id);
  fuzz::put_file(path, idx.data(), idx.size());
  fuzz::expect_clean([&] {
    auto x = IndexFile::open(dir, *f, t, (type & 0x80) != 0);
    if (!x) return;
    const auto& bins = x->head().bins;
    for (uint32_t b = 0; b < bins.size(); ++b) {
      fuzz::expect_clean([&] {
        for (const IndexPair& p : x->pairs(b, b)) {
          std::vector<uint8_t> bytes = x->read(p.offset, p.size);
          Bitmap bm = x->bitmap(p, bytes, p.offset);
          (void)bm.cardinality();
        }
      });
    }
  });
  ::unlink(path.c_str());
  return 0;
}
