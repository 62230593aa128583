#include "engine/catalog/catalog.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include "engine/util/bytes.h"
#include "engine/util/checksum.h"
#include "engine/catalog/catalog_log.h"
#include "engine/util/error.h"

namespace tessera {

using namespace catalog_log;

std::unique_ptr<Catalog> Catalog::open(const std::string& dir, Mode mode, bool create, Env& env) {
  std::unique_ptr<Catalog> c(new Catalog());
  c->env_ = &env;
  c->mode_ = mode;
  c->dir_ = dir;
  c->log_path_ = join_path(dir, "catalog.log");
  bool rw = mode == Mode::kReadWrite;
  // A read-only or shadow catalog never creates anything, whatever `create` says.
  if (!(rw && create) && !path_exists(env, c->log_path_))
    throw_errno("cannot open catalog", c->log_path_, ENOENT);
  if (rw) {
    if (create && !is_directory(env, dir)) {
      make_dirs(env, dir);
      sync_dir(env, parent_dir(dir));  // the container directory itself must survive a crash
    }
    c->lock_ = FileLock::try_lock(env, join_path(dir, "catalog.lock"), /*exclusive=*/true);
    if (!c->lock_.locked())
      throw_error(Errc::kBusy, "container '" + dir + "' is open for writing by another process");
    bool existed = path_exists(env, c->log_path_);
    c->log_ = File::open_rw(env, c->log_path_, create);
    // The new name is made durable before the first record is appended (append):
    // until then a power loss loses an empty catalog, which held nothing committed.
    if (!existed) c->pending_->add_dir(dir);
  } else {
    c->log_ = File::open_read(env, c->log_path_);
  }
  c->replay();
  return c;
}

bool Catalog::holds_no_record(Env& env, const std::string& dir) {
  struct stat st;
  const std::string p = join_path(dir, "catalog.log");
  if (env.stat(p.c_str(), &st, false) != 0) return errno == ENOENT;
  return S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) <= kFileHeaderSize;
}

Catalog::~Catalog() {
  try {
    sync();
  } catch (...) {  // nothing to report to from a destructor; callers sync() first
  }
}

std::optional<std::string> Catalog::get(std::string_view key) const {
  std::optional<std::string> out;
  read(key, [&](std::string_view v) { out.emplace(v); });
  return out;
}

bool Catalog::contains(std::string_view key) const {
  return read(key, [](std::string_view) {});
}

std::vector<std::pair<std::string, std::string>> Catalog::scan(std::string_view prefix) const {
  std::vector<std::pair<std::string, std::string>> out;
  scan_each(prefix, [&](std::string_view k, std::string_view v) { out.emplace_back(k, v); });
  return out;
}

uint64_t Catalog::count(std::string_view prefix, uint64_t limit) const {
  std::lock_guard<std::mutex> g(mu_);
  uint64_t n = 0;
  for (auto it = kv_.lower_bound(prefix); it != kv_.end() && n < limit; ++it) {
    if (it->first.view().compare(0, prefix.size(), prefix) != 0) break;
    if (!it->second.dead) ++n;
  }
  return n;
}

uint64_t Catalog::value_bytes(std::string_view prefix) const {
  std::lock_guard<std::mutex> g(mu_);
  uint64_t n = 0;
  for (auto it = kv_.lower_bound(prefix); it != kv_.end(); ++it) {
    if (it->first.view().compare(0, prefix.size(), prefix) != 0) break;
    n += it->second.value.size();
  }
  return n;
}

