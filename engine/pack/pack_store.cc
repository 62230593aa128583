#include "engine/pack/pack_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

#include "engine/util/checksum.h"
#include "engine/util/error.h"

namespace tessera {
namespace pack {

namespace {

// Byte-range locks beyond any data (docs/format.md, "Several processes").
constexpr off_t kWriterByte = off_t(1) << 62;
constexpr off_t kReaderByte = kWriterByte + 1;
constexpr uint64_t kReserve = 160;            // room kept for a `next` and an `eoa` record
constexpr uint64_t kMaxBlock = 1 << 20;
constexpr uint64_t kRegionStep = 64 << 10;    // the EOA grows in these
constexpr uint64_t kCheckpointMin = 1 << 20;

int ofd_lock(int fd, short type, off_t byte) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = byte;
  fl.l_len = 1;
  return ::fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : errno;
}

uint64_t fresh_salt() {
  static std::random_device rd;
  const uint64_t t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return (static_cast<uint64_t>(rd()) << 32 ^ rd()) ^ t * 0x9E3779B97F4A7C15ull;
}

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

uint64_t end_of(const std::vector<Range>& rs) {
  uint64_t e = 0;
  for (const Range& r : rs) e = std::max(e, r.end());
  return e;
}

}  // namespace

std::unique_ptr<PackStore> PackStore::create(Env& base, const std::string& file, const std::vector<uint8_t>& wrapper,
                                             bool exclusive) {
  if (!wrapper.empty()) {
    const std::string why = check_wrapper(wrapper);
    if (!why.empty()) throw_error(Errc::kInvalidArgument, "cannot create container '" + file + "' in one file: the HDF5 wrapper given: " + why);
  }
  std::unique_ptr<PackStore> s(new PackStore(base, file));
  s->fd_ = base.open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : 0), 0644);
  if (s->fd_ < 0) throw_errno("create container", file, errno);
  s->writable_ = true;
  if (ofd_lock(s->fd_, F_WRLCK, kWriterByte) != 0)
    throw_error(Errc::kBusy, "container '" + file + "' is open for writing by another process");
  s->lock_out_native_writers();
  struct stat st;
  if (base.fstat(s->fd_, &st) != 0) throw_errno("cannot stat", file, errno);
  if (!S_ISREG(st.st_mode)) throw_error(Errc::kInvalidArgument, "'" + file + "' is not a regular file");
  s->dev_ = static_cast<dev_t>(checksum64(&st.st_ino, sizeof st.st_ino) ^ st.st_dev) | (dev_t(1) << 63);
  if (base.ftruncate(s->fd_, 0) != 0) throw_errno("cannot truncate", file, errno);
  s->anchor_ = anchor_offset(wrapper.size());
  s->wrapped_ = !wrapper.empty();
  s->region_end_ = s->anchor_ + kAnchorBytes;
  auto check = [&](int rc, const char* what) {
    if (rc) throw_errno(what, file, rc);
  };
  if (s->wrapped_) check(s->write_at(wrapper.data(), wrapper.size(), 0), "cannot write");
  // No journal yet: the first block and the checkpoint come straight from the region.
  Range block, ckpt;
  check(s->allocate(64 << 10, 0, &block), "cannot write");
  s->cursor_ = block.off;
  s->block_end_ = block.end();
  s->salt_ = fresh_salt();
  s->seq_ = 1;
  s->journal_blocks_ = {block};
  s->tree_.next_ino = std::max<uint64_t>(2, now_ns());
  const uint64_t first_seq = s->seq_, first_salt = s->salt_;  // allocating may journal an `eoa`
  const std::vector<uint8_t> blob = s->tree_.encode(first_seq);
  check(s->allocate(blob.size(), 0, &ckpt), "cannot write");
  check(s->write_at(blob.data(), blob.size(), ckpt.off), "cannot write");
  s->slot_ = Slot{1, ckpt.off, blob.size(), block.off, block.len, first_seq, first_salt};
  const std::vector<uint8_t> slot = encode_slot(s->slot_);
  check(s->write_at(slot.data(), slot.size(), s->anchor_), "cannot write");
  if (base.fdatasync(s->fd_) != 0) throw_errno("cannot sync", file, errno);
  s->dirty_ = false;
  s->session_ = true;
  return s;
}

