// Publish logs (publish_log.h; docs/format.md "Publish logs"): what a crash or a damaged
// disk leaves in one — a torn tail, entries a torn append left zeroed, a trim's
// temporary file — never hides an entry appended later, and never stays behind once the
// file's sole writer opens it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "engine/publish/publish_log.h"
#include "engine/testing/test_schema.h"
#include "engine/testing/testutil.h"
#include "engine/container/verify.h"

using namespace tessera;

namespace {

using Entries = std::map<FragmentId, uint64_t>;

FragmentId fid(uint32_t seq) { return FragmentId{1700000000000000000ull + seq, 1, seq, 0}; }

Entries read_log(const std::string& frag, uint32_t rank) {
  return read_publish_logs(Env::posix(), frag, {publish_log_name(rank)});
}

void append_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::FILE* f = std::fopen(path.c_str(), "ab");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(b.data(), 1, b.size(), f), b.size());
  std::fclose(f);
}

// Calls through to the POSIX Env; a rename whose source contains `die_at` ends the
// process (a forked writer killed between its temporary file and the rename).
class DieAtRename final : public EnvWrapper {
 public:
  explicit DieAtRename(std::string die_at) : EnvWrapper(Env::posix()), die_at_(std::move(die_at)) {}
  int rename(const char* from, const char* to) override {
    if (std::string(from).find(die_at_) != std::string::npos) _exit(0);
    return base_.rename(from, to);
  }

 private:
  std::string die_at_;
};

}  // namespace

// A crash in the middle of an append of several entries can leave the log's size grown
// by whole entries whose bytes are zeros (or, damaged, any bytes): a reader stops at the
// first bad entry.  The next append must land where readers stop — its entries are the
// permission for files renamed right after it — and the entries behind the damage must
// not come back after the new ones.  (They were written after the damage and never read:
// the files then published read as "not published in this container".)
TEST(PublishLog, AnEntryAppendedAfterADamagedTailIsRead) {
  testutil::TempDir dir("tessera_publog");
  const std::string frag = dir.path(), log = join_path(frag, publish_log_name(1));
  Env& env = Env::posix();
  append_publish_log(env, frag, 1, {{fid(1), 100}, {fid(2), 200}});
  ASSERT_EQ(read_log(frag, 1), (Entries{{fid(1), 100}, {fid(2), 200}}));

  // Two whole entries of zeros (a torn two-entry append), then an append.
  append_bytes(log, std::vector<uint8_t>(2 * 59, 0));
  ASSERT_EQ(read_log(frag, 1).size(), 2u);
  append_publish_log(env, frag, 1, {{fid(3), 300}});
  EXPECT_EQ(read_log(frag, 1), (Entries{{fid(1), 100}, {fid(2), 200}, {fid(3), 300}}))
      << "the entry appended after the zeroed ones is not read";

  // Damage in the middle: entry 2 of 4 changed.  Entries 3 and 4 were never read; the
  // append replaces them, and they must not be read after it either.
  append_publish_log(env, frag, 1, {{fid(4), 400}});
  std::vector<uint8_t> b = read_file(env, log);
  ASSERT_EQ(b.size(), 4u * 59);
  b[59 + 5] ^= 0x40;  // the id's hex digits of the second entry
  write_file_atomic(env, log, b.data(), b.size(), false);
  ASSERT_EQ(read_log(frag, 1), (Entries{{fid(1), 100}}));
  append_publish_log(env, frag, 1, {{fid(5), 500}});
  EXPECT_EQ(read_log(frag, 1), (Entries{{fid(1), 100}, {fid(5), 500}}));

  // A torn entry (a partial one at the end): overwritten, as before.
  append_bytes(log, std::vector<uint8_t>(30, 'x'));
  append_publish_log(env, frag, 1, {{fid(6), 600}});
  EXPECT_EQ(read_log(frag, 1), (Entries{{fid(1), 100}, {fid(5), 500}, {fid(6), 600}}));
  EXPECT_EQ(read_file(env, log).size(), 3u * 59);
}

