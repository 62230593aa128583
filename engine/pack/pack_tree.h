// pack_tree.h — the virtual directory tree a pack serves (docs/format.md, "The one-file
// container"): names, inodes, and each file's extents in the pack.  The same apply() runs
// a writer's calls and an opener's replay of the journal, so what a writer did and what
// a replay rebuilds cannot drift apart.  Not thread-safe: the pack's Env holds its lock.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/pack/pack_format.h"

namespace tessera {
namespace pack {

constexpr uint8_t kFile = 1, kDir = 2;
constexpr uint64_t kRootIno = 1;

struct Inode {
  uint8_t kind = kFile;
  uint64_t size = 0;
  std::map<uint64_t, Range> extents;  // file offset -> bytes of the pack (whole blocks)
  uint32_t links = 0;
  uint32_t opens = 0;  // this opener's descriptors: an unlinked file lives while open
  // The end of the last extent's file range: bytes a write below it needs no allocation for.
  uint64_t capacity() const;
};

class Tree {
 public:
  Tree();

  // 0 when r can apply to this tree, else the errno POSIX gives for the call it stands
  // for (EEXIST, ENOENT, ENOTDIR, EISDIR, ENOTEMPTY, EPERM, EINVAL, EBUSY).
  int check(const Record& r) const;
  // Applies r, which check() accepted.  Bytes of the pack it frees go to *freed (an
  // `extent` record over a mapped range moves it: the old bytes are freed).
  void apply(const Record& r, std::vector<Range>* freed);

  // Path: relative to the root, "" for the root itself.  Null when absent.
  Inode* find(const std::string& path, uint64_t* ino = nullptr);
  Inode* inode(uint64_t ino);
  // The errno a lookup of the absent `path` gives: ENOTDIR when an ancestor is a file.
  int absent_errno(const std::string& path) const;
  // The names in a directory (which must exist), sorted.
  std::vector<std::string> children(const std::string& dir) const;
  // Drops the inode when neither a name nor a descriptor holds it; its extents go to *freed.
  void release(uint64_t ino, std::vector<Range>* freed);
  // Every byte range the tree holds: extents of every inode (open orphans too) and
  // foreign ranges.
  std::vector<Range> owned() const;
  size_t name_count() const { return names_.size(); }
  // Every extent: its file, its offset in the file, its bytes in the pack.
  struct Placed {
    uint64_t ino, file_off;
    Range at;
  };
  std::vector<Placed> placed() const;
  // Files whose extents reach past their size rounded up to a block: (ino, that size).
  std::vector<std::pair<uint64_t, uint64_t>> excess() const;

  // The checkpoint's bytes (docs/format.md): the tree, the next record's sequence number.
  std::vector<uint8_t> encode(uint64_t next_seq) const;
  // Throws kCorrupt naming `what` when the bytes are not a valid checkpoint.
  static Tree decode(const uint8_t* p, size_t n, const std::string& what, uint64_t* next_seq);

  uint64_t next_ino = 2;
  uint64_t eoa = 0;              // the superblock EOA tessera last journaled (0: no wrapper)
  std::vector<Range> foreign;    // bytes a native HDF5 program owns

 private:
  static std::string parent_of(const std::string& p);
  bool is_empty_dir(const std::string& p) const;
  void unname(const std::string& p, std::vector<Range>* freed);
  static void cut(Inode& n, uint64_t from, std::vector<Range>* freed);

  std::map<std::string, uint64_t> names_;  // sorted: a directory's subtree is one range
  std::unordered_map<uint64_t, Inode> inodes_;
};

}  // namespace pack
}  // namespace tessera
