// file_arrays.cc — a file's engine arrays: the registry of open arrays, their options,
// extents, and committing them (flush, epochs under MPI).
#include "vol/object_model.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "engine/bytes.h"
#include "vol/catalog_keys.h"
#include "vol/connector_info.h"
#include "vol/error.h"
#include "vol/file_settings.h"
#include "vol/link_storage.h"
#include "vol/objects.h"  // Obj: open handles keep unreferenced objects
#include "vol/parallel.h"
#include "vol/swmr.h"
#include "vol/value_filters.h"

namespace tessera_vol {

// ---------------------------------------------------------------- arrays

std::shared_ptr<tessera::Array> SharedFile::array(uint64_t array_id) {
  auto it = arrays_.find(array_id);
  if (it != arrays_.end()) return it->second;
  std::unique_ptr<tessera::Array> a;
  tessera::ArrayOptions opts = array_options();
  if (par_) {
    // Each rank writes fragments named by its rank.  Not collective: recovery was done
    // at file open (recover_arrays), so a rank may open a dataset the others never open
    // (h5py's `if rank == 0: print(f["x"][...])`).
    opts.writer_rank = static_cast<uint32_t>(par_->rank());
    opts.collective = true;
  }
  check(container_->open_array(array_id, writable(), opts, &a));
  std::shared_ptr<tessera::Array> sp(std::move(a));
  arrays_[array_id] = sp;
  return sp;
}

std::shared_ptr<tessera::Array> SharedFile::open_array(uint64_t array_id) {
  bool cached = arrays_.count(array_id) != 0;
  auto a = array(array_id);
  // A freshly opened array listed its directory just now; a cached one may miss what
  // other ranks published since (rank-local, at their H5Dclose).
  if (par_ && cached) check(a->refresh_fragments());
  return a;
}

void SharedFile::publish_own(tessera::Array& a) {
  if (!par_ || !writable()) return;
  size_t n = 0;
  check(a.publish_own(&n));
  if (n == 0) return;
  for (auto& [id, sp] : arrays_)
    if (sp.get() == &a) own_published_[id] += n;
}

tessera::ArrayOptions SharedFile::array_options() {
  if (!array_opts_) {  // the file's options (apply_options), read once per open file
    array_opts_ = options_.array_options();
    array_opts_->durable_writes = false;  // published at flush/close (flush_arrays)
  }
  return *array_opts_;
}

void SharedFile::create_array(const tessera::Schema& schema, uint64_t* id) {
  // Parallel: every rank allocates the same id; rank 0 alone creates the directory.
  if (par_) {
    par_->agree([&] { check(container_->create_array(schema, id, /*durable=*/false)); });
    return;
  }
  // Serial: opened at once (the dataset's handle needs it) from what was just created.
  std::unique_ptr<tessera::Array> a;
  check(container_->create_and_open_array(schema, /*durable=*/false, writable(), array_options(), id, &a));
  arrays_[*id] = std::shared_ptr<tessera::Array>(std::move(a));
}

void SharedFile::set_extent(tessera::Array& a, const tessera::Coords& extent) {
  if (!par_) {
    check(a.set_extent(extent));
    return;
  }
  // A shrink erases the cut cells with a fill fragment that rank 0 writes from its view
  // of the data, so every rank's data must be published (and seen by rank 0) first, and
  // the fill fragment published right after, before any rank could grow the extent back
  // and read the cut region.  Two epochs; growing needs neither.
  bool shrink = false;
  const tessera::Coords& cur = a.schema().extent;
  for (size_t d = 0; d < extent.size() && d < cur.size(); ++d) shrink |= extent[d] < cur[d];
  if (shrink) commit_epoch();
  std::vector<uint64_t> ts{a.last_timestamp()};
  par_->max(ts);  // the change (and the fill fragment) sorts after every rank's writes
  a.raise_timestamp(ts[0]);
  par_->agree([&] { check(a.set_extent(extent)); });
  if (shrink) commit_epoch();
}

namespace {
// Crash tests (python_tests/test_mpi_kill.py): TESSERA_TEST_KILL_AT=<step>:<rank>[:<epoch>]
// makes that rank SIGKILL itself at that step of an epoch commit.  "staged": its journals
// are durable but no rank has agreed yet, so the epoch can never commit; "committed": the
// epoch record is durable and this rank has renamed nothing.
void test_kill_point(const char* step, int rank, uint64_t epoch) {
  static const char* spec = std::getenv("TESSERA_TEST_KILL_AT");
  if (!spec) return;
  std::string at = std::string(step) + ":" + std::to_string(rank);
  if (spec == at || spec == at + ":" + std::to_string(epoch)) std::raise(SIGKILL);
}
}  // namespace

void SharedFile::commit_epoch() {
  Parallel& p = *par_;
  // Ranks may have opened different datasets: agree on the union of open arrays (sorted
  // ids), and let a rank stand in with zeros for an array it does not have open.
  std::vector<uint64_t> ids;
  for (auto& [id, a] : arrays_) ids.push_back(id);
  ids = p.union_of(ids);
  std::vector<std::shared_ptr<tessera::Array>> list;  // parallel to ids; null: not open here
  for (uint64_t id : ids) {
    auto it = arrays_.find(id);
    list.push_back(it == arrays_.end() ? nullptr : it->second);
  }
  // Syncing.  A rank publishing a few fragments into existing arrays (a point update)
  // fdatasyncs just those files itself, as the serial flush does; a rank with many
  // fragments or new array directories needs one file-system sync after step 1.  The
  // ranks of one node share its page cache, so one syncfs(2) by the node's leader, after
  // every rank of the node finished step 1, covers them all (syncfs also waits for other
  // programs' dirty data: N ranks calling it would pay that N times).  The journals and
  // renames of steps 2 and 4 are a few files per array: each rank syncs them itself
  // (journal fdatasync, directory fsync), so no step after 1 needs a syncfs.
  bool per_file = true;
  // 1. Every rank turns its pending writes into finished fragments under temporary names.
  p.agree([&] {
    size_t pending = 0;
    for (auto& a : list)
      if (a) {
        check(a->prepare_flush());
        pending += a->pending_publish();
      }
    per_file = pending <= 4 && !container_->has_unsynced_arrays();
  });
  const bool node_syncfs = p.node_any(!per_file);  // also the node's barrier before it
  p.agree([&] {
    if (node_syncfs && p.node_leader()) check(container_->sync());
    if (node_syncfs) container_->note_synced();
  });
  // Later writes on any rank sort after everything written before this point.
  std::vector<uint64_t> ts, pub, mine;
  for (size_t i = 0; i < list.size(); ++i) {
    auto& a = list[i];
    ts.push_back(a ? a->last_timestamp() : 0);
    // Fragments a rank published on its own since the last epoch (H5Dclose) count too:
    // ranks that kept the dataset open pick them up below.
    auto own = own_published_.find(ids[i]);
    pub.push_back((a ? a->unpublished_count() : 0) + (own == own_published_.end() ? 0 : own->second));
  }
  own_published_.clear();
  mine = pub;
  p.max(ts);
  p.sum(pub);
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i]) list[i]->raise_timestamp(ts[i]);
  // 2. Every rank stages its batch: a per-rank journal tagged with the epoch, durable
  //    before the agreement (per file: each fragment fdatasync'ed first; else the syncfs
  //    above already made them durable).
  const uint64_t e = epoch_ + 1;
  p.agree([&] {
    for (auto& a : list)
      if (a) check(a->stage_prepared(false, e, /*fragments_synced=*/!per_file));
    test_kill_point("staged", p.rank(), e);  // before the others know: never committed
  });
  // 3. The commit point: rank 0 makes the epoch record durable, with the metadata queued
  //    since the last commit.  Journals of epochs up to it roll forward after a crash,
  //    later ones roll back, so the epoch is all ranks' data or none of it.
  p.agree([&] {
    tessera::CatalogBatch b;
    b.put(tessera::Container::kEpochKey, std::to_string(e));
    commit(b);  // shadows apply it in memory: catalogs stay identical
    if (p.root()) check(tessera::guard([&] { container_->catalog().sync(); }));
  });
  epoch_ = e;
  test_kill_point("committed", p.rank(), e);
  // 4. Renames, each array's directory fsync'ed (rank 0 also writes changed schemas,
  //    durably); agreeing doubles as the barrier before the others look at the directory.
  p.agree([&] {
    for (auto& a : list)
      if (a) check(a->publish_prepared(false));
  });
  // 5. Every rank picks up the fragments the others published.
  if (p.size() > 1)
    p.agree([&] {
      for (size_t i = 0; i < list.size(); ++i)
        if (list[i] && pub[i] > mine[i]) check(list[i]->refresh());
    });
}

