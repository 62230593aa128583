// write_path.h — Array's write path: where a write goes (a dense fragment written as it
// comes, appended to the open one in tile order; a blob kept whole; cells in the write
// buffer), the buffers it fills, when they spill into a fragment (the array's cap, the
// context's write budget, write_budget.h), and the state of a background flush writing a
// swapped-out buffer (write_path.cc, write_spill.cc).
//
// Part of Array (array.h), not a unit of its own: every method runs with the array's
// mutex held by the caller (Array's public methods take it; wait_inflight and throttle
// release and retake that same lock), and reaches the rest of the array (schema, store,
// publisher, share session) through the Array it belongs to.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/fragment/fragment_writer.h"
#include "engine/fragment/var_heap.h"
#include "engine/geometry/box.h"
#include "engine/util/checksum.h"
#include "engine/util/error.h"
#include "engine/write/blob_buffer.h"
#include "engine/write/write_buffer.h"

namespace tessera {

class Array;

class WritePath {
 public:
  explicit WritePath(Array& a) : a_(a) {}
  WritePath(const WritePath&) = delete;
  WritePath& operator=(const WritePath&) = delete;

 private:
  friend class Array;         // the facade forwards its writes, reads the buffers, spills
  friend class Publisher;     // dropping unpublished writes closes the direct writer
  friend class ShareSession;  // a share run ends with a spill
  friend class Consolidation;  // an MPI part spills before it merges
  Array& a_;

  // The bodies of Array's public write calls (write_path.cc).
  void write(const Selection& sel, const void* src, const uint64_t* src_strides);
  void write_boxes(const std::vector<Box>& boxes, const void* src);
  void write_points(const uint64_t* coords, size_t n, const void* values);
  void write_points(std::vector<uint64_t>&& coords, const void* values);
  void write_dense(const Selection& sel, const uint8_t* src, const uint64_t* sstride);
  void buffer_cells(const Selection& sel, const uint8_t* src, const uint64_t* sstride);
  void buffer_blob(const Selection& sel, const uint8_t* src, const uint64_t* sstride);
  // Spills first when buffered blobs overlap `b` (a write or erase that would otherwise
  // become a fragment older-looking than them: fragments sort before blobs in reads).
  void spill_blobs_over(const Box& b);
  // Whether `box` starts after the open dense fragment's last tile (it can be appended).
  bool appends_after_direct(const Box& box) const;
  // Parks the open dense fragment (direct_): nothing may be appended to it after a later
  // write, read or spill, so fragment order stays write order.
  void close_direct();

  // --- Spills and the background flush's state (write_spill.cc).
  void spill();
  void maybe_spill();
  // The fragment of a spill: the buffer's cells tile by tile (dense where they fill a box).
  void fill_spill(WriteBuffer& buf, const BlobBuffer& blobs, FragmentWriter& w) const;
  // Tells the context's write budget what this array holds; true when over its limit.
  bool report_bytes();
  // Waits (releasing the array's mutex) until no background flush of this array is writing.
  void finish_inflight();
  void wait_inflight();
  // A background flush that failed: every later flush (and write) reports it.
  void check_background() const;
  // Back-pressure after a buffered write, with the array's mutex released (write_budget.h).
  Status throttle(Status st, std::unique_lock<std::mutex>* held);

  // Direct writes (write_dense; Array::append_direct for chunks): the open fragment they
  // append to.  Declared first, so destroyed last of the write path, as when these were
  // Array's fields; its destructor (removing an unfinished file) needs only the Context.
  std::unique_ptr<FragmentWriter> direct_;
  uint32_t direct_skip_ = 0;
  bool direct_whole_ = false;  // direct_ checksums tiles whole (FragmentWriter::set_whole_checksums)
  Coords direct_last_;  // the last tile direct_ holds
  // Made with the schema (Array::open_impl); null, as Array::heaps_, for a compact array.
  std::unique_ptr<WriteBuffer> buffer_;
  std::unique_ptr<BlobBuffer> blobs_;
  std::vector<uint8_t> scratch_;  // write_dense: pieces gathered for unfiltered tiles
  std::vector<ByteSpan> spans_;   // write_dense: the source rows of a tile written from them
  // A background flush's state (Array::flush_in_background): writing a swapped-out buffer
  // of inflight_bytes_ bytes; its cells are in no fragment yet, so reads and everything
  // that lists fragments wait for it (finish_inflight).
  bool inflight_ = false;
  uint64_t inflight_bytes_ = 0;
  // The bounding box of the flush in flight's cells and blobs, once the flusher computed
  // it (outside the lock: a scattered buffer has millions of cells); !any until then.
  BoundingBox inflight_bounds_;
  // Waited on with the array's mutex held (wait_inflight).  Not a condition_variable_any,
  // and Publisher::parked_ not a deque: both allocate when constructed, and an array is
  // opened and closed per small dataset (issue 20).
  std::condition_variable inflight_cv_;
  Status bg_error_;
  std::unique_ptr<HeapBuilder> pending_heap_;  // bytes of buffered variable-length cells
};

}  // namespace tessera