bool PackStore::probe(Env& base, const std::string& file) {
  try {
    struct stat st;
    if (base.stat(file.c_str(), &st, true) != 0 || !S_ISREG(st.st_mode)) return false;
    PackStore s(base, file);
    s.fd_ = base.open(file.c_str(), O_RDONLY | O_CLOEXEC, 0);
    if (s.fd_ < 0) return false;
    s.find_anchor();
    return true;
  } catch (...) {
    return false;
  }
}

std::unique_ptr<PackStore> PackStore::open(Env& base, const std::string& file, bool writable) {
  std::unique_ptr<PackStore> s(new PackStore(base, file));
  s->fd_ = base.open(file.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC, 0);
  if (s->fd_ < 0) throw_errno("open container", file, errno);
  s->writable_ = writable;
  if (ofd_lock(s->fd_, writable ? F_WRLCK : F_RDLCK, writable ? kWriterByte : kReaderByte) != 0) {
    if (writable) throw_error(Errc::kBusy, "container '" + file + "' is open for writing by another process");
    throw_errno("cannot lock", file, errno);
  }
  s->lock_out_native_writers();
  struct stat st;
  if (base.fstat(s->fd_, &st) != 0) throw_errno("cannot stat", file, errno);
  s->dev_ = static_cast<dev_t>(checksum64(&st.st_ino, sizeof st.st_ino) ^ st.st_dev) | (dev_t(1) << 63);
  s->file_size_ = static_cast<uint64_t>(st.st_size);
  s->load();
  if (writable) s->start_session();
  return s;
}

PackStore::~PackStore() {
  if (fd_ < 0) return;
  if (writable_ && session_ && !poisoned_) (void)close_clean();
  base_.close(fd_);  // releases the OFD locks
}

void PackStore::find_anchor() {
  uint8_t head[96] = {};
  if (read_at(head, sizeof head, 0) != 0) throw_errno("cannot read", file_, errno);
  const bool hdf5 = is_hdf5_signature(head, sizeof head);
  std::vector<uint8_t> buf(kSlotStride + kSlotBytes);
  for (uint64_t a = hdf5 ? kAnchorBytes : 0; a <= kMaxAnchor; a = a ? a * 2 : kMaxAnchor + 1) {
    if (read_at(buf.data(), buf.size(), a) != 0) throw_errno("cannot read", file_, errno);
    Slot s0, s1;
    const bool ok0 = decode_slot(buf.data(), kSlotBytes, &s0);
    const bool ok1 = decode_slot(buf.data() + kSlotStride, kSlotBytes, &s1);
    if (!ok0 && !ok1) continue;
    anchor_ = a;
    wrapped_ = a != 0;
    slot_index_ = ok1 && (!ok0 || s1.generation > s0.generation) ? 1 : 0;
    slot_ = slot_index_ ? s1 : s0;
    return;
  }
  throw_error(Errc::kCorrupt, "'" + file_ + "' is " + (hdf5 ? "an HDF5 file" : "a file") +
                                  " but not a tessera container (no tessera anchor in it)");
}

