// Heaps of variable-length cells (var_heap.h): values come back through descriptors from
// memory before publishing and from the heap file after; damage is corruption.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "engine/util/error.h"
#include "engine/util/file_io.h"
#include "engine/fragment/var_heap.h"

using namespace tessera;

namespace {

std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

}  // namespace

TEST(VarHeap, PendingAndPublishedReadsAgree) {
  char tmpl[] = "/tmp/tessera_heap_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  HeapBuilder h(FragmentId{42, 1, 3, 0});
  std::vector<std::string> values = {"alpha", "", std::string(100000, 'x'), "omega"};
  std::vector<VarDescriptor> d;
  for (const auto& v : values) d.push_back(h.append(reinterpret_cast<const uint8_t*>(v.data()), v.size()));
  HeapReader r(Env::posix(), dir);
  for (size_t i = 0; i < values.size(); ++i) {
    std::vector<uint8_t> out;
    r.read(d[i], &h, &out);  // not published yet: from memory
    EXPECT_EQ(out, bytes(values[i])) << i;
  }
  h.publish(Env::posix(), dir);
  HeapReader fresh(Env::posix(), dir);
  for (size_t i = 0; i < values.size(); ++i) {
    std::vector<uint8_t> out;
    fresh.read(d[i], nullptr, &out);
    EXPECT_EQ(out, bytes(values[i])) << i;
  }
  // A descriptor pointing past the heap, or with a wrong check, is corruption.
  VarDescriptor past = d[3];
  past.offset += 1 << 20;
  std::vector<uint8_t> out;
  EXPECT_THROW(fresh.read(past, nullptr, &out), Error);
  VarDescriptor wrong = d[0];
  wrong.check ^= 1;
  try {
    fresh.read(wrong, nullptr, &out);
    ADD_FAILURE() << "a wrong check was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kCorrupt);
  }
  // A damaged heap file: the check catches it.
  std::string path = dir + "/" + HeapReader::file_name(h.id());
  std::vector<uint8_t> file = read_file(Env::posix(), path);
  file[d[0].offset] ^= 0x40;
  write_file_atomic(Env::posix(), path, file.data(), file.size());
  HeapReader after(Env::posix(), dir);
  EXPECT_THROW(after.read(d[0], nullptr, &out), Error);
}

// A damaged descriptor's length (up to 4 GiB) is corruption found before anything is
// allocated: the output is left as it was (found by fuzz/fuzz_var_heap, which ran out of
// memory on such a descriptor; its input is fuzz/corpus/var_heap/regress-*).
TEST(VarHeap, HugeLengthIsCorruptWithoutAllocating) {
  char tmpl[] = "/tmp/tessera_heap_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  HeapBuilder h(FragmentId{7, 0, 1, 0});
  VarDescriptor d = h.append(reinterpret_cast<const uint8_t*>("abcdef"), 6);
  for (bool published : {false, true}) {
    if (published) h.publish(Env::posix(), dir);
    for (uint32_t len : {0xFFFFFFFFu, 0x60000000u, 7u}) {
      VarDescriptor bad = d;
      bad.length = len;
      HeapReader r(Env::posix(), dir);
      std::vector<uint8_t> out = {1, 2, 3};
      try {
        r.read(bad, published ? nullptr : &h, &out);
        ADD_FAILURE() << "length " << len << " was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), Errc::kCorrupt) << e.what();
      }
      EXPECT_EQ(out.size(), 3u) << "length " << len << (published ? " (file)" : " (pending)");
    }
  }
  EXPECT_EQ(std::system(("rm -rf '" + dir + "'").c_str()), 0);
}
