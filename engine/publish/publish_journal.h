// publish_journal.h — the redo journal that makes publishing a batch of fragments atomic
// (docs/format.md, "Publish journal" and "Epoch journals").  A batch is staged as one
// journal — each fragment's temporary and final path, and the schema the batch ends with
// when it changes the extent — synced before the first rename; whoever opens the array
// next finishes the renames from it.  A serial journal (version 1) always rolls forward;
// an epoch journal (version 2, MPI) only when its epoch was committed.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/util/env.h"

namespace tessera {

struct PublishJournal {
  uint64_t epoch = 0;  // 0: a serial journal (version 1); else the epoch (version 2)
  std::vector<std::pair<std::string, std::string>> moves;  // (temporary path, final path)
  std::vector<uint8_t> schema;  // the schema file the batch ends with; empty: no extent change

  std::vector<uint8_t> encode() const;
  // Throws Error(kCorrupt) naming `what` for anything but a whole, well-formed journal
  // (bad magic, unknown version, checksum mismatch, truncation, trailing bytes).
  static PublishJournal decode(const std::vector<uint8_t>& bytes, const std::string& what);
  static PublishJournal read(Env& env, const std::string& path);
  // What a crash leaves of a journal that was never durable (the syncfs route writes it
  // unsynced and syncs it before the first rename): no bytes, or only zero bytes.  Such a
  // journal proves no rename began; any other damage may hide a half-published batch.
  static bool torn(const std::vector<uint8_t>& bytes);
  // Written atomically (temporary file, rename); durable: synced with its directory.
  void write(Env& env, const std::string& path, bool durable) const;
  // Whether recovery rolls the batch forward, given the last committed epoch.
  bool forward(uint64_t committed_epoch) const { return epoch == 0 || epoch <= committed_epoch; }
  // Recovery's file side, for fragments in `frag_dir` (moves naming any other directory
  // are ignored: a journal never makes a fragment leave its array).  Forward: a writer
  // finishes the renames still to do; a reader gets the temporary fragments to read the
  // batch whole through (*read_through).  Back (an epoch that never committed): a writer
  // removes the temporary fragments — they never existed.
  void roll(Env& env, const std::string& frag_dir, bool forward, bool writable, std::vector<std::string>* read_through) const;
};

}  // namespace tessera