uint64_t Catalog::parse_records(const uint8_t* buf, uint64_t n, uint64_t base, const std::string& path, bool tail_ok,
                               const std::function<bool(const std::vector<OpView>&, uint64_t)>& apply) {
  auto corrupt = [&](uint64_t off, const std::string& why) {
    throw_error(Errc::kCorrupt, "catalog '" + path + "': corrupt record at offset " + std::to_string(off) + " (" +
                                    why + ")");
  };
  uint64_t off = 0;
  while (off < n) {
    RecordView rv = inspect(buf, n, off);
    if (rv.kind != RecordView::kGood) {
      // Torn tail (a crash mid-append, possibly leaving zero-filled blocks) versus damage
      // in the middle of the log: only the former may be dropped silently.
      bool torn = false;
      if (rv.kind == RecordView::kTruncated) {
        torn = true;
      } else if (rv.kind == RecordView::kBadPayload) {
        torn = all_zero(buf + rv.end, n - rv.end);
      } else {
        // The length cannot be trusted, so look for any intact record further on.
        torn = true;
        for (uint64_t p = off + 1; p + kRecordHeaderSize <= n && torn; ++p)
          torn = inspect(buf, n, p).kind != RecordView::kGood;
      }
      if (!torn || !tail_ok)
        corrupt(base + off, rv.kind == RecordView::kBadHeader    ? "header checksum mismatch"
                            : rv.kind == RecordView::kTruncated ? "truncated"
                                                                : "payload checksum mismatch");
      break;
    }
    // Decode the whole batch before applying any of it (as views into buf: a compacted
    // log is one record of every live pair, tens of thousands of them).
    std::vector<OpView> batch;
    try {
      ByteReader r(buf + off + kRecordHeaderSize, rv.end - off - kRecordHeaderSize, "payload");
      uint32_t ops = r.u32();
      if (ops > r.remaining() / 5) r.fail("implausible op count");  // a del is 5 bytes
      batch.reserve(ops);
      for (uint32_t i = 0; i < ops; ++i) {
        uint8_t kind = r.u8();
        if (kind > 1) r.fail("unknown op " + std::to_string(kind));
        std::string_view key = r.str_view();
        batch.push_back({kind == 1, key, kind == 1 ? r.str_view() : std::string_view()});
      }
      if (!r.done()) r.fail("trailing bytes");
    } catch (const Error& e) {
      corrupt(base + off, e.what());
    }
    off = rv.end;
    if (!apply(batch, base + off)) break;
  }
  return base + off;
}

// Reads records from log_end_ to EOF and applies them.  The writer cuts off a torn tail; a
// reader just stops before it (it may be a record the writer is appending right now).
void Catalog::replay() {
  uint64_t size = log_.size();
  if (log_end_ == 0) {  // file header
    std::vector<uint8_t> want = file_header();
    uint8_t got[kFileHeaderSize] = {};
    uint64_t have = std::min<uint64_t>(size, kFileHeaderSize);
    log_.pread_exact(got, have, 0);
    if (have < kFileHeaderSize) {
      // A crash while creating the file (or a writer creating it right now): nothing was
      // ever committed.  Anything else this short is not a catalog.
      if (std::memcmp(got, want.data(), have) != 0 && !all_zero(got, have))
        throw_error(Errc::kCorrupt, "catalog '" + log_path_ + "': bad file header");
      if (mode_ != Mode::kReadWrite) return;
      log_.truncate(0);
      // Not synced here: a header lost in a crash reads as an empty catalog (above), and
      // the first commit's fdatasync makes it durable with the first record.  Its own
      // fdatasync was a sixth of creating a container (issue 20).
      log_.pwrite_all(want.data(), want.size(), 0);
      log_end_ = kFileHeaderSize;
      return;
    }
    if (std::memcmp(got, kMagic, sizeof kMagic) != 0)
      throw_error(Errc::kCorrupt, "catalog '" + log_path_ + "': bad magic (not a tessera catalog)");
    uint32_t version;
    std::memcpy(&version, got + 8, 4);
    if (version == 0) throw_error(Errc::kCorrupt, "catalog '" + log_path_ + "': bad format version 0");
    if (version > kVersion)
      throw_error(Errc::kUnsupported, "catalog '" + log_path_ + "': format version " +
                                          std::to_string(version) + " is newer than supported (" +
                                          std::to_string(kVersion) + ")");
    log_end_ = kFileHeaderSize;
  }
  if (size <= log_end_) return;

  // The catalog is small (compaction bounds it), so read the new part in one go.
  const uint64_t base = log_end_;
  // Not zero-filled first: pread_exact fills it or throws (the log is megabytes).
  const uint64_t n = size - base;
  std::unique_ptr<uint8_t[]> buf(new uint8_t[n]);
  log_.pread_exact(buf.get(), n, base);
  const bool track = tracking();
  parse_records(buf.get(), n, base, log_path_, /*tail_ok=*/true,
                [&](const std::vector<OpView>& batch, uint64_t end) {
                  version_.fetch_add(1, std::memory_order_acq_rel);
                  for (const OpView& op : batch) apply_one(op.put, op.key, op.value, track);
                  log_end_ = end;
                  return true;
                });
  if (log_end_ < size && mode_ == Mode::kReadWrite) {
    log_.truncate(log_end_);  // drop the torn tail so new records follow the last good one
    log_.sync();
  }
}