void PackStore::load() {
  find_anchor();
  const std::string what = "container '" + file_ + "': pack checkpoint";
  if (slot_.checkpoint_len > (uint64_t(1) << 34) || slot_.checkpoint_len < 16 || slot_.journal_off % kBlock ||
      slot_.journal_len < kBlock)
    throw_error(Errc::kCorrupt, what + ": impossible header slot");
  std::vector<uint8_t> blob(slot_.checkpoint_len);
  if (read_at(blob.data(), blob.size(), slot_.checkpoint_off) != 0) throw_errno("cannot read", file_, errno);
  uint64_t next_seq = 0;
  tree_ = Tree::decode(blob.data(), blob.size(), what, &next_seq);
  if (next_seq != slot_.journal_seq) throw_error(Errc::kCorrupt, what + ": its sequence number differs from the header's");
  cursor_ = slot_.journal_off;
  block_end_ = slot_.journal_off + slot_.journal_len;
  seq_ = slot_.journal_seq;
  salt_ = slot_.journal_salt;
  journal_blocks_ = {Range{slot_.journal_off, slot_.journal_len}};
  follow(true);
}

void PackStore::follow(bool at_open) {
  // A window of the journal read ahead: one pread for many records at an open, one small
  // one for a reader's refresh that usually finds nothing.
  std::vector<uint8_t> win;
  uint64_t win_off = 0;
  const size_t step = at_open ? (256 << 10) : 4096;
  auto corrupt = [&](const Record& r, const std::string& why) {
    throw_error(Errc::kCorrupt, "container '" + file_ + "': pack journal record " + std::to_string(r.seq) + " (" +
                                    record_name(r.type) + ") at offset " + std::to_string(cursor_) + ": " + why);
  };
  for (;;) {
    const uint64_t room = block_end_ - cursor_;
    if (room < kRecordHeader) return;
    size_t have = cursor_ >= win_off && cursor_ < win_off + win.size() ? win_off + win.size() - cursor_ : 0;
    Record r;
    size_t len = 0;
    bool bad = false;
    Parse p = have ? parse_record(win.data() + (cursor_ - win_off), have, salt_, seq_, &r, &len, &bad) : Parse::kNeedMore;
    if (p == Parse::kNeedMore) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(room, std::max<size_t>(step, len)));
      win.resize(want);
      win_off = cursor_;
      if (read_at(win.data(), want, cursor_) != 0) throw_errno("cannot read", file_, errno);
      p = parse_record(win.data(), want, salt_, seq_, &r, &len, &bad);
      if (p == Parse::kNeedMore) return;  // a record longer than its block: not intact
    }
    if (p == Parse::kEnd) {
      if (bad) corrupt(r, "intact but not a valid record");
      return;
    }
    if (r.type == RecordType::kNext) {
      if (r.a % kBlock || r.b < kBlock || r.b > kMaxBlock) corrupt(r, "impossible journal block");
      journal_blocks_.push_back({r.a, r.b});
      cursor_ = r.a;
      block_end_ = r.a + r.b;
      salt_ = r.c;
      ++seq_;
      continue;
    }
    const int e = tree_.check(r);
    const bool about_inode = r.type == RecordType::kExtent || r.type == RecordType::kSize || r.type == RecordType::kTrim;
    if (e && !(about_inode && e == ENOENT)) corrupt(r, std::string("cannot apply: ") + std::strerror(e));
    if (!e) {
      std::vector<Range> freed;
      tree_.apply(r, &freed);  // an opener recomputes free space; a reader never allocates
    }
    cursor_ += len;
    journal_bytes_ += len;
    ++seq_;
  }
}

