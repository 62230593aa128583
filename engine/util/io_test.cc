// File helpers and error mapping (engine/util/file_io.h, engine/util/error.h, engine/util/checksum.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/util/checksum.h"
#include "engine/util/error.h"
#include "engine/util/file_io.h"

namespace tessera {
namespace {

class IoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera_io_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { remove_tree(Env::posix(), dir_); }
  std::string p(const std::string& name) const { return join_path(dir_, name); }
  std::string dir_;
};

template <class F>
Errc code_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return Errc::kOk;
}

TEST(IoError, ErrnoMapping) {
  auto msg_and_code = [](int err) -> std::pair<std::string, Errc> {
    try {
      throw_errno("cannot open", "/x/y", err);
    } catch (const Error& e) {
      return {e.what(), e.code()};
    }
    return {};
  };
  auto [msg, code] = msg_and_code(ENOENT);
  EXPECT_EQ(code, Errc::kNotFound);
  EXPECT_EQ(msg, "cannot open '/x/y': No such file or directory (errno = 2)");
  EXPECT_EQ(msg_and_code(EEXIST).second, Errc::kAlreadyExists);
  EXPECT_EQ(msg_and_code(ENOSPC).second, Errc::kNoSpace);
  EXPECT_EQ(msg_and_code(EDQUOT).second, Errc::kNoSpace);
  EXPECT_EQ(msg_and_code(EACCES).second, Errc::kIo);
  EXPECT_STREQ(errc_name(Errc::kCorrupt), "corrupt");
}

TEST(IoError, GuardConvertsExceptions) {
  Status s = guard([] { throw_error(Errc::kBusy, "locked"); });
  EXPECT_EQ(s.code(), Errc::kBusy);
  EXPECT_EQ(s.message(), "locked");
  EXPECT_TRUE(guard([] {}).ok());
}

TEST(IoChecksum, StableAndSensitive) {
  std::string a = "hello tessera";
  EXPECT_EQ(checksum64(a.data(), a.size()), checksum64(a.data(), a.size()));
  std::string b = a;
  b[3] ^= 1;
  EXPECT_NE(checksum64(a.data(), a.size()), checksum64(b.data(), b.size()));
  checksum64(nullptr, 0);  // empty input is allowed
}

