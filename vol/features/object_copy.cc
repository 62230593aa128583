// object_copy.cc — H5Ocopy's deep copy (object_copy.h).
//
// One Copier per source file: the object the application named, and every file that an
// expanded external link leads to.  Native keys its map of copied objects by the open
// file's number, so two external links to one object share its copy only while the
// application holds that file open (else each traversal opens the file anew); CopyRun
// keeps that rule with one Copier per held file and a fresh one per other traversal.
#include "vol/features/object_copy.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>

#include "engine/container/container.h"
#include "vol/features/elink.h"
#include "vol/model/objects.h"
#include "vol/model/parallel.h"
#include "vol/model/reference.h"
#include "vol/types/stored_space.h"
#include "vol/types/stored_type.h"
#include "vol/types/vlen.h"

namespace tessera_vol {

namespace {

// Copies from one source file.  `copies` maps source to new object ids so that hard links
// inside the copied tree keep pointing at one shared copy.
struct CopyRun;

struct Copier {
  CopyRun& run;
  SharedFile& src;
  SharedFile& dst;
  tessera::CatalogBatch& b;
  unsigned flags;
  std::vector<uint64_t>& new_arrays;  // removed again by the caller if the copy fails
  std::vector<std::function<void()>>& pending;  // reference fixes, run by finish()
  std::map<uint64_t, uint64_t> copies;
  std::shared_ptr<SharedFile> keep;  // a file an external link opened: kept open meanwhile

  // A dataset's data: a new engine array with the same schema holding the same fragment
  // and heap files.  Those files are immutable once published, so they are hard-linked
  // (byte-copied where links are impossible); the source's buffered writes are flushed
  // into fragments first.
  //
  // In a parallel file H5Ocopy is collective, like every metadata call: each rank makes
  // the same records in its copy of the catalog, the flush is an epoch commit (so every
  // rank's writes are in files), and rank 0 alone links the files; the others see them
  // when they open the new array, after the agreement.
  uint64_t copy_array(uint64_t array_id) {
    Parallel* par = dst.parallel() ? dst.parallel() : src.parallel();
    if (par && &src != &dst) fail_unsupported("copying a dataset between a parallel (MPI-IO) file and another file");
    src.flush_arrays();
    auto a = src.array(array_id);
    uint64_t id = 0;
    if (par) {
      // Only rank 0's catalog persists: a compact array's cell record would diverge.
      if (a->schema().compact) fail_unsupported("copying a compact dataset in a parallel (MPI-IO) file");
      dst.create_array(a->schema(), &id);  // the same id on every rank
    } else {
      check(dst.container().create_array(a->schema(), &id, /*durable=*/false));
    }
    new_arrays.push_back(id);
    if (a->schema().compact) {
      // A compact array's cells are one record: copied through read and write, so the
      // copy is right whether or not the destination could make it compact too.  Never
      // written: nothing to copy (both read as the fill value).
      if (a->storage_bytes() == 0) return id;
      const tessera::Selection all = tessera::Selection::from_box(a->schema().domain());
      std::vector<uint8_t> cells(all.cells() * a->schema().elem_size);
      check(a->read(all, cells.data()));
      check(dst.array(id)->write(all, cells.data()));
      return id;
    }
    if (!par) {
      check(dst.container().copy_array(src.container(), array_id, id));
    } else {
      check(dst.container().copy_array(src.container(), array_id, id, tessera::Container::kCopyRecords));
      par->agree([&] {
        if (par->root()) check(dst.container().copy_array(src.container(), array_id, id, tessera::Container::kCopyFiles));
      });
    }
    return id;
  }

  // A copy made with a committed type references it too within one file.  Across files
  // it keeps the type's description only (native would copy the committed type along).
  void share_committed_type(uint64_t* type_oid) {
    if (!*type_oid) return;
    if (&src == &dst) dst.ref_object(b, *type_oid);
    else *type_oid = 0;
  }

