// The pack's Env against an independent model: the same calls on a real directory
// through the POSIX Env, compared call by call (result and errno) and tree by tree, then
// again after the pack is closed and reopened (checkpoint and replay).  And what only a
// pack has: one writer per file, readers following a writer, unlinked files readable
// while open, space reused, the HDF5 wrapper's EOA kept above everything tessera owns.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/pack/pack_env.h"
#include "engine/pack/pack_test_model.h"
#include "engine/testing/testutil.h"
#include "engine/util/error.h"

using namespace tessera;
using pack_test::diff;
using pack_test::snapshot;

namespace {

const char* const kPaths[] = {"a", "b", "d", "d/a", "d/b", "d/e", "d/e/a", "e", "e/a", "a/x", "d/e/b"};

// One side of the comparison: an Env, a root, and the descriptors of four slots.
struct Side {
  Env* env;
  std::string root;
  int fds[4] = {-1, -1, -1, -1};
  std::string at(const char* rel) const { return root + "/" + rel; }
};

// Bytes read, short enough for a message: their length, a hash, and where the first
// nonzero byte after a run of zeros is (stale bytes show up there).
std::string digest(const std::string& b) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : b) h = (h ^ c) * 1099511628211ULL;
  return std::to_string(b.size()) + " bytes, hash " + std::to_string(h) + ", zeros at " +
         std::to_string(b.find(std::string(16, '\0')));
}

// The outcome of a call: its result, and errno when it failed.
std::string outcome(long rc) { return rc < 0 ? "-1 " + std::string(std::strerror(errno)) : std::to_string(rc); }

struct Differential {
  Side pack, posix;
  testutil::Rng rng;
  std::string log;
  explicit Differential(uint64_t seed) : rng(seed) {}

  // Runs f on both sides and expects the same outcome.
  template <class F>
  void both(const std::string& what, F f) {
    const std::string a = f(pack), b = f(posix);
    log += what + " -> " + b + "\n";
    ASSERT_EQ(a, b) << what << "\nafter:\n" << log;
  }

  void step() {
    const char* p = kPaths[rng.below(std::size(kPaths))];
    const char* q = kPaths[rng.below(std::size(kPaths))];
    const int s = static_cast<int>(rng.below(4));
    const int op = static_cast<int>(rng.below(15));
    std::vector<uint8_t> data(rng.below(3) == 0 ? rng.range(0, 40000) : rng.range(0, 300));
    rng.fill(data.data(), data.size());
    const uint64_t off = rng.range(0, 9000), len = rng.range(0, 20000);
    auto close_slot = [&](Side& d) {
      if (d.fds[s] >= 0) d.env->close(d.fds[s]);
      d.fds[s] = -1;
    };
    switch (op) {
      case 0: both(std::string("mkdir ") + p, [&](Side& d) { return outcome(d.env->mkdir(d.at(p).c_str(), 0755)); }); break;
      case 1: both(std::string("rmdir ") + p, [&](Side& d) { return outcome(d.env->rmdir(d.at(p).c_str())); }); break;
      case 2: both(std::string("unlink ") + p, [&](Side& d) { return outcome(d.env->unlink(d.at(p).c_str())); }); break;
      case 3:
        both(std::string("rename ") + p + " " + q,
             [&](Side& d) { return outcome(d.env->rename(d.at(p).c_str(), d.at(q).c_str())); });
        break;
      case 4:
        both(std::string("link ") + p + " " + q,
             [&](Side& d) { return outcome(d.env->link(d.at(p).c_str(), d.at(q).c_str())); });
        break;
      case 5:
      case 6: {
        const int flags = O_RDWR | O_CREAT | (rng.chance(0.2) ? O_TRUNC : 0) | (rng.chance(0.1) ? O_EXCL : 0);
        both("open " + std::string(p) + " flags " + std::to_string(flags) + " slot " + std::to_string(s), [&](Side& d) {
          close_slot(d);
          d.fds[s] = d.env->open(d.at(p).c_str(), flags, 0644);
          return outcome(d.fds[s] < 0 ? -1 : 0);
        });
        break;
      }
      case 7:
        both("pwrite slot " + std::to_string(s) + " " + std::to_string(data.size()) + " at " + std::to_string(off),
             [&](Side& d) {
               if (d.fds[s] < 0) return std::string("closed");
               return outcome(d.env->pwrite(d.fds[s], data.data(), data.size(), static_cast<off_t>(off)));
             });
        break;
      case 8:
        both("ftruncate slot " + std::to_string(s) + " " + std::to_string(len), [&](Side& d) {
          if (d.fds[s] < 0) return std::string("closed");
          return outcome(d.env->ftruncate(d.fds[s], static_cast<off_t>(len)));
        });
        break;
      case 9:
        both("close slot " + std::to_string(s), [&](Side& d) {
          if (d.fds[s] < 0) return std::string("closed");
          close_slot(d);
          return std::string("0");
        });
        break;
      case 10:
        both("pread slot " + std::to_string(s) + " " + std::to_string(len) + " at " + std::to_string(off),
             [&](Side& d) {
               if (d.fds[s] < 0) return std::string("closed");
               std::string buf(len, '\0');
               ssize_t r = d.env->pread(d.fds[s], &buf[0], len, static_cast<off_t>(off));
               return r < 0 ? outcome(r) : digest(buf.substr(0, static_cast<size_t>(r)));
             });
        break;
      case 11:
        both(std::string("stat ") + p, [&](Side& d) {
          struct stat st;
          if (d.env->stat(d.at(p).c_str(), &st, true) != 0) return outcome(-1);
          return S_ISDIR(st.st_mode) ? std::string("dir") : "file " + std::to_string(st.st_size);
        });
        break;
      case 12:
        both(std::string("list ") + p, [&](Side& d) {
          std::vector<std::string> names;
          int e = d.env->list_dir(d.at(p).c_str(), &names);
          if (e) return std::string("error ") + std::strerror(e);
          std::sort(names.begin(), names.end());
          std::string s2;
          for (auto& n : names) s2 += n + ",";
          return s2;
        });
        break;
      case 13:
        both("fdatasync slot " + std::to_string(s), [&](Side& d) {
          if (d.fds[s] < 0) return std::string("closed");
          return outcome(d.env->fdatasync(d.fds[s]));
        });
        break;
      case 14:
        both(std::string("open dir ") + p, [&](Side& d) {
          int fd = d.env->open(d.at(p).c_str(), O_RDONLY | O_DIRECTORY, 0);
          if (fd < 0) return outcome(-1);
          int rc = d.env->fsync(fd);
          d.env->close(fd);
          return outcome(rc);
        });
        break;
    }
  }
};

