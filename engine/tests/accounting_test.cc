// Every committed piece is accounted for (docs/reliability.md): what a flush published is
// either read back or refused with an error naming what is damaged — never silently
// absent.  Each test here sets up one way of losing committed data and checks the open or
// the read fails naming the file, and that `verify_container` reports it:
//   - a damaged publish journal (a flush may be half published) is refused, not dropped;
//     a journal a crash cut short before it was durable (empty) is dropped;
//   - a catalog commit that failed leaves nothing of its batch behind;
//   - the container's inline budget is never overrun by writers racing for it;
//   - fragment files deleted or truncated are errors naming the file, on open and in
//     verify_container; a file no commit recorded (another array's) is not read.
// (A block damaged after its first read: block_check_test.cc.)
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/array/array.h"
#include "engine/catalog/catalog.h"
#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "engine/publish/publish_journal.h"
#include "engine/testing/testutil.h"
#include "engine/container/verify.h"

namespace tessera {
namespace {

using testutil::status_str;

Schema small_schema(uint64_t n = 32, uint64_t tile = 8) {
  Schema s;
  s.extent = {n, n};
  s.max_extent = {n, n};
  s.tile_extent = {tile, tile};
  s.elem_size = 8;
  s.kind = ElementKind::kUInt;
  s.fill.assign(8, 0xF1);
  return s;
}

std::vector<uint64_t> box_values(const Box& b, uint64_t k) {
  std::vector<uint64_t> v(b.cells());
  for (size_t i = 0; i < v.size(); ++i) v[i] = (k << 32) | i;
  return v;
}

std::vector<uint64_t> read_all(Array& a, Status* st) {
  const Schema& s = a.schema();
  std::vector<uint64_t> v(s.extent[0] * s.extent[1]);
  *st = a.read(Selection::from_box(Box({0, 0}, {s.extent[0] - 1, s.extent[1] - 1})), v.data());
  return v;
}

// A child process writes a batch of two fragments and stages its journal, then dies
// (no rename, no destructor): the state a crash after the journal leaves.
void stage_two_fragment_batch(const std::string& adir) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(60);
    ArrayOptions o;
    o.durable_writes = false;
    o.direct_cells = 16;
    std::unique_ptr<Array> a;
    if (!Array::open(adir, true, o, &a).ok()) _exit(2);
    // Out of tile order: two fragments.
    for (const Box& b : {Box({16, 16}, {23, 23}), Box({0, 0}, {7, 7})}) {
      auto v = box_values(b, 2);
      if (!a->write(Selection::from_box(b), v.data()).ok()) _exit(3);
    }
    if (!a->prepare_flush().ok()) _exit(4);
    if (!a->stage_prepared(false).ok()) _exit(5);
    _exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

// A journal damaged after some of its renames were done: the array would show half of
// the flush (the second box without the first).  Before this was refused, recovery
// dropped such a journal in silence.
TEST(Accounting, DamagedPublishJournalIsAnErrorNamingIt) {
  testutil::TempDir dir("tessera_acct_journal");
  const std::string adir = dir.sub("a"), frag = join_path(adir, "frag");
  ASSERT_TRUE(Array::create(adir, small_schema()).ok());
  stage_two_fragment_batch(adir);
  const std::string jpath = join_path(frag, "publish.journal");
  ASSERT_TRUE(path_exists(Env::posix(), jpath)) << "a batch of two fragments is staged in a journal";
  PublishJournal j = PublishJournal::read(Env::posix(), jpath);
  ASSERT_EQ(j.moves.size(), 2u);
  // Recovery was under way: the first rename done, the second not.
  ASSERT_EQ(::rename(j.moves[0].first.c_str(), j.moves[0].second.c_str()), 0);
  // Then the disk damaged the journal: one byte in the middle.
  std::vector<uint8_t> b = read_file(Env::posix(), jpath);
  b[b.size() / 2] ^= 0x40;
  write_file_atomic(Env::posix(), jpath, b.data(), b.size(), false);

  for (bool writable : {false, true}) {
    SCOPED_TRACE(writable ? "writable open" : "read-only open");
    std::unique_ptr<Array> a;
    Status st = Array::open(adir, writable, ArrayOptions(), &a);
    EXPECT_FALSE(st.ok()) << "an array whose flush may be half published opened";
    EXPECT_EQ(st.code(), Errc::kCorrupt) << status_str(st);
    EXPECT_NE(st.message().find(jpath), std::string::npos) << "the error names the journal: " << st.message();
  }
  EXPECT_TRUE(path_exists(Env::posix(), jpath)) << "the damaged journal was removed";
}

// A journal that never became durable (the syncfs route writes it unsynced and syncs it
// before the first rename) is what a crash leaves as an empty file: no rename began, so
// the array is the state before the flush and the journal goes.
TEST(Accounting, EmptyPublishJournalMeansNoRenameBegan) {
  for (size_t len : {size_t{0}, size_t{300}}) {
    SCOPED_TRACE("journal of " + std::to_string(len) + " zero bytes");
    testutil::TempDir dir("tessera_acct_torn");
    const std::string adir = dir.sub("a"), frag = join_path(adir, "frag");
    ASSERT_TRUE(Array::create(adir, small_schema()).ok());
    stage_two_fragment_batch(adir);
    const std::string jpath = join_path(frag, "publish.journal");
    ASSERT_TRUE(path_exists(Env::posix(), jpath));
    std::vector<uint8_t> zeros(len, 0);
    write_file_atomic(Env::posix(), jpath, zeros.data(), zeros.size(), false);
    std::unique_ptr<Array> a;
    Status st = Array::open(adir, true, ArrayOptions(), &a);
    ASSERT_TRUE(st.ok()) << status_str(st);
    EXPECT_FALSE(path_exists(Env::posix(), jpath));
    for (const std::string& n : list_dir(Env::posix(), frag))
      EXPECT_FALSE(n.size() > 4 && n.compare(n.size() - 4, 4, ".tfr") == 0) << "published: " << n;
    std::vector<uint64_t> v = read_all(*a, &st);
    ASSERT_TRUE(st.ok()) << status_str(st);
    uint64_t fill;
    std::memset(&fill, 0xF1, 8);
    for (uint64_t x : v) ASSERT_EQ(x, fill) << "a cell of the never-published batch is visible";
  }
}

// Writes past `limit` bytes fail (EFBIG) while it lives: a full disk, for one process.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(uint64_t limit) {
    ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
    ::getrlimit(RLIMIT_FSIZE, &old_);
    struct rlimit r = old_;
    r.rlim_cur = limit;
    ok_ = ::setrlimit(RLIMIT_FSIZE, &r) == 0;
  }
  ~FileSizeLimit() { ::setrlimit(RLIMIT_FSIZE, &old_); }
  bool ok() const { return ok_; }

