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
#include "engine/util/file_cache.h"
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

// A fragment file, through the process's file cache (file_cache.h): its descriptor may be
// closed between reads and is opened again by the next one.
class FileSource : public ByteSource {
 public:
  explicit FileSource(std::unique_ptr<CachedFile> f) : f_(std::move(f)) {}
  uint64_t size() const override { return f_->size(); }
  uint64_t identity() const override { return f_->identity(); }
  bool resident(uint64_t off, uint64_t n) const override { return f_->resident(off, n); }
  void pread_exact(void* buf, size_t n, uint64_t off) const override { f_->pread_exact(buf, n, off); }
  void preadv_exact(struct iovec* iov, int iovcnt, uint64_t off) const override {
    f_->preadv_exact(iov, iovcnt, off);
  }
  void will_need(uint64_t off, uint64_t n) const override { f_->will_need(off, n); }
  CachedFile& file() { return *f_; }

 private:
  std::unique_ptr<CachedFile> f_;
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
