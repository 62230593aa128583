#include "engine/pack/pack_tree.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/util/bytes.h"
#include "engine/util/checksum.h"
#include "engine/util/error.h"

namespace tessera {
namespace pack {

namespace {
const char kCheckpointMagic[] = "TSRACKPT";
bool under(const std::string& p, const std::string& dir) {
  return p.size() > dir.size() && p.compare(0, dir.size(), dir) == 0 && p[dir.size()] == '/';
}
}  // namespace

uint64_t Inode::capacity() const {
  if (extents.empty()) return 0;
  auto it = std::prev(extents.end());
  return it->first + it->second.len;
}

Tree::Tree() {
  Inode root;
  root.kind = kDir;
  root.links = 1;
  inodes_[kRootIno] = root;
}

std::string Tree::parent_of(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? std::string() : p.substr(0, s);
}

Inode* Tree::inode(uint64_t ino) {
  auto it = inodes_.find(ino);
  return it == inodes_.end() ? nullptr : &it->second;
}

Inode* Tree::find(const std::string& path, uint64_t* ino) {
  uint64_t i = kRootIno;
  if (!path.empty()) {
    auto it = names_.find(path);
    if (it == names_.end()) return nullptr;
    i = it->second;
  }
  if (ino) *ino = i;
  return inode(i);
}

int Tree::absent_errno(const std::string& path) const {
  for (size_t s = path.find('/'); s != std::string::npos; s = path.find('/', s + 1)) {
    auto it = names_.find(path.substr(0, s));
    if (it == names_.end()) return ENOENT;
    if (inodes_.at(it->second).kind != kDir) return ENOTDIR;
  }
  return ENOENT;
}

bool Tree::is_empty_dir(const std::string& p) const {
  const std::string prefix = p.empty() ? std::string() : p + "/";
  auto it = names_.lower_bound(prefix);
  return it == names_.end() || it->first.compare(0, prefix.size(), prefix) != 0;
}

std::vector<std::string> Tree::children(const std::string& dir) const {
  std::vector<std::string> out;
  const std::string prefix = dir.empty() ? std::string() : dir + "/";
  for (auto it = names_.lower_bound(prefix); it != names_.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    const std::string rest = it->first.substr(prefix.size());
    if (rest.find('/') == std::string::npos) out.push_back(rest);
  }
  return out;
}

int Tree::check(const Record& r) const {
  auto kind_of = [&](const std::string& p, int* kind) {  // 0 absent
    if (p.empty()) { *kind = kDir; return true; }
    auto it = names_.find(p);
    if (it == names_.end()) { *kind = 0; return false; }
    *kind = inodes_.at(it->second).kind;
    return true;
  };
  auto parent_ok = [&](const std::string& p) {
    int k;
    if (!kind_of(parent_of(p), &k)) return absent_errno(p);
    return k == kDir ? 0 : ENOTDIR;
  };
  int k, k2;
  switch (r.type) {
    case RecordType::kMake:
      if (r.path.empty() || r.path.size() > kMaxPath || (r.kind != kFile && r.kind != kDir)) return EINVAL;
      if (inodes_.count(r.a) || r.a < 2) return EINVAL;
      if (kind_of(r.path, &k)) return EEXIST;
      return parent_ok(r.path);
    case RecordType::kLink:
      // As Linux: the old name, the new name's directory, the new name, then the kind.
      if (!kind_of(r.path, &k)) return absent_errno(r.path);
      if (r.path2.empty() || r.path2.size() > kMaxPath) return EINVAL;
      if (int e = parent_ok(r.path2)) return e;
      if (kind_of(r.path2, &k2)) return EEXIST;
      return k == kFile ? 0 : EPERM;
    case RecordType::kRename: {
      if (r.path.empty() || r.path2.empty()) return EBUSY;
      if (r.path2.size() > kMaxPath) return EINVAL;
      // As Linux: both parents are looked up before the name itself.
      if (int e = parent_ok(r.path)) return e;
      if (int e = parent_ok(r.path2)) return e;
      if (!kind_of(r.path, &k)) return ENOENT;
      if (k == kDir && under(r.path2, r.path)) return EINVAL;
      if (under(r.path, r.path2)) return ENOTEMPTY;  // onto an ancestor of itself
      if (kind_of(r.path2, &k2)) {
        if (names_.at(r.path) == names_.at(r.path2)) return 0;
        if (k == kDir && k2 != kDir) return ENOTDIR;
        if (k != kDir && k2 == kDir) return EISDIR;
        if (k2 == kDir && !is_empty_dir(r.path2)) return ENOTEMPTY;
      }
      return 0;
    }
    case RecordType::kRemove:
      if (r.path.empty()) return EBUSY;
      if (!kind_of(r.path, &k)) return absent_errno(r.path);
      if (k == kDir && !is_empty_dir(r.path)) return ENOTEMPTY;
      return 0;
    case RecordType::kExtent:
      if (r.b % kBlock || r.c % kBlock || r.d % kBlock || r.d == 0) return EINVAL;
      [[fallthrough]];
    case RecordType::kSize:
    case RecordType::kTrim: {
      auto it = inodes_.find(r.a);
      if (it == inodes_.end()) return ENOENT;
      return it->second.kind == kFile ? 0 : EISDIR;
    }
    case RecordType::kNext:
    case RecordType::kEoa:
    case RecordType::kForeign:
      return 0;
  }
  return EINVAL;
}

void Tree::cut(Inode& n, uint64_t from, std::vector<Range>* freed) {
  from = round_up(from);
  while (!n.extents.empty()) {
    auto it = std::prev(n.extents.end());
    const uint64_t foff = it->first;
    Range& e = it->second;
    if (foff + e.len <= from) break;
    if (foff >= from) {
      freed->push_back(e);
      n.extents.erase(it);
    } else {
      const uint64_t keep = from - foff;
      freed->push_back({e.off + keep, e.len - keep});
      e.len = keep;
    }
  }
}

void Tree::release(uint64_t ino, std::vector<Range>* freed) {
  auto it = inodes_.find(ino);
  if (it == inodes_.end() || it->second.links || it->second.opens || ino == kRootIno) return;
  for (auto& e : it->second.extents) freed->push_back(e.second);
  inodes_.erase(it);
}

void Tree::unname(const std::string& p, std::vector<Range>* freed) {
  auto it = names_.find(p);
  const uint64_t ino = it->second;
  names_.erase(it);
  inodes_[ino].links--;
  release(ino, freed);
}

void Tree::apply(const Record& r, std::vector<Range>* freed) {
  switch (r.type) {
    case RecordType::kMake: {
      Inode n;
      n.kind = r.kind;
      n.links = 1;
      inodes_[r.a] = n;
      names_[r.path] = r.a;
      if (r.a >= next_ino) next_ino = r.a + 1;
      break;
    }
    case RecordType::kLink: {
      const uint64_t ino = names_.at(r.path);
      names_[r.path2] = ino;
      inodes_[ino].links++;
      break;
    }
    case RecordType::kRename: {
      const uint64_t ino = names_.at(r.path);
      auto to = names_.find(r.path2);
      if (to != names_.end()) {
        if (to->second == ino) break;  // POSIX: renaming a name onto a link of itself does nothing
        unname(r.path2, freed);
      }
      if (inodes_[ino].kind == kDir) {
        // The subtree moves with it: every name under from/ becomes one under to/.
        const std::string prefix = r.path + "/";
        std::vector<std::pair<std::string, uint64_t>> moved;
        for (auto it = names_.lower_bound(prefix); it != names_.end() && under(it->first, r.path);)
          moved.emplace_back(r.path2 + it->first.substr(r.path.size()), it->second), it = names_.erase(it);
        for (auto& m : moved) names_.insert(m);
      }
      names_.erase(r.path);
      names_[r.path2] = ino;
      break;
    }
    case RecordType::kRemove:
      unname(r.path, freed);
      break;
    case RecordType::kExtent: {
      Inode& n = inodes_[r.a];
      // Whatever mapped [b, b + d) before is replaced (a move, pack_compact.cc): it goes.
      const uint64_t lo = r.b, hi = r.b + r.d;
      auto it = n.extents.upper_bound(lo);
      if (it != n.extents.begin()) --it;
      while (it != n.extents.end() && it->first < hi) {
        const uint64_t f0 = it->first, f1 = f0 + it->second.len;
        const Range e = it->second;
        if (f1 <= lo) {
          ++it;
          continue;
        }
        it = n.extents.erase(it);
        if (f0 < lo) n.extents[f0] = Range{e.off, lo - f0};
        if (f1 > hi) n.extents[hi] = Range{e.off + (hi - f0), f1 - hi};
        const uint64_t c0 = std::max(f0, lo), c1 = std::min(f1, hi);
        freed->push_back({e.off + (c0 - f0), c1 - c0});
      }
      auto next = n.extents.lower_bound(r.b);
      if (next != n.extents.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second.len == r.b && prev->second.end() == r.c) {
          prev->second.len += r.d;  // contiguous in the file and in the pack: one extent
          break;
        }
      }
      n.extents[r.b] = Range{r.c, r.d};
      break;
    }
    case RecordType::kSize: {
      Inode& n = inodes_[r.a];
      if (r.b < n.size) cut(n, r.b, freed);
      n.size = r.b;
      break;
    }
    case RecordType::kTrim:
      cut(inodes_[r.a], r.b, freed);
      break;
    case RecordType::kEoa:
      eoa = r.a;
      break;
    case RecordType::kForeign:
      foreign.push_back({r.a, r.b - r.a});
      break;
    case RecordType::kNext:
      break;
  }
}

std::vector<Range> Tree::owned() const {
  std::vector<Range> out = foreign;
  for (auto& kv : inodes_)
    for (auto& e : kv.second.extents) out.push_back(e.second);
  return out;
}

std::vector<Tree::Placed> Tree::placed() const {
  std::vector<Placed> out;
  for (auto& kv : inodes_)
    for (auto& e : kv.second.extents) out.push_back({kv.first, e.first, e.second});
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> Tree::excess() const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (auto& kv : inodes_)
    if (kv.second.kind == kFile && kv.second.capacity() > round_up(kv.second.size))
      out.emplace_back(kv.first, round_up(kv.second.size));
  return out;
}

std::vector<uint8_t> Tree::encode(uint64_t next_seq) const {
  ByteWriter w;
  w.bytes(kCheckpointMagic, 8);
  w.u32(1);
  w.u32(0);
  w.u64(next_seq);
  w.u64(next_ino);
  w.u64(eoa);
  w.u32(static_cast<uint32_t>(foreign.size()));
  for (const Range& f : foreign) w.u64(f.off), w.u64(f.end());
  uint32_t named = 0;
  for (auto& kv : inodes_) named += kv.first != kRootIno && kv.second.links > 0;
  w.u32(named);
  for (auto& kv : inodes_) {
    if (kv.first == kRootIno || kv.second.links == 0) continue;  // open orphans die with a crash
    w.u64(kv.first);
    w.u8(kv.second.kind);
    w.u64(kv.second.size);
    w.u32(static_cast<uint32_t>(kv.second.extents.size()));
    for (auto& e : kv.second.extents) w.u64(e.first), w.u64(e.second.off), w.u64(e.second.len);
  }
  w.u32(static_cast<uint32_t>(names_.size()));
  for (auto& kv : names_) w.str(kv.first), w.u64(kv.second);
  w.u64(checksum64(w.buf().data(), w.size()));
  return w.buf();
}

Tree Tree::decode(const uint8_t* p, size_t n, const std::string& what, uint64_t* next_seq) {
  auto corrupt = [&](const std::string& why) { throw_error(Errc::kCorrupt, what + ": " + why); };
  if (n < 48 || std::memcmp(p, kCheckpointMagic, 8) != 0) corrupt("not a checkpoint");
  uint64_t ck;
  std::memcpy(&ck, p + n - 8, 8);
  if (checksum64(p, n - 8) != ck) corrupt("checksum mismatch");
  ByteReader in(p + 8, n - 16, what);
  if (in.u32() != 1) corrupt("unsupported checkpoint version");
  in.u32();
  Tree t;
  *next_seq = in.u64();
  t.next_ino = in.u64();
  t.eoa = in.u64();
  for (uint32_t i = 0, c = in.u32(); i < c; ++i) {
    uint64_t a = in.u64(), b = in.u64();
    if (b < a) corrupt("a foreign range ends before it starts");
    t.foreign.push_back({a, b - a});
  }
  for (uint32_t i = 0, c = in.u32(); i < c; ++i) {
    const uint64_t ino = in.u64();
    Inode node;
    node.kind = in.u8();
    node.size = in.u64();
    for (uint32_t j = 0, ce = in.u32(); j < ce; ++j) {
      uint64_t foff = in.u64(), off = in.u64(), len = in.u64();
      node.extents[foff] = Range{off, len};
    }
    if (ino < 2 || (node.kind != kFile && node.kind != kDir) || !t.inodes_.emplace(ino, node).second)
      corrupt("bad inode " + std::to_string(ino));
  }
  for (uint32_t i = 0, c = in.u32(); i < c; ++i) {
    std::string path = in.str();
    const uint64_t ino = in.u64();
    auto it = t.inodes_.find(ino);
    if (it == t.inodes_.end() || path.empty()) corrupt("name '" + path + "' of an unknown inode");
    if (t.find(parent_of(path)) == nullptr) corrupt("name '" + path + "' without its directory");
    it->second.links++;
    t.names_[path] = ino;
  }
  if (!in.done()) corrupt("trailing bytes");
  for (auto& kv : t.inodes_)
    if (kv.second.links == 0) corrupt("inode " + std::to_string(kv.first) + " has no name");
  return t;
}

}  // namespace pack
}  // namespace tessera
