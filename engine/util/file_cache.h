// file_cache.h — the process's bound on open descriptors (LevelDB's table cache).
//
// Every fragment, heap and index file the engine reads is a CachedFile: its descriptor
// stays open while the process has room for it and is closed, least recently used
// first, when the cache needs room; the next read opens the file again, through the same
// Env and by the same path, and checks that it is the same file (device and inode).  A
// read pins the descriptor while it runs, so a descriptor is never closed under a read.
// Without the bound, every open array kept every fragment file open, and a container of
// a few thousand fragments (an append+flush loop) exhausted `ulimit -n` (issue 43).
//
// The bound: max_open_files (options.h), by default half of the soft RLIMIT_NOFILE (at
// least 16, at most 4096), for the whole process — every container, every array.  What
// is left is for the descriptors the cache does not hold (each open container's catalog,
// a writer's lock, files being written) and the application's own.  When the process
// hits its limit anyway, an open that fails with EMFILE makes the cache close half of
// its descriptors (and stay that small) and is tried again; when nothing is left to
// close, the error says so in words (never a bare "errno 24").
//
// Removal (remove_file, file_io.h, asks the cache): a file this process removes — a
// consolidation's inputs, a vacuum — while a CachedFile of it lives must stay readable
// through it, and its descriptor may be closed.  So such a file is renamed instead, to a
// hidden temporary name in its directory (".<name>.removed.<pid>.<n>.tmp": no listing
// takes it for a fragment, and the sole writer's crash recovery removes it as every
// ".tmp"), its CachedFiles reopen it by that name, and the last of them unlinks it.  Its
// old name is gone at once, as after an unlink: other readers list the directory as
// before, and no descriptor beyond the bound is held for it.  Another process's removal
// cannot be seen: a reopen that finds the file gone throws FileGone, and a reader lists
// its array again (Array::read: the replacement holds the same cells).
#pragma once
#include <sys/uio.h>

#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "engine/util/error.h"
#include "engine/util/file_io.h"

namespace tessera {

class CachedFile;

// A reopen found the file gone: another process removed it after the cache closed its
// descriptor (kNotFound).  A reader lists its array again (Array::read).
class FileGone : public Error {
 public:
  using Error::Error;
};

class FileCache {
 public:
  // The process's cache (never destroyed: fragments may be dropped while static
  // destructors run).
  static FileCache& process();

  // The most descriptors held open at once; 0: auto_capacity().  Also forgets an earlier
  // shrink after EMFILE.  Descriptors over a smaller new bound are closed now (unless in use).
  void set_capacity(size_t n);
  size_t capacity() const;
  // Half of the soft RLIMIT_NOFILE, at least 16, at most 4096.
  static size_t auto_capacity();

  struct Stats {
    size_t open = 0;        // descriptors open now (in use, idle, or kept for a removed file)
    size_t files = 0;       // CachedFiles alive
    size_t peak_open = 0;   // since the last reset_peak()
    uint64_t reopens = 0;   // opens of a file whose descriptor the cache had closed
    uint64_t evictions = 0;
    uint64_t deferred_unlinks = 0;  // removals renamed away until their last CachedFile went
  };
  Stats stats() const;
  void reset_peak();

  // Closes idle descriptors until at most `keep` are open; how many it closed.
  size_t shed(size_t keep);
  // After an open failed with EMFILE or ENFILE (any open: file_io.cc's too): closes half
  // of the idle descriptors and keeps the cache that small; false when none was idle.
  bool relieve();
  // The error for an open that failed with EMFILE/ENFILE after relieve(): what the limit
  // is, what the cache holds, what to do.
  [[noreturn]] void throw_too_many(const std::string& path, int err) const;

  // unlink(path) through env, or the rename that defers it while a CachedFile of the file
  // lives (see the top): 0, or -1 with errno as unlink.
  int remove(Env& env, const std::string& path);
  // Whether a directory entry is such a renamed-away file (remove_tree leaves its
  // directory to a vacuum rather than fail).
  static bool hidden_name(const std::string& name);

