#include "engine/publish/publish_journal.h"

#include <cstdio>
#include <cstring>

#include "engine/util/bytes.h"
#include "engine/util/checksum.h"
#include "engine/util/error.h"
#include "engine/util/file_io.h"

namespace tessera {

namespace {
constexpr char kMagic[8] = {'T', 'S', 'R', 'A', 'J', 'R', 'N', 'L'};
}

std::vector<uint8_t> PublishJournal::encode() const {
  ByteWriter w;
  w.bytes(kMagic, 8);
  w.u32(epoch ? 2 : 1);
  if (epoch) w.u64(epoch);  // version 2: published only once this epoch is committed
  w.u64(moves.size());
  for (auto& [from, to] : moves) {
    w.str(from);
    w.str(to);
  }
  w.u8(schema.empty() ? 0 : 1);
  if (!schema.empty()) w.blob(schema);
  w.u64(checksum64(w.buf().data(), w.size()));
  return w.buf();
}

PublishJournal PublishJournal::decode(const std::vector<uint8_t>& b, const std::string& what) {
  if (b.size() < 8 + 4 + 8 + 1 + 8) throw_error(Errc::kCorrupt, what + ": truncated");
  uint64_t ck;
  std::memcpy(&ck, b.data() + b.size() - 8, 8);
  if (checksum64(b.data(), b.size() - 8) != ck) throw_error(Errc::kCorrupt, what + ": checksum mismatch");
  ByteReader r(b.data(), b.size() - 8, what);
  char magic[8];
  r.bytes(magic, 8);
  if (std::memcmp(magic, kMagic, 8) != 0) r.fail("bad magic");
  PublishJournal j;
  uint32_t version = r.u32();
  if (version != 1 && version != 2) r.fail("unknown version " + std::to_string(version));
  if (version == 2) {
    j.epoch = r.u64();
    if (j.epoch == 0) r.fail("epoch 0 in a version 2 journal");
  }
  uint64_t n = r.count(8);
  for (uint64_t i = 0; i < n; ++i) {
    std::string from = r.str(), to = r.str();
    j.moves.emplace_back(std::move(from), std::move(to));
  }
  uint8_t has_schema = r.u8();
  if (has_schema > 1) r.fail("bad schema flag");
  if (has_schema) {
    j.schema = r.blob();
    if (j.schema.empty()) r.fail("empty schema");
  }
  if (!r.done()) r.fail("trailing bytes");
  return j;
}

bool PublishJournal::torn(const std::vector<uint8_t>& bytes) {
  for (uint8_t b : bytes)
    if (b) return false;
  return true;
}

PublishJournal PublishJournal::read(Env& env, const std::string& path) {
  return decode(read_file(env, path), "publish journal '" + path + "'");
}

void PublishJournal::roll(Env& env, const std::string& frag_dir, bool fwd, bool writable,
                          std::vector<std::string>* read_through) const {
  for (auto& [from, to] : moves) {
    if (parent_dir(from) != frag_dir || parent_dir(to) != frag_dir) continue;  // never leave the array
    if (!path_exists(env, from)) continue;  // already renamed (or removed)
    if (!fwd) {
      if (writable) remove_file(env, from);
    } else if (writable) {
      if (env.rename(from.c_str(), to.c_str()) != 0) throw_errno("finish publishing", to, errno);
    } else {
      read_through->push_back(from);
    }
  }
}

void PublishJournal::write(Env& env, const std::string& path, bool durable) const {
  std::vector<uint8_t> b = encode();
  write_file_atomic(env, path, b.data(), b.size(), durable);
}

}  // namespace tessera