void Catalog::commit(const CatalogBatch& batch) {
  std::lock_guard<std::mutex> g(mu_);
  commit_impl(batch);
}

void Catalog::commit(CatalogBatch&& batch) {
  std::lock_guard<std::mutex> g(mu_);
  commit_impl(batch);
  batch.ops_.clear();
}



uint8_t* Catalog::chunk(uint64_t want) {
  if (want > kChunkBytes) want = kChunkBytes;
  if (chunk_cap_ < want) {
    size_t cap = 4096;
    while (cap < want) cap *= 2;
    chunk_.reset();
    chunk_cap_ = 0;
    chunk_.reset(new uint8_t[cap]);  // not zero-filled: write_record fills what it writes
    chunk_cap_ = cap;
  }
  return chunk_.get();
}

// A record that fits the chunk buffer is framed there whole and written with one pwrite.
// A larger one is written in order: the first chunk holds 16 zero bytes where the header
// goes and the payload's start, every later chunk the next payload bytes (the checksum
// updated over each chunk just before it is written, while it is in cache), and then the
// 16 header bytes.  Until the header is written the record's place reads as zeros — never
// a header left by an earlier failed attempt — so its header check fails, and a crash
// there leaves a torn tail (docs/format.md, "Replay and damage").  The memory is the
// chunk buffer, whatever the record's size.
template <class ForEach>
uint64_t Catalog::write_record(File& f, uint64_t at, uint32_t nops, uint64_t len, ForEach for_each) {
  if (len > UINT32_MAX)
    throw_error(Errc::kInvalidArgument, "catalog batch too large (" + std::to_string(len) + " bytes)");
  const uint64_t total = kRecordHeaderSize + len;
  uint8_t* const buf = chunk(total);
  const size_t cap = chunk_cap_;
  std::memset(buf, 0, kRecordHeaderSize);
  size_t fill = kRecordHeaderSize;
  uint64_t pos = at;  // the file offset of buf[0]
  Checksum64Stream sum;
  auto flush = [&] {
    const size_t from = pos == at ? kRecordHeaderSize : 0;
    sum.update(buf + from, fill - from);
    f.pwrite_all(buf, fill, pos);
    pos += fill;
    fill = 0;
  };
  auto put = [&](const void* p, size_t n) {
    if (n <= cap - fill) {
      if (n) std::memcpy(buf + fill, p, n);
      fill += n;
      return;
    }
    const auto* s = static_cast<const uint8_t*>(p);
    while (n) {
      if (fill == cap) flush();
      const size_t k = std::min(n, cap - fill);
      std::memcpy(buf + fill, s, k);
      fill += k;
      s += k;
      n -= k;
    }
  };
  auto put_str = [&](std::string_view v) {
    uint32_t n = static_cast<uint32_t>(v.size());
    put(&n, 4);
    put(v.data(), v.size());
  };
  put(&nops, 4);
  for_each([&](bool is_put, std::string_view key, std::string_view value) {
    uint8_t kind = is_put ? 1 : 0;
    put(&kind, 1);
    put_str(key);
    if (is_put) put_str(value);
  });
  if (pos + fill != at + total)  // the length computed apart disagrees: write no header
    throw_error(Errc::kInternal, "catalog '" + log_path_ + "': record length mismatch");
  if (pos == at) {  // whole in the buffer
    make_header(buf, len, checksum64(buf + kRecordHeaderSize, len));
    f.pwrite_all(buf, fill, at);
    return at + total;
  }
  if (fill) flush();
  uint8_t h[kRecordHeaderSize];
  make_header(h, len, sum.digest());
  f.pwrite_all(h, sizeof h, at);
  return at + total;
}