void PackStore::start_session() {
  uint64_t sb_eoa = 0;
  if (wrapped_ && read_at(&sb_eoa, 8, kEoaOffset) != 0) throw_errno("cannot read", file_, errno);
  std::vector<Range> owned = tree_.owned();
  owned.push_back({slot_.checkpoint_off, round_up(slot_.checkpoint_len)});
  owned.insert(owned.end(), journal_blocks_.begin(), journal_blocks_.end());
  const bool native_grew = wrapped_ && tree_.eoa && sb_eoa > tree_.eoa;
  region_end_ = std::max({end_of(owned), anchor_ + kAnchorBytes, wrapped_ ? tree_.eoa : round_up(file_size_)});
  if (native_grew) owned.push_back({tree_.eoa, sb_eoa - tree_.eoa});
  // Free space may still be named in an older reader's view: reusable once none is open.
  retired_ = SpaceMap::complement(anchor_ + kAnchorBytes, region_end_, owned);
  // A native program's EOA need not fall on a block: tessera goes on from the next one.
  if (native_grew) region_end_ = std::max(region_end_, round_up(sb_eoa));
  tree_.next_ino = std::max(tree_.next_ino, now_ns());
  auto check = [&](int rc) {
    if (rc) throw_errno("cannot write", file_, rc);
  };
  // A fresh block: whatever a crashed writer left after the cursor is never read again.
  check(new_block(64 << 10));
  if (native_grew) {
    Record f;
    f.type = RecordType::kForeign;
    f.a = tree_.eoa;
    f.b = sb_eoa;
    check(log(f));
  }
  if (wrapped_ && sb_eoa < region_end_) {
    tree_.eoa = sb_eoa;
    check(cover_with_eoa(region_end_));  // the EOA again covers everything tessera owns
  }
  // Preallocation a crash left past a file's size: the next writer may reuse it.
  for (const auto& t : tree_.excess()) {
    Record r;
    r.type = RecordType::kTrim;
    r.a = t.first;
    r.b = t.second;
    check(log(r));
  }
  check(sync());
  session_ = true;
}

int PackStore::write_at(const void* p, size_t n, uint64_t off) {
  if (poisoned_) return EIO;
  if (!writable_) return EROFS;
  dirty_ = true;
  const auto* c = static_cast<const uint8_t*>(p);
  while (n > 0) {
    ssize_t w = base_.pwrite(fd_, c, n, static_cast<off_t>(off));
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;
    c += w, n -= static_cast<size_t>(w), off += static_cast<uint64_t>(w);
  }
  return 0;
}

void PackStore::wrote_data(uint64_t off, uint64_t n) {
  wb_lo_ = std::min(wb_lo_, off);
  wb_hi_ = std::max(wb_hi_, off + n);
  if (wb_hi_ - wb_lo_ < (8u << 20)) return;
  // A hint on the pack's own descriptor (no byte changes: the Envs beneath need not see it).
  (void)::sync_file_range(fd_, static_cast<off64_t>(wb_lo_), static_cast<off64_t>(wb_hi_ - wb_lo_),
                          SYNC_FILE_RANGE_WRITE);
  wb_lo_ = UINT64_MAX;
  wb_hi_ = 0;
}

int PackStore::read_at(void* p, size_t n, uint64_t off) {
  auto* c = static_cast<uint8_t*>(p);
  while (n > 0) {
    ssize_t r = base_.pread(fd_, c, n, static_cast<off_t>(off));
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (r == 0) {  // past the file's end: bytes never written (a region grown, not filled)
      std::memset(c, 0, n);
      return 0;
    }
    c += r, n -= static_cast<size_t>(r), off += static_cast<uint64_t>(r);
  }
  return 0;
}

void PackStore::lock_out_native_writers() {
  // HDF5's own file locking takes flock: LOCK_EX to write, LOCK_SH to read.  Every
  // tessera opener holds LOCK_SH, so a native program can read the wrapper beside it but
  // never write the file while tessera has it open (flock and OFD locks do not interact).
  while (base_.flock(fd_, LOCK_SH | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK)
      throw_error(Errc::kBusy, "container '" + file_ + "' is open for writing by a native HDF5 program");
    if (errno == ENOSYS || errno == ENOLCK) return;  // a file system without flock, as HDF5 allows
    throw_errno("cannot lock", file_, errno);
  }
}

bool PackStore::readers_present() const {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = kReaderByte;
  fl.l_len = 1;
  if (::fcntl(fd_, F_OFD_GETLK, &fl) != 0) return true;
  return fl.l_type != F_UNLCK;
}

