// The CatalogTest fixture of the catalog's unit tests (engine/catalog/catalog_test.cc,
// catalog_sync_test.cc, catalog_keys_test.cc): a temporary directory, handles on its
// catalog, and the log read, cut and patched byte by byte.
#pragma once
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/catalog/catalog.h"
#include "engine/util/env.h"
#include "engine/util/error.h"
#include "engine/util/file_io.h"

namespace tessera {

class CatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera_catalog_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { remove_tree(Env::posix(), dir_); }

  std::unique_ptr<Catalog> rw(bool create = false) { return Catalog::open(dir_, Catalog::Mode::kReadWrite, create); }
  std::unique_ptr<Catalog> ro() { return Catalog::open(dir_, Catalog::Mode::kReadOnly, false); }
  std::string log() const { return join_path(dir_, "catalog.log"); }
  uint64_t log_size() const {
    struct stat st;
    EXPECT_EQ(::stat(log().c_str(), &st), 0);
    return static_cast<uint64_t>(st.st_size);
  }
  void put(Catalog& c, const std::string& k, const std::string& v) {
    CatalogBatch b;
    b.put(k, v);
    c.commit(b);
  }
  // Three commits k1, k2, k3; returns the log size after each.
  std::vector<uint64_t> three_commits() {
    auto c = rw(true);
    std::vector<uint64_t> ends{log_size()};
    for (int i = 1; i <= 3; ++i) {
      put(*c, "k" + std::to_string(i), std::string(40, static_cast<char>('a' + i)));
      ends.push_back(log_size());
    }
    return ends;
  }
  void truncate_log(uint64_t size) { ASSERT_EQ(::truncate(log().c_str(), static_cast<off_t>(size)), 0); }
  void patch_log(uint64_t off, const std::vector<uint8_t>& bytes) {
    File f = File::open_rw(Env::posix(), log(), false);
    f.pwrite_all(bytes.data(), bytes.size(), off);
  }
  uint8_t log_byte(uint64_t off) {
    uint8_t b;
    File::open_read(Env::posix(), log()).pread_exact(&b, 1, off);
    return b;
  }
  template <class F>
  Error error_of(F&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e;
    }
    return Error(Errc::kOk, "no error");
  }

  std::string dir_;
};
}  // namespace tessera