// A trim rewrites the log under a temporary name ("published-r<rank>.log.tmp.<pid>.<n>")
// and renames it over the log; a writer killed between the two leaves the temporary
// file.  The sole writer's open — a serial writer, or rank 0 recovering a parallel file
// at open (recover_arrays) — removes it, as it removes the other temporary files a crash
// leaves; a read-only open and a shadow rank (another rank may be in its own trim) leave
// it, and the log itself stays whole.
TEST(PublishLog, ATrimCutShortLeavesNoTemporaryFileOnceTheSoleWriterOpens) {
  testutil::TempDir dir("tessera_publog");
  const std::string path = dir.sub("c");
  const Schema schema = int32_schema({16, 16}, {16, 16}, {8, 8});
  uint64_t id;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kTruncate, &c).ok());
    c->set_file_arrays(true);
    ASSERT_TRUE(c->create_array(schema, &id).ok());
    ASSERT_TRUE(c->sync().ok());
  }
  ArrayOptions rank1;
  rank1.durable_writes = false;
  rank1.blob_bytes = 0;  // a box write is a fragment of its own
  rank1.collective = true;
  rank1.writer_rank = 1;
  std::vector<int32_t> model(256, 0);
  std::string frag;
  {  // Rank 1 publishes two fragments on its own (H5Dclose); no epoch records them.
    std::unique_ptr<Container> shadow;
    ASSERT_TRUE(Container::open_shadow(path, &shadow).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(shadow->open_array(id, true, rank1, &a).ok());
    for (uint64_t lo : {8, 0}) {
      std::vector<int32_t> v(8 * 16, static_cast<int32_t>(lo + 1));
      ASSERT_TRUE(a->write(Selection::from_box(Box({lo, 0}, {lo + 7, 15})), v.data()).ok());
      std::fill(model.begin() + lo * 16, model.begin() + (lo + 8) * 16, static_cast<int32_t>(lo + 1));
    }
    size_t n = 0;
    ASSERT_TRUE(a->publish_own(&n).ok());
    ASSERT_EQ(n, 2u);
    frag = join_path(a->dir(), "frag");
  }
  const Entries logged = read_log(frag, 1);
  ASSERT_EQ(logged.size(), 2u);

  // A trim of one entry, killed before its rename.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    DieAtRename env(publish_log_name(1) + ".tmp.");
    try {
      trim_publish_log(env, frag, 1, Entries{*logged.begin()});
    } catch (...) {
    }
    _exit(3);  // the rename was never reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the trim did not reach its rename";
  auto leftovers = [&] {
    std::vector<std::string> out;
    for (const std::string& n : list_dir(Env::posix(), frag))
      if (n.rfind(publish_log_name(1) + ".tmp.", 0) == 0) out.push_back(n);
    return out;
  };
  ASSERT_EQ(leftovers().size(), 1u);
  EXPECT_EQ(read_log(frag, 1), logged);

  auto read_all = [&](Container& c) {
    std::unique_ptr<Array> a;
    Status st = c.open_array(id, false, ArrayOptions{}, &a);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok()) return std::vector<int32_t>{};
    std::vector<int32_t> v(256, -7);
    st = a->read(Selection::from_box(Box({0, 0}, {15, 15})), v.data());
    EXPECT_TRUE(st.ok()) << st.message();
    return v;
  };
  {  // A reader, and a shadow rank opening the array writable: the file stays.
    std::unique_ptr<Container> r;
    ASSERT_TRUE(Container::open(path, false, &r).ok());
    EXPECT_EQ(read_all(*r), model);
    std::unique_ptr<Container> shadow;
    ASSERT_TRUE(Container::open_shadow(path, &shadow).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(shadow->open_array(id, true, rank1, &a).ok());
  }
  EXPECT_EQ(leftovers().size(), 1u) << "removed by an open that is not the sole writer";
  {  // Rank 0 (or a serial writer) opening the file for writing.
    std::unique_ptr<Container> w;
    ASSERT_TRUE(Container::open(path, true, &w).ok());
    ASSERT_TRUE(w->recover_arrays().ok());
    EXPECT_EQ(read_all(*w), model);
  }
  EXPECT_EQ(leftovers(), std::vector<std::string>{}) << "the trim's temporary file stays";
  EXPECT_EQ(read_log(frag, 1), logged) << "recovery changed the log";
  VerifyReport r;
  ASSERT_TRUE(verify_container(path, VerifyOptions(), &r).ok());
  for (auto& p : r.problems) ADD_FAILURE() << "verify: " << p;
}
