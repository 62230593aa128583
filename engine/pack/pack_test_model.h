// pack_test_model.h — test-only helpers of the pack tests: a tree's whole contents read
// through any Env (to compare a pack with a real directory, or with what a model says
// must have survived), and a stand-in HDF5 wrapper for engine tests (the real one is
// made by the HDF5 library in vol/; the engine only checks the superblock's fields).
#pragma once
#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "engine/util/env.h"

namespace tessera {
namespace pack_test {

// rel path -> "D" for a directory, "F" + the bytes for a file; "" is not listed.
using Snapshot = std::map<std::string, std::string>;

inline void snapshot_into(Env& env, const std::string& root, const std::string& rel, Snapshot* out) {
  std::vector<std::string> names;
  const std::string dir = rel.empty() ? root : root + "/" + rel;
  if (int e = env.list_dir(dir.c_str(), &names)) {
    (*out)["!list " + rel] = std::strerror(e);
    return;
  }
  for (const std::string& n : names) {
    const std::string r = rel.empty() ? n : rel + "/" + n;
    const std::string p = root + "/" + r;
    struct stat st;
    if (env.stat(p.c_str(), &st, false) != 0) {
      (*out)["!stat " + r] = std::strerror(errno);
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      (*out)[r] = "D";
      snapshot_into(env, root, r, out);
      continue;
    }
    std::string bytes(static_cast<size_t>(st.st_size), '\0');
    int fd = env.open(p.c_str(), O_RDONLY, 0);
    size_t got = 0;
    while (fd >= 0 && got < bytes.size()) {
      ssize_t k = env.pread(fd, &bytes[got], bytes.size() - got, static_cast<off_t>(got));
      if (k <= 0) break;
      got += static_cast<size_t>(k);
    }
    if (fd >= 0) env.close(fd);
    (*out)[r] = got == bytes.size() ? "F" + bytes : "!short read";
  }
}

inline Snapshot snapshot(Env& env, const std::string& root) {
  Snapshot s;
  snapshot_into(env, root, "", &s);
  return s;
}

// Where two snapshots first differ, for a failure message ("" when equal).
inline std::string diff(const Snapshot& a, const Snapshot& b) {
  for (auto& kv : a) {
    auto it = b.find(kv.first);
    if (it == b.end()) return "'" + kv.first + "' only in the first";
    if (it->second != kv.second)
      return "'" + kv.first + "' differs (" + std::to_string(kv.second.size()) + " vs " +
             std::to_string(it->second.size()) + " bytes)";
  }
  for (auto& kv : b)
    if (!a.count(kv.first)) return "'" + kv.first + "' only in the second";
  return "";
}

// 2048 bytes shaped like an HDF5 file's start: signature, superblock version 0, 8-byte
// offsets and lengths, base address 0, end-of-file address 2048.
inline std::vector<uint8_t> fake_wrapper() {
  std::vector<uint8_t> w(2048, 0);
  const uint8_t sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  std::memcpy(w.data(), sig, 8);
  w[13] = 8;
  w[14] = 8;
  const uint64_t eoa = 2048;
  std::memcpy(w.data() + 40, &eoa, 8);
  for (size_t i = 96; i < w.size(); ++i) w[i] = static_cast<uint8_t>(i * 7);
  return w;
}

}  // namespace pack_test
}  // namespace tessera
