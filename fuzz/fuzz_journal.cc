// A publish journal (publish.journal, publish-r<rank>.journal: docs/format.md "Publish
// journal"), decoded as recovery does on open, and the schema file it may carry parsed
// as publish_recovery.cc does.
#include "engine/array/array_files.h"
#include "engine/publish/publish_journal.h"
#include "fuzz/fuzz_util.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> b(data, data + size);
  fuzz::expect_clean([&] {
    PublishJournal j = PublishJournal::decode(b, "journal");
    (void)j.forward(1);
    if (!j.schema.empty()) {
      FragmentId id;
      (void)array_files::parse_schema_file(j.schema, "journal schema", &id);
    }
  });
  return 0;
}
