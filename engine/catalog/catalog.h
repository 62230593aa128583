// A small crash-safe key/value catalog for the connector's HDF5 objects (groups, links,
// attributes, dataset schemas, committed types).
//
// Storage: one append-only log file `catalog.log` in the given directory.  Each commit
// appends one framed record holding a whole batch of puts and deletes, then fdatasyncs:
// a batch is visible entirely or not at all.  On open the log is replayed; a torn record
// at the tail (a crash mid-append) is ignored and cut off by the next writer; a bad record
// followed by more data is corruption and fails the open with a message naming the file.
// When the log grows past twice the live data, the writer rewrites it (temp + rename).
// One writer at a time per directory (flock on `catalog.lock`); readers need no lock and
// call reload() to see newer commits.  Thread-safe (one mutex): engine arrays keep their
// schema and inline fragments here too (container.h).  Byte layout: docs/format.md.
//
// Shadow mode (MPI ranks other than 0 of a parallel file): the log is read once at open,
// no lock is taken and nothing is ever written; commit() applies a batch in memory only
// and sync() does nothing.  Every rank runs the same metadata calls, so a shadow holds
// the same map as the writer on rank 0, which alone persists it.
#pragma once
#include <cstdint>
#include <cstring>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/util/file_io.h"
#include "engine/catalog/pending_names.h"

namespace tessera {

class CatalogBatch {
 public:
  // A batch holds a few ops (an object's records and its link): room for eight at the
  // first, not a reallocation that moves every op at each doubling.
  void put(std::string key, std::string value) {
    if (ops_.empty()) ops_.reserve(8);
    ops_.push_back({true, std::move(key), std::move(value)});
  }
  void del(std::string key) {
    if (ops_.empty()) ops_.reserve(8);
    ops_.push_back({false, std::move(key), {}});
  }
  bool empty() const { return ops_.empty(); }
  struct Op {
    bool put;
    std::string key, value;
  };
  const std::vector<Op>& ops() const { return ops_; }

 private:
  friend class Catalog;  // commit(CatalogBatch&&) empties it
  std::vector<Op> ops_;
};

class Catalog {
 public:
  enum class Mode { kReadOnly, kReadWrite, kShadow };
  // Throws: kNotFound if missing and !create, kBusy if another writer holds the lock,
  // kCorrupt for a damaged log.
  // env: every file-system call of the catalog (the container's Context's).
  static std::unique_ptr<Catalog> open(const std::string& dir, Mode mode, bool create, Env& env = Env::posix());
  // The catalog as it was right after the commit that put `kCommitKey` = `commit`
  // (history.h): replayed from the archived logs (catalog.history/, kept by compaction)
  // and the live log.  Read-only and frozen (reload() does nothing).  Throws kNotFound
  // when no log holds that commit (its history was removed).
  static std::unique_ptr<Catalog> open_as_of(const std::string& dir, uint64_t commit, Env& env = Env::posix());
  static constexpr const char* kCommitKey = "sys/commit";
  // The last committed MPI epoch (docs/parallel.md): per-rank publish journals up to it
  // roll forward at recovery, later ones back.  Arrays read it from their catalog.
  static constexpr const char* kEpochKey = "sys/epoch";
  static constexpr const char* kHistoryDir = "catalog.history";
  ~Catalog();