  // A referenced object's copy (H5O_COPY_EXPAND_REFERENCE_FLAG): the one this copy
  // already made, else a new one, linked in the destination's root group as native names
  // it ("~obj_pointed_by_<address>", tessera's address being the object id).  0 for a
  // target that no longer exists.
  uint64_t by_ref(uint64_t oid) {
    if (auto it = copies.find(oid); it != copies.end()) return it->second;
    if (!src.find_object(oid)) return 0;
    uint64_t to = copy(oid, 0);
    dst.add_link(b, kRootOid, "~obj_pointed_by_" + std::to_string(to), LinkRecord::hard(to));
    return to;
  }

  // References in copied values, as native: attributes always (null without the expand
  // flag), dataset values only across files (the same file keeps them).
  // n: the number of elements (a vlen.h stream's; fixed-size values have bytes / size).
  void fix_refs(const std::string& type_enc, uint8_t* data, size_t bytes, size_t n) {
    StoredType st(type_enc, "copied value");
    TypeId t(st);
    const size_t es = H5Tget_size(t);
    if (es == 0 || bytes == 0) return;
    const bool expand = flags & H5O_COPY_EXPAND_REFERENCE_FLAG;
    auto target = [this](uint64_t oid) { return by_ref(oid); };
    if (H5Tget_class(t) == H5T_REFERENCE) {
      if (expand) copy_stored_refs(src, dst, b, t, data, bytes / es, target);
      else std::memset(data, 0, bytes);
      return;
    }
    // Nested in compound, array or variable-length values (reference.h): the records
    // alone are re-pointed, or nulled.
    const std::vector<size_t> at = st.has_vlen() ? stream_ref_offsets(t, n, data, bytes)
                                                 : element_ref_offsets(fixed_ref_offsets(t), es, bytes / es);
    if (expand) copy_stored_refs_at(src, dst, b, data, at, target);
    else
      for (size_t o : at) std::memset(data + o, 0, H5R_REF_BUF_SIZE);
  }

  // A reference type, or one holding new-style references.  (Old-style references nested
  // in other types are not re-pointed yet: a copy into another file keeps their ids.)
  static bool holds_refs(const std::string& type_enc) {
    StoredType st(type_enc, "copied value");
    TypeId t(st);
    return H5Tget_class(t) == H5T_REFERENCE || st.has_std_ref();
  }

  void fix_dataset_refs(const ObjectRecord& n) {
    auto a = dst.array(n.array_id);
    if (a->storage_bytes() == 0 && a->buffered_cells() == 0) return;  // never written: nothing to fix
    if (a->schema().var)
      fail_unsupported("copying a variable-length dataset holding references into another file is not supported "
                       "by tessera containers");
    const tessera::Selection all = tessera::Selection::from_box(a->schema().domain());
    std::vector<uint8_t> cells(all.cells() * a->schema().elem_size);
    check(a->read(all, cells.data()));
    fix_refs(n.type_enc, cells.data(), cells.size(), all.cells());
    check(a->write(all, cells.data()));
  }

  uint64_t copy_external(const ExternalTarget& t, int depth);

