// Every committed fragment of a parallel file is accounted for too (docs/reliability.md):
// an epoch commit (commit_epoch, the engine's part of an MPI H5Fflush/H5Fclose) records
// every member's fragment files in the epoch record's batch, and the files a member
// published on its own since the last epoch (publish_own, H5Dclose), so a committed file
// that is deleted or truncated later is an error naming it on open or read and in
// verify_container — never the fill value in its place.
//
// Two members run in two threads of this process, as MPI ranks would: member 0 holds the
// container (the catalog's one writer), member 1 a shadow of it, each with its own
// Array objects (writer ranks 0 and 1), agreeing through a ThreadGroup (thread_group.h).  The files
// the catalog must record are found independently, by listing the array directories.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "engine/catalog/file_records.h"
#include "engine/testing/test_schema.h"
#include "engine/testing/thread_group.h"
#include "engine/testing/testutil.h"
#include "engine/container/verify.h"

namespace tessera {
namespace {

using testutil::status_str;

using testutil::ThreadGroup;

ArrayOptions member_opts(uint32_t rank) {
  ArrayOptions o;
  o.durable_writes = false;  // the connector's mode: an epoch publishes
  o.blob_bytes = 0;          // a box write is a fragment of its own
  o.collective = true;
  o.writer_rank = rank;
  return o;
}

constexpr int kMembers = 2, kArrays = 2;
const Schema kSchema = int32_schema({32, 32}, {32, 32}, {8, 8});

// Member r's value of generation g at cell (i, j) of array a.
int32_t value(int a, int g, uint64_t i, uint64_t j) { return static_cast<int32_t>(100000 * a + 1000 * g + i * 32 + j); }

// Member r writes rows [16r, 16r + 16) of array a, generation g: two fragments (tile rows,
// the later first: writes in tile order would be appended to one fragment).
bool write_rows(Array& arr, int a, int g, uint32_t r) {
  for (uint64_t q : {1, 0}) {
    const uint64_t lo = 16 * r + 8 * q;
    std::vector<int32_t> v(8 * 32);
    for (uint64_t i = 0; i < 8; ++i)
      for (uint64_t j = 0; j < 32; ++j) v[i * 32 + j] = value(a, g, lo + i, j);
    if (!arr.write(Selection::from_box(Box({lo, 0}, {lo + 7, 31})), v.data()).ok()) return false;
  }
  return true;
}

// A container of kArrays parallel-file arrays (directories with schema files), written by
// two members over two epochs: epoch 1 writes generation 1 of everything; between the
// epochs member 1 writes generation 2 of its rows of array 1 and publishes them on its own
// (H5Dclose in a parallel file), then epoch 2 commits generation 2 of member 0's rows of
// array 0.
struct ParallelContainer {
  testutil::TempDir dir{"tessera_acct_par"};
  std::string path = dir.sub("c");
  uint64_t ids[kArrays] = {};

  ParallelContainer() { build(); }
  void build() {
    {
      std::unique_ptr<Container> c;
      EXPECT_TRUE(Container::create(path, Container::CreateMode::kTruncate, &c).ok());
      c->set_file_arrays(true);
      for (auto& id : ids) EXPECT_TRUE(c->create_array(kSchema, &id).ok());
      EXPECT_TRUE(guard([&] { c->catalog().sync(); }).ok());
    }
    std::unique_ptr<Container> root, shadow;
    ASSERT_TRUE(Container::open(path, true, &root).ok());
    root->set_file_arrays(true);
    ASSERT_TRUE(Container::open_shadow(path, &shadow).ok());
    Container* cs[kMembers] = {root.get(), shadow.get()};
    ThreadGroup::Shared shared(kMembers);
    std::vector<std::string> failures(kMembers);
    // Opened and written before the members run, so a failure here cannot leave the
    // other member waiting in a collective.
    std::map<uint64_t, std::shared_ptr<Array>> open[kMembers];
    for (uint32_t r = 0; r < kMembers; ++r)
      for (int a = 0; a < kArrays; ++a) {
        std::unique_ptr<Array> arr;
        Status st = cs[r]->open_array(ids[a], true, member_opts(r), &arr);
        ASSERT_TRUE(st.ok()) << "member " << r << " opening array " << a << ": " << st.message();
        ASSERT_TRUE(write_rows(*arr, a, 1, r));
        open[r][ids[a]] = std::move(arr);
      }
    // Each member makes every collective call, whatever failed before (as MPI ranks must).
    auto member = [&](uint32_t r) {
      auto fail = [&](const std::string& why) {
        if (failures[r].empty()) failures[r] = why;
      };
      ThreadGroup g(shared, static_cast<int>(r));
      Status st = commit_epoch(*cs[r], g, open[r], {}, 1);
      if (!st.ok()) fail("epoch 1: " + st.message());
      std::map<uint64_t, uint64_t> alone;
      if (r == 1) {
        size_t n = 0;
        if (!write_rows(*open[r][ids[1]], 1, 2, r) || !open[r][ids[1]]->publish_own(&n).ok() || n != 2)
          fail("publish_own");
        alone[ids[1]] = n;
      }
      if (r == 0 && !write_rows(*open[r][ids[0]], 0, 2, r)) fail("write epoch 2");
      st = commit_epoch(*cs[r], g, open[r], alone, 2);
      if (!st.ok()) fail("epoch 2: " + st.message());
    };
    std::thread t1(member, 1);
    member(0);
    t1.join();
    for (auto& m : open) m.clear();
    for (auto& f : failures) EXPECT_EQ(f, "") << "a member failed";
  }

