// array_copy.cc — Container::copy_array: one array's stored data copied into another
// array, of this container or another (the connector's H5Ocopy of a dataset).
#include "engine/container/container.h"

#include "engine/util/file_io.h"
#include "engine/publish/publish_log.h"

namespace tessera {

Status Container::copy_array(Container& src, uint64_t src_id, uint64_t dst_id, unsigned parts) {
  if (parts & kCopyRecords) {
    Status st = guard([&] {
      // Inline fragments (catalog records) are copied as records under the new array.
      const std::string sp = array_prefix(src_id) + "frag/";
      const std::string tp = array_prefix(dst_id) + "frag/";
      CatalogBatch rb;
      for (auto& [key, value] : src.catalog().scan(sp)) rb.put(tp + key.substr(sp.size()), value);
      // The fragment files linked below are the source's committed ones, recorded with
      // their sizes (file_records.h): the copy reads them and a lost or damaged one is an
      // error naming it.  Unrecorded, a serial array (complete records) skipped them and
      // read the fill value; a parallel file's array (publish logs) refused them as
      // foreign.
      const std::string sf = array_prefix(src_id) + "file/";
      const std::string tf = array_prefix(dst_id) + "file/";
      for (auto& [key, value] : src.catalog().scan(sf)) rb.put(tf + key.substr(sf.size()), value);
      catalog().commit(rb);
    });
    if (!st.ok()) return st;
  }
  if (!(parts & kCopyFiles)) return Status::OK();
  const std::string from = src.array_dir(src_id), to = array_dir(dst_id);
  Env& e = env();
  return guard([&] {
    for (const char* sub : {"frag", "heap"}) {
      std::string fd = join_path(from, sub), td = join_path(to, sub);
      if (!is_directory(e, fd)) continue;
      make_dir(e, to);
      make_dir(e, td);
      for (const std::string& name : list_dir(e, fd)) {
        if (name.empty() || name[0] == '.' || name.find(".tmp") != std::string::npos) continue;  // temp files
        if (is_publish_log(name)) continue;  // the source's writers' (recorded above)
        std::string sp = join_path(fd, name), tp = join_path(td, name);
        if (e.link(sp.c_str(), tp.c_str()) != 0) {
          auto bytes = read_file(e, sp);
          write_file_atomic(e, tp, bytes.data(), bytes.size());
        }
      }
      sync_dir(e, td);
    }
  });
}

}  // namespace tessera