TEST(PackEnv, MatchesAPosixDirectoryCallByCall) {
  const uint64_t seeds = testutil::env_u64("TESSERA_PACK_SEEDS", 12);
  for (uint64_t i = 0; i < seeds; ++i) {
    const uint64_t seed = testutil::named_seed("pack_differential", 7) + i;
    SCOPED_TRACE("seed " + std::to_string(seed));
    testutil::TempDir tmp("tessera_pack");
    const std::string file = tmp.sub("c.tsr"), dir = tmp.sub("d");
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    auto env = PackEnv::create(nullptr, file, i % 2 ? pack_test::fake_wrapper() : std::vector<uint8_t>{}, true);
    Differential run(seed);
    run.pack = Side{env.get(), file};
    run.posix = Side{&Env::posix(), dir};
    for (int k = 0; k < 600 && !::testing::Test::HasFatalFailure(); ++k) run.step();
    if (::testing::Test::HasFatalFailure()) return;
    // Descriptors still open (some on unlinked files) hold nothing that must survive.
    for (int s = 0; s < 4; ++s) {
      if (run.pack.fds[s] >= 0) env->close(run.pack.fds[s]);
      if (run.posix.fds[s] >= 0) ::close(run.posix.fds[s]);
    }
    const auto want = snapshot(Env::posix(), dir);
    EXPECT_EQ(diff(snapshot(*env, file), want), "") << run.log;
    env.reset();  // a clean close: checkpoint, file cut to what it holds
    auto reader = PackEnv::open(nullptr, file, false);
    EXPECT_EQ(diff(snapshot(*reader, file), want), "") << "reopened read-only";
    reader.reset();
    auto writer = PackEnv::open(nullptr, file, true);
    EXPECT_EQ(diff(snapshot(*writer, file), want), "") << "reopened for writing";
  }
}