  // Array a's cells as written (the model).
  static std::vector<int32_t> model(int a) {
    std::vector<int32_t> m(32 * 32);
    for (uint64_t i = 0; i < 32; ++i)
      for (uint64_t j = 0; j < 32; ++j) {
        const bool second = (a == 0 && i < 16) || (a == 1 && i >= 16);
        m[i * 32 + j] = value(a, second ? 2 : 1, i, j);
      }
    return m;
  }
  std::string frag_dir(int a) const {
    char name[17];
    std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(ids[a]));
    return join_path(join_path(join_path(path, "arrays"), name), "frag");
  }
  // The published fragment files of array a on disk, by id, with their sizes.
  std::map<FragmentId, uint64_t> files_on_disk(int a) const {
    std::map<FragmentId, uint64_t> out;
    for (const std::string& n : list_dir(Env::posix(), frag_dir(a))) {
      FragmentId id;
      if (n.size() == 47 && n.compare(43, 4, ".tfr") == 0 && FragmentId::parse(n.substr(0, 43), &id))
        out[id] = testutil::file_size(join_path(frag_dir(a), n));
    }
    return out;
  }
  std::string file_of(int a, uint32_t rank) const {
    for (auto& [id, size] : files_on_disk(a))
      if (id.rank == rank) return join_path(frag_dir(a), id.name() + ".tfr");
    return "";
  }
  // Opens array a read-only (serially, as a later process does) and reads it whole.
  Status read(int a, std::vector<int32_t>* out) const {
    std::unique_ptr<Container> c;
    Status st = Container::open(path, false, &c);
    if (!st.ok()) return st;
    std::unique_ptr<Array> arr;
    st = c->open_array(ids[a], false, ArrayOptions(), &arr);
    if (!st.ok()) return st;
    out->assign(32 * 32, -7);
    return arr->read(Selection::from_box(Box({0, 0}, {31, 31})), out->data());
  }
};

bool mentions(const std::vector<std::string>& lines, const std::string& what) {
  for (auto& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

// Every fragment file of both members, from both epochs and publish_own, is recorded
// with its size in the catalog rank 0 wrote; the container reads back as written.
TEST(AccountingParallel, EpochRecordsEveryMembersFiles) {
  ParallelContainer pc;
  if (HasFatalFailure()) return;
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::open(pc.path, false, &c).ok());
  for (int a = 0; a < kArrays; ++a) {
    SCOPED_TRACE("array " + std::to_string(a));
    const auto disk = pc.files_on_disk(a);
    // Epoch 1: two per member; array 0 two more of member 0's at epoch 2, array 1 two of
    // member 1's published on its own.
    EXPECT_EQ(disk.size(), 6u);
    std::map<uint32_t, size_t> by_rank;
    for (auto& [id, size] : disk) by_rank[id.rank]++;
    EXPECT_EQ(by_rank[0], a == 0 ? 4u : 2u);
    EXPECT_EQ(by_rank[1], a == 1 ? 4u : 2u);
    EXPECT_EQ(scan_file_records(c->catalog(), Container::array_prefix(pc.ids[a])), disk)
        << "the catalog does not record exactly the files published";
    std::vector<int32_t> v;
    Status st = pc.read(a, &v);
    ASSERT_TRUE(st.ok()) << status_str(st);
    EXPECT_EQ(v, ParallelContainer::model(a));
  }
  VerifyReport r;
  ASSERT_TRUE(verify_container(pc.path, VerifyOptions(), &r).ok());
  for (auto& p : r.problems) ADD_FAILURE() << "verify: " << p;
  EXPECT_EQ(r.recorded_files, 12u);
}

// A fragment file of either member deleted or truncated (or grown) after the parallel
// job ended: the open or read of that array fails naming the file, verify reports it,
// the other array reads back exactly.  Before the epoch recorded files, the array read
// the fill value where the lost file's cells were, and verify found nothing.
TEST(AccountingParallel, DeletedOrTruncatedFileOfAnyMemberIsAnErrorNamingIt) {
  struct Case {
    int array;
    uint32_t rank;
    int damage;  // 0 deleted, 1 truncated, 2 grown
  };
  // Array 1's rank-1 files include those published on their own (publish_own).
  for (Case k : {Case{0, 1, 0}, Case{0, 0, 1}, Case{1, 1, 0}, Case{1, 1, 2}}) {
    const char* what[] = {"deleted", "truncated", "grown"};
    SCOPED_TRACE("array " + std::to_string(k.array) + ", member " + std::to_string(k.rank) + "'s file " +
                 what[k.damage]);
    ParallelContainer pc;
    if (HasFatalFailure()) return;
    const std::string f = pc.file_of(k.array, k.rank);
    ASSERT_FALSE(f.empty());
    std::vector<uint8_t> b = read_file(Env::posix(), f);
    if (k.damage == 0) remove_file(Env::posix(), f);
    if (k.damage == 1) b.resize(b.size() - 100);
    if (k.damage == 2) b.insert(b.end(), 16, 0);
    if (k.damage > 0) write_file_atomic(Env::posix(), f, b.data(), b.size(), false);
    std::vector<int32_t> v;
    Status st = pc.read(k.array, &v);
    EXPECT_EQ(st.code(), Errc::kCorrupt) << "a damaged fragment file read back: " << status_str(st);
    EXPECT_NE(st.message().find(f), std::string::npos) << "the error names the file: " << st.message();
    VerifyReport r;
    ASSERT_TRUE(verify_container(pc.path, VerifyOptions(), &r).ok());
    EXPECT_TRUE(mentions(r.problems, f.substr(f.rfind('/') + 1))) << "verify does not report " << f;
    const int other = 1 - k.array;
    st = pc.read(other, &v);
    EXPECT_TRUE(st.ok()) << status_str(st);
    EXPECT_EQ(v, ParallelContainer::model(other));
  }
}

// The publish logs (publish_log.h) of array a's directory, by name.
std::vector<std::string> publish_logs(const ParallelContainer& pc, int a) {
  std::vector<std::string> out;
  for (const std::string& n : list_dir(Env::posix(), pc.frag_dir(a)))
    if (n.find(".log") != std::string::npos) out.push_back(n);
  return out;
}

// A fragment file of another container's array (same schema, written later, so newer:
// it would win every cell it holds) copied into a closed parallel-written container: no
// commit published it there.  Reading the array fails naming it, verify reports it, the
// other array reads back.  Before the publish logs, such an array had no complete-records
// mark and read the foreign file: the other container's values, no error.
TEST(AccountingParallel, ForeignFragmentFileIsAnErrorNamingIt) {
  ParallelContainer pc;
  if (HasFatalFailure()) return;
  EXPECT_EQ(publish_logs(pc, 0), std::vector<std::string>{}) << "the epochs recorded everything: no log is left";
  EXPECT_EQ(publish_logs(pc, 1), std::vector<std::string>{}) << "the epochs recorded everything: no log is left";
  ParallelContainer other;
  if (HasFatalFailure()) return;
  const std::string src = other.file_of(0, 0);
  ASSERT_FALSE(src.empty());
  const std::string name = src.substr(src.rfind('/') + 1);
  const std::string dst = join_path(pc.frag_dir(0), name);
  std::vector<uint8_t> b = read_file(Env::posix(), src);
  write_file_atomic(Env::posix(), dst, b.data(), b.size(), false);
  std::vector<int32_t> v;
  Status st = pc.read(0, &v);
  EXPECT_EQ(st.code(), Errc::kCorrupt) << "a foreign fragment was read: " << status_str(st);
  EXPECT_NE(st.message().find(dst), std::string::npos) << "the error names the file: " << st.message();
  VerifyReport r;
  ASSERT_TRUE(verify_container(pc.path, VerifyOptions(), &r).ok());
  EXPECT_TRUE(mentions(r.problems, name)) << "verify does not report " << dst;
  st = pc.read(1, &v);
  EXPECT_TRUE(st.ok()) << status_str(st);
  EXPECT_EQ(v, ParallelContainer::model(1));
  // Moved away, the array reads back as committed.
  remove_file(Env::posix(), dst);
  st = pc.read(0, &v);
  ASSERT_TRUE(st.ok()) << status_str(st);
  EXPECT_EQ(v, ParallelContainer::model(0));
}

// A rank's H5Dclose (publish_own) publishes files that only the next epoch records; the
// job ends without one (killed).  Those files are named in the rank's publish log before
// their renames, so a later reader reads them — they are committed — while a foreign
// file next to them is still an error; a deleted logged file is no error (a crash between
// the log's append and the rename looks the same), and a truncated one is.
TEST(AccountingParallel, FilesARankPublishedOnItsOwnAreLoggedUntilAnEpochRecordsThem) {
  ParallelContainer pc;
  if (HasFatalFailure()) return;
  {
    std::unique_ptr<Container> shadow;
    ASSERT_TRUE(Container::open_shadow(pc.path, &shadow).ok());
    std::unique_ptr<Array> arr;
    ASSERT_TRUE(shadow->open_array(pc.ids[1], true, member_opts(1), &arr).ok());
    ASSERT_TRUE(write_rows(*arr, 1, 3, 1));
    size_t n = 0;
    Status st = arr->publish_own(&n);
    ASSERT_TRUE(st.ok()) << status_str(st);
    ASSERT_EQ(n, 2u);
  }  // no epoch follows
  EXPECT_EQ(publish_logs(pc, 1), std::vector<std::string>{"published-r1.log"});
  std::vector<int32_t> expect = ParallelContainer::model(1);
  for (uint64_t i = 16; i < 32; ++i)
    for (uint64_t j = 0; j < 32; ++j) expect[i * 32 + j] = value(1, 3, i, j);
  std::vector<int32_t> v;
  Status st = pc.read(1, &v);
  ASSERT_TRUE(st.ok()) << status_str(st);
  EXPECT_EQ(v, expect) << "the files published on their own are not read";
  VerifyReport r;
  ASSERT_TRUE(verify_container(pc.path, VerifyOptions(), &r).ok());
  for (auto& p : r.problems) ADD_FAILURE() << "verify: " << p;
  // The newest file of rank 1 is one of those just published (logged, not recorded).
  std::string newest;
  for (auto& [id, size] : pc.files_on_disk(1))
    if (id.rank == 1) newest = join_path(pc.frag_dir(1), id.name() + ".tfr");
  ASSERT_FALSE(newest.empty());
  std::vector<uint8_t> b = read_file(Env::posix(), newest);
  b.resize(b.size() - 100);
  write_file_atomic(Env::posix(), newest, b.data(), b.size(), false);
  st = pc.read(1, &v);
  EXPECT_EQ(st.code(), Errc::kCorrupt) << "a truncated logged file read back: " << status_str(st);
  EXPECT_NE(st.message().find(newest), std::string::npos) << st.message();
  r = VerifyReport();
  ASSERT_TRUE(verify_container(pc.path, VerifyOptions(), &r).ok());
  EXPECT_TRUE(mentions(r.problems, newest.substr(newest.rfind('/') + 1)));
  // A foreign file beside logged ones.
  remove_file(Env::posix(), newest);
  ParallelContainer other;
  if (HasFatalFailure()) return;
  const std::string src = other.file_of(1, 1);
  const std::string dst = join_path(pc.frag_dir(1), src.substr(src.rfind('/') + 1));
  b = read_file(Env::posix(), src);
  write_file_atomic(Env::posix(), dst, b.data(), b.size(), false);
  st = pc.read(1, &v);
  EXPECT_EQ(st.code(), Errc::kCorrupt) << "a foreign fragment was read: " << status_str(st);
  EXPECT_NE(st.message().find(dst), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tessera
