// A parallel file reopened read-only after its job crashed mid-epoch (docs/reliability.md,
// "Readers outside an MPI job"): the crashed ranks' share logs (frag/.r<rank>.share.tmp)
// and shared fragments (frag/.<id>.tfr.shared.tmp) are still there — only a writable
// open (rank 0's recover_arrays) removes them — and they hold writes no epoch committed.
// A read-only job must read exactly the last committed epoch: what recovery would
// discard is not read.  (Every rank of a read-only open is a reader: the connector opens
// arrays writable exactly when the file is, so no rank of that job writes a share log.)
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/container/commit.h"
#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "engine/testing/test_schema.h"
#include "engine/testing/testutil.h"
#include "engine/testing/thread_group.h"

using namespace tessera;

namespace {

constexpr uint64_t N = 32;

ArrayOptions rank_opts(uint32_t rank, uint32_t ranks) {
  ArrayOptions o;
  o.durable_writes = false;
  o.collective = true;
  o.writer_rank = rank;
  o.share_ranks = ranks;
  return o;
}

std::vector<std::string> names_ending(const std::string& dir, const std::string& tail) {
  std::vector<std::string> out;
  for (const std::string& n : list_dir(Env::posix(), dir))
    if (n.size() > tail.size() && n.compare(n.size() - tail.size(), tail.size(), tail) == 0) out.push_back(n);
  return out;
}

}  // namespace

TEST(ReadOnlyReopen, AfterACrashedEpochReadsTheLastCommittedEpochOnly) {
  testutil::TempDir dir("tessera_roreopen");
  const std::string path = dir.sub("c");
  uint64_t id;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::create(path, Container::CreateMode::kTruncate, &c).ok());
    c->set_file_arrays(true);
    ASSERT_TRUE(c->create_array(int32_schema({N, N}, {N, N}, {8, 8}), &id).ok());
    ASSERT_TRUE(c->sync().ok());
  }
  // Epoch 1 (a job of one rank): every cell 1.  The model.
  const std::vector<int32_t> model(N * N, 1);
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(path, true, &c).ok());
    c->set_file_arrays(true);
    std::map<uint64_t, std::shared_ptr<Array>> open;
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, true, rank_opts(0, 1), &a).ok());
    ASSERT_TRUE(a->write(Selection::from_box(Box({0, 0}, {N - 1, N - 1})), model.data()).ok());
    open[id] = std::move(a);
    testutil::ThreadGroup::Shared shared(1);
    testutil::ThreadGroup g(shared, 0);
    Status st = commit_epoch(*c, g, open, {}, 1);
    ASSERT_TRUE(st.ok()) << st.message();
  }
  // Epoch 2 of a two-rank job, killed before it commits: rank 1's small writes are in
  // its share log, rank 0's point writes in a shared fragment file.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    bool ok = true;
    std::unique_ptr<Container> root, shadow;
    ok = ok && Container::open(path, true, &root).ok();
    if (ok) root->set_file_arrays(true);
    ok = ok && Container::open_shadow(path, &shadow).ok();
    std::unique_ptr<Array> r0, r1;
    ok = ok && root->open_array(id, true, rank_opts(0, 2), &r0).ok();
    ok = ok && shadow->open_array(id, true, rank_opts(1, 2), &r1).ok();
    for (uint64_t k = 0; ok && k < 4; ++k) {
      std::vector<int32_t> v(4 * 8, static_cast<int32_t>(20 + k));
      ok = r1->refresh_fragments().ok() &&
           r1->write(Selection::from_box(Box({8 * k, 4}, {8 * k + 3, 11})), v.data()).ok() &&
           r1->share_own().ok();
    }
    uint64_t pts[6] = {1, 1, 17, 30, 31, 0};
    int32_t pv[3] = {30, 31, 32};
    ok = ok && r0->refresh_fragments().ok() && r0->write_points(pts, 3, pv).ok() && r0->share_own().ok();
    // Rank 0 sees rank 1's writes (the job's own visibility): the crash is mid-epoch.
    std::vector<int32_t> v(N * N);
    ok = ok && r0->refresh_fragments().ok() && r0->read(Selection::from_box(Box({0, 0}, {N - 1, N - 1})), v.data()).ok();
    ok = ok && v[4] == 20 && v[17 * N + 30] == 31;
    _exit(ok ? 0 : 3);  // no destructor runs: the logs and shared files stay
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the crashed job's writes failed";
  std::string frag;
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(path, false, &c).ok());
    std::unique_ptr<Array> a;
    ASSERT_TRUE(c->open_array(id, false, ArrayOptions{}, &a).ok());
    frag = join_path(a->dir(), "frag");
  }
  const size_t logs = names_ending(frag, ".share.tmp").size();  // rank 1's, and rank 0's (its kShared record)
  ASSERT_GE(logs, 1u) << "no share log left by the crash";
  ASSERT_EQ(names_ending(frag, ".tfr.shared.tmp").size(), 1u) << "no shared fragment left by the crash";

  auto read = [&](Container& c, const ArrayOptions& o, std::vector<int32_t>* v) {
    std::unique_ptr<Array> a;
    Status st = c.open_array(id, false, o, &a);
    if (!st.ok()) return st;
    // Read, then again after a refresh (H5Drefresh, a cached handle): both go into v.
    v->assign(2 * N * N, -7);
    st = a->read(Selection::from_box(Box({0, 0}, {N - 1, N - 1})), v->data());
    if (st.ok()) st = a->refresh_fragments();
    if (st.ok()) st = a->read(Selection::from_box(Box({0, 0}, {N - 1, N - 1})), v->data() + N * N);
    return st;
  };
  auto differ = [&](const std::vector<int32_t>& v) {
    int bad = 0;
    for (uint64_t k = 0; k < v.size(); ++k) bad += v[k] != model[k % (N * N)];
    return bad;
  };
  // A read-only job of two ranks, and a serial reader.
  for (uint32_t r = 0; r < 2; ++r) {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(path, false, &c).ok());
    std::vector<int32_t> v;
    Status st = read(*c, rank_opts(r, 2), &v);
    ASSERT_TRUE(st.ok()) << "rank " << r << ": " << st.message();
    EXPECT_EQ(differ(v), 0) << "read-only rank " << r << " reads writes no epoch committed";
  }
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(path, false, &c).ok());
    std::vector<int32_t> v;
    ASSERT_TRUE(read(*c, ArrayOptions{}, &v).ok());
    EXPECT_EQ(differ(v), 0) << "a serial reader";
  }
  EXPECT_EQ(names_ending(frag, ".share.tmp").size(), logs) << "a read-only open removed a file";
  // A writable open (rank 0 at file open) recovers: the leftovers go, the data stays.
  {
    std::unique_ptr<Container> c;
    ASSERT_TRUE(Container::open(path, true, &c).ok());
    c->set_file_arrays(true);
    ASSERT_TRUE(c->recover_arrays().ok());
    std::vector<int32_t> v;
    ASSERT_TRUE(read(*c, ArrayOptions{}, &v).ok());
    EXPECT_EQ(differ(v), 0) << "after recovery";
  }
  EXPECT_EQ(names_ending(frag, ".share.tmp").size() + names_ending(frag, ".tfr.shared.tmp").size(), 0u);
}
