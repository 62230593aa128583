// commit.h — committing a container's arrays: the durable order and the sync policy.
//
// A connector's flush (HDF5: H5Fflush, H5Fclose) hands the engine the arrays it has open;
// one call here makes everything they hold durable and visible, in the one order that a
// crash at any point cannot turn into a torn state:
//
//   1. every array's pending writes become finished fragments under temporary names;
//   2. each array's batch is staged: its fragments synced and, for an array whose
//      catalog records do not name every file (array_store.h, files_complete: arrays of
//      parallel files, standalone arrays), a publish journal, synced;
//   3. the renames put the files in place (a journal's batch is finished from it after a
//      crash);
//   4. the catalog — which names the arrays and holds inline fragments, schemas and the
//      records of the files just renamed — is committed and synced last: for arrays
//      whose records are complete it is the commit point of the whole flush (a crash
//      before it leaves renamed files without records, which are never read).
//
// Syncing is decided here and only here (SyncPolicy): a flush publishing a few fragments
// syncs just those files (fdatasync each, fsync their directories; new directories and a
// new container's names are the catalog's pending names, synced before its record);
// a flush with many fragments uses syncfs(2) — once, after the renames, when no array
// writes a journal, else once per step — since syncfs also waits for every other
// program's dirty data on the file system.
//
// Several writers of one container (MPI ranks) commit an *epoch* instead: each stages a
// journal tagged with the epoch, the epoch record in the catalog is the commit point, and
// recovery rolls journals of committed epochs forward and later ones back — so an epoch
// is every writer's data or none of it (docs/parallel.md).  The epoch record's batch also
// records every file the epoch publishes, every member's (file_records.h): each member
// builds the same batch from what all of them publish, and the root alone writes it.  The agreement between the
// writers comes from a CommitGroup; engine/mpi/ implements it over MPI.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "engine/array/array.h"
#include "engine/catalog/catalog.h"
#include "engine/util/error.h"

namespace tessera {

class Container;

// The few collectives an epoch commit needs from a group of writers.  agree() runs f on
// every member and, if it threw on any member, throws tessera::Error on every member.
class CommitGroup {
 public:
  virtual ~CommitGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool root() const { return rank() == 0; }
  virtual void agree(const std::function<void()>& f) = 0;
  // Element-wise maximum / sum over all members, in place.
  virtual void max(std::vector<uint64_t>& v) = 0;
  virtual void sum(std::vector<uint64_t>& v) = 0;
  // The sorted union of every member's values.
  virtual std::vector<uint64_t> union_of(const std::vector<uint64_t>& mine) = 0;
  // Every member's values, concatenated in rank order (the same on every member).
  virtual std::vector<uint64_t> gather(const std::vector<uint64_t>& mine) = 0;
  // Members on one node share its page cache: one syncfs by the node's leader covers
  // them all.  node_any is a barrier among the node's members and tells whether any of
  // them passed true.
  virtual bool node_leader() const = 0;
  virtual bool node_any(bool mine) = 0;
};

// A group of one (a single writer committing epochs, e.g. the engine's tests).
class SoloGroup final : public CommitGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void agree(const std::function<void()>& f) override { f(); }
  void max(std::vector<uint64_t>&) override {}
  void sum(std::vector<uint64_t>&) override {}
  std::vector<uint64_t> union_of(const std::vector<uint64_t>& mine) override { return mine; }
  std::vector<uint64_t> gather(const std::vector<uint64_t>& mine) override { return mine; }
  bool node_leader() const override { return true; }
  bool node_any(bool mine) override { return mine; }
};

// How a commit makes its files durable.
struct SyncPolicy {
  // A commit publishing at most this many fragments (and extent changes) into arrays
  // whose directories are already durable syncs those files one by one; more take the
  // syncfs route.  4: measured where one syncfs began to beat the fdatasyncs on ext4.
  size_t per_file_max = 4;
  bool per_file(size_t pending, bool new_dirs) const { return pending <= per_file_max && !new_dirs; }
};

struct CommitOptions {
  SyncPolicy sync;
  // Called at each step of a commit (crash tests stop the process there):
  //   serial: "prepared" (fragments written, nothing staged), "staged" (every journal
  //           durable, nothing renamed), "published" (renamed, catalog not yet synced),
  //           "committed" (catalog synced; a parallel file's arrays that commit first,
  //           Array::record_staged, not renamed yet);
  //   epoch:  "staged" (this member's journal durable, before the agreement),
  //           "committed" (the epoch record durable, nothing renamed by this member).
  std::function<void(const char* step, uint64_t epoch)> at_step;
};

// Commits every array's pending writes and extent changes (a serial flush).  The arrays
// are the container's open, writable arrays (nulls are skipped).  Everything is
// published: an array that fails to publish does not keep the others' catalog records
// from the batch; the first failure is returned.
Status commit_arrays(Container& c, const std::vector<Array*>& arrays, const CommitOptions& o = {});

// One member's part of an epoch commit (the arrays were opened collective; see
// ArrayOptions).  open: the arrays this member has open, by id — members may have opened
// different ones; published_alone: fragments this member published on its own since the
// last epoch (Array::publish_own), by array id, so members holding those arrays open pick
// them up.  metadata: catalog changes that become durable with the epoch record (a
// shadow member applies them to its view only).  epoch: the container's last + 1.
Status commit_epoch(Container& c, CommitGroup& g, const std::map<uint64_t, std::shared_ptr<Array>>& open,
                    const std::map<uint64_t, uint64_t>& published_alone, uint64_t epoch,
                    CatalogBatch metadata = {}, const CommitOptions& o = {});

// Publishes, as one epoch, batches every member has already prepared (e.g.
// Array::consolidate_part: each member's merged part of the same arrays), so a crash
// leaves the old fragments or every part.  Each member syncs its whole file system
// (syncfs) after its fragments, after its journals (tagged with the container's last
// epoch + 1) and after its renames; the root alone writes the epoch record, with the
// records of every member's files.  The arrays, by id, are the same on every member
// (opened collective, see ArrayOptions).  A failure on any member fails it on every member.
Status commit_prepared_epoch(Container& c, CommitGroup& g, const std::vector<std::pair<uint64_t, Array*>>& arrays);

}  // namespace tessera