int PackStore::grow_region(uint64_t end) {
  if (end <= region_end_) return 0;
  if (int rc = cover_with_eoa(end)) return rc;
  region_end_ = end;
  return 0;
}

int PackStore::cover_with_eoa(uint64_t end) {
  if (wrapped_ && end > tree_.eoa) {
    // The EOA first, the bytes after: a native program must never cut what tessera wrote.
    uint64_t eoa = std::max(end, tree_.eoa + tree_.eoa / 8);
    eoa = (eoa + kRegionStep - 1) / kRegionStep * kRegionStep;
    if (file_size_ < eoa) {
      if (poisoned_) return EIO;
      if (base_.ftruncate(fd_, static_cast<off_t>(eoa)) != 0) return errno;
      file_size_ = eoa;
    }
    if (int rc = write_at(&eoa, 8, kEoaOffset)) return rc;
    if (cursor_ != 0) {
      Record r;
      r.type = RecordType::kEoa;
      r.a = eoa;
      if (int rc = append(r, true)) return rc;
    }
    tree_.eoa = eoa;
  }
  return 0;
}

int PackStore::allocate(uint64_t len, uint64_t want, Range* out) {
  len = round_up(len);
  if (!retired_.empty() && !readers_present()) {
    for (const Range& r : retired_) free_.add(r);
    retired_.clear();
  }
  if (want && free_.take_at(want, len)) {
    *out = Range{want, len};
    return 0;
  }
  if (want && want == region_end_) {
    if (int rc = grow_region(want + len)) return rc;
    *out = Range{want, len};
    return 0;
  }
  if (free_.take(len, out)) return 0;
  Range tail{region_end_, 0};
  const bool took = free_.take_ending_at(region_end_, &tail);
  if (int rc = grow_region(tail.off + len)) {
    if (took) free_.add(tail);
    return rc;
  }
  *out = Range{tail.off, len};
  return 0;
}

void PackStore::release(const std::vector<Range>& ranges, bool spare) {
  for (const Range& r : ranges) {
    if (spare) free_.add(r);
    else pending_.push_back(r);
  }
}

int PackStore::append(Record& r, bool reserved) {
  if (poisoned_) return EIO;
  r.seq = seq_;
  std::vector<uint8_t> bytes = encode_record(r, salt_);
  if (!reserved && cursor_ + bytes.size() + kReserve > block_end_) {
    if (int rc = new_block(std::max<uint64_t>(next_block_len_, round_up(bytes.size() + kReserve)))) return rc;
    r.seq = seq_;
    bytes = encode_record(r, salt_);
  }
  if (cursor_ + bytes.size() > block_end_) return EIO;  // the reserve is sized for this
  if (int rc = write_at(bytes.data(), bytes.size(), cursor_)) return rc;
  cursor_ += bytes.size();
  journal_bytes_ += bytes.size();
  ++seq_;
  return 0;
}

int PackStore::new_block(uint64_t len) {
  Range b;
  if (int rc = allocate(len, 0, &b)) return rc;
  Record next;
  next.type = RecordType::kNext;
  next.a = b.off;
  next.b = b.len;
  next.c = fresh_salt();
  if (int rc = append(next, true)) {
    free_.add(b);
    return rc;
  }
  cursor_ = b.off;
  block_end_ = b.end();
  salt_ = next.c;
  journal_blocks_.push_back(b);
  next_block_len_ = std::min(next_block_len_ * 2, kMaxBlock);
  return 0;
}

int PackStore::log(Record r) {
  if (!writable_) return EROFS;
  if (poisoned_) return EIO;
  if (int e = tree_.check(r)) return e;
  if (int rc = append(r, false)) return rc;
  std::vector<Range> freed;
  tree_.apply(r, &freed);
  release(freed, r.type == RecordType::kTrim);
  return 0;
}

int PackStore::fail(int err) {
  poisoned_ = err ? err : EIO;
  return poisoned_;
}

