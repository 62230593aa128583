// pack_store.h — the one regular file a pack lives in (docs/format.md, "The one-file
// container"): finding its anchor, loading the checkpoint and replaying the journal,
// appending records, allocating blocks (within the HDF5 wrapper's EOA), syncing, and
// checkpointing.  The tree it serves is pack_tree.h; POSIX calls on that tree are
// pack_env.h.  Not thread-safe: the pack's Env holds its lock around every call.
//
// Every byte goes through the Env it was opened on (so fault and power-loss Envs can sit
// beneath it); only the byte-range locks that say who has the pack open use fcntl on its
// descriptor directly (an Env has flock only, and locks change no byte).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/pack/pack_format.h"
#include "engine/pack/pack_tree.h"
#include "engine/pack/space_map.h"
#include "engine/util/env.h"

namespace tessera {
namespace pack {

class PackStore {
 public:
  // Creates the pack at `file` (replacing a file there: kExclusive refuses one), beginning
  // with `wrapper` (see check_wrapper; empty: none), durable when this returns.  Throws
  // tessera::Error (kBusy when another process has it open for writing).
  static std::unique_ptr<PackStore> create(Env& base, const std::string& file, const std::vector<uint8_t>& wrapper,
                                           bool exclusive);
  // Opens an existing pack.  A writer replays, then starts a fresh journal block; a
  // reader takes the reader lock and follows the journal (refresh).  Throws.
  static std::unique_ptr<PackStore> open(Env& base, const std::string& file, bool writable);
  // True when `file` is a regular file holding a valid anchor.  Never throws.
  static bool probe(Env& base, const std::string& file);
  // A writer not poisoned closes cleanly: a checkpoint, the file cut to what it holds.
  ~PackStore();
  PackStore(const PackStore&) = delete;
  PackStore& operator=(const PackStore&) = delete;

  Tree& tree() { return tree_; }
  bool writable() const { return writable_; }
  const std::string& file() const { return file_; }
  dev_t device() const { return dev_; }

  // Writer: appends r to the journal (its sequence number filled in) and applies it.
  // 0, or the errno of the check (nothing written) or of the write (nothing applied).
  int log(Record r);
  // Writer: `len` bytes (whole blocks) of free space, at `want` when that is free or at
  // the region's end (then the region grows there).  0 or an errno.
  int allocate(uint64_t len, uint64_t want, Range* out);
  // Bytes the tree no longer holds: reusable at once (`spare`: preallocation past a
  // file's size), else after the next sync (the record freeing them is durable then).
  void release(const std::vector<Range>& ranges, bool spare);
  // pwrite/pread of the pack, whole (0 or an errno); a read past the file's end gives zeros.
  int write_at(const void* p, size_t n, uint64_t off);
  // Bulk data just written at [off, off + n): every 8 MiB of it the kernel is asked to
  // start writing it back (sync_file_range, a hint), so the disk works while the writer
  // goes on and a flush's fdatasync waits for the last bytes only — what a fragment
  // writer does for its own file (fragment_writer.cc), whose descriptor a pack's virtual
  // file cannot lend.
  void wrote_data(uint64_t off, uint64_t n);
  int read_at(void* p, size_t n, uint64_t off);
  // One fdatasync of the pack, when anything was written since the last; may checkpoint.
  // 0 or an errno; after a failed sync every later write and sync fails with EIO.
  int sync();
  // Reader: applies the records appended since the last refresh (one pread when none).
  // 0, or EIO when the journal cannot be followed (the reader must reopen).
  int refresh();
  bool poisoned() const { return poisoned_ != 0; }
  int descriptor() const { return fd_; }
  uint64_t next_ino() { return tree_.next_ino++; }

 private:
  PackStore(Env& base, std::string file) : base_(base), file_(std::move(file)) {}
  void find_anchor();
  void load();
  void start_session();
  int append(Record& r, bool reserved);
  int new_block(uint64_t len);
  int grow_region(uint64_t end);
  int cover_with_eoa(uint64_t end);  // the superblock's EOA (and the file) reach `end`
  int checkpoint();
  int close_clean();
  // At a clean close with no reader: moves the highest extents down into free space
  // when more than a fifth of the file is free, so the cut leaves at most ~1.2x the
  // live bytes (pack_compact.cc).  0 or an errno (the pack is unchanged then).
  int compact();
  bool readers_present() const;
  void lock_out_native_writers();  // throws kBusy while a native HDF5 program writes the file
  int fail(int err);  // poisons the pack: a write or sync failed mid-way
  // Follows the journal from the cursor (replay and refresh).  Throws kCorrupt.
  void follow(bool at_open);

  Env& base_;
  std::string file_;
  int fd_ = -1;
  bool writable_ = false;
  dev_t dev_ = 0;
  uint64_t anchor_ = 0;
  bool wrapped_ = false;
  Slot slot_;
  int slot_index_ = 0;
  Tree tree_;

  // The journal: where the next record goes, its sequence number and block's salt.
  uint64_t cursor_ = 0, block_end_ = 0, seq_ = 0, salt_ = 0;
  uint64_t next_block_len_ = 64 << 10;
  std::vector<Range> journal_blocks_;  // of the live journal (since the checkpoint)
  uint64_t journal_bytes_ = 0;         // appended since the checkpoint

  uint64_t region_end_ = 0;  // tessera allocates below this, or grows it
  uint64_t file_size_ = 0;   // what this writer made the file's size
  SpaceMap free_;            // reusable now
  std::vector<Range> pending_, retired_;  // freed, not yet durable / durable, readers may see
  bool dirty_ = false;
  uint64_t wb_lo_ = UINT64_MAX, wb_hi_ = 0;  // data written since the last writeback hint
  bool session_ = false;  // a writer that finished opening: only it may close cleanly
  int poisoned_ = 0;
};

}  // namespace pack
}  // namespace tessera