void SharedFile::flush_arrays() {
  if (!writable()) return;
  flush_value_filters(*this);  // chunks written through value-changing filters
  if (par_) {
    commit_epoch();
    return;
  }
  // HDF5's rule: everything is durable after a flush or close, not before.  Fragments and
  // new arrays were written unsynced; one syncfs makes them all durable, each array's
  // publish journal is then written and synced, the renames publish the batch (a crash
  // mid-way is finished from the journal on the next open), a last syncfs makes them
  // durable, and only then the catalog — which names the arrays — is synced.
  // Small fragments are inline catalog records: when no array wrote a file, the catalog's
  // one fdatasync is the whole flush (a syncfs would also flush other programs' data).
  bool files = false;
  size_t pending = 0;
  for (auto& [id, a] : arrays_) {
    check(a->prepare_flush());
    files = files || a->has_unsynced_files();
    pending += a->pending_publish();
  }
  // A flush publishing a few fragments into existing arrays (a point update) syncs just
  // those files: each fragment's fdatasync, its directory's fsync (Array's own durable
  // publish) — syncfs would also wait for every other writer's dirty data on the file
  // system.  Many fragments or new array directories: the syncfs batch below is cheaper.
  // Every array's catalog records (inline fragments, schemas) go in one batch; an array
  // failing to publish does not keep the others' records from it.
  tessera::CatalogBatch records;
  auto publish_all = [&](bool synced) {
    tessera::Status first;
    for (auto& [id, a] : arrays_) {
      tessera::Status st = a->publish_prepared(synced, &records);
      if (first.ok() && !st.ok()) first = st;
    }
    if (files && synced) {
      tessera::Status st = container_->sync();
      if (first.ok() && !st.ok()) first = st;
    }
    check(tessera::guard([&] {
      container_->catalog().commit(std::move(records));
      container_->catalog().sync();
    }));
    check(first);
  };
  if (files && pending <= 4 && !container_->has_unsynced_arrays()) {
    for (auto& [id, a] : arrays_) check(a->stage_prepared(false));
    publish_all(false);
    return;
  }
  if (files) check(container_->sync());
  for (auto& [id, a] : arrays_) check(a->stage_prepared(true));
  if (files) check(container_->sync());
  publish_all(true);
}

}  // namespace tessera_vol
