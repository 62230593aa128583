// Writeback of growing fragment files (fragment_writer.cc: every 16 MiB of a file, and
// the rest at finish, handed to sync_file_range on the I/O pool) while several writers
// share one Context's pools.  Run under ThreadSanitizer by `scripts/test --tsan`
// (docs/reliability.md); in the ordinary build it checks every cell against a model.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "engine/array/array.h"
#include "engine/context/context.h"
#include "engine/context/options.h"
#include "engine/testing/test_schema.h"
#include "engine/testing/testutil.h"

using namespace tessera;

namespace {

// 2,560 x 2,048 int32 cells: a 20 MiB fragment file, past one 16 MiB writeback step.
constexpr uint64_t kRows = 2560, kCols = 2048;

int32_t cell(int a, int pass, uint64_t r, uint64_t c) {
  return static_cast<int32_t>((a * 7 + pass) * 1000003 + r * kCols + c);
}

}  // namespace

TEST(Writeback, LargeFragmentsWrittenFromSeveralThreadsReadBackExactly) {
  testutil::TempDir dir("tessera_writeback");
  EngineOptions eo;
  eo.threads = 2;
  eo.io_threads = 2;
  auto ctx = std::make_shared<Context>(eo);
  constexpr int kArrays = 2;
  std::vector<std::string> failed(kArrays);
  auto writer = [&](int a) {
    const std::string path = dir.sub("a" + std::to_string(a));
    if (!Array::create(path, int32_schema({kRows, kCols}, {kRows, kCols}, {256, 256})).ok()) {
      failed[a] = "create";
      return;
    }
    ArrayOptions o;
    o.durable_writes = false;
    o.context = ctx;
    std::unique_ptr<Array> arr;
    if (!Array::open(path, true, o, &arr).ok()) {
      failed[a] = "open";
      return;
    }
    std::vector<int32_t> model(kRows * kCols);
    // Two passes: the whole array, then its top half again (a second, 10 MiB fragment).
    for (int pass = 0; pass < 2; ++pass) {
      const uint64_t rows = pass == 0 ? kRows : kRows / 2;
      for (uint64_t r = 0; r < rows; ++r)
        for (uint64_t c = 0; c < kCols; ++c) model[r * kCols + c] = cell(a, pass, r, c);
      Status st = arr->write(Selection::from_box(Box({0, 0}, {rows - 1, kCols - 1})), model.data());
      if (st.ok()) st = arr->flush();
      if (!st.ok()) {
        failed[a] = "pass " + std::to_string(pass) + ": " + st.message();
        return;
      }
    }
    arr.reset();
    if (!Array::open(path, false, ArrayOptions{}, &arr).ok()) {
      failed[a] = "reopen";
      return;
    }
    std::vector<int32_t> got(kRows * kCols, -1);
    Status st = arr->read(Selection::from_box(Box({0, 0}, {kRows - 1, kCols - 1})), got.data());
    if (!st.ok()) {
      failed[a] = "read: " + st.message();
      return;
    }
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != model[i]) {
        failed[a] = "cell " + std::to_string(i) + " reads " + std::to_string(got[i]) + ", wrote " +
                    std::to_string(model[i]);
        return;
      }
  };
  std::vector<std::thread> ts;
  for (int a = 0; a < kArrays; ++a) ts.emplace_back(writer, a);
  for (auto& t : ts) t.join();
  for (int a = 0; a < kArrays; ++a) EXPECT_EQ(failed[a], "") << "array " << a;
}