 private:
  struct rlimit old_ {};
  bool ok_ = false;
};

// A commit that fails must leave nothing of its batch: the connector's dataset creation
// drops the array when its catalog commit throws; a batch that stayed applied would have
// its link to that array written by the next sync.
TEST(Accounting, FailedCatalogCommitLeavesNoTrace) {
  testutil::TempDir dir("tessera_acct_catalog");
  const std::string cdir = dir.sub("cat");
  make_dir(Env::posix(), cdir);
  {
    auto cat = Catalog::open(cdir, Catalog::Mode::kReadWrite, true);
    cat->set_durability(Catalog::Durability::kEachCommit);
    CatalogBatch b0;
    b0.put("before", "1");
    cat->commit(std::move(b0));
    const uint64_t size = File::open_read(Env::posix(), join_path(cdir, "catalog.log")).size();
    {
      FileSizeLimit lim(size + 64);
      ASSERT_TRUE(lim.ok());
      CatalogBatch b;
      b.put("l/link", std::string(4096, 'x'));
      b.put("before", "2");
      EXPECT_THROW(cat->commit(std::move(b)), Error) << "a commit past the file size limit succeeded";
    }
    EXPECT_FALSE(cat->get("l/link")) << "the failed batch is applied in memory";
    ASSERT_TRUE(cat->get("before"));
    EXPECT_EQ(*cat->get("before"), "1") << "the failed batch is applied in memory";
    CatalogBatch after;
    after.put("after", "3");
    cat->commit(std::move(after));
  }
  auto cat = Catalog::open(cdir, Catalog::Mode::kReadOnly, false);
  EXPECT_FALSE(cat->get("l/link")) << "the failed batch reached the log";
  ASSERT_TRUE(cat->get("before"));
  EXPECT_EQ(*cat->get("before"), "1");
  EXPECT_TRUE(cat->get("after")) << "the catalog is unusable after a failed commit";
}

