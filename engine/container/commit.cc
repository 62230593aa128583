// commit.cc — the durable order of a commit and its sync policy (commit.h).
#include "engine/container/commit.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "engine/container/container.h"
#include "engine/catalog/file_records.h"
#include "engine/catalog/history.h"

namespace tessera {

namespace {

void ok(const Status& st) {
  if (!st.ok()) throw_error(st.code(), st.message());
}

void step(const CommitOptions& o, const char* name, uint64_t epoch) {
  if (o.at_step) o.at_step(name, epoch);
}

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// Ops of the batch whose key holds `part` (inline fragments: "/frag/").
size_t count_records(const CatalogBatch& b, const char* part) {
  size_t n = 0;
  for (auto& op : b.ops()) n += op.put && op.key.find(part) != std::string::npos;
  return n;
}

// Arrays the commit publishes something of: their records ("arr/<id>/..."), those
// whose records were committed before it (Container::note_published), and those with
// files or extent changes pending.
uint32_t count_arrays(const CatalogBatch& b, const std::set<const Array*>& pending, const std::set<uint64_t>& early) {
  std::set<std::string> ids;
  for (auto& op : b.ops())
    if (op.key.compare(0, 4, "arr/") == 0) ids.insert(op.key.substr(4, 16));
  for (uint64_t id : early) ids.insert(Container::array_prefix(id).substr(4, 16));
  return static_cast<uint32_t>(std::max(ids.size(), pending.size()));
}

}  // namespace

Status commit_arrays(Container& c, const std::vector<Array*>& arrays, const CommitOptions& o) {
  return guard([&] {
    // 1. Fragments written (unsynced).  Small fragments are inline catalog records: when
    //    no array wrote a file, the catalog's one fdatasync is the whole commit.
    bool files = false;
    size_t pending = 0;
    std::set<const Array*> pending_arrays;
    for (Array* a : arrays)
      if (a) {
        ok(a->prepare_flush());
        files = files || a->has_unsynced_files();
        const size_t p = a->pending_publish();
        pending += p;
        if (p) pending_arrays.insert(a);
      }
    step(o, "prepared", 0);
    // Every array's catalog records (inline fragments, schemas) go in one batch, committed
    // and synced after the renames: the catalog names the arrays, so it must never point
    // at data that is not durable yet.
    CatalogBatch records;
    // Arrays whose staged batch this catalog batch commits before their renames (a serial
    // flush of a parallel file's arrays: Array::record_staged): their files are recorded
    // and sys/epoch set here, and they rename only once the batch is durable.
    std::set<Array*> commit_first;
    auto record_first = [&] {
      uint64_t epoch = 0;
      for (Array* a : arrays)
        if (a) {
          uint64_t e = 0;
          ok(a->record_staged(&records, &e));
          if (e) commit_first.insert(a);
          epoch = std::max(epoch, e);
        }
      if (epoch) records.put(Container::kEpochKey, std::to_string(epoch));
    };
    auto publish_all = [&](bool synced) {
      record_first();
      Status first;
      for (Array* a : arrays)
        if (a && !commit_first.count(a)) {
          Status st = a->publish_prepared(synced, &records);
          if (first.ok() && !st.ok()) first = st;
        }
      if (files && synced) {
        Status st = c.sync();
        if (first.ok() && !st.ok()) first = st;
      }
      step(o, "published", 0);
      // A commit that changes anything is recorded (history.h), in the same batch: its
      // time is at least every timestamp it publishes, and later fragments sort after it.
      uint64_t ts = 0;
      if (!records.empty() || files || c.catalog().has_pending()) {
        ts = now_ns();
        for (Array* a : arrays)
          if (a) ts = std::max(ts, a->last_timestamp());
        add_commit(c.catalog(), records, ts, static_cast<uint32_t>(pending + count_records(records, "/frag/")),
                   count_arrays(records, pending_arrays, c.take_published()));
      }
      ok(guard([&] {
        c.catalog().commit(std::move(records));
        c.catalog().sync();
      }));
      step(o, "committed", 0);
      // Committed: those arrays rename now (each syncing its directory and schema file
      // before it removes its journal, which until then finishes them after a crash).
      for (Array* a : arrays)
        if (a && commit_first.count(a)) {
          Status st = a->publish_prepared(false);
          if (first.ok() && !st.ok()) first = st;
        }
      for (Array* a : arrays)
        if (a) a->publish_log_recorded();  // the records are durable: their log entries go
      // Committed: what the arrays published may be merged now (auto_merge.h).
      for (Array* a : arrays)
        if (a) a->note_committed();
      if (ts)
        for (Array* a : arrays)
          if (a) a->raise_timestamp(ts);
      ok(first);
    };
    if (files && o.sync.per_file(pending, c.has_unsynced_arrays())) {
      // Each array syncs what it writes: its fragments, its journal, its directory.
      for (Array* a : arrays)
        if (a) ok(a->stage_prepared(false));
      step(o, "staged", 0);
      publish_all(false);
      return;
    }
    // One syncfs for the fragments and new directories, one for the journals, one for
    // the renames.  Without journals (arrays whose records are complete) the renamed
    // files count only once the catalog records them: one syncfs after the renames
    // covers the fragments, the directories and the renames.
    bool journals = false;
    for (Array* a : arrays) journals = journals || (a && a->stage_writes());
    if (files && journals) ok(c.sync());
    for (Array* a : arrays)
      if (a) ok(a->stage_prepared(true));
    if (files && journals) ok(c.sync());
    step(o, "staged", 0);
    publish_all(true);
  });
}

Status commit_epoch(Container& c, CommitGroup& g, const std::map<uint64_t, std::shared_ptr<Array>>& open,
                    const std::map<uint64_t, uint64_t>& published_alone, uint64_t e, CatalogBatch metadata,
                    const CommitOptions& o) {
  return guard([&] {
    // Members may have opened different arrays: agree on the union of ids, and let a
    // member stand in with zeros for an array it does not have open.
    std::vector<uint64_t> ids;
    for (auto& [id, a] : open) ids.push_back(id);
    ids = g.union_of(ids);
    std::vector<Array*> list;  // parallel to ids; null: not open here
    for (uint64_t id : ids) {
      auto it = open.find(id);
      list.push_back(it == open.end() ? nullptr : it->second.get());
    }
    // Syncing.  A member publishing a few fragments into existing arrays (a point update)
    // fdatasyncs just those files, as the serial commit does; a member with many
    // fragments or new array directories needs one file-system sync after step 1, and
    // one syncfs by the node's leader, after every member of the node finished step 1,
    // covers them all (N members calling it would each wait for other programs' dirty
    // data).  The journals and renames of steps 2 and 4 are a few files per array: each
    // member syncs them itself (journal fdatasync, directory fsync), so no later step
    // needs a syncfs.
    bool per_file = true;
    // 1. Every member turns its pending writes into finished fragments under temporary names.
    g.agree([&] {
      size_t pending = 0;
      for (Array* a : list)
        if (a) {
          ok(a->prepare_flush());
          pending += a->pending_publish();
        }
      per_file = o.sync.per_file(pending, c.has_unsynced_arrays());
    });
    const bool node_syncfs = g.node_any(!per_file);  // also the node's barrier before it
    g.agree([&] {
      if (node_syncfs && g.node_leader()) ok(c.sync());
      if (node_syncfs) c.note_synced();
    });
    // The files this epoch publishes, every member's (the fragments are finished now,
    // so their sizes are final), and those members published on their own since the
    // last epoch: the epoch record names them all (file_records.h), so a committed file
    // that goes missing or changes size is an error naming it, as for a serial flush.
    // Five values per file: array id, fragment ts, rank << 32 | seq, gen, size.
    std::vector<uint64_t> files;
    std::vector<size_t> alone(list.size(), 0);
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i])
        for (auto& [id, size] : list[i]->files_to_record(&alone[i]))
          files.insert(files.end(), {ids[i], id.ts, (uint64_t{id.rank} << 32) | id.seq, id.gen, size});
    files = g.gather(files);
    // Later writes on any member sort after everything written before this point.
    std::vector<uint64_t> ts, pub, mine;
    for (size_t i = 0; i < list.size(); ++i) {
      Array* a = list[i];
      ts.push_back(a ? a->last_timestamp() : 0);
      // Fragments a member published on its own since the last epoch count too: members
      // that kept the array open pick them up below.
      auto alone = published_alone.find(ids[i]);
      pub.push_back((a ? a->unpublished_count() : 0) + (alone == published_alone.end() ? 0 : alone->second));
    }
    mine = pub;
    g.max(ts);
    g.sum(pub);
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i]) list[i]->raise_timestamp(ts[i]);
    // 2. Every member stages its batch: a per-member journal tagged with the epoch,
    //    durable before the agreement (per file: each fragment fdatasync'ed first; else
    //    the syncfs above already made them durable).
    g.agree([&] {
      for (Array* a : list)
        if (a) ok(a->stage_prepared(false, e, /*fragments_synced=*/!per_file));
      step(o, "staged", e);  // before the others know: never committed
    });
    // 3. The commit point: the root makes the epoch record durable, with the metadata
    //    queued since the last commit.  Journals of epochs up to it roll forward after a
    //    crash, later ones roll back.  Shadows apply the batch to their view only, so
    //    every member's catalog stays identical.
    // Every member records the same commit (history.h): the latest clock among them.
    std::vector<uint64_t> now{now_ns()};
    for (uint64_t t : ts) now[0] = std::max(now[0], t);
    g.max(now);
    std::vector<uint64_t> total{0};
    for (uint64_t p : pub) total[0] += p;
    g.agree([&] {
      for (size_t k = 0; k + 5 <= files.size(); k += 5) {
        const FragmentId id{files[k + 1], static_cast<uint32_t>(files[k + 2] >> 32),
                            static_cast<uint32_t>(files[k + 2]), static_cast<uint32_t>(files[k + 3])};
        put_file_record(metadata, Container::array_prefix(files[k]), id, files[k + 4]);
      }
      metadata.put(Container::kEpochKey, std::to_string(e));
      add_commit(c.catalog(), metadata, now[0], static_cast<uint32_t>(total[0]), static_cast<uint32_t>(list.size()));
      c.catalog().commit(std::move(metadata));
      if (g.root()) c.catalog().sync();
    });
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i]) {
        list[i]->raise_timestamp(now[0]);
        list[i]->files_recorded(alone[i]);
        list[i]->publish_log_recorded();  // the epoch record is durable (the root synced it)
      }
    step(o, "committed", e);
    // 4. Renames, each array's directory fsync'ed (the root also writes changed schemas,
    //    durably); agreeing doubles as the barrier before the others look at the directory.
    g.agree([&] {
      for (Array* a : list)
        if (a) ok(a->publish_prepared(false));
    });
    // 5. Every member picks up the fragments the others published.
    if (g.size() > 1)
      g.agree([&] {
        for (size_t i = 0; i < list.size(); ++i)
          if (list[i] && pub[i] > mine[i]) ok(list[i]->refresh());
      });
  });
}