template <class Write>
void Catalog::append(Write write) {
  if (!log_.is_open())
    throw_error(Errc::kIo, "catalog '" + log_path_ + "' is unusable after a failed compaction");
  if (name_unsynced_) {  // before any record goes to the new log (see catalog.h)
    sync_dir(*env_, dir_);
    name_unsynced_ = false;
  }
  // Names a record may depend on (the container's, a new array's directory): durable
  // before the record is (pending_names.h).
  pending_->sync(*env_);
  uint64_t end = log_end_;
  try {
    end = write(log_end_);
    if (tail_unknown_) log_.truncate(end);  // bytes of a failed append may lie beyond
    log_.sync();
  } catch (...) {
    // Leave no partial record behind (best effort; replay would treat it as torn anyway).
    try {
      log_.truncate(log_end_);
      tail_unknown_ = false;
    } catch (...) {
      tail_unknown_ = true;
    }
    throw;
  }
  tail_unknown_ = false;
  log_end_ = end;
}

// kOnSync: the commits since the last sync become ONE record holding their net effect
// (the current value of every key they touched, or its deletion).  A crash loses pending
// commits anyway, so merging them keeps the rule "the log holds a prefix of the commits,
// each whole"; and a key rewritten many times between syncs (a group's record as links
// are added, an object's as attributes are) is written once, not once per commit.
uint64_t Catalog::write_dirty(uint64_t at) {
  uint64_t len = 4;
  for (const auto& it : dirty_)
    len += 1 + 4 + it->first.size() + (it->second.dead ? 0 : 4 + it->second.value.size());
  return write_record(log_, at, static_cast<uint32_t>(dirty_.size()), len, [&](auto emit) {
    for (const auto& it : dirty_) emit(!it->second.dead, it->first, it->second.value);
  });
}

// After the net record is durable: tombstones go, the rest is clean.
void Catalog::settle_dirty() {
  for (const auto& it : dirty_) {
    if (it->second.dead) {
      drop_hints();
      kv_.erase(it);
    } else {
      it->second.dirty = false;
    }
  }
  dirty_.clear();
  dirty_bytes_ = 0;
  durable_ticket_ = tickets_;  // every commit made so far is in the log now
  content_pending_ = false;
}

void Catalog::commit_impl(const CatalogBatch& batch, bool maintenance) {
  if (mode_ == Mode::kReadOnly)
    throw_error(Errc::kInvalidArgument, "catalog '" + log_path_ + "' is open read-only");
  if (batch.empty()) return;
  if (mode_ == Mode::kShadow) {  // rank 0 persists the same batch
    apply(batch);
    return;
  }
  if (!log_.is_open())
    throw_error(Errc::kIo, "catalog '" + log_path_ + "' is unusable after a failed compaction");
  uint64_t len = 4;
  for (const auto& op : batch.ops()) len += 1 + 4 + op.key.size() + (op.put ? 4 + op.value.size() : 0);
  if (len > UINT32_MAX)
    throw_error(Errc::kInvalidArgument, "catalog batch too large (" + std::to_string(len) + " bytes)");
  const uint64_t ticket = ++tickets_;
  if (durability_ == Durability::kOnSync) {
    dirty_bytes_ += len;
    apply(batch);
    content_pending_ = content_pending_ || !maintenance;
    // The batch is committed now (durable at the next sync).  The pending commits cost no
    // memory of their own (their net effect is the map's dirty entries, written at sync
    // through the chunk buffer), so writing them early only bounds the record a sync
    // writes and what a crash loses: past 64 MiB of committed bytes.  (It was 4 MiB while
    // queued commits were kept as framed records: then a file of 10,000 small datasets
    // paid four mid-run fdatasyncs; issue 20.)  A failure to
    // write early is not this commit's — the next sync() writes it again and reports what
    // fails.  (Throwing here would tell the caller its batch failed while it stays
    // applied: a dataset's creation would drop its array and leave its links to be written
    // by the next sync.)
    if (dirty_bytes_ > (64u << 20)) {
      try {
        sync_locked();
      } catch (const Error&) {
        dirty_bytes_ = 0;  // still dirty: tried again after another 64 MiB, or at sync()
      }
    }
    return;
  }
  // Durable before it is applied: a commit that throws leaves no trace of its batch, in
  // the file or in memory.  Commits pending from before a switch to kEachCommit (or a
  // failed sync) go first, in the same append.
  const bool pending = !dirty_.empty();
  append([&](uint64_t at) {
    if (pending) at = write_dirty(at);
    return write_record(log_, at, static_cast<uint32_t>(batch.ops().size()), len, [&](auto emit) {
      for (const auto& op : batch.ops()) emit(op.put, op.key, op.value);
    });
  });
  if (pending) settle_dirty();
  durable_ticket_ = ticket;
  apply(batch);
  maybe_compact();
}