// kOnSync (the connector's mode): a commit is applied and durable at the next sync.  The
// early write of a large queue failing is the next sync's error, not the commit's (which
// would tell the caller its applied batch failed).
TEST(Accounting, OnSyncCommitIsAppliedEvenWhenTheEarlyWriteFails) {
  testutil::TempDir dir("tessera_acct_onsync");
  const std::string cdir = dir.sub("cat");
  make_dir(Env::posix(), cdir);
  {
    auto cat = Catalog::open(cdir, Catalog::Mode::kReadWrite, true);
    cat->set_durability(Catalog::Durability::kOnSync);
    const uint64_t size = File::open_read(Env::posix(), join_path(cdir, "catalog.log")).size();
    {
      FileSizeLimit lim(size + 1024);
      ASSERT_TRUE(lim.ok());
      CatalogBatch b;
      b.put("big", std::string(5u << 20, 'x'));  // past the 4 MiB early write
      EXPECT_NO_THROW(cat->commit(std::move(b)));
      EXPECT_TRUE(cat->get("big"));
      EXPECT_THROW(cat->sync(), Error) << "a sync past the file size limit succeeded";
    }
    cat->sync();  // room again: the queued batch is written now
  }
  auto cat = Catalog::open(cdir, Catalog::Mode::kReadOnly, false);
  ASSERT_TRUE(cat->get("big"));
  EXPECT_EQ(cat->get("big")->size(), 5u << 20);
}

// Two arrays of one container each get a writer while the container's inline budget has
// room for one of their fragments: the budget's room was checked when each writer was
// made and counted when it finished, so both kept theirs inline and the catalog held more
// than its cap.  Room is now taken in one step when a fragment is finished; the second
// becomes a file, and both read back.
TEST(Accounting, InlineBudgetIsNeverOverrun) {
  testutil::TempDir dir("tessera_acct_budget");
  std::unique_ptr<Container> c;
  ASSERT_TRUE(Container::create(dir.sub("c"), Container::CreateMode::kTruncate, &c).ok());
  const uint64_t cap = 48 << 10;  // room for one 32 KiB fragment, not two
  c->set_inline_cap(cap);
  ArrayOptions o;
  o.durable_writes = false;
  o.direct_cells = 64;
  const Schema s = small_schema(64, 16);  // 64 x 64 x 8 bytes = 32 KiB
  const Box all({0, 0}, {63, 63});
  std::vector<std::unique_ptr<Array>> arrays(2);
  std::vector<uint64_t> ids(2);
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(c->create_and_open_array(s, false, true, o, &ids[i], &arrays[i]).ok());
  // Both writers open (a large box in tile order stays open for more) before either ends.
  for (int i = 0; i < 2; ++i) {
    auto v = box_values(all, 10 + i);
    ASSERT_TRUE(arrays[i]->write(Selection::from_box(all), v.data()).ok());
  }
  ASSERT_TRUE(commit_arrays(*c, {arrays[0].get(), arrays[1].get()}).ok());
  uint64_t inline_bytes = 0;
  for (auto& [key, value] : c->catalog().scan("arr/"))
    if (key.find("/frag/") != std::string::npos) inline_bytes += value.size();
  EXPECT_GT(inline_bytes, 0u) << "neither fragment was kept inline (the test sets up nothing)";
  EXPECT_LE(inline_bytes, cap) << "the catalog holds more inline bytes than the container's cap";
  EXPECT_LE(c->inline_budget()->used.load(), cap);
  arrays.clear();
  c.reset();
  ASSERT_TRUE(Container::open(dir.sub("c"), false, &c).ok());
  for (int i = 0; i < 2; ++i) {
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(ids[i], false, ArrayOptions(), &a).ok());
    Status st;
    EXPECT_EQ(read_all(*a, &st), box_values(all, 10 + i));
    EXPECT_TRUE(st.ok()) << status_str(st);
  }
}

// A container with two arrays of fragment files (no inline records), committed and closed.
struct FileContainer {
  testutil::TempDir dir{"tessera_acct_files"};
  std::string path = dir.sub("c");
  uint64_t ids[2] = {0, 0};
  const Box all{{0, 0}, {31, 31}};

  FileContainer() {
    std::unique_ptr<Container> c;
    EXPECT_TRUE(Container::create(path, Container::CreateMode::kTruncate, &c).ok());
    std::vector<std::unique_ptr<Array>> arrays(2);
    for (int i = 0; i < 2; ++i) {
      EXPECT_TRUE(c->create_and_open_array(small_schema(), false, true, options(), &ids[i], &arrays[i]).ok());
      auto v = box_values(all, 1 + i);
      EXPECT_TRUE(arrays[i]->write(Selection::from_box(all), v.data()).ok());
    }
    EXPECT_TRUE(commit_arrays(*c, {arrays[0].get(), arrays[1].get()}).ok());
  }
  static ArrayOptions options() {
    ArrayOptions o;
    o.durable_writes = false;
    o.inline_fragment_bytes = 0;  // every fragment a file
    return o;
  }
  std::string frag_dir(int i) const {
    char name[17];
    std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(ids[i]));
    return join_path(join_path(join_path(path, "arrays"), name), "frag");
  }
  std::vector<std::string> fragment_files(int i) const {
    std::vector<std::string> out;
    for (const std::string& n : list_dir(Env::posix(), frag_dir(i)))
      if (n.size() == 47 && n.compare(43, 4, ".tfr") == 0) out.push_back(join_path(frag_dir(i), n));
    return out;
  }
  // Opens array i read-only and reads it whole.
  Status read(int i, std::vector<uint64_t>* out) const {
    std::unique_ptr<Container> c;
    Status st = Container::open(path, false, &c);
    if (!st.ok()) return st;
    std::unique_ptr<Array> a;
    st = c->open_array(ids[i], false, ArrayOptions(), &a);
    if (!st.ok()) return st;
    *out = read_all(*a, &st);
    return st;
  }
  VerifyReport verify() const {
    VerifyReport r;
    EXPECT_TRUE(verify_container(path, VerifyOptions(), &r).ok());
    return r;
  }
};