  uint64_t copy(uint64_t from, int depth) {
    if (depth > 1000) fail_arg("group hierarchy too deep to copy");
    if (auto it = copies.find(from); it != copies.end()) return it->second;
    ObjectRecord r = src.object(from);
    uint64_t to = dst.allocate_oid(b);
    copies[from] = to;
    ObjectRecord n = r;
    if (r.type == ObjType::kDataset) n.array_id = copy_array(r.array_id);
    n.rc = 0;  // add_link counts the links to the copy
    n.next_link_corder = 0;
    share_committed_type(&n.committed_type);
    dst.put_object(b, to, n);
    // References are fixed once the whole tree is copied (finish()), so that a reference
    // to an object of the tree points at its copy there, as native's post-copy does.
    if (r.type == ObjType::kDataset && &src != &dst && holds_refs(r.type_enc))
      pending.push_back([this, n] { fix_dataset_refs(n); });
    if (!(flags & H5O_COPY_WITHOUT_ATTR_FLAG))
      for (auto& [name, a] : src.attrs(from)) {
        AttrRecord na = a;
        share_committed_type(&na.committed_type);
        dst.put_attr(b, to, name, na);
        if (holds_refs(na.type_enc))
          pending.push_back([this, to, name = name, na]() mutable {
            const hssize_t n = space_npoints(na.space_enc);
            fix_refs(na.type_enc, reinterpret_cast<uint8_t*>(na.data.data()), na.data.size(),
                     static_cast<size_t>(std::max<hssize_t>(n, 0)));
            dst.put_attr(b, to, name, na);
          });
      }
    if (r.type != ObjType::kGroup) return to;
    if ((flags & H5O_COPY_SHALLOW_HIERARCHY_FLAG) && depth > 0) return to;
    for (auto& [name, l] : ordered_links(src, from, H5_INDEX_CRT_ORDER, H5_ITER_INC)) {  // keep creation order
      LinkRecord nl = l;
      if (l.type == H5L_TYPE_SOFT && (flags & H5O_COPY_EXPAND_SOFT_LINK_FLAG)) {
        if (auto t = src.try_resolve(from, l.soft_path)) {  // dangling soft links stay soft
          nl.type = H5L_TYPE_HARD;
          nl.soft_path.clear();
          nl.target = *t;
        }
      }
      // External links become hard links to a copy of their target (expand flag), as
      // native's copy does; one whose file or object cannot be reached stays a link.
      if (l.type == H5L_TYPE_EXTERNAL && (flags & H5O_COPY_EXPAND_EXT_LINK_FLAG)) {
        if (auto t = external_link_target(src, "", l, H5P_LINK_ACCESS_DEFAULT)) {
          nl = LinkRecord::hard(copy_external(*t, depth + 1));
          nl.corder = l.corder;
          nl.cset = l.cset;
          dst.add_link(b, to, name, nl);
          continue;
        }
      }
      if (nl.type == H5L_TYPE_HARD) nl.target = copy(nl.target, depth + 1);
      dst.add_link(b, to, name, nl);
    }
    return to;
  }
};

// Everything one H5Ocopy shares between its copiers.
struct CopyRun {
  tessera::CatalogBatch& b;
  unsigned flags;
  std::vector<uint64_t>& new_arrays;
  std::vector<std::function<void()>> pending;
  std::vector<std::unique_ptr<Copier>> copiers;  // alive until the reference fixes ran
  std::map<SharedFile*, Copier*> held;           // copiers of files the application holds open
  std::map<SharedFile*, long> transient;         // references our own copiers hold

  Copier& add(SharedFile& src, SharedFile& dst) {
    copiers.push_back(std::unique_ptr<Copier>(new Copier{*this, src, dst, b, flags, new_arrays, pending, {}, {}}));
    return *copiers.back();
  }

  // Runs the reference fixes; copying a referenced object may add more.
  void finish() {
    while (!pending.empty()) {
      auto todo = std::move(pending);
      pending.clear();
      for (auto& f : todo) f();
    }
  }
};

uint64_t Copier::copy_external(const ExternalTarget& t, int depth) {
  SharedFile* f = t.file.get();
  if (f == &src) return copy(t.oid, depth);
  Copier* c = nullptr;
  if (auto it = run.held.find(f); it != run.held.end()) {
    c = it->second;
  } else {
    // Held open by the application: more owners than `t` and our own copiers' references.
    const bool held = t.file.use_count() - 1 - run.transient[f] > 0;
    c = &run.add(*f, dst);
    c->keep = t.file;  // alive until the reference fixes ran
    if (held) run.held[f] = c;
    else ++run.transient[f];
  }
  std::lock_guard<std::recursive_mutex> lk(f->mu());
  return c->copy(t.oid, depth);
}

}  // namespace

uint64_t copy_object(SharedFile& src, uint64_t from, SharedFile& dst, tessera::CatalogBatch& b, unsigned flags,
                     std::vector<uint64_t>* new_arrays) {
  CopyRun run{b, flags, *new_arrays, {}, {}, {}, {}};
  run.held[&src] = &run.add(src, dst);
  uint64_t to = run.held[&src]->copy(from, 0);
  run.finish();
  return to;
}

}  // namespace tessera_vol
