// pending_names.h — names a writer made without syncing them, made durable together just
// before the first catalog record that may depend on them.
//
// Creating a container (its directory, header file, arrays/ and catalog log) or a new
// array's directory changes names that a power loss may undo until their directories are
// fsync'ed.  Syncing each at once cost H5Fcreate four or five fsyncs before anything was
// committed (issue 20).  Nothing is committed before the catalog's first record, so the
// syncs are owed only then: the catalog runs sync() before it appends (catalog.h), and a
// syncfs(2) over the file system (Container::sync) covers everything pending when it starts.
// A power loss before that record loses only what was never committed.
#pragma once
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/util/env.h"

namespace tessera {

class PendingNames {
 public:
  struct Taken {
    std::vector<std::string> files;
    std::set<std::string> dirs;
  };
  // A small file whose bytes are not synced (a container header): fdatasync'ed first.
  void add_file(const std::string& path);
  // A directory whose entries changed: fsync'ed.
  void add_dir(const std::string& dir);
  size_t size() const;
  // fdatasyncs the files, then fsyncs the directories.  On failure what is left stays
  // pending (the caller's next write tries again); throws the first error.
  void sync(Env& env);
  // A caller covering the pending names by a syncfs copies them first and, once the
  // syncfs returned, forgets those: what is added meanwhile stays pending, and until
  // then a concurrent catalog write still syncs them itself.
  Taken snapshot() const;
  void forget(const Taken& t);

 private:
  mutable std::mutex mu_;
  Taken p_;
};

}  // namespace tessera