// A journal past its checkpoint threshold is checkpointed at a sync; an open replays from
// the new checkpoint and the tree is the same.
TEST(PackEnv, CheckpointsKeepTheTree) {
  testutil::TempDir tmp("tessera_pack");
  const std::string file = tmp.sub("c.tsr");
  auto env = PackEnv::create(nullptr, file, {}, true);
  ASSERT_EQ(env->mkdir((file + "/d").c_str(), 0755), 0);
  std::string expect;
  int fd = env->open((file + "/d/log").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 40000; ++i) {  // one size record each: ~2 MiB of journal
    const char c = static_cast<char>('a' + i % 26);
    ASSERT_EQ(env->pwrite(fd, &c, 1, i), 1);
    expect += c;
    if (i % 1000 == 999) {
      ASSERT_EQ(env->fdatasync(fd), 0);
    }
  }
  ASSERT_EQ(env->close(fd), 0);
  const auto want = snapshot(*env, file);
  ASSERT_EQ(want.at("d/log"), "F" + expect);
  struct stat st;
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_LT(st.st_size, 4 << 20) << "journals retired by checkpoints are reused";
  env.reset();
  auto again = PackEnv::open(nullptr, file, false);
  EXPECT_EQ(diff(snapshot(*again, file), want), "");
}

TEST(PackEnv, OneWriterAtATime) {
  testutil::TempDir tmp("tessera_pack");
  const std::string file = tmp.sub("c.tsr");
  auto w = PackEnv::create(nullptr, file, {}, true);
  try {
    PackEnv::open(nullptr, file, true);
    FAIL() << "a second writer opened the pack";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kBusy);
    EXPECT_NE(std::string(e.what()).find("open for writing by another process"), std::string::npos) << e.what();
  }
  auto r = PackEnv::open(nullptr, file, false);  // readers may come and go
  EXPECT_EQ(r->mkdir((file + "/x").c_str(), 0755), -1);
  EXPECT_EQ(errno, EROFS);
  w.reset();
  EXPECT_NO_THROW(PackEnv::open(nullptr, file, true));
}

// HDF5's own locking is flock: tessera's openers hold it shared, so a native writer and
// tessera never have the file open at once (a native reader may).
TEST(PackEnv, NativeWritersAreLockedOut) {
  testutil::TempDir tmp("tessera_pack");
  const std::string file = tmp.sub("c.tsr");
  PackEnv::create(nullptr, file, pack_test::fake_wrapper(), true).reset();
  int native = ::open(file.c_str(), O_RDWR);
  ASSERT_EQ(::flock(native, LOCK_EX | LOCK_NB), 0);
  try {
    PackEnv::open(nullptr, file, false);
    FAIL() << "opened while a native program writes the file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kBusy);
    EXPECT_NE(std::string(e.what()).find("native HDF5 program"), std::string::npos) << e.what();
  }
  ::flock(native, LOCK_UN);
  auto r = PackEnv::open(nullptr, file, false);
  EXPECT_NE(::flock(native, LOCK_EX | LOCK_NB), 0) << "a native writer got in beside tessera";
  EXPECT_EQ(::flock(native, LOCK_SH | LOCK_NB), 0) << "a native reader may read the wrapper";
  ::close(native);
}