int PackStore::sync() {
  if (poisoned_) return EIO;
  if (!dirty_) return 0;
  if (base_.fdatasync(fd_) != 0) return fail(errno);
  dirty_ = false;
  retired_.insert(retired_.end(), pending_.begin(), pending_.end());
  pending_.clear();
  if (journal_bytes_ > std::max<uint64_t>(kCheckpointMin, 4 * slot_.checkpoint_len)) return checkpoint();
  return 0;
}

int PackStore::checkpoint() {
  next_block_len_ = 64 << 10;  // the journal after a checkpoint starts small again
  if (int rc = new_block(next_block_len_)) return rc;
  const Range block = journal_blocks_.back();
  const uint64_t first_seq = seq_, block_salt = salt_;
  const std::vector<uint8_t> blob = tree_.encode(first_seq);
  Range ckpt;
  if (int rc = allocate(blob.size(), 0, &ckpt)) return rc;
  if (int rc = write_at(blob.data(), blob.size(), ckpt.off)) {
    free_.add(ckpt);
    return rc;
  }
  if (base_.fdatasync(fd_) != 0) return fail(errno);
  const Slot next{slot_.generation + 1, ckpt.off, blob.size(), block.off, block.len, first_seq, block_salt};
  const std::vector<uint8_t> bytes = encode_slot(next);
  if (int rc = write_at(bytes.data(), bytes.size(), anchor_ + (1 - slot_index_) * kSlotStride)) {
    free_.add(ckpt);
    return rc;
  }
  if (base_.fdatasync(fd_) != 0) return fail(errno);
  dirty_ = false;
  // The old checkpoint and journal are no longer reachable from the current slot.
  retired_.push_back({slot_.checkpoint_off, round_up(slot_.checkpoint_len)});
  for (const Range& b : journal_blocks_)
    if (b.off != block.off) retired_.push_back(b);
  retired_.insert(retired_.end(), pending_.begin(), pending_.end());
  pending_.clear();
  journal_blocks_ = {block};
  slot_ = next;
  slot_index_ = 1 - slot_index_;
  journal_bytes_ = 0;
  return 0;
}

int PackStore::close_clean() {
  if (int rc = compact()) return rc;
  if (journal_bytes_ > 0 || dirty_)
    if (int rc = checkpoint()) return rc;
  // Cut the file to what it holds (bytes an open reader may still read count as held).
  std::vector<Range> keep = tree_.owned();
  keep.push_back({slot_.checkpoint_off, round_up(slot_.checkpoint_len)});
  keep.insert(keep.end(), journal_blocks_.begin(), journal_blocks_.end());
  if (readers_present()) keep.insert(keep.end(), retired_.begin(), retired_.end());
  const uint64_t end = std::max(end_of(keep), anchor_ + kAnchorBytes);
  if (wrapped_ && end < tree_.eoa) {
    Record r;
    r.type = RecordType::kEoa;
    r.a = end;
    if (int rc = append(r, true)) return rc;
    if (int rc = write_at(&end, 8, kEoaOffset)) return rc;
    tree_.eoa = end;
  }
  if (file_size_ > end || !wrapped_) {
    if (base_.ftruncate(fd_, static_cast<off_t>(end)) != 0) return errno;
    file_size_ = end;
  }
  if (base_.fdatasync(fd_) != 0) return fail(errno);
  return 0;
}

int PackStore::refresh() {
  if (writable_) return 0;
  if (poisoned_) return EIO;
  try {
    follow(false);
    return 0;
  } catch (const Error& e) {
    // A read that failed changed nothing (the cursor stays): the next refresh tries
    // again.  A record that cannot apply is corruption: this reader is done.
    if (e.code() == Errc::kCorrupt) poisoned_ = EIO;
    return EIO;
  } catch (...) {
    return EIO;
  }
}

}  // namespace pack
}  // namespace tessera