 private:
  friend class CachedFile;
  FileCache() = default;
  void in_forked_child();  // pthread_atfork's child handler (the mutex held)
  size_t limit_locked() const;
  // Closes idle descriptors, least recently used first, until at most `keep` are open.
  size_t evict_locked(size_t keep);
  void touch_locked(CachedFile* f);
  // Opens f's file for a read (f has no descriptor): the slot is taken first, so that
  // concurrent opens never pass the bound together.  Returns with the lock held.
  void open_for(CachedFile* f, std::unique_lock<std::mutex>& lk, bool first);

  mutable std::mutex mu_;
  std::condition_variable opened_;  // a reopen finished (others waited for it)
  size_t capacity_ = 0;             // 0: auto (set_capacity)
  // auto_capacity() as of the last open (a read does not ask the kernel each time; a
  // process that changes its limit gets the new bound at its next open).
  mutable size_t auto_cap_ = 0;
  size_t pressure_cap_ = SIZE_MAX;  // after EMFILE: what relieve() left
  size_t open_ = 0;                 // descriptors open, plus slots taken for opens under way
  std::list<CachedFile*> lru_;      // idle-able descriptors, most recent first
  // Every CachedFile by its file's name (its last path component): a removal finds the
  // CachedFiles of a path spelt differently (another container object, a relative path).
  std::unordered_multimap<std::string, CachedFile*> by_name_;
  // Files renamed away by remove(): by identity, their hidden name, which their last
  // CachedFile unlinks.
  std::unordered_map<uint64_t, std::string> deferred_;
  Stats stats_;
};

// A read-only file opened through the cache.  Reads throw as File's do (kCorrupt past the
// end, the path and errno otherwise); a reopen that finds the file gone or replaced by
// another is an error naming that.
class CachedFile {
 public:
  // Opens path now (an error for a missing file, as File::open_read).
  static std::unique_ptr<CachedFile> open(Env& env, const std::string& path);
  ~CachedFile();
  CachedFile(const CachedFile&) = delete;
  CachedFile& operator=(const CachedFile&) = delete;

  std::string path() const;
  // The file was renamed (a deferred publish): reopens use the new name.
  void set_path(const std::string& p);
  Env& env() const { return env_; }
  uint64_t size() const { return size_; }  // at open: the files cached never change size
  // Device and inode mixed into 64 bits (never 0).
  uint64_t identity() const { return identity_; }

  void pread_exact(void* buf, size_t n, uint64_t off) const;
  size_t pread_some(void* buf, size_t n, uint64_t off) const;
  void preadv_exact(struct iovec* iov, int cnt, uint64_t off) const;
  void will_need(uint64_t off, uint64_t n) const;
  bool resident(uint64_t off, uint64_t n) const;
  // fdatasync: an unpublished fragment written through another descriptor, before its
  // publish (Linux reports a writeback error to every descriptor opened before it was seen).
  void sync();
  // Whether the descriptor is open now (tests).
  bool is_open() const;

 private:
  friend class FileCache;
  CachedFile(Env& env, std::string path) : env_(env), path_(std::move(path)) {}
  // The open File while a read runs: pinned, never closed under it.
  class Pin {
   public:
    explicit Pin(const CachedFile& f);
    ~Pin();
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    File& file() const { return f_.file_; }

   private:
    CachedFile& f_;
  };
  static std::string name_of(const std::string& path);
  void rename_locked(const std::string& p);  // the cache's mutex held
  void keep_locked();                        // never evicted from now on (mutex held)

  Env& env_;
  // All below guarded by the cache's mutex (file_ also readable by a holder of a Pin).
  std::string path_;
  File file_;
  uint64_t size_ = 0, identity_ = 0;
  size_t pins_ = 0;
  bool opening_ = false;    // a reopen is under way (others wait for it)
  bool keep_open_ = false;  // its name was unlinked while it was open: never evicted
  bool in_lru_ = false;
  std::list<CachedFile*>::iterator lru_it_;
};

}  // namespace tessera