  std::optional<std::string> get(std::string_view key) const;
  // Without copies: fn(value) for the key's value, under the catalog's lock (fn must not
  // call the catalog; the view is valid during the call).  False when the key is absent.
  // The connector decodes its records straight from the map this way: copying each value
  // out first was a large part of the string copies of reopening 10,000 datasets (issue 20).
  template <class F>
  bool read(std::string_view key, F&& fn) const {
    std::lock_guard<std::mutex> g(mu_);
    auto it = seek(key);
    if (it == kv_.end() || it->first.view() != key || it->second.dead) return false;
    fn(std::string_view(it->second.value));
    return true;
  }
  // Without copies: fn(key, value) for every pair whose key starts with prefix, in key
  // order, under the catalog's lock (as read()).
  template <class F>
  void scan_each(std::string_view prefix, F&& fn) const {
    std::lock_guard<std::mutex> g(mu_);
    for (auto it = kv_.lower_bound(prefix); it != kv_.end(); ++it) {
      const std::string_view k = it->first.view();
      if (k.compare(0, prefix.size(), prefix) != 0) break;
      if (!it->second.dead) fn(k, std::string_view(it->second.value));
    }
  }
  bool contains(std::string_view key) const;
  // All pairs whose key starts with prefix, sorted by key.
  std::vector<std::pair<std::string, std::string>> scan(std::string_view prefix) const;
  // Total size of the values whose key starts with prefix (no copies).
  uint64_t value_bytes(std::string_view prefix) const;
  // Number of keys starting with prefix, counting stops at `limit` (a bounded check such
  // as "fewer than 6 links?" costs 6 steps in a group of a million).
  uint64_t count(std::string_view prefix, uint64_t limit) const;
  // When commits become durable.  kEachCommit: commit() appends and fdatasyncs.
  // kOnSync (HDF5's rule: metadata is durable after a flush or close): commit() applies
  // the batch in memory; sync() appends ONE record with the net effect of every commit
  // since the last sync (one fdatasync; written through a bounded buffer, see
  // kChunkBytes).  A crash loses those commits whole — the log still holds a prefix of
  // the commits, each batch entire or absent.  Pending commits are synced by themselves
  // past 64 MiB, and by the destructor.  A sync that fails leaves them pending (the next
  // sync writes them again).
  enum class Durability { kEachCommit, kOnSync };
  void set_durability(Durability d) { durability_ = d; }
  // Atomic; durable now (kEachCommit) or at the next sync(); throws kInvalidArgument on
  // a read-only catalog.  A commit that throws changed nothing (kEachCommit: the record
  // is written and synced before the batch is applied); one that returns is applied, even
  // when kOnSync's early write of the pending commits failed (the next sync() reports that).
  void commit(const CatalogBatch& batch);
  void commit(CatalogBatch&& batch);  // same, and the batch is left empty
  // The same for housekeeping that changes no content the container shows (automatic
  // consolidation's merges and retirements): durable as any commit, but has_pending()
  // does not count it, so a flush that brings nothing else records no commit (history.h).
  void commit_maintenance(CatalogBatch&& batch) {
    std::lock_guard<std::mutex> g(mu_);
    commit_impl(batch, /*maintenance=*/true);
    batch.ops_.clear();
  }
  // Commits are numbered as they are made (from 1); whether every commit up to `ticket`
  // is durable (kEachCommit: once it returned; kOnSync: after the next sync).  A caller
  // that may remove a file only once a commit dropping its record is durable asks this.
  uint64_t last_ticket() const {
    std::lock_guard<std::mutex> g(mu_);
    return tickets_;
  }
  bool durable(uint64_t ticket) const {
    std::lock_guard<std::mutex> g(mu_);
    return ticket <= durable_ticket_;
  }
  void sync();
  // Re-reads the log to pick up commits made by another process.
  void reload();
  bool writable() const { return mode_ != Mode::kReadOnly; }
  // Commits applied in memory that are not durable yet (kOnSync: until the next sync),
  // housekeeping (commit_maintenance) aside.
  bool has_pending() const;
  // Removes the archived logs (`tessera vacuum --history`); returns how many bytes.
  uint64_t drop_history();
  // Changes whenever the map does (a commit, a reload): callers may cache what they
  // decoded from a record as long as the version stays the same.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  bool shadow() const { return mode_ == Mode::kShadow; }
  const std::string& log_path() const { return log_path_; }
  // Names (and header files) not durable yet that a record may depend on: synced before
  // the next record is appended, or taken by a caller whose syncfs covers them.
  PendingNames& pending_names() { return *pending_; }
  // The most a record write buffers (and so the largest single write to the log): a
  // larger record, such as a sync's net record of thousands of objects or a compacted
  // log, is written through this much memory a chunk at a time (catalog.cc).
  static constexpr size_t kChunkBytes = size_t{1} << 20;
  // True when dir's catalog log is missing or holds no record (at most its header):
  // nothing was ever committed there.  Does not lock or replay.
  static bool holds_no_record(Env& env, const std::string& dir);