TEST_F(IoTest, WriteReadAndTruncatedRead) {
  File f = File::open_rw(Env::posix(), p("a"), true);
  std::vector<uint8_t> data(10000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  f.pwrite_all(data.data(), data.size(), 0);
  f.sync();
  EXPECT_EQ(f.size(), data.size());
  std::vector<uint8_t> back(data.size());
  f.pread_exact(back.data(), back.size(), 0);
  EXPECT_EQ(back, data);
  EXPECT_EQ(f.pread_some(back.data(), 100, 9950), 50u);
  EXPECT_EQ(f.pread_some(back.data(), 100, 20000), 0u);
  try {
    f.pread_exact(back.data(), 100, 9950);
    FAIL() << "expected a truncation error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kCorrupt);
    EXPECT_EQ(std::string(e.what()),
              "'" + p("a") + "': truncated: wanted 100 bytes at offset 9950 (file size 10000)");
  }
  f.truncate(5);
  EXPECT_EQ(f.size(), 5u);
  f.close();
  EXPECT_FALSE(f.is_open());
  EXPECT_EQ(read_file(Env::posix(), p("a")), std::vector<uint8_t>(data.begin(), data.begin() + 5));
}

TEST_F(IoTest, OpenErrorsNameThePath) {
  try {
    File::open_read(Env::posix(), p("missing"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kNotFound);
    EXPECT_NE(std::string(e.what()).find(p("missing")), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("errno = 2"), std::string::npos);
  }
  EXPECT_EQ(code_of([&] { File::open_rw(Env::posix(), p("missing"), false); }), Errc::kNotFound);
  File::open_rw(Env::posix(), p("x"), true, true);
  EXPECT_EQ(code_of([&] { File::open_rw(Env::posix(), p("x"), true, true); }), Errc::kAlreadyExists);
  EXPECT_EQ(code_of([&] { File::open_rw(Env::posix(), p("x"), true, false); }), Errc::kOk);
}

TEST_F(IoTest, MoveTransfersOwnership) {
  File a = File::open_rw(Env::posix(), p("m"), true);
  int fd = a.fd();
  File b = std::move(a);
  EXPECT_FALSE(a.is_open());
  EXPECT_EQ(b.fd(), fd);
  AppendFile af(std::move(b));
  af.append("abc", 3);
  af.append("de", 2);
  EXPECT_EQ(af.offset(), 5u);
  std::vector<uint8_t> got = read_file(Env::posix(), p("m"));
  EXPECT_EQ(std::string(got.begin(), got.end()), "abcde");
}

TEST_F(IoTest, Directories) {
  std::string deep = p("a/b//c/");
  make_dirs(Env::posix(), deep);
  EXPECT_TRUE(is_directory(Env::posix(), p("a/b/c")));
  make_dirs(Env::posix(), deep);  // idempotent
  make_dir(Env::posix(), p("a"));
  write_file_atomic(Env::posix(), p("a/b/file"), "xy", 2);
  EXPECT_TRUE(path_exists(Env::posix(), p("a/b/file")));
  EXPECT_FALSE(is_directory(Env::posix(), p("a/b/file")));
  EXPECT_EQ(code_of([&] { make_dir(Env::posix(), p("a/b/file")); }), Errc::kAlreadyExists);
  EXPECT_EQ(list_dir(Env::posix(), p("a/b")), (std::vector<std::string>{"c", "file"}));
  ASSERT_EQ(::symlink(dir_.c_str(), p("a/b/c/link").c_str()), 0);  // must not be followed
  remove_tree(Env::posix(), p("a"));
  EXPECT_FALSE(path_exists(Env::posix(), p("a")));
  EXPECT_TRUE(is_directory(Env::posix(), dir_));
  remove_tree(Env::posix(), p("a"));  // missing is fine
  remove_file(Env::posix(), p("nothing"));
  EXPECT_EQ(code_of([&] { list_dir(Env::posix(), p("nothing")); }), Errc::kNotFound);
}

TEST_F(IoTest, AtomicWriteReplacesAndLeavesNoTemp) {
  write_file_atomic(Env::posix(), p("f"), "first", 5);
  write_file_atomic(Env::posix(), p("f"), "second!", 7);
  std::vector<uint8_t> got = read_file(Env::posix(), p("f"));
  EXPECT_EQ(std::string(got.begin(), got.end()), "second!");
  write_file_atomic(Env::posix(), p("empty"), nullptr, 0);
  EXPECT_TRUE(read_file(Env::posix(), p("empty")).empty());
  EXPECT_EQ(list_dir(Env::posix(), dir_), (std::vector<std::string>{"empty", "f"}));
  EXPECT_EQ(code_of([&] { write_file_atomic(Env::posix(), p("nodir/f"), "x", 1); }), Errc::kNotFound);
  EXPECT_EQ(list_dir(Env::posix(), dir_).size(), 2u);
}

TEST_F(IoTest, RenameDurable) {
  write_file_atomic(Env::posix(), p("src"), "data", 4);
  make_dir(Env::posix(), p("sub"));
  rename_durable(Env::posix(), p("src"), p("sub/dst"));
  EXPECT_FALSE(path_exists(Env::posix(), p("src")));
  EXPECT_EQ(read_file(Env::posix(), p("sub/dst")).size(), 4u);
  EXPECT_EQ(code_of([&] { rename_durable(Env::posix(), p("src"), p("dst")); }), Errc::kNotFound);
  sync_dir(Env::posix(), dir_);
}

TEST(IoPath, ParentAndJoin) {
  EXPECT_EQ(parent_dir("a/b/c"), "a/b");
  EXPECT_EQ(parent_dir("a/b/c/"), "a/b");
  EXPECT_EQ(parent_dir("a//c"), "a");
  EXPECT_EQ(parent_dir("c"), ".");
  EXPECT_EQ(parent_dir("/c"), "/");
  EXPECT_EQ(parent_dir("/"), "/");
  EXPECT_EQ(parent_dir(""), ".");
  EXPECT_EQ(join_path("a", "b"), "a/b");
  EXPECT_EQ(join_path("a/", "b"), "a/b");
  EXPECT_EQ(join_path("", "b"), "b");
}

TEST_F(IoTest, FileLockExcludesWithinProcess) {
  std::string lp = p("lock");
  FileLock a = FileLock::try_lock(Env::posix(), lp, true);
  ASSERT_TRUE(a.locked());
  EXPECT_FALSE(FileLock::try_lock(Env::posix(), lp, true).locked());
  EXPECT_FALSE(FileLock::try_lock(Env::posix(), lp, false).locked());
  FileLock moved = std::move(a);
  EXPECT_FALSE(a.locked());
  EXPECT_TRUE(moved.locked());
  EXPECT_FALSE(FileLock::try_lock(Env::posix(), lp, true).locked());
  moved.unlock();
  FileLock s1 = FileLock::try_lock(Env::posix(), lp, false), s2 = FileLock::try_lock(Env::posix(), lp, false);
  EXPECT_TRUE(s1.locked());
  EXPECT_TRUE(s2.locked());  // shared locks coexist
  EXPECT_FALSE(FileLock::try_lock(Env::posix(), lp, true).locked());
  s1.unlock();
  s2.unlock();
  EXPECT_TRUE(FileLock::try_lock(Env::posix(), lp, true).locked());
  EXPECT_EQ(code_of([&] { FileLock::try_lock(Env::posix(), p("nodir/lock"), true); }), Errc::kNotFound);
}

}  // namespace
}  // namespace tessera
