// Damaged files: a small container (catalog records, four arrays with dense, sparse, fill
// and consolidated fragments, with and without filters) is built once; then every file is
// damaged in turn — single flipped bytes at many offsets, and truncation to many lengths —
// and the container and all arrays are opened and read completely.  The outcome must be a
// non-OK Status naming the damaged file, or data identical to the original; never wrong
// data, never a crash (CI runs this under ASan/UBSan too).
//
// A damaged byte that changes nothing anywhere is reported; it is accepted only in the
// documented reserved/ignored fields listed in `unchecked_ok()`.  For catalog.log the
// documented torn-tail rule applies (catalog.h, docs/format.md): damage in the last record
// drops exactly that record, a truncated log keeps exactly the records that are whole.
//
// TESSERA_TEST_SEED sets the seed that picks offsets and lengths.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/array/array.h"
#include "engine/container/container.h"
#include "engine/util/file_io.h"
#include "engine/fragment/fragment_format.h"
#include "engine/tests/corruption_fixture.h"
#include "engine/testing/testutil.h"

namespace tessera {
namespace {

using namespace corruption_rig;

TEST_F(Corruption, EveryFileFlippedAndTruncated) {
  ASSERT_FALSE(HasFatalFailure());
  auto t0 = std::chrono::steady_clock::now();
  Rng rng(seed_ ^ 0x5EED);
  const bool san = testutil::kSanitized;
  std::map<std::string, std::set<uint64_t>> silent;  // file -> offsets whose flip changed nothing
  size_t mutations = 0, files = 0, fragments = 0;
  const size_t last_rec = record_ends_.size() - 1;
  ASSERT_GE(last_rec, 3u);

  for (const auto& [rel, orig] : original_) {
    if (orig.empty()) continue;  // catalog.lock: an empty lock file
    ++files;
    const uint64_t size = orig.size();
    const bool is_catalog = rel == "catalog.log";
    const bool is_frag = rel.size() > 4 && rel.compare(rel.size() - 4, 4, ".tfr") == 0;
    fragments += is_frag;
    ASSERT_TRUE(is_catalog || is_frag || rel == "tessera.container" ||
                (rel.size() > 7 && rel.compare(rel.size() - 7, 7, "/schema") == 0))
        << "unexpected file " << rel;

    // ---- (a) flipped bytes ----
    std::vector<uint64_t> offsets;
    if (!is_frag && san && size > 64) {
      // Sanitizer builds are slow: the first 16 bytes (magics, versions, reserved), the
      // bytes around every catalog record boundary, and a sample of the rest.
      std::set<uint64_t> o;
      for (uint64_t i = 0; i < 16; ++i) o.insert(i);
      if (is_catalog)
        for (uint64_t e : record_ends_)
          for (uint64_t i = e; i < e + 17 && i < size; ++i) o.insert(i);
      for (int i = 0; i < 40; ++i) o.insert(rng.below(size));
      for (uint64_t i = size - 8; i < size; ++i) o.insert(i);
      offsets.assign(o.begin(), o.end());
    } else if (!is_frag || size <= 160) {
      for (uint64_t o = 0; o < size; ++o) offsets.push_back(o);  // small files: every byte
    } else {
      // Every byte of the header and trailer, a sample of the rest (tiles and footer).
      for (uint64_t o = 0; o < kFragHeaderSize; ++o) offsets.push_back(o);
      for (uint64_t o = size - kFragTrailerSize; o < size; ++o) offsets.push_back(o);
      for (int i = 0, n = san ? 30 : 90; i < n; ++i)
        offsets.push_back(kFragHeaderSize + rng.below(size - kFragHeaderSize - kFragTrailerSize));
    }
    for (uint64_t off : offsets) {
      std::vector<uint8_t> bad = orig;
      bad[off] ^= static_cast<uint8_t>(rng.range(1, 255));
      std::string what = rel + ": byte " + std::to_string(off) + " of " + std::to_string(size) + " flipped";
      SCOPED_TRACE(what);
      put_file(rel, bad);
      ++mutations;
      Result r = open_and_read_all(rel, what);
      if (is_catalog && off >= 16) {
        // In record i: the last record is a torn tail and is dropped; any earlier one is
        // corruption (more records follow it).
        size_t rec = 0;
        while (record_ends_[rec] <= off) ++rec;  // states_[rec] is the state that includes it
        if (rec == last_rec) {
          ASSERT_TRUE(r.catalog_opened) << "a damaged last record must read as a torn tail: " << r.first_error;
          EXPECT_EQ(r.catalog, states_[rec - 1]) << "torn tail: exactly the last commit must be dropped";
          // A writer cuts it off, keeps the rest, and can commit again.
          {
            std::unique_ptr<Container> c;
            Status st = Container::open(cpath_, true, &c);
            ASSERT_TRUE(st.ok()) << status_str(st);
            EXPECT_EQ(c->catalog().scan(""), states_[rec - 1]);
            EXPECT_EQ(testutil::file_size(join_path(cpath_, rel)), record_ends_[rec - 1]) << "torn tail not cut off";
            CatalogBatch b;
            b.put("after/recovery", "x");
            c->catalog().commit(b);
          }
          KV want = states_[rec - 1];
          want.insert(std::lower_bound(want.begin(), want.end(), std::make_pair(std::string("after/recovery"), std::string())),
                      {"after/recovery", "x"});
          EXPECT_EQ(reopen_catalog_state(), want);
        } else {
          EXPECT_FALSE(r.catalog_opened) << "damage in a middle record must fail the open";
          std::unique_ptr<Container> c;
          Status st = Container::open(cpath_, true, &c);
          EXPECT_FALSE(st.ok()) << "a writer must not open (or repair) a catalog damaged in the middle";
          EXPECT_EQ(read_file(Env::posix(), join_path(cpath_, rel)), bad) << "a corrupt catalog must not be modified";
        }
      } else if (!r.any_error) {
        if (r.catalog_opened) {
          EXPECT_EQ(r.catalog, states_.back());
        }
        bool strict_ok = true;
        if (is_frag) {
          // No public read noticed; is the byte really unused?  Decode every tile.
          try {
            testutil::read_every_tile(join_path(cpath_, rel), schema_of(rel));
          } catch (const Error&) {
            strict_ok = false;  // the damage is detected, just not needed by any read (hidden tile)
          }
        }
        if (strict_ok) {
          silent[rel].insert(off);
          EXPECT_TRUE(unchecked_ok(rel, off, size))
              << what << ": the damage went unnoticed everywhere; this byte is not covered by any check";
        }
      }
      restore(rel);
      if (HasFailure()) break;
    }

    // ---- (b) truncation ----
    std::set<uint64_t> lens = {0, size - 1};
    if (size <= 64 || (is_catalog && !san)) {
      for (uint64_t l = 0; l < size; ++l) lens.insert(l);
    } else if (is_catalog) {
      for (uint64_t l = 0; l <= 16; ++l) lens.insert(l);
      for (uint64_t e : record_ends_)
        for (uint64_t l = e - 1; l <= e + 1 && l < size; ++l) lens.insert(l);
      for (int i = 0; i < 30; ++i) lens.insert(rng.below(size));
    } else {
      for (int i = 0, n = san ? 8 : 20; i < n; ++i) lens.insert(rng.below(size));
      if (is_frag) lens.insert({kFragHeaderSize, kFragHeaderSize + kFragTrailerSize, size - kFragTrailerSize});
    }
    for (uint64_t len : lens) {
      std::string what = rel + ": truncated to " + std::to_string(len) + " of " + std::to_string(size);
      SCOPED_TRACE(what);
      put_file(rel, std::vector<uint8_t>(orig.begin(), orig.begin() + len));
      ++mutations;
      Result r = open_and_read_all(rel, what);
      if (is_catalog) {
        // A truncated log is a torn tail: exactly the whole records remain; a file shorter
        // than the header is an interrupted creation and reads as empty.
        ASSERT_TRUE(r.catalog_opened) << "a truncated catalog must open: " << r.first_error;
        EXPECT_EQ(r.catalog, len < 16 ? KV{} : states_[records_whole_before(len)]);
      } else {
        EXPECT_TRUE(r.any_error) << "a truncated file went unnoticed";
      }
      restore(rel);
      if (HasFailure()) break;
    }
    if (HasFailure()) break;
  }
  // Nothing was left damaged.
  Result r = open_and_read_all("-", "restored container");
  EXPECT_FALSE(r.any_error) << r.first_error;
  EXPECT_EQ(r.catalog, states_.back());

  // Summarize by field: fragment offsets relative to the header / trailer.
  std::map<std::string, std::set<uint64_t>> by_field;
  for (auto& [rel, offs] : silent) {
    const bool frag = rel.size() > 4 && rel.compare(rel.size() - 4, 4, ".tfr") == 0;
    const uint64_t size = original_.at(rel).size();
    for (uint64_t o : offs) {
      if (!frag) by_field[rel].insert(o);
      else if (o < kFragHeaderSize) by_field["fragment header"].insert(o);
      else if (o >= size - kFragTrailerSize) by_field["fragment trailer"].insert(o - (size - kFragTrailerSize));
      else by_field["fragment body (" + rel + ")"].insert(o);
    }
  }
  std::string report;
  for (auto& [field, offs] : by_field) {
    report += "\n  " + field + " bytes";
    for (auto it = offs.begin(); it != offs.end();) {  // as ranges
      uint64_t lo = *it, hi = lo;
      for (++it; it != offs.end() && *it == hi + 1; ++it) hi = *it;
      report += " " + std::to_string(lo) + (hi > lo ? ".." + std::to_string(hi) : "");
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ seed     ] Corruption: %zu files (%zu fragments), %zu mutations, %.1f s; bytes whose damage "
              "changed nothing (reserved fields):%s\n",
              files, fragments, mutations, secs, report.empty() ? " none" : report.c_str());
  EXPECT_GE(fragments, 8u) << "the container should hold a varied set of fragments";
}

}  // namespace
}  // namespace tessera