 private:
  Catalog() = default;
  void replay();
  // Applies every intact record of buf[0, n) (file offset `base`, of file `path`) in
  // order: `apply(ops, end)` per record, `end` its end offset in the file; stops early
  // when apply returns false.  A torn tail ends the parse (when `tail_ok`), anything else
  // bad is corruption.  Returns the offset after the last record applied.
  struct OpView;
  static uint64_t parse_records(const uint8_t* buf, uint64_t n, uint64_t base, const std::string& path,
                                bool tail_ok, const std::function<bool(const std::vector<OpView>&, uint64_t)>& apply);
  void archive_log();
  void apply(const CatalogBatch& batch);  // updates kv_, live_bytes_ and dirty_
  // kOnSync writers flag what they change (dirty_) and keep deletions as tombstones.
  bool tracking() const { return durability_ == Durability::kOnSync && mode_ == Mode::kReadWrite; }
  struct OpView {
    bool put;
    std::string_view key, value;
  };
  bool frozen_ = false;  // open_as_of: a fixed past state
  void commit_impl(const CatalogBatch& batch, bool maintenance = false);
  void maybe_compact();
  void sync_locked();
  // Writing records.  A record's bytes go through one buffer of at most kChunkBytes,
  // kept for the catalog's lifetime: a record that fits is framed there and written with
  // one pwrite; a larger one (a sync's net record of 10,000 datasets is ~18 MB, a
  // compacted log all live pairs) is written a chunk at a time after its header's place,
  // its checksum computed chunk by chunk, and its header last (write_record, catalog.cc).
  std::unique_ptr<uint8_t[]> chunk_;
  size_t chunk_cap_ = 0;
  uint8_t* chunk(uint64_t want);  // chunk_, grown to min(want, kChunkBytes) if smaller
  // Writes one record of `nops` ops, `len` payload bytes (for_each(emit) calls
  // emit(put, key, value) per op) to f at `at`; returns the offset after it.  No sync.
  template <class ForEach>
  uint64_t write_record(File& f, uint64_t at, uint32_t nops, uint64_t len, ForEach for_each);
  // Appends to the log: write(log_end_) writes records and returns their end; then
  // fdatasync.  On failure the file is cut back to log_end_ (best effort) and the error
  // propagates with nothing in memory changed.
  template <class Write>
  void append(Write write);
  // kOnSync: the net record of the dirty entries (write_dirty), and once it is durable,
  // the entries made clean and the tombstones erased (settle_dirty).
  uint64_t write_dirty(uint64_t at);
  void settle_dirty();
  // A failed append could not cut the file back: bytes may lie past log_end_, and the
  // next append cuts the file at its own end.
  bool tail_unknown_ = false;

  mutable std::mutex mu_;
  Mode mode_ = Mode::kReadOnly;
  Env* env_ = &Env::posix();
  std::string dir_, log_path_;
  FileLock lock_;
  File log_;
  uint64_t log_end_ = 0;     // offset after the last good record
  // A compaction renamed its new log into place but the directory's fsync failed: the
  // name is not durable, so a power loss could bring the old log back and lose every
  // commit appended since.  The next write syncs the directory first.
  bool name_unsynced_ = false;
  std::unique_ptr<PendingNames> pending_ = std::make_unique<PendingNames>();
  uint64_t live_bytes_ = 0;  // approximate size of the live key/values
  Durability durability_ = Durability::kEachCommit;

  // The map lives in a pool: tens of thousands of small records (10,000 datasets are
  // ~70,000 keys and values) are allocated from a few large chunks and released with
  // them, instead of one malloc and free per string.
  struct Entry {
    using allocator_type = std::pmr::polymorphic_allocator<char>;
    std::pmr::string value;
    bool dirty = false;  // kOnSync: committed since the last sync
    bool dead = false;   // kOnSync: deleted since the last sync (a tombstone until then)
    explicit Entry(const allocator_type& a) : value(a) {}
    Entry(std::string_view v, const allocator_type& a) : value(v, a) {}
    Entry(const Entry& o, const allocator_type& a) : value(o.value, a), dirty(o.dirty), dead(o.dead) {}
    Entry(Entry&& o, const allocator_type& a) : value(std::move(o.value), a), dirty(o.dirty), dead(o.dead) {}
  };
  // Any string type, compared as unsigned bytes (std::string_view's order, which the
  // log and docs/format.md rely on).  Eight bytes at a time, inline: the connector's keys
  // share long prefixes ("a/" + 16 hex digits of an owner id, mostly zeros), and calling
  // memcmp at every level of the tree walk was 7-9 % of a metadata workload (issue 20).
  struct KeyLess {
    using is_transparent = void;
    bool operator()(std::string_view a, std::string_view b) const { return key_compare(a, b) < 0; }
  };
  static int key_compare(std::string_view a, std::string_view b) {
    const size_t n = a.size() < b.size() ? a.size() : b.size();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t x, y;
      std::memcpy(&x, a.data() + i, 8);
      std::memcpy(&y, b.data() + i, 8);
      if (x != y) return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : 1;  // first byte most significant
    }
    for (; i < n; ++i) {
      const auto x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
      if (x != y) return x < y ? -1 : 1;
    }
    return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
  }
  // A map key with its bytes inside the map node when they fit (36 bytes: every key the
  // connector builds for ids, "a/" + 16 hex digits + "/" + a name of up to 17 bytes): the
  // tree walk then reads one node per level instead of a node and, elsewhere in the pool,
  // its key (std::pmr::string keeps 15 bytes inline; the connector's keys are 18-30).
  // Longer keys live in the pool.  Keys in a map node never change.
  class Key {
   public:
    using allocator_type = std::pmr::polymorphic_allocator<char>;
    static constexpr uint32_t kInline = 36;
    Key(std::string_view s, const allocator_type& a) : mr_(a.resource()), size_(static_cast<uint32_t>(s.size())) {
      char* d = in_;
      if (size_ > kInline) d = heap_ = static_cast<char*>(mr_->allocate(size_, 1));
      if (size_) std::memcpy(d, s.data(), size_);
    }
    Key(const Key& o, const allocator_type& a) : Key(o.view(), a) {}
    Key(const Key& o) : Key(o.view(), allocator_type(o.mr_)) {}
    Key& operator=(const Key&) = delete;
    ~Key() {
      if (size_ > kInline) mr_->deallocate(heap_, size_, 1);
    }
    const char* data() const { return size_ > kInline ? heap_ : in_; }
    size_t size() const { return size_; }
    std::string_view view() const { return {data(), size_}; }
    operator std::string_view() const { return view(); }