bool mentions(const std::vector<std::string>& lines, const std::string& what) {
  for (auto& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

TEST(Accounting, DeletedOrTruncatedFragmentFileIsAnErrorNamingIt) {
  for (int damage = 0; damage < 3; ++damage) {
    const char* what[] = {"deleted", "truncated", "grown"};
    SCOPED_TRACE(std::string("fragment file ") + what[damage]);
    FileContainer fc;
    auto files = fc.fragment_files(0);
    ASSERT_EQ(files.size(), 1u);
    const std::string f = files[0];
    std::vector<uint8_t> b = read_file(Env::posix(), f);
    if (damage == 0) remove_file(Env::posix(), f);
    if (damage == 1) b.resize(b.size() - 100);
    if (damage == 2) b.insert(b.end(), 16, 0);
    if (damage > 0) write_file_atomic(Env::posix(), f, b.data(), b.size(), false);
    std::vector<uint64_t> v;
    Status st = fc.read(0, &v);
    EXPECT_EQ(st.code(), Errc::kCorrupt) << "a damaged fragment file read back: " << status_str(st);
    EXPECT_NE(st.message().find(f), std::string::npos) << "the error names the file: " << st.message();
    VerifyReport r = fc.verify();
    EXPECT_TRUE(mentions(r.problems, f.substr(f.rfind('/') + 1))) << "verify does not report " << f;
    // The other array is untouched.
    st = fc.read(1, &v);
    EXPECT_TRUE(st.ok()) << status_str(st);
    EXPECT_EQ(v, box_values(fc.all, 2));
  }
}

// A fragment file no commit recorded — here another array's fragment copied in — is not
// part of the array: before file records were complete it was read (its cells replaced
// the committed ones) and recorded by the next writer.  Now readers skip it, verify notes
// it, and the next writer removes it (as a flush cut short by a crash leaves such files).
TEST(Accounting, ForeignFragmentFileIsNotRead) {
  FileContainer fc;
  const std::string other = fc.fragment_files(1).at(0);
  // Newer than the array's own fragment: if read, its cells would win.
  const std::string mine = fc.fragment_files(0).at(0);
  FragmentId mine_id, other_id;
  ASSERT_TRUE(FragmentId::parse(mine.substr(mine.size() - 47, 43), &mine_id));
  ASSERT_TRUE(FragmentId::parse(other.substr(other.size() - 47, 43), &other_id));
  ASSERT_LT(mine_id, other_id);
  const std::string copy = join_path(fc.frag_dir(0), other.substr(other.rfind('/') + 1));
  std::vector<uint8_t> b = read_file(Env::posix(), other);
  write_file_atomic(Env::posix(), copy, b.data(), b.size(), false);
  VerifyReport r = fc.verify();
  EXPECT_TRUE(r.ok()) << r.problems.front();
  EXPECT_TRUE(mentions(r.notes, copy)) << "verify does not note the unrecorded file";
  for (bool writable : {false, true}) {
    SCOPED_TRACE(writable ? "opened by a writer" : "opened by a reader");
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(fc.path, writable, &c).ok());
    std::unique_ptr<Array> a;
    Status st = c->open_array(fc.ids[0], writable, FileContainer::options(), &a);
    ASSERT_TRUE(st.ok()) << status_str(st);
    EXPECT_EQ(read_all(*a, &st), box_values(fc.all, 1)) << "the foreign fragment's cells were read";
    EXPECT_TRUE(st.ok()) << status_str(st);
    EXPECT_EQ(path_exists(Env::posix(), copy), !writable);
  }
  r = fc.verify();
  EXPECT_TRUE(r.ok() && r.notes.empty()) << "after the writer removed it";
}

}  // namespace
}  // namespace tessera
