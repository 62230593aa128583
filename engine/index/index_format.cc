// index_format.cc — see index_format.h.
#include "engine/index/index_format.h"

#include <cstring>

#include "engine/util/bytes.h"
#include "engine/util/checksum.h"

namespace tessera {

namespace {

[[noreturn]] void corrupt(const std::string& path, const std::string& why) {
  throw_error(Errc::kCorrupt, "index '" + path + "': " + why);
}

constexpr uint32_t kMaxIndexBins = 1 << 20;

void put_pair(ByteWriter& w, const IndexPair& p) {
  w.u64(p.chunk);
  w.u64(p.count);
  w.bytes(p.min, 8);
  w.bytes(p.max, 8);
  w.u64(p.offset);
  w.u64(p.size);
  w.u64(p.checksum);
}

IndexPair get_pair(ByteReader& r) {
  IndexPair p;
  p.chunk = r.u64();
  p.count = r.u64();
  r.bytes(p.min, 8);
  r.bytes(p.max, 8);
  p.offset = r.u64();
  p.size = r.u64();
  p.checksum = r.u64();
  return p;
}

}  // namespace

std::string index_dir(const std::string& array_dir) { return join_path(array_dir, "index"); }

std::string index_path(const std::string& array_dir, const FragmentId& id) {
  return join_path(index_dir(array_dir), id.name() + ".tix");
}

std::vector<uint8_t> IndexHead::serialize() const {
  ByteWriter w;
  w.u64(fragment.ts);
  w.u32(fragment.rank);
  w.u32(fragment.seq);
  w.u32(fragment.gen);
  w.u64(fragment_bytes);
  w.u8(static_cast<uint8_t>(type));
  w.u8(big_endian);
  w.u32(precision);
  w.u32(max_bins);
  w.u64(chunks.size());
  for (const IndexChunk& c : chunks) {
    w.u8(c.kind);
    w.u64(c.first);
    w.u64(c.count);
    w.u64(c.cells);
  }
  w.u64(bins.size());
  for (const IndexBin& b : bins) {
    w.u8(b.nan ? 1 : 0);
    w.u64(b.count);
    w.bytes(b.min, 8);
    w.bytes(b.max, 8);
    w.u64(b.first_pair);
    w.u64(b.pairs);
    w.u64(b.pairs_checksum);
  }
  w.u64(pairs_offset);
  w.u64(pair_count);
  return std::move(w.buf());
}

IndexHead IndexHead::deserialize(const uint8_t* p, size_t n, const std::string& what) {
  ByteReader r(p, n, what);
  IndexHead h;
  h.fragment.ts = r.u64();
  h.fragment.rank = r.u32();
  h.fragment.seq = r.u32();
  h.fragment.gen = r.u32();
  h.fragment_bytes = r.u64();
  const uint8_t t = r.u8();
  if (!valid_num_type(t)) r.fail("unknown element type " + std::to_string(t));
  h.type = static_cast<NumType>(t);
  h.big_endian = r.u8();
  if (h.big_endian > 1) r.fail("bad byte order flag");
  h.precision = r.u32();
  h.max_bins = r.u32();
  const uint64_t nchunks = r.count(25);
  h.chunks.resize(nchunks);
  for (IndexChunk& c : h.chunks) {
    c.kind = r.u8();
    if (c.kind > IndexChunk::kSparse) r.fail("bad chunk kind");
    c.first = r.u64();
    c.count = r.u64();
    c.cells = r.u64();
    if (c.cells > UINT32_MAX) r.fail("chunk of more than 2^32 positions");
  }
  const uint64_t nbins = r.count(49);
  if (nbins > kMaxIndexBins) r.fail("implausible bin count");
  h.bins.resize(nbins);
  for (IndexBin& b : h.bins) {
    const uint8_t nan = r.u8();
    if (nan > 1) r.fail("bad NaN flag");
    b.nan = nan == 1;
    b.count = r.u64();
    r.bytes(b.min, 8);
    r.bytes(b.max, 8);
    b.first_pair = r.u64();
    b.pairs = r.u64();
    b.pairs_checksum = r.u64();
  }
  h.pairs_offset = r.u64();
  h.pair_count = r.u64();
  if (!r.done()) r.fail("trailing bytes");
  uint64_t next = 0;
  for (size_t i = 0; i < h.bins.size(); ++i) {
    const IndexBin& b = h.bins[i];
    if (b.first_pair != next || b.pairs > h.pair_count - next) r.fail("bin pair rows out of order");
    if (b.nan && i + 1 != h.bins.size()) r.fail("NaN bin not last");
    next += b.pairs;
  }
  if (next != h.pair_count) r.fail("pair rows not covered by bins");
  return h;
}

ChunkMap ChunkMap::of(const FragmentMeta& m, const std::vector<IndexChunk>& chunks) {
  ChunkMap map;
  map.dense_chunk.resize(m.dense.size());
  map.dense_base.resize(m.dense.size());
  map.sparse_chunk.resize(m.sparse.size());
  map.sparse_base.resize(m.sparse.size());
  uint64_t next_dense = 0, next_sparse = 0;
  for (size_t ci = 0; ci < chunks.size(); ++ci) {
    const IndexChunk& c = chunks[ci];
    const bool dense = c.kind == IndexChunk::kDense;
    uint64_t& next = dense ? next_dense : next_sparse;
    const uint64_t entries = dense ? m.dense.size() : m.sparse.size();
    if (c.first != next || c.count == 0 || c.count > entries - next)
      throw_error(Errc::kCorrupt, "chunks do not cover the fragment's entries in order");
    uint64_t base = 0;
    for (uint64_t e = c.first; e < c.first + c.count; ++e) {
      uint64_t cells = 0;
      if (dense) {
        map.dense_chunk[e] = ci;
        map.dense_base[e] = base;
        if (m.dense[e].kind == DenseEntry::kData) cells = m.dense[e].box.cells();
      } else {
        map.sparse_chunk[e] = ci;
        map.sparse_base[e] = base;
        cells = m.sparse[e].cells;
      }
      base += cells;
    }
    if (base != c.cells) throw_error(Errc::kCorrupt, "a chunk's position count differs from its entries'");
    next += c.count;
  }
  if (next_dense != m.dense.size() || next_sparse != m.sparse.size())
    throw_error(Errc::kCorrupt, "chunks do not cover the fragment's entries");
  return map;
}

std::shared_ptr<IndexFile> IndexFile::open(const std::string& array_dir, const Fragment& f, NumType type,
                                           bool big_endian) {
  const std::string path = index_path(array_dir, f.meta().id);
  auto x = std::make_shared<IndexFile>();
  try {
    x->file_ = CachedFile::open(f.env(), path);
  } catch (const Error& e) {
    if (e.code() == Errc::kNotFound) return nullptr;
    throw;
  }
  x->path_ = path;
  x->size_ = x->file_->size();
  if (x->size_ < kIndexHeaderBytes + kIndexTrailerBytes) corrupt(path, "file truncated");
  // One read of the file's tail usually holds the trailer and the whole head (a query
  // opens the index of every fragment it touches: each read saved is a disk request).
  // The 32-byte header holds nothing a reader needs beyond what the trailer repeats
  // (magic, version); it is checked when the tail read reaches it.
  const uint64_t tail = std::min<uint64_t>(x->size_, 64 << 10);
  std::vector<uint8_t> buf(tail);
  x->file_->pread_exact(buf.data(), tail, x->size_ - tail);
  const uint8_t* trailer = buf.data() + tail - kIndexTrailerBytes;
  if (tail == x->size_ && std::memcmp(buf.data(), kIndexMagic, 8) != 0) corrupt(path, "not a tessera index (bad magic)");
  if (std::memcmp(trailer + 32, kIndexEndMagic, 8) != 0) corrupt(path, "not a tessera index, or truncated (bad trailer)");
  ByteReader tr(trailer, kIndexTrailerBytes, "index '" + path + "' trailer");
  const uint64_t head_off = tr.u64(), head_size = tr.u64(), head_sum = tr.u64();
  const uint32_t version = tr.u32();
  if (version != kIndexVersion)
    throw_error(Errc::kUnsupported, "index '" + path + "': format version " + std::to_string(version) +
                                        " (this build reads version " + std::to_string(kIndexVersion) + ")");
  if (head_off < kIndexHeaderBytes || head_off > x->size_ - kIndexTrailerBytes ||
      head_size != x->size_ - kIndexTrailerBytes - head_off)
    corrupt(path, "head out of bounds");
  std::vector<uint8_t> head;
  if (head_size + kIndexTrailerBytes <= tail) {
    const uint8_t* at = trailer - head_size;
    head.assign(at, at + head_size);
  } else {
    head.resize(head_size);
    x->file_->pread_exact(head.data(), head.size(), head_off);
  }
  if (checksum64(head.data(), head.size()) != head_sum) corrupt(path, "head checksum mismatch");
  x->head_ = IndexHead::deserialize(head.data(), head.size(), "index '" + path + "'");
  const IndexHead& h = x->head_;
  if (h.fragment != f.meta().id) corrupt(path, "written for fragment " + h.fragment.name());
  if (h.fragment_bytes != f.file_size())
    corrupt(path, "written for a fragment of " + std::to_string(h.fragment_bytes) + " bytes, this one has " +
                      std::to_string(f.file_size()));
  if (h.type != type || (h.big_endian != 0) != big_endian)
    corrupt(path, std::string("written for ") + num_type_name(h.type) + " elements");
  if (h.pairs_offset < kIndexHeaderBytes || h.pair_count > (head_off - h.pairs_offset) / IndexPair::kBytes ||
      h.pairs_offset + h.pair_count * IndexPair::kBytes != head_off)
    corrupt(path, "pair table out of bounds");
  try {
    x->map_ = ChunkMap::of(f.meta(), h.chunks);
  } catch (const Error& e) {
    corrupt(path, e.what());
  }
  return x;
}

std::vector<IndexPair> IndexFile::pairs(uint32_t lo, uint32_t hi) const {
  std::vector<IndexPair> out;
  if (lo > hi || hi >= head_.bins.size()) return out;
  const uint64_t first = head_.bins[lo].first_pair;
  const uint64_t end = head_.bins[hi].first_pair + head_.bins[hi].pairs;
  std::vector<uint8_t> rows = read(head_.pairs_offset + first * IndexPair::kBytes, (end - first) * IndexPair::kBytes);
  for (uint32_t b = lo; b <= hi; ++b) {
    const IndexBin& bin = head_.bins[b];
    const uint8_t* p = rows.data() + (bin.first_pair - first) * IndexPair::kBytes;
    if (checksum64(p, bin.pairs * IndexPair::kBytes) != bin.pairs_checksum)
      corrupt(path_, "pair rows of bin " + std::to_string(b) + ": checksum mismatch");
  }
  ByteReader r(rows.data(), rows.size(), "index '" + path_ + "' pair table");
  out.reserve(end - first);
  for (uint64_t i = first; i < end; ++i) {
    IndexPair p = get_pair(r);
    if (p.chunk >= head_.chunks.size() || p.offset < kIndexHeaderBytes || p.size > head_.pairs_offset ||
        p.offset > head_.pairs_offset - p.size)
      corrupt(path_, "pair row " + std::to_string(i) + " out of bounds");
    out.push_back(p);
  }
  return out;
}

std::vector<uint8_t> IndexFile::read(uint64_t off, uint64_t n) const {
  std::vector<uint8_t> v(n);
  file_->pread_exact(v.data(), n, off);
  return v;
}

Bitmap IndexFile::bitmap(const IndexPair& p, const std::vector<uint8_t>& bytes, uint64_t base) const {
  if (p.offset < base || p.offset - base + p.size > bytes.size())
    throw_error(Errc::kInternal, "index bitmap outside the bytes read");
  const uint8_t* at = bytes.data() + (p.offset - base);
  if (checksum64(at, p.size) != p.checksum)
    corrupt(path_, "bitmap of chunk " + std::to_string(p.chunk) + ": checksum mismatch");
  const std::string what = "index '" + path_ + "' bitmap";
  Bitmap b = Bitmap::deserialize(at, p.size, what.c_str());
  // The checksum vouches for the bytes; positions past the chunk would still break the
  // position-to-cell mapping, so the largest one is checked (cheap, unlike a count).
  if (b.empty() != (p.count == 0) || (!b.empty() && b.maximum() >= head_.chunks[p.chunk].cells)) corrupt(path_, "bitmap of chunk " + std::to_string(p.chunk) + ": positions outside the chunk");
  return b;
}

std::vector<uint8_t> serialize_pairs(const std::vector<IndexPair>& pairs) {
  ByteWriter w;
  for (const IndexPair& p : pairs) put_pair(w, p);
  return std::move(w.buf());
}

}  // namespace tessera
