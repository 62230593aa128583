// external_storage.cc — see external_storage.h.
#include "vol/types/external_storage.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "vol/base/default_plists.h"
#include "vol/base/error.h"  // fail_arg

namespace tessera_vol {

namespace {

// H5_combine_path: an absolute name as it is, else under the prefix.
std::string combine(const std::string& prefix, const std::string& name) {
  if (prefix.empty() || (!name.empty() && name[0] == '/')) return name;
  return prefix.back() == '/' ? prefix + name : prefix + "/" + name;
}

std::string dir_of_file(const std::string& file) {
  std::string abs = file;
  if (abs.empty() || abs[0] != '/') {
    char cwd[4096];
    if (::getcwd(cwd, sizeof cwd)) abs = std::string(cwd) + "/" + file;
  }
  size_t s = abs.rfind('/');
  return s == std::string::npos ? "." : (s == 0 ? "/" : abs.substr(0, s));
}

// Closes a descriptor when the scope ends.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

bool ExternalStorage::used(hid_t dcpl) { return H5Pget_external_count(dcpl) > 0; }

ExternalStorage::ExternalStorage(hid_t dcpl, hid_t space, size_t elem_size) : es_(elem_size) {
  const int n = H5Pget_external_count(dcpl);
  if (n <= 0) fail_arg("the dataset has no external files");
  hsize_t total = 0;
  bool unlimited_storage = false;
  for (int i = 0; i < n; ++i) {
    char name[4096] = "";
    off_t off = 0;
    hsize_t size = 0;
    if (H5Pget_external(dcpl, static_cast<unsigned>(i), sizeof name, name, &off, &size) < 0)
      fail_arg("cannot read external file " + std::to_string(i));
    segs_.push_back(Segment{name, static_cast<int64_t>(off), size});
    if (size == H5F_UNLIMITED) unlimited_storage = true;
    else total += size;
  }
  // As native's H5D__contig_construct with an external file list.
  const int r = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> cur(static_cast<size_t>(std::max(r, 0))), mx(cur.size());
  if (r > 0) H5Sget_simple_extent_dims(space, cur.data(), mx.data());
  bool unlimited_space = false;
  hsize_t points = 1;
  for (int d = 0; d < r; ++d) {
    if (d > 0 && mx[d] > cur[d]) fail_arg("only the first dimension can be extendible");
    if (mx[d] == H5S_UNLIMITED) unlimited_space = true;
    else points *= mx[d];
  }
  if (unlimited_space) {
    if (!unlimited_storage) fail_arg("unlimited dataspace but finite storage");
  } else if (!unlimited_storage && points * elem_size > total) {
    fail_arg("dataspace size exceeds external storage size");
  }
}

std::string ExternalStorage::prefix(hid_t dapl, const std::string& file_name) {
  std::string p;
  if (const char* e = std::getenv("HDF5_EXTFILE_PREFIX")) p = e;
  if (p.empty()) p = dapl_efile_prefix(dapl);  // the default dapl's is none (default_plists.h)
  if (p.empty() || p == ".") return "";
  static const std::string kOrigin = "${ORIGIN}";
  if (p.compare(0, kOrigin.size(), kOrigin) == 0) p = dir_of_file(file_name) + p.substr(kOrigin.size());
  return p;
}

void ExternalStorage::transfer(uint64_t pos, uint64_t n, uint8_t* buf, bool write, const std::string& prefix) const {
  size_t i = 0;
  uint64_t start = 0;  // stream position of segment i
  while (i < segs_.size() && segs_[i].size != H5F_UNLIMITED && pos >= start + segs_[i].size) start += segs_[i++].size;
  while (n > 0) {
    if (i >= segs_.size())
      fail_arg(std::string(write ? "write" : "read") + " past logical end of the external files");
    const Segment& s = segs_[i];
    const uint64_t skip = pos - start;
    const uint64_t here = s.size == H5F_UNLIMITED ? n : std::min<uint64_t>(n, s.size - skip);
    const std::string path = combine(prefix, s.name);
    Fd f{write ? ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0666) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0)
      fail_arg(std::string(errno == ENOENT ? "external raw data file does not exist" : "unable to open external raw data file") +
               ": '" + path + "' (" + std::strerror(errno) + ")");
    uint64_t done = 0;
    while (done < here) {
      const off_t at = static_cast<off_t>(s.offset + skip + done);
      ssize_t k = write ? ::pwrite(f.fd, buf + done, here - done, at) : ::pread(f.fd, buf + done, here - done, at);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0)
        fail_arg(std::string(write ? "write" : "read") + " error in external raw data file '" + path + "': " +
                 std::strerror(errno));
      if (k == 0) {
        if (write) fail_arg("wrote 0 bytes to external raw data file '" + path + "'");
        std::memset(buf + done, 0, here - done);  // past the file's end: zeros, as native
        break;
      }
      done += static_cast<uint64_t>(k);
    }
    buf += here;
    pos += here;
    n -= here;
    if (s.size != H5F_UNLIMITED) start += s.size;
    ++i;
  }
}

template <class F>
void ExternalStorage::for_each_run(hid_t fspace, F f) const {
  hid_t it = H5Ssel_iter_create(fspace, es_, 0);
  if (it < 0) fail_arg("cannot iterate over the selection");
  constexpr size_t kSeq = 1024;
  std::vector<hsize_t> off(kSeq);
  std::vector<size_t> len(kSeq);
  try {
    for (;;) {
      size_t nseq = 0, nbytes = 0;
      if (H5Ssel_iter_get_seq_list(it, kSeq, SIZE_MAX, &nseq, &nbytes, off.data(), len.data()) < 0)
        fail_arg("cannot iterate over the selection");
      if (nseq == 0) break;
      for (size_t k = 0; k < nseq; ++k) f(off[k], len[k]);
    }
  } catch (...) {
    H5Ssel_iter_close(it);
    throw;
  }
  H5Ssel_iter_close(it);
}

void ExternalStorage::read(hid_t fspace, const std::string& prefix, uint8_t* packed) const {
  for_each_run(fspace, [&](hsize_t off, size_t len) {
    transfer(off, len, packed, false, prefix);
    packed += len;
  });
}

void ExternalStorage::write(hid_t fspace, const std::string& prefix, const uint8_t* packed) const {
  for_each_run(fspace, [&](hsize_t off, size_t len) {
    transfer(off, len, const_cast<uint8_t*>(packed), true, prefix);
    packed += len;
  });
}

}  // namespace tessera_vol
