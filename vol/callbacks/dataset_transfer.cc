// dataset_transfer.cc — H5Dread / H5Dwrite (dataset.cc creates and opens datasets):
// the file selection resolved, the data moved through a packed buffer in HDF5's pairing
// order with type conversion, variable-length and reference values, and what a parallel
// file's ranks show each other around a transfer.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "vol/io/allocation.h"
#include "vol/io/chunk_io.h"
#include "vol/types/dcpl.h"
#include "vol/features/elink.h"
#include "vol/model/mpio_cause.h"
#include "vol/types/external_storage.h"
#include "vol/model/objects.h"
#include "vol/model/reference.h"
#include "vol/types/selection.h"
#include "vol/types/stored_space.h"
#include "vol/features/query.h"
#include "vol/features/sparse.h"
#include "vol/base/tessera_vol.h"
#include "vol/types/transform.h"
#include "vol/types/type_conv.h"
#include "vol/model/value_filters.h"
#include "vol/types/vlen.h"
#include "vol/types/vlen_convert.h"
#include "vol/types/vlen_fill.h"
#include "vol/io/virtual_dataset.h"
#include "vol/io/dataset_io.h"
#include "vol/model/parallel.h"


namespace tessera_vol {

namespace {

// The selected cells, packed in selection order: from the engine array, or from the
// external files.
void read_stored(DatasetObj& d, const FileSelection& fs, hid_t fspace, uint8_t* packed) {
  if (d.external) d.external->read(fspace, d.efile_prefix, packed);
  else read_selection(*d.array, fs, packed);
}

void write_stored(DatasetObj& d, FileSelection& fs, hid_t fspace, const uint8_t* packed) {
  if (d.external) d.external->write(fspace, d.efile_prefix, packed);
  else write_selection(*d.array, fs, packed);
}

// Memory side of one transfer.  `block`: H5S_BLOCK, a contiguous buffer.
struct MemSide {
  hid_t space = H5I_INVALID_HID;
  bool block = false;
};

// What resolve_file_selection gives for the handle's own dataspace (all selected): a
// scalar is one element, a null space none, a simple space its whole extent.
FileSelection whole_extent(const DatasetObj& d) {
  const H5S_class_t cls = d.space_class();
  if (cls == H5S_NULL) return FileSelection();  // kNone
  return whole_selection(cls == H5S_SCALAR ? tessera::Coords{1} : d.array->schema().extent);
}

// Validates one transfer and resolves both selections.
FileSelection prepare(DatasetObj& d, hid_t mem_space, hid_t file_space, MemSide* m) {
  dataset_sync_space(d);
  if (file_space == H5S_BLOCK) fail_arg("H5S_BLOCK is not allowed for the file dataspace");
  if (file_space == H5S_PLIST)
    fail_unsupported("H5S_PLIST file selections (H5Pset_dataset_io_hyperslab_selection) not supported yet");
  if (mem_space == H5S_PLIST) fail_arg("H5S_PLIST is not allowed for the memory dataspace");
  hid_t fspace = file_space == H5S_ALL ? d.space : file_space;
  if (file_space == H5S_ALL && mem_space == H5S_ALL && !d.vds && d.space_class() != H5S_NO_CLASS) {
    // Everything, on both sides: the handle's own dataspace selects all of the extent
    // sync_space just matched to the array's; no dataspace calls (five per H5Dwrite).
    m->space = d.space;
    return whole_extent(d);
  }
  FileSelection fs = resolve_file_selection(fspace, d.space);
  if (mem_space == H5S_BLOCK) {
    m->block = true;
    return fs;
  }
  m->space = mem_space == H5S_ALL ? fspace : mem_space;
  hssize_t mn = H5Sget_select_npoints(m->space);
  if (mn < 0) fail_arg("invalid memory dataspace");
  if (static_cast<uint64_t>(mn) != fs.n)
    fail_arg("memory selection has " + std::to_string(mn) + " elements, the file selection has " +
             std::to_string(fs.n));
  if (mn > 0 && H5Sselect_valid(m->space) <= 0)
    fail_arg("memory selection is not within the memory dataspace extent");
  return fs;
}

// Variable-length datasets: each cell holds one element serialized by vlen.h from the
// file type's memory representation.  A memory type with the same representation is
// serialized as it is (any vlen string matches any other: the cset does not change the
// bytes); any other goes through vlen_convert.h.
bool same_var_form(hid_t mtype, const StoredType& ftype) {
  if (ftype.equal(mtype)) return true;
  return H5Tis_variable_str(mtype) > 0 && H5Tis_variable_str(TypeId(ftype)) > 0;
}

// References nested in compound, array and variable-length types (reference.h, issue 45)
// are stored as records at their own offsets.  Variable-length values holding them move
// only between equal types: a conversion copies each H5R_ref_t shallowly and then
// releases the copy it converted from.
[[noreturn]] void nested_refs_unconverted() {
  fail_unsupported("variable-length data holding references (H5T_STD_REF) can be read and written only with "
                   "the dataset's own datatype (H5Dget_type) in tessera containers, not converted");
}

// Whether a transfer is one of references themselves (read_refs/write_refs) rather than
// of values with references inside.
bool plain_refs(const DatasetObj& d, hid_t mtype) { return plain_ref_transfer(TypeId(d.ftype), mtype); }

// The offsets of the references nested in n packed elements of the (fixed-size) stored type.
std::vector<size_t> nested_refs(const DatasetObj& d, size_t n) {
  return element_ref_offsets(fixed_ref_offsets(TypeId(d.ftype)), d.ftype.size(), n);
}

// Never-written cells (length 0: a written element, even a NULL string or an empty
// sequence, serializes to at least its length word) read as the fill value.
void substitute_fill(const std::string& fill, std::vector<uint64_t>* lengths, std::vector<uint8_t>* data) {
  size_t unwritten = 0;
  for (uint64_t l : *lengths) unwritten += l == 0;
  if (unwritten == 0) return;
  std::vector<uint8_t> out;
  out.reserve(data->size() + unwritten * fill.size());
  size_t pos = 0;
  for (uint64_t& l : *lengths) {
    if (l == 0) {
      out.insert(out.end(), fill.begin(), fill.end());
      l = fill.size();
    } else {
      if (l > data->size() - pos) fail_arg("variable-length value out of range");
      out.insert(out.end(), data->begin() + static_cast<std::ptrdiff_t>(pos),
                 data->begin() + static_cast<std::ptrdiff_t>(pos + l));
      pos += l;
    }
  }
  data->swap(out);
}

void write_var(DatasetObj& d, hid_t mtype, const MemSide& m, const FileSelection& fs, const uint8_t* in) {
  const size_t mes = H5Tget_size(mtype);
  if (mes == 0) fail_arg("invalid memory datatype");
  std::vector<uint8_t> packed(mes * fs.n);
  size_t off = 0;
  if (m.block || memory_contiguous(m.space, mes, fs.n, &off)) std::memcpy(packed.data(), in + off, packed.size());
  else gather(m.space, mes, in, packed.data());
  std::vector<uint64_t> lengths(fs.n);
  std::string data;
  const bool refs = d.ftype.has_std_ref();
  if (!same_var_form(mtype, d.ftype)) {
    if (refs || mem_type_facts(mtype).std_ref) nested_refs_unconverted();
    TypeId ftype(d.ftype);
    auto stored = [&](std::vector<uint64_t>* l, std::vector<uint8_t>* bytes) {
      read_selection_var(*d.array, fs, l, bytes);
      if (!d.vlen_fill.empty()) substitute_fill(d.vlen_fill, l, bytes);
    };
    vlen_write_converted(mtype, ftype, fs.n, packed.data(), stored, &lengths, &data);
    write_selection_var(*d.array, fs, lengths.data(), data.data());
    return;
  }
  for (uint64_t i = 0; i < fs.n; ++i) {
    std::string e = vlen_serialize(mtype, 1, packed.data() + i * mes);
    if (refs) {  // the references inside, as stored records (reference.h)
      auto* p = reinterpret_cast<uint8_t*>(e.data());
      refs_to_stored_at(d.file, p, stream_ref_offsets(mtype, 1, p, e.size()));
    }
    lengths[i] = e.size();
    data += e;
  }
  write_selection_var(*d.array, fs, lengths.data(), data.data());
}

void read_var(DatasetObj& d, hid_t mtype, const MemSide& m, const FileSelection& fs, hid_t dxpl, uint8_t* out) {
  const size_t mes = H5Tget_size(mtype);
  if (mes == 0) fail_arg("invalid memory datatype");
  std::vector<uint64_t> lengths;
  std::vector<uint8_t> data;
  read_selection_var(*d.array, fs, &lengths, &data);
  if (lengths.size() != fs.n) fail_arg("engine returned a wrong number of variable-length values");
  if (!d.vlen_fill.empty()) substitute_fill(d.vlen_fill, &lengths, &data);
  size_t off = 0;
  const bool contig = m.block || memory_contiguous(m.space, mes, fs.n, &off);
  if (!same_var_form(mtype, d.ftype)) {
    if (d.ftype.has_std_ref() || mem_type_facts(mtype).std_ref) nested_refs_unconverted();
    std::vector<uint8_t> packed(mes * fs.n);  // the caller's values: the background
    if (contig) std::memcpy(packed.data(), out + off, packed.size());
    else gather(m.space, mes, out, packed.data());
    TypeId ftype(d.ftype);
    vlen_read_converted(ftype, mtype, fs.n, lengths, data, dxpl, packed.data());
    if (contig) std::memcpy(out + off, packed.data(), packed.size());
    else scatter(m.space, mes, packed.data(), out);
    return;
  }
  if (d.ftype.has_std_ref()) {  // stored records back to references (reference.h)
    std::vector<size_t> at;
    size_t pos = 0;
    for (uint64_t i = 0; i < fs.n; pos += lengths[i++]) {
      if (lengths[i] > data.size() - pos) fail_arg("variable-length value out of range");
      if (lengths[i] == 0) continue;
      std::vector<size_t> cell = stream_ref_offsets(mtype, 1, data.data(), pos + lengths[i], pos);
      at.insert(at.end(), cell.begin(), cell.end());
    }
    stored_to_refs_at(&d, data.data(), at);
  }
  // Never-written cells stay zero: NULL strings, empty sequences.
  std::vector<uint8_t> packed(mes * fs.n, 0);
  VlenAlloc alloc = vlen_allocator(dxpl);
  size_t pos = 0;
  for (uint64_t i = 0; i < fs.n; ++i) {
    if (lengths[i] > data.size() - pos) fail_arg("variable-length value out of range");
    if (lengths[i] > 0)
      vlen_deserialize(mtype, 1, std::string(reinterpret_cast<const char*>(data.data()) + pos, lengths[i]),
                       packed.data() + i * mes, alloc);
    pos += lengths[i];
  }
  if (contig) std::memcpy(out + off, packed.data(), packed.size());
  else scatter(m.space, mes, packed.data(), out);
}

// What a fixed-size transfer needs: element sizes on both sides, whether the types are
// equal (no conversion), and whether the memory selection is one contiguous run (then at
// byte offset `off` in the buffer).
struct Transfer {
  size_t fes, mes;
  bool eq, contig;
  size_t off;
};

Transfer plan_transfer(const DatasetObj& d, hid_t mtype, const MemSide& m, const FileSelection& fs) {
  Transfer t{d.ftype.size(), mem_type_facts(mtype).size, false, false, 0};  // throws if invalid
  t.eq = d.ftype.equal(mtype);
  t.contig = m.block || memory_contiguous(m.space, t.mes, fs.n, &t.off);
  return t;
}

// 1.12-style references (reference.h): stored as records, rebuilt on read; old-style
// object references read as H5T_STD_REF are converted.  Nested in compound, array and
// variable-length types (nested_* below) too, where both sides hold them.
void refs_unsupported() {
  fail_unsupported("references (H5T_STD_REF) converted to or from other types (but old-style ones read as "
                   "H5T_STD_REF) are not supported by tessera containers");
}

void read_refs(DatasetObj& d, hid_t mtype, const MemSide& m, const FileSelection& fs, void* buf) {
  TypeId ftype(d.ftype);
  std::vector<uint8_t> stored(d.ftype.size() * fs.n), refs(sizeof(H5R_ref_t) * fs.n);
  if (H5Tequal(mtype, H5T_STD_REF) <= 0) refs_unsupported();
  read_selection(*d.array, fs, stored.data());
  read_plain_refs(&d, ftype, mtype, stored.data(), fs.n, refs.data());
  size_t off = 0;
  if (m.block || memory_contiguous(m.space, sizeof(H5R_ref_t), fs.n, &off))
    std::memcpy(static_cast<uint8_t*>(buf) + off, refs.data(), refs.size());
  else
    scatter(m.space, sizeof(H5R_ref_t), refs.data(), buf);
}

void write_refs(DatasetObj& d, hid_t mtype, const MemSide& m, FileSelection& fs, const void* buf) {
  TypeId ftype(d.ftype);
  if (H5Tequal(mtype, H5T_STD_REF) <= 0 || H5Tequal(ftype, H5T_STD_REF) <= 0) refs_unsupported();
  std::vector<uint8_t> refs(sizeof(H5R_ref_t) * fs.n), stored(d.ftype.size() * fs.n);
  size_t off = 0;
  if (m.block || memory_contiguous(m.space, sizeof(H5R_ref_t), fs.n, &off))
    std::memcpy(refs.data(), static_cast<const uint8_t*>(buf) + off, refs.size());
  else
    gather(m.space, sizeof(H5R_ref_t), buf, refs.data());
  refs_to_stored(d.file, refs.data(), fs.n, stored.data());
  write_selection(*d.array, fs, stored.data());
}

void read_one(DatasetObj& d, hid_t mtype, hid_t mem_space, hid_t file_space, hid_t dxpl, void* buf) {
  if (d.vds) return d.vds->read(d, mtype, mem_space, file_space, dxpl, buf);
  MemSide m;
  FileSelection fs = prepare(d, mem_space, file_space, &m);
  if (fs.n == 0) return;
  if (!buf) fail_arg("NULL read buffer");
  const bool mem_refs = mem_type_facts(mtype).std_ref;
  if (d.ftype.has_std_ref() || mem_refs) {
    if (plain_refs(d, mtype)) return read_refs(d, mtype, m, fs, buf);
    // Old-style ones inside a compound read as new, or new ones as old: not converted.
    if (!d.ftype.has_std_ref() || (!mem_refs && H5Tdetect_class(mtype, H5T_REFERENCE) > 0)) refs_unsupported();
  }
  // A data transform (transform.h) works on the memory-typed values after conversion.
  const std::optional<DataTransform> xform = DataTransform::from_dxpl(dxpl);
  if (xform && d.array->schema().var) xform->apply(mtype, nullptr, 0);  // refuses vlen types
  if (d.array->schema().var) return read_var(d, mtype, m, fs, dxpl, static_cast<uint8_t*>(buf));
  const auto [fes, mes, eq, contig, off] = plan_transfer(d, mtype, m, fs);
  auto* out = static_cast<uint8_t*>(buf);
  const hid_t fspace = file_space == H5S_ALL ? d.space : file_space;
  if (eq && contig && !xform) {
    read_stored(d, fs, fspace, out + off);
    if (mem_refs) stored_to_refs_at(&d, out + off, nested_refs(d, fs.n));
    return;
  }
  std::vector<uint8_t> tmp(std::max(fes, mes) * fs.n);
  read_stored(d, fs, fspace, tmp.data());
  if (mem_refs) stored_to_refs_at(&d, tmp.data(), nested_refs(d, fs.n));  // converted as they are
  if (!eq) {
    TypeId ftype(d.ftype);
    std::vector<uint8_t> bkg;
    if (needs_background(ftype, mtype)) {  // members the file type lacks keep the caller's values
      bkg.resize(mes * fs.n);
      if (contig) std::memcpy(bkg.data(), out + off, bkg.size());
      else gather(m.space, mes, out, bkg.data());
    }
    convert(ftype, mtype, fs.n, tmp.data(), bkg.empty() ? nullptr : bkg.data(), dxpl);
  }
  if (xform) xform->apply(mtype, tmp.data(), fs.n);
  if (contig) std::memcpy(out + off, tmp.data(), mes * fs.n);
  else scatter(m.space, mes, tmp.data(), out);
}

void write_one(DatasetObj& d, hid_t mtype, hid_t mem_space, hid_t file_space, hid_t dxpl, const void* buf) {
  require_write_intent(*d.file);
  if (d.vds) return d.vds->write(d, mtype, mem_space, file_space, dxpl, buf);
  MemSide m;
  FileSelection fs = prepare(d, mem_space, file_space, &m);
  if (fs.n == 0) return;
  if (!buf) fail_arg("NULL write buffer");
  const bool mem_refs = mem_type_facts(mtype).std_ref;
  if (d.ftype.has_std_ref() || mem_refs) {
    if (plain_refs(d, mtype)) return write_refs(d, mtype, m, fs, buf);
    if (!d.ftype.has_std_ref() || (!mem_refs && H5Tdetect_class(mtype, H5T_REFERENCE) > 0)) refs_unsupported();
  }
  allocation_before_write(d);
  if (!d.value_filters_checked) {
    d.value_filters_checked = true;
    if (ValueFilters::needed(d.dcpl)) {
      TypeId ftype(d.ftype);
      d.value_filters = std::make_shared<ValueFilters>(ftype, d.dcpl, d.array->schema().tile_extent);
    }
  }
  // A data transform (transform.h) works on a copy of the memory-typed values before
  // conversion; the application's buffer is never changed.
  const std::optional<DataTransform> xform = DataTransform::from_dxpl(dxpl);
  if (xform && d.array->schema().var) xform->apply(mtype, nullptr, 0);  // refuses vlen types
  if (d.array->schema().var) return write_var(d, mtype, m, fs, static_cast<const uint8_t*>(buf));
  const auto [fes, mes, eq, contig, off] = plan_transfer(d, mtype, m, fs);
  const auto* in = static_cast<const uint8_t*>(buf);
  const hid_t fspace = file_space == H5S_ALL ? d.space : file_space;
  // A memory type that leaves out some of the stored references would have the others'
  // stored records read back as its own references.
  if (mem_refs && !eq && fixed_ref_offsets(mtype).size() != fixed_ref_offsets(TypeId(d.ftype)).size())
    fail_unsupported("a write whose memory type holds some but not all of the dataset's references is not "
                     "supported by tessera containers");
  if (eq && contig && !xform && !mem_refs) {
    write_stored(d, fs, fspace, in + off);
    if (d.value_filters) d.value_filters->note_written(d.array->schema(), fspace);
    return;
  }
  std::vector<uint8_t> tmp(std::max(fes, mes) * fs.n);
  if (contig) std::memcpy(tmp.data(), in + off, mes * fs.n);
  else gather(m.space, mes, in, tmp.data());
  if (xform) xform->apply(mtype, tmp.data(), fs.n);
  if (!eq) {
    TypeId ftype(d.ftype);
    std::vector<uint8_t> bkg;
    if (needs_background(mtype, ftype)) {  // members the memory type lacks keep the file's values
      bkg.resize(fes * fs.n);
      read_stored(d, fs, fspace, bkg.data());
    }
    convert(mtype, ftype, fs.n, tmp.data(), bkg.empty() ? nullptr : bkg.data(), dxpl);
  }
  if (mem_refs) refs_to_stored_at(d.file, tmp.data(), nested_refs(d, fs.n));
  write_stored(d, fs, fspace, tmp.data());
  if (d.value_filters) d.value_filters->note_written(d.array->schema(), fspace);
}

// PHDF5 programs assume raw data is in the file once H5Dwrite returns: a rank writes,
// MPI_Barrier, another rank reads it through a handle it already had open (HDF5's
// t_shapesame, t_span_tree).  Tessera's H5Dwrite and H5Dread are rank-local (no
// communication), so the writer shares its writes to the dataset with the other ranks
// before H5Dwrite returns — readable by them, still committed only by the next epoch —
// and every read first picks up what other ranks shared or published
// (docs/parallel.md, "Visibility").
//
// A job of one rank has no other rank to show or see anything: its reads and writes go
// through the dataset's one Array (shared by every handle of the file), as in a serial
// file, and skipping the share (a finished fragment and a rename per H5Dwrite) and the
// refresh (a listing of the fragment directory per call) keeps many small writes at the
// serial cost.  What they publish and when (the epoch) is unchanged.
bool alone_in_job(const DatasetObj& d) { return d.file->parallel()->size() == 1; }

void show_other_ranks(DatasetObj& d) {
  if (!d.array || !d.file->parallel() || !d.file->writable() || alone_in_job(d)) return;
  std::lock_guard<std::recursive_mutex> g(d.file->mu());
  check(d.array->share_own());
}

void see_other_ranks(DatasetObj& d) {
  if (!d.array || !d.file->parallel() || alone_in_job(d)) return;
  std::lock_guard<std::recursive_mutex> g(d.file->mu());
  check(d.array->refresh_fragments());
}

}  // namespace

void dataset_read_one(DatasetObj& d, hid_t mem_type, hid_t mem_space, hid_t file_space, hid_t dxpl, void* buf) {
  read_one(d, mem_type, mem_space, file_space, dxpl, buf);
}

void dataset_write_one(DatasetObj& d, hid_t mem_type, hid_t mem_space, hid_t file_space, hid_t dxpl,
                       const void* buf) {
  write_one(d, mem_type, mem_space, file_space, dxpl, buf);
}

herr_t dataset_read(size_t count, void* dset[], hid_t mem_type_id[], hid_t mem_space_id[], hid_t file_space_id[],
                    hid_t dxpl_id, void* buf[], void**) {
  return vol_call(__func__, "dataset read", [&] {
    for (size_t i = 0; i < count; ++i) see_other_ranks(*as_dataset(dset[i]));
    for (size_t i = 0; i < count; ++i) {
      read_one(*as_dataset(dset[i]), mem_type_id[i], mem_space_id[i], file_space_id[i], dxpl_id, buf[i]);
      if (as_dataset(dset[i])->file->parallel())
        report_no_collective_cause(*as_dataset(dset[i]), mem_type_id[i], mem_space_id[i], file_space_id[i], dxpl_id);
    }
  });
}

herr_t dataset_write(size_t count, void* dset[], hid_t mem_type_id[], hid_t mem_space_id[], hid_t file_space_id[],
                     hid_t dxpl_id, const void* buf[], void**) {
  return vol_call(__func__, "dataset write", [&] {
    // The new fragments sort after every fragment this rank has seen: a write ordered
    // after another rank's (by a barrier) wins even if this node's clock is behind.
    for (size_t i = 0; i < count; ++i) see_other_ranks(*as_dataset(dset[i]));
    for (size_t i = 0; i < count; ++i) {
      write_one(*as_dataset(dset[i]), mem_type_id[i], mem_space_id[i], file_space_id[i], dxpl_id, buf[i]);
      if (as_dataset(dset[i])->file->parallel())
        report_no_collective_cause(*as_dataset(dset[i]), mem_type_id[i], mem_space_id[i], file_space_id[i], dxpl_id);
    }
    for (size_t i = 0; i < count; ++i) show_other_ranks(*as_dataset(dset[i]));
  });
}

}  // namespace tessera_vol