void Catalog::sync() {
  std::lock_guard<std::mutex> g(mu_);
  sync_locked();
}

void Catalog::sync_locked() {
  if (mode_ == Mode::kReadWrite && dirty_.empty()) durable_ticket_ = tickets_;  // nothing unwritten
  if (mode_ != Mode::kReadWrite || dirty_.empty()) return;
  append([&](uint64_t at) { return write_dirty(at); });
  settle_dirty();
  maybe_compact();
}

// kOnSync (not a shadow): changed entries are flagged dirty and listed once; a delete
// leaves a tombstone until the next sync writes it durably (settle_dirty).
void Catalog::apply(const CatalogBatch& batch) {
  version_.fetch_add(1, std::memory_order_acq_rel);
  const bool track = tracking();
  for (const auto& op : batch.ops()) apply_one(op.put, op.key, op.value, track);
}

Catalog::Map::iterator Catalog::seek(std::string_view key) const {
  const Hint& h = hints_[hint_slot(key)];
  if (h.set) {
    for (const Map::iterator& c : {h.last, h.max}) {
      const int r = key_compare(key, c->first);
      if (r == 0) return c;
      if (r > 0) {
        Map::iterator n = std::next(c);
        if (n == kv_.end() || key_compare(key, n->first) <= 0) return n;
      } else if (c == kv_.begin() || key_compare(key, std::prev(c)->first) > 0) {
        return c;
      }
    }
  }
  return kv_.lower_bound(key);
}

void Catalog::note_hint(Map::iterator it) {
  Hint& h = hints_[hint_slot(it->first)];
  if (!h.set) {
    h.last = h.max = it;
    h.set = true;
    return;
  }
  h.last = it;
  if (key_compare(it->first, h.max->first) > 0) h.max = it;
}

Catalog::Map::iterator Catalog::apply_one(bool put, std::string_view key, std::string_view value, bool track) {
  // The first entry not below key (also the insertion hint).
  Map::iterator it = seek(key);
  if (it != kv_.end() && std::string_view(it->first) == key) {
    Entry& e = it->second;
    if (!e.dead) live_bytes_ -= entry_bytes(it->first, e.value);
    if (!put) {
      if (!track) {
        drop_hints();
        kv_.erase(it);
        return kv_.end();
      }
      e.value.clear();
      e.value.shrink_to_fit();
      e.dead = true;
    } else {
      e.value.assign(value);
      e.dead = false;
      live_bytes_ += entry_bytes(it->first, e.value);
    }
    if (track && !e.dirty) {
      e.dirty = true;
      dirty_.push_back(it);
    }
    note_hint(it);
    return it;
  }
  if (!put) return kv_.end();  // not in the map: not in the log either
  it = kv_.emplace_hint(it, std::piecewise_construct, std::forward_as_tuple(key), std::forward_as_tuple(value));
  live_bytes_ += entry_bytes(it->first, it->second.value);
  if (track) {
    it->second.dirty = true;
    dirty_.push_back(it);
  }
  note_hint(it);
  return it;
}