   private:
    std::pmr::memory_resource* mr_;
    uint32_t size_;
    union {
      char in_[kInline];
      char* heap_;
    };
  };
  using Map = std::pmr::map<Key, Entry, KeyLess>;
  std::pmr::unsynchronized_pool_resource pool_;  // before kv_: outlives it
  // The map is never destroyed: the pool's destructor releases its memory in a few large
  // chunks, where destroying the map would return each of ~100,000 nodes and strings to
  // the pool first (a sixth of closing a file of 10,000 datasets).  Its elements own
  // nothing outside the pool.
  alignas(Map) unsigned char kv_mem_[sizeof(Map)];
  Map& kv_ = *new (kv_mem_) Map(&pool_);
  // kOnSync: the entries committed since the last sync, each once (flagged dirty); they
  // are written as one net record at sync.  Deleted entries stay as tombstones until that
  // record is durable (a failed sync keeps them all), so these iterators stay valid.
  std::vector<Map::iterator> dirty_;
  // Applies one op; returns its entry (end() when it erased or skipped it).
  Map::iterator apply_one(bool put, std::string_view key, std::string_view value, bool track);
  // Where a key goes without a tree walk, most of the time (issue 20).  The connector's
  // keys come in a few kinds ("o/", "a/", "arr/", "l/": told apart by their first two
  // bytes), and within a kind a run of creations adds keys in rising order, a few at a
  // time: "a/<oid>/units", "a/<oid>/scale", "a/<oid>/index" for one object, then the next
  // object's.  A sync's net record lists keys in that order and a compacted log in key
  // order, so a replay, and the commits themselves, find most keys next to the last or
  // the greatest key written of their kind.  Each slot keeps those two entries; seek()
  // checks the key against them and their neighbours (two or three comparisons) before
  // it falls back to lower_bound().  Only hints; an erase drops them all (iterators).
  struct Hint {
    Map::iterator last, max;
    bool set = false;
  };
  static constexpr size_t kHintSlots = 16;
  Hint hints_[kHintSlots];
  static size_t hint_slot(std::string_view k) {
    const unsigned a = k.size() > 0 ? static_cast<unsigned char>(k[0]) : 0;
    const unsigned b = k.size() > 1 ? static_cast<unsigned char>(k[1]) : 0;
    return (a * 31 + b) % kHintSlots;
  }
  // The first entry not below key: lower_bound(key), found through the hints if they can.
  Map::iterator seek(std::string_view key) const;
  void note_hint(Map::iterator it);
  void drop_hints() {
    for (Hint& h : hints_) h.set = false;
  }
  uint64_t dirty_bytes_ = 0;
  // Tickets: commits made, the last one known durable; a commit other than housekeeping
  // is pending (has_pending).
  uint64_t tickets_ = 0, durable_ticket_ = 0;
  bool content_pending_ = false;
  std::atomic<uint64_t> version_{0};
};

}  // namespace tessera
