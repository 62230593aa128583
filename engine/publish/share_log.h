// share_log.h — MPI: a writer rank's share log for one array (docs/parallel.md,
// "Visibility"; docs/format.md, "Share logs").
//
// A parallel H5Dwrite must be readable by every other rank once it returns, with no
// communication inside the call.  Ending a fragment file per write (create, write,
// rename) and listing the fragment directory per call cost ~2.4 ms per small write; a
// share log costs two pwrites: the writer appends each small write as the bytes of an
// in-memory fragment to its own log, "frag/.r<rank>.share.tmp", and every other rank
// reads the records appended since it last looked (an fstat, a pread) — and lists the
// directory only when a record tells it to (kList: fragment files were published;
// everything this log showed before is in files now).  Fragment files a rank shares
// (large writes) are named by a kShared record: the others open just those.
//
// A record is a 24-byte header — u64 payload length, u64 XXH3-64 of the payload, u32
// kind, u32 magic — followed by the payload.  The writer writes the payload first and
// the header after it, magic last, so a reader that finds no magic at a record's start
// has caught an append in progress and looks again later; a record with its magic whose
// payload fails its checksum twice (read again: a header crossing a page boundary can be
// read torn while it is written) is damage and an error.  The log is a temporary file (a
// dot, ".tmp"): never committed, removed by its writer when the array closes and by
// crash recovery otherwise.
//
// Bounded (issue 19): once a record has retired everything before it (kList, kShared)
// the writer may restart the log — a new file whose first record is kList is renamed
// over the name, then kClosed is appended to the old one.  A reader that follows the old
// file reads kClosed and reopens the name (as after a closed array): it finds the new
// log.  One that opens the name for the first time gets the new log, whose kList makes
// it list the directory: what the old log showed is in files by then.  The byte format
// is the same; a restart is a kClosed followed by a new log under the name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/util/env.h"
#include "engine/util/file_io.h"

namespace tessera {

enum class ShareRecord : uint32_t {
  kFragment = 1,  // payload: a finished fragment's bytes (what a .tfr file holds)
  kList = 2,      // list the directory; this log's earlier fragments are in files now
  kClosed = 3,    // the writer closed the array: nothing follows (kList's meaning too)
  kShared = 4,    // payload: names of fragment files just shared ('\n' between them);
                  // this log's earlier fragments are in those files or earlier ones
};

// ".r<rank>.share.tmp"
std::string share_log_name(uint32_t rank);

class ShareLogWriter {
 public:
  // Creates the log (truncating a stale one: the writer's own name).
  ShareLogWriter(Env& env, const std::string& path);
  void append(ShareRecord kind, const uint8_t* payload, size_t n);
  // Appends kClosed, closes and removes the log.
  void close_and_remove();
  // Starts a new log under the name (see above).  Only right after a record that retired
  // every earlier one (kList, kShared).
  void restart();
  uint64_t size() const { return off_; }
  const std::string& path() const { return path_; }

 private:
  void append_to(File& f, uint64_t* off, ShareRecord kind, const uint8_t* payload, size_t n);
  std::string path_;
  File f_;
  uint64_t off_ = 0;
};

class ShareLogReader {
 public:
  struct Record {
    ShareRecord kind;
    uint64_t offset;  // of the record's header in the log
    std::vector<uint8_t> payload;
  };
  // The complete records appended since the last call (none while the log does not
  // exist).  After kClosed the log is closed and the path opened afresh (a restarted
  // log, or a new log of a writer that reopened the array) in the same call.
  void poll(Env& env, const std::string& path, std::vector<Record>* out);

 private:
  // One file's new records; true when it ended with kClosed (the name is opened again).
  bool poll_file(Env& env, const std::string& path, std::vector<Record>* out);
  File f_;
  uint64_t off_ = 0;
  // The last log read to its kClosed, held open (so its inode is not reused): a reopen
  // that finds it again (its writer has not removed it yet) reads nothing.
  File closed_;
};

}  // namespace tessera