void Catalog::reload() {
  std::lock_guard<std::mutex> g(mu_);
  if (frozen_) return;  // a past state (open_as_of) never changes
  // The only writer is always up to date; a shadow is as up to date as rank 0's writer.
  if (mode_ != Mode::kReadOnly) return;
  // Compaction publishes a new file by rename: follow the name if it moved to a new inode.
  struct stat path_st, fd_st;
  if (env_->stat(log_path_.c_str(), &path_st, true) != 0) throw_errno("cannot stat", log_path_, errno);
  if (env_->fstat(log_.fd(), &fd_st) != 0) throw_errno("cannot stat", log_path_, errno);
  if (path_st.st_ino != fd_st.st_ino || path_st.st_dev != fd_st.st_dev) {
    File f = File::open_read(*env_, log_path_);
    Map old_kv(&pool_);
    drop_hints();  // they point into the map being set aside
    old_kv.swap(kv_);
    version_.fetch_add(1, std::memory_order_acq_rel);
    uint64_t old_end = log_end_, old_live = live_bytes_;
    File old_log = std::move(log_);
    log_ = std::move(f);
    log_end_ = 0;
    live_bytes_ = 0;
    try {
      replay();
    } catch (...) {  // keep the last good view rather than a half-loaded one
      drop_hints();
      kv_.swap(old_kv);
      log_ = std::move(old_log);
      log_end_ = old_end;
      live_bytes_ = old_live;
      throw;
    }
    return;
  }
  replay();
}

// Rewrites the log as one record of the live pairs when garbage dominates.  The commit that
// triggered it is already durable, and old and new logs hold the same map, so a failure
// here loses nothing: it is swallowed and retried after a later commit.
void Catalog::maybe_compact() {
  if (log_end_ <= 2 * live_bytes_ + kCompactSlack) return;
  std::string tmp = log_path_ + ".tmp";
  // File header + one record of every live pair (no tombstones here: maybe_compact runs
  // right after the dirty entries are settled), streamed through the chunk buffer (the
  // catalog can hold megabytes of inline fragments).
  uint64_t len = 4;
  for (const auto& [k, e] : kv_) len += 1 + 4 + k.size() + 4 + e.value.size();
  if (len > UINT32_MAX) return;  // cannot be framed as one record; keep appending
  try {
    remove_file(*env_, tmp);  // a leftover from a crash
    File f = File::open_rw(*env_, tmp, /*create=*/true, /*exclusive=*/true);
    const std::vector<uint8_t> head = file_header();
    f.pwrite_all(head.data(), head.size(), 0);
    write_record(f, kFileHeaderSize, static_cast<uint32_t>(kv_.size()), len, [&](auto emit) {
      for (const auto& [k, e] : kv_) emit(true, k, e.value);
    });
    f.sync();
    f.close();
  } catch (const Error&) {
    try { remove_file(*env_, tmp); } catch (...) {}
    return;
  }
  // The log being replaced stays readable as history (reads as of an earlier commit):
  // linked into catalog.history/ before the rename, so no crash loses it.
  try {
    archive_log();
  } catch (const Error&) {
    try { remove_file(*env_, tmp); } catch (...) {}
    return;  // keep appending to the old log; history is never dropped silently
  }
  try {
    rename_durable(*env_, tmp, log_path_);
  } catch (const Error&) {
    if (path_exists(*env_, tmp)) {  // the rename itself failed: the old log is still in place
      try { remove_file(*env_, tmp); } catch (...) {}
      return;
    }
    // Renamed but the directory sync failed: both logs hold the same map, but the new
    // one's name is not durable — the next write syncs the directory before it appends.
    name_unsynced_ = true;
  }
  // From here the old descriptor points at an unlinked file; appending to it would lose
  // commits, so close it first and let commit() refuse if the reopen fails.
  log_ = File();
  log_ = File::open_rw(*env_, log_path_, /*create=*/false);
  log_end_ = log_.size();
}

bool Catalog::has_pending() const {
  std::lock_guard<std::mutex> g(mu_);
  return !dirty_.empty() && content_pending_;
}

}  // namespace tessera