TEST(PackEnv, ReaderFollowsTheWriter) {
  testutil::TempDir tmp("tessera_pack");
  const std::string file = tmp.sub("c.tsr");
  auto w = PackEnv::create(nullptr, file, {}, true);
  auto r = PackEnv::open(nullptr, file, false);
  std::vector<std::string> names;
  ASSERT_EQ(r->list_dir(file.c_str(), &names), 0);
  EXPECT_TRUE(names.empty());
  int fd = w->open((file + "/f.tmp").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_EQ(w->pwrite(fd, "hello", 5, 0), 5);
  ASSERT_EQ(w->rename((file + "/f.tmp").c_str(), (file + "/f").c_str()), 0);
  // Not synced: another opener sees the calls at once, as with a directory.
  struct stat st;
  ASSERT_EQ(r->stat((file + "/f").c_str(), &st, true), 0);
  EXPECT_EQ(st.st_size, 5);
  int rfd = r->open((file + "/f").c_str(), O_RDONLY, 0);
  ASSERT_GE(rfd, 0);
  ASSERT_EQ(w->pwrite(fd, " world", 6, 5), 6);
  char buf[16] = {};
  EXPECT_EQ(r->pread(rfd, buf, sizeof buf, 0), 11) << "a read past the size it knew follows the journal";
  EXPECT_STREQ(buf, "hello world");
  w->close(fd);
  r->close(rfd);
}

// The same across processes: a reader process sees what the writer process does, once
// it does it (no sync needed, as with a directory), and a second writer process is refused.
TEST(PackEnv, ReaderProcessFollowsWriterProcess) {
  testutil::TempDir tmp("tessera_pack");
  const std::string file = tmp.sub("c.tsr");
  auto w = PackEnv::create(nullptr, file, pack_test::fake_wrapper(), true);
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    int code = 0;
    try {
      auto r = PackEnv::open(nullptr, file, false);
      try {
        PackEnv::open(nullptr, file, true);
        code = 3;  // a second writer got in
      } catch (const Error& e) {
        if (e.code() != Errc::kBusy) code = 4;
      }
      char c;
      if (::read(go[0], &c, 1) != 1) ::_exit(5);
      std::vector<std::string> names;
      if (r->list_dir((file + "/d").c_str(), &names) != 0 || names != std::vector<std::string>{"f"}) ::_exit(6);
      int fd = r->open((file + "/d/f").c_str(), O_RDONLY, 0);
      char buf[8] = {};
      if (fd < 0 || r->pread(fd, buf, sizeof buf, 0) != 5 || std::string(buf) != "fresh") ::_exit(7);
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(code);
  }
  ASSERT_EQ(w->mkdir((file + "/d").c_str(), 0755), 0);
  int fd = w->open((file + "/d/.f.tmp").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_EQ(w->pwrite(fd, "fresh", 5, 0), 5);
  ASSERT_EQ(w->rename((file + "/d/.f.tmp").c_str(), (file + "/d/f").c_str()), 0);
  w->close(fd);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the reader process's check " << WEXITSTATUS(status) << " failed";
}

// POSIX keeps an unlinked file readable through descriptors opened before; the writer
// must not reuse its bytes while another opener may read them.
TEST(PackEnv, UnlinkedFileStaysReadableWhileOpen) {
  testutil::TempDir tmp("tessera_pack");
  const std::string file = tmp.sub("c.tsr");
  auto w = PackEnv::create(nullptr, file, {}, true);
  const std::string big(3 << 20, 'x');
  int fd = w->open((file + "/old").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_EQ(w->pwrite(fd, big.data(), big.size(), 0), static_cast<ssize_t>(big.size()));
  ASSERT_EQ(w->fdatasync(fd), 0);
  w->close(fd);
  auto r = PackEnv::open(nullptr, file, false);
  int rfd = r->open((file + "/old").c_str(), O_RDONLY, 0);
  int wfd = w->open((file + "/old").c_str(), O_RDONLY, 0);
  ASSERT_EQ(w->unlink((file + "/old").c_str()), 0);
  ASSERT_EQ(w->fdatasync(wfd), 0);
  w->close(wfd);  // the writer's last descriptor: its bytes are free once safe
  const std::string other(3 << 20, 'y');
  fd = w->open((file + "/new").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_EQ(w->pwrite(fd, other.data(), other.size(), 0), static_cast<ssize_t>(other.size()));
  ASSERT_EQ(w->fdatasync(fd), 0);
  std::string back(big.size(), '\0');
  ASSERT_EQ(r->pread(rfd, &back[0], back.size(), 0), static_cast<ssize_t>(back.size()));
  EXPECT_TRUE(back == big) << "the reader's unlinked file was overwritten";
  r->close(rfd);
  r.reset();
  // No reader now: the next allocation reuses the old file's bytes instead of growing.
  struct stat before, after;
  ASSERT_EQ(::stat(file.c_str(), &before), 0);
  int fd2 = w->open((file + "/third").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_EQ(w->pwrite(fd2, other.data(), other.size(), 0), static_cast<ssize_t>(other.size()));
  ASSERT_EQ(::stat(file.c_str(), &after), 0);
  EXPECT_EQ(after.st_size, before.st_size) << "freed bytes were not reused";
  w->close(fd);
  w->close(fd2);
}

// After a clean close the file holds little beyond the live data (issue 42: vacuum leaves
// at most 1.2x the live data).
TEST(PackEnv, CleanCloseCutsTheFile) {
  testutil::TempDir tmp("tessera_pack");
  const std::string file = tmp.sub("c.tsr");
  auto w = PackEnv::create(nullptr, file, pack_test::fake_wrapper(), true);
  const std::string chunk(1 << 20, 'z');
  for (int i = 0; i < 8; ++i) {
    const std::string p = file + "/f" + std::to_string(i);
    int fd = w->open(p.c_str(), O_RDWR | O_CREAT, 0644);
    ASSERT_EQ(w->pwrite(fd, chunk.data(), chunk.size(), 0), static_cast<ssize_t>(chunk.size()));
    w->close(fd);
  }
  for (int i = 0; i < 8; i += 2) ASSERT_EQ(w->unlink((file + "/f" + std::to_string(i)).c_str()), 0);
  int dfd = w->open(file.c_str(), O_RDONLY | O_DIRECTORY, 0);
  ASSERT_EQ(w->fsync(dfd), 0);
  w->close(dfd);
  w.reset();
  struct stat st;
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  uint64_t eoa = 0;
  int fd = ::open(file.c_str(), O_RDONLY);
  ASSERT_EQ(::pread(fd, &eoa, 8, 40), 8);
  ::close(fd);
  EXPECT_EQ(eoa, static_cast<uint64_t>(st.st_size)) << "the HDF5 EOA is the file's end after a clean close";
  EXPECT_GE(eoa, 4u << 20);
  EXPECT_LE(eoa, (4u << 20) * 6 / 5) << "the live half moved down into the holes: at most 1.2x the live data";
  auto r = PackEnv::open(nullptr, file, false);
  const auto snap = snapshot(*r, file);
  EXPECT_EQ(snap.size(), 4u);
  for (auto& kv : snap) EXPECT_EQ(kv.second, "F" + chunk) << kv.first;
}

// A native HDF5 program that opens the file read-write allocates at the superblock's EOA
// and moves the EOA past what it wrote: tessera must leave those bytes alone (foreign)
// and go on allocating past them.
TEST(PackEnv, BytesANativeProgramAppendedAreKept) {
  testutil::TempDir tmp("tessera_pack");
  const std::string file = tmp.sub("c.h5");
  auto w = PackEnv::create(nullptr, file, pack_test::fake_wrapper(), true);
  const std::string before(300000, 'b');
  int fd = w->open((file + "/before").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_EQ(w->pwrite(fd, before.data(), before.size(), 0), static_cast<ssize_t>(before.size()));
  w->close(fd);
  w.reset();
  // The native program: 100000 bytes at the EOA, the EOA moved past them.
  uint64_t eoa = 0;
  int raw = ::open(file.c_str(), O_RDWR);
  ASSERT_EQ(::pread(raw, &eoa, 8, 40), 8);
  const std::string native(100000, 'n');
  ASSERT_EQ(::pwrite(raw, native.data(), native.size(), static_cast<off_t>(eoa)), static_cast<ssize_t>(native.size()));
  const uint64_t native_eoa = eoa + native.size();
  ASSERT_EQ(::pwrite(raw, &native_eoa, 8, 40), 8);
  ::close(raw);

  w = PackEnv::open(nullptr, file, true);
  const std::string after(2 << 20, 'a');
  fd = w->open((file + "/after").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_EQ(w->pwrite(fd, after.data(), after.size(), 0), static_cast<ssize_t>(after.size()));
  ASSERT_EQ(w->fdatasync(fd), 0);
  w->close(fd);
  ASSERT_EQ(w->unlink((file + "/before").c_str()), 0);  // space before the native bytes frees up
  w.reset();

  raw = ::open(file.c_str(), O_RDONLY);
  std::string back(native.size(), '\0');
  ASSERT_EQ(::pread(raw, &back[0], back.size(), static_cast<off_t>(eoa)), static_cast<ssize_t>(back.size()));
  uint64_t final_eoa = 0;
  ASSERT_EQ(::pread(raw, &final_eoa, 8, 40), 8);
  struct stat st;
  ASSERT_EQ(::fstat(raw, &st), 0);
  ::close(raw);
  EXPECT_TRUE(back == native) << "tessera wrote over the native program's bytes";
  EXPECT_GE(final_eoa, native_eoa);
  EXPECT_EQ(final_eoa, static_cast<uint64_t>(st.st_size)) << "the file is never shorter than the EOA";
  auto r = PackEnv::open(nullptr, file, false);
  const auto snap = snapshot(*r, file);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap.at("after"), "F" + after);
}

TEST(PackEnv, NotAPackIsACleanError) {
  testutil::TempDir tmp("tessera_pack");
  const std::string file = tmp.sub("plain");
  {
    int fd = ::open(file.c_str(), O_RDWR | O_CREAT, 0644);
    const std::vector<uint8_t> w = pack_test::fake_wrapper();
    ASSERT_EQ(::write(fd, w.data(), w.size()), static_cast<ssize_t>(w.size()));
    ::close(fd);
  }
  EXPECT_FALSE(PackEnv::is_pack(Env::posix(), file));
  try {
    PackEnv::open(nullptr, file, false);
    FAIL() << "opened a file without an anchor";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("an HDF5 file but not a tessera container"), std::string::npos) << e.what();
  }
  EXPECT_THROW(PackEnv::create(nullptr, tmp.sub("bad"), std::vector<uint8_t>(100, 1), true), Error);
}

}  // namespace