Status commit_prepared_epoch(Container& c, CommitGroup& g, const std::vector<std::pair<uint64_t, Array*>>& arrays) {
  return guard([&] {
    g.agree([&] { ok(c.sync()); });  // every member's fragments durable before any journal
    const uint64_t epoch = c.committed_epoch() + 1;
    g.agree([&] {
      for (auto& [id, a] : arrays) ok(a->stage_prepared(true, epoch));
      ok(c.sync());
    });
    // The commit point records every member's file (file_records.h), so a part that goes
    // missing later is an error naming it.  Five values per file: array id, fragment ts,
    // rank << 32 | seq, gen, size.
    std::vector<uint64_t> mine;
    g.agree([&] {
      for (auto& [array_id, a] : arrays) {
        size_t alone = 0;
        for (auto& [id, size] : a->files_to_record(&alone))
          mine.insert(mine.end(), {array_id, id.ts, (uint64_t{id.rank} << 32) | id.seq, id.gen, size});
      }
    });
    const std::vector<uint64_t> files = g.gather(mine);
    g.agree([&] {
      if (!g.root()) return;
      CatalogBatch b;
      for (size_t k = 0; k + 5 <= files.size(); k += 5) {
        const FragmentId id{files[k + 1], static_cast<uint32_t>(files[k + 2] >> 32),
                            static_cast<uint32_t>(files[k + 2]), static_cast<uint32_t>(files[k + 3])};
        put_file_record(b, Container::array_prefix(files[k]), id, files[k + 4]);
      }
      b.put(Container::kEpochKey, std::to_string(epoch));
      c.catalog().commit(b);
      c.catalog().sync();
    });
    g.agree([&] {
      for (auto& [id, a] : arrays) ok(a->publish_prepared(true));
      ok(c.sync());
    });
  });
}

}  // namespace tessera
