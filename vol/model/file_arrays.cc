// file_arrays.cc — a file's engine arrays: the registry of open arrays, their options,
// extents, and committing them (flush, epochs under MPI) (file_arrays.h).
#include "vol/model/file_arrays.h"

#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/container/commit.h"
#include "vol/base/error.h"
#include "vol/model/object_model.h"
#include "vol/model/parallel.h"
#include "vol/model/value_filters.h"

namespace tessera_vol {

// ---------------------------------------------------------------- arrays

std::shared_ptr<tessera::Array> FileArrays::array(uint64_t array_id) {
  auto it = arrays_.find(array_id);
  if (it != arrays_.end()) return it->second;
  std::unique_ptr<tessera::Array> a;
  tessera::ArrayOptions opts = array_options();
  if (f_.par_.comm) {
    // Each rank writes fragments named by its rank.  Not collective: recovery was done
    // at file open (recover_arrays), so a rank may open a dataset the others never open
    // (h5py's `if rank == 0: print(f["x"][...])`).
    opts.writer_rank = static_cast<uint32_t>(f_.par_.comm->rank());
    opts.collective = true;
    // Small writes are shown to the other ranks through share logs (engine/publish/share_log.h;
    // docs/parallel.md "Visibility").  A job of one rank shares nothing (dataset.cc).
    opts.share_ranks = static_cast<uint32_t>(f_.par_.comm->size());
  }
  check(f_.container_->open_array(array_id, f_.writable(), opts, &a));
  std::shared_ptr<tessera::Array> sp(std::move(a));
  arrays_[array_id] = sp;
  return sp;
}

std::shared_ptr<tessera::Array> FileArrays::open_array(uint64_t array_id) {
  bool cached = arrays_.count(array_id) != 0;
  auto a = array(array_id);
  // A freshly opened array listed its directory just now; a cached one may miss what
  // other ranks published since (rank-local, at their H5Dclose).
  if (f_.par_.comm && cached) check(a->refresh_fragments());
  return a;
}

void FileArrays::release_array(uint64_t array_id, const std::shared_ptr<tessera::Array>& held) {
  if (f_.par_.comm || !held->schema().compact) return;
  auto it = arrays_.find(array_id);
  // Held by the registry and by the closing handle only: no other handle uses it.
  if (it == arrays_.end() || it->second != held || held.use_count() != 2) return;
  if (f_.writable()) {
    // Into the catalog without a sync (synced = true: the flush syncs the catalog).  A
    // failure keeps the array registered: the flush publishes it and reports the error.
    const uint64_t before = f_.container_->catalog().version();
    if (!held->publish_prepared(/*synced=*/true, nullptr).ok()) return;
    if (f_.container_->catalog().version() != before) f_.container_->note_published(array_id);
  }
  arrays_.erase(it);
}

void FileArrays::publish_own(tessera::Array& a) {
  if (!f_.par_.comm || !f_.writable()) return;
  size_t n = 0;
  check(a.publish_own(&n));
  if (n == 0) return;
  for (auto& [id, sp] : arrays_)
    if (sp.get() == &a) f_.par_.own_published[id] += n;
}

tessera::ArrayOptions FileArrays::array_options() {
  if (!array_opts_) {  // the file's options (apply_options), read once per open file
    array_opts_ = f_.options_.array_options();
    array_opts_->durable_writes = false;  // published at flush/close (flush_arrays)
  }
  return *array_opts_;
}

void FileArrays::create_array(const tessera::Schema& schema, uint64_t* id) {
  // Every rank allocates the same id; rank 0 alone creates the directory.
  if (!f_.par_.comm) fail_unsupported("an array created apart from its records in a serial file (create_array_into)");
  f_.par_.comm->agree([&] { check(f_.container_->create_array(schema, id, /*durable=*/false)); });
}

bool FileArrays::create_array_into(const tessera::Schema& schema, tessera::CatalogBatch* b, uint64_t* id) {
  if (f_.par_.comm) {
    create_array(schema, id);
    return false;
  }
  // Opened at once (the dataset's handle needs it) from what was just put.
  std::unique_ptr<tessera::Array> a;
  check(f_.container_->create_and_open_array_into(schema, f_.writable(), array_options(), b, id, &a));
  arrays_[*id] = std::shared_ptr<tessera::Array>(std::move(a));
  return true;
}

void FileArrays::drop_array(uint64_t array_id) {
  arrays_.erase(array_id);
  if (f_.writable()) (void)f_.container_->remove_array(array_id);
}

void FileArrays::abandon_array(uint64_t array_id) {
  arrays_.erase(array_id);
  f_.container_->abandon_array(array_id);
}

void FileArrays::set_extent(tessera::Array& a, const tessera::Coords& extent) {
  if (!f_.par_.comm) {
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
  f_.par_.comm->max(ts);  // the change (and the fill fragment) sorts after every rank's writes
  a.raise_timestamp(ts[0]);
  f_.par_.comm->agree([&] { check(a.set_extent(extent)); });
  if (shrink) commit_epoch();
}

namespace {
// Crash tests (python_tests/test_mpi_kill.py), in test builds only (cmake
// -DTESSERA_KILL_POINTS=ON): TESSERA_TEST_KILL_AT=<step>:<rank>[:<epoch>]
// makes that rank SIGKILL itself at that step of an epoch commit (the steps of
// tessera::CommitOptions::at_step): "staged": its journals are durable but no rank has
// agreed yet, so the epoch can never commit; "committed": the epoch record is durable and
// this rank has renamed nothing.
tessera::CommitOptions commit_options([[maybe_unused]] int rank) {
  tessera::CommitOptions o;
#ifdef TESSERA_KILL_POINTS
  static const char* spec = std::getenv("TESSERA_TEST_KILL_AT");
  if (spec)
    o.at_step = [rank](const char* step, uint64_t epoch) {
      std::string at = std::string(step) + ":" + std::to_string(rank);
      if (spec == at || spec == at + ":" + std::to_string(epoch)) std::raise(SIGKILL);
    };
#endif
  return o;
}

}  // namespace

// The engine commits (engine/container/commit.h): the ranks' agreement comes from
// engine/mpi/ (Parallel::group).
void FileArrays::commit_epoch() {
  tessera::CommitGroup& g = f_.par_.comm->group();
  const uint64_t e = f_.par_.epoch + 1;
  auto alone = std::move(f_.par_.own_published);
  f_.par_.own_published.clear();
  check(tessera::commit_epoch(*f_.container_, g, arrays_, alone, e, {}, commit_options(f_.par_.comm->rank())));
  f_.par_.epoch = e;
}

// HDF5's rule: everything is durable after a flush or close, not before.  The order and
// the syncing are the engine's (engine/container/commit.h).
void FileArrays::flush_arrays() {
  if (!f_.writable()) return;
  flush_value_filters(f_);  // chunks written through value-changing filters
  if (f_.par_.comm) {
    commit_epoch();
    return;
  }
  std::vector<tessera::Array*> list;
  for (auto& [id, a] : arrays_) list.push_back(a.get());
  check(tessera::commit_arrays(*f_.container_, list, commit_options(0)));
}

}  // namespace tessera_vol
