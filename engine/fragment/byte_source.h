// Where an opened fragment's bytes come from: a file (arrays/<id>/frag/*.tfr) or an
// in-memory copy of an inline fragment record in the catalog (same bytes as a .tfr file).
// The Fragment reader is written once against this seam, so both kinds are validated and
// checksum-verified by the same code.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <sys/uio.h>
#include <vector>

#include "engine/util/checksum.h"
#include "engine/util/error.h"
#include "engine/util/file_io.h"

namespace tessera {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Throws kCorrupt past the end (a truncated fragment), naming the source.
  virtual void pread_exact(void* buf, size_t n, uint64_t off) const = 0;
  // Hint that [off, off + n) will be read soon (posix_fadvise WILLNEED on a file).
  virtual void will_need(uint64_t /*off*/, uint64_t /*n*/) const {}
  // A file's device and inode number, mixed into 64 bits: the same file the next time it
  // is opened (a file written after it was deleted may reuse them: Fragment adds its
  // name).  0: none (an inline record).
  virtual uint64_t identity() const { return 0; }
  // Whether a read of [off, off + n) would find every byte in memory (File::resident).
  virtual bool resident(uint64_t /*off*/, uint64_t /*n*/) const { return false; }
  // Consecutive bytes from `off` scattered over iov (partial tile reads).
  virtual void preadv_exact(struct iovec* iov, int iovcnt, uint64_t off) const {
    for (int i = 0; i < iovcnt; ++i) {
      pread_exact(iov[i].iov_base, iov[i].iov_len, off);
      off += iov[i].iov_len;
    }
  }
};

class FileSource : public ByteSource {
 public:
  explicit FileSource(File f) : f_(std::move(f)) {
    struct stat st;
    f_.stat(&st);
    size_ = static_cast<uint64_t>(st.st_size);
    const uint64_t file[2] = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
    identity_ = checksum64(file, sizeof file);
    identity_ += identity_ == 0;  // 0 is kept for "none"
  }
  uint64_t size() const override { return size_; }
  uint64_t identity() const override { return identity_; }
  bool resident(uint64_t off, uint64_t n) const override { return f_.resident(off, n); }
  void pread_exact(void* buf, size_t n, uint64_t off) const override { f_.pread_exact(buf, n, off); }
  void preadv_exact(struct iovec* iov, int iovcnt, uint64_t off) const override {
    f_.preadv_exact(iov, iovcnt, off);
  }
  void will_need(uint64_t off, uint64_t n) const override { f_.will_need(off, n); }
  File& file() { return f_; }

 private:
  File f_;
  uint64_t size_, identity_;
};

class MemorySource : public ByteSource {
 public:
  MemorySource(std::string label, std::shared_ptr<const std::vector<uint8_t>> bytes)
      : label_(std::move(label)), bytes_(std::move(bytes)) {}
  uint64_t size() const override { return bytes_->size(); }
  void pread_exact(void* buf, size_t n, uint64_t off) const override {
    if (off > bytes_->size() || n > bytes_->size() - off)
      throw_error(Errc::kCorrupt, "'" + label_ + "': truncated: wanted " + std::to_string(n) +
                                      " bytes at offset " + std::to_string(off));
    if (n) std::memcpy(buf, bytes_->data() + off, n);
  }
  const std::shared_ptr<const std::vector<uint8_t>>& bytes() const { return bytes_; }

 private:
  std::string label_;
  std::shared_ptr<const std::vector<uint8_t>> bytes_;
};

}  // namespace tessera
