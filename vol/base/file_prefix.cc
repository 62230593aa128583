// file_prefix.cc — see file_prefix.h.
#include "vol/base/file_prefix.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/container/container.h"

namespace tessera_vol {

namespace {

std::string dir_of(const std::string& path) {
  size_t s = path.rfind('/');
  if (s == std::string::npos) return "";
  return s == 0 ? "/" : path.substr(0, s);
}

std::string with_prefix(const std::string& prefix, const std::string& name) {
  if (prefix.empty()) return name;
  return prefix.back() == '/' ? prefix + name : prefix + "/" + name;
}

// "${ORIGIN}" at the start stands for the naming file's directory (H5D__build_file_prefix).
std::string expand_origin(const std::string& prefix, const std::string& parent_name) {
  static const std::string kOrigin = "${ORIGIN}";
  if (prefix.compare(0, kOrigin.size(), kOrigin) != 0) return prefix;
  std::string dir = dir_of(parent_name);
  return (dir.empty() ? "." : dir) + prefix.substr(kOrigin.size());
}

}  // namespace

std::vector<std::string> prefix_candidates(const std::string& parent_name, const std::string& file_name,
                                           const char* env_var, const std::string& prop_prefix) {
  std::vector<std::string> tries;
  std::string rel = file_name;
  if (!file_name.empty() && file_name[0] == '/') {
    tries.push_back(file_name);
    rel = file_name.substr(file_name.rfind('/') + 1);
  }
  if (const char* env = env_var ? std::getenv(env_var) : nullptr) {
    std::string s = env;
    size_t i = 0;
    while (i <= s.size()) {
      size_t j = s.find(':', i);
      if (j == std::string::npos) j = s.size();
      if (j > i) tries.push_back(with_prefix(expand_origin(s.substr(i, j - i), parent_name), rel));
      i = j + 1;
    }
  }
  if (!prop_prefix.empty()) tries.push_back(with_prefix(expand_origin(prop_prefix, parent_name), rel));
  std::string pdir = dir_of(parent_name);
  if (!pdir.empty()) tries.push_back(with_prefix(pdir, rel));
  tries.push_back(rel);
  if (char* real = ::realpath(parent_name.c_str(), nullptr)) {
    tries.push_back(with_prefix(dir_of(real), rel));
    std::free(real);
  }
  return tries;
}

bool is_native_hdf5(const std::string& path) {
  static const unsigned char kSig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  FILE* fp = std::fopen(path.c_str(), "rb");
  if (!fp) return false;
  unsigned char buf[8] = {};
  size_t n = std::fread(buf, 1, sizeof buf, fp);
  std::fclose(fp);
  return n == sizeof buf && std::memcmp(buf, kSig, sizeof buf) == 0 && !tessera::Container::is_container(path);
}

}  // namespace tessera_vol
