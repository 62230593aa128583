// Per-block checksums of bytes that arrive in pieces: a tile written straight from the
// caller's rows (FragmentWriter::add_dense_tile_spans) is hashed as it goes out, so
// its bytes are never gathered into one buffer just to be checksummed.  Block b's value
// equals checksum64 over the bytes [b * block, (b + 1) * block) of the concatenation —
// the values FragmentWriter computes over one buffer (docs/format.md: the on-disk bytes
// do not depend on how the tile reached the writer).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace tessera {

class BlockChecksummer {
 public:
  // block > 0: one checksum per `block` bytes (the last block may be shorter);
  // block == 0: one checksum of all the bytes (whole-checksummed tiles).
  explicit BlockChecksummer(uint64_t block);
  ~BlockChecksummer();
  BlockChecksummer(const BlockChecksummer&) = delete;
  BlockChecksummer& operator=(const BlockChecksummer&) = delete;

  void update(const void* p, size_t n);
  // Closes the last block (a partial one too) and returns every block's checksum in
  // order: none for zero bytes in block mode, exactly one in whole mode.
  std::vector<uint64_t> finish();

 private:
  struct State;
  std::unique_ptr<State> st_;
  uint64_t block_;
  uint64_t filled_ = 0;  // bytes of the current block hashed so far
  std::vector<uint64_t> out_;
};

}  // namespace tessera
