// fuzz_util.h — what every libFuzzer harness of tessera's on-disk parsers shares.
//
// A harness feeds bytes to one parser the way the engine does on open or read and
// accepts exactly one outcome for bad bytes: a tessera::Error (kCorrupt, or kUnsupported
// for a format version this build does not read).  Anything else — a crash, a sanitizer
// report, an allocation past libFuzzer's -malloc_limit_mb, another exception, kInternal
// (an internal assertion bad bytes reached) — is a finding.  Built with
// TESSERA_FUZZING, checksum64 returns 0 (engine/util/checksum.cc), so mutated bytes reach the
// parsers behind the checksums; the seed corpus is written by that same build.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/context/context.h"
#include "engine/util/error.h"
#include "engine/util/file_io.h"
#include "engine/context/options.h"

namespace tessera::fuzz {

// A scratch directory of this process (files a parser opens by path are written here),
// removed at exit.
inline const std::string& scratch_dir() {
  // Never destroyed: the atexit handler below runs after static destructors would.
  static const std::string& dir = *[] {
    const char* t = std::getenv("TMPDIR");
    std::string base = std::string(t && *t ? t : "/tmp") + "/tessera-fuzz-" + std::to_string(::getpid());
    make_dirs(Env::posix(), base);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return new std::string(base);
  }();
  return dir;
}

// An engine context for one harness process: one thread, and a small tile cache so that
// decoded tiles of one input do not pile up across inputs.
inline std::shared_ptr<Context> small_context() {
  EngineOptions o;
  o.threads = 1;
  o.io_threads = 1;
  o.tile_cache_mb = 4;
  return std::make_shared<Context>(o);
}

inline void put_file(const std::string& path, const uint8_t* p, size_t n) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (n && std::fwrite(p, 1, n, f) != n) std::abort();
  std::fclose(f);
}

// Input split into parts: [u32 length][bytes] ..., the last part the rest.
class Parts {
 public:
  Parts(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  // The next length-prefixed part; false when the input is too short.
  bool next(std::vector<uint8_t>* out) {
    if (n_ < 4) return false;
    uint32_t len;
    std::memcpy(&len, p_, 4);
    p_ += 4;
    n_ -= 4;
    if (len > n_) return false;
    out->assign(p_, p_ + len);
    p_ += len;
    n_ -= len;
    return true;
  }
  bool byte(uint8_t* b) {
    if (!n_) return false;
    *b = *p_++;
    --n_;
    return true;
  }
  std::vector<uint8_t> rest() const { return std::vector<uint8_t>(p_, p_ + n_); }

 private:
  const uint8_t* p_;
  size_t n_;
};

// The one accepted failure: a tessera::Error other than kInternal.
template <class F>
void expect_clean(F f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.code() == Errc::kInternal) {
      std::fprintf(stderr, "kInternal from bad bytes: %s\n", e.what());
      std::abort();
    }
  }
}

}  // namespace tessera::fuzz
