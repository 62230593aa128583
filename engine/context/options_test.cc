// EngineOptions (options.h): every setting parsed, range-checked and reported by name;
// the environment and "key=value" text applied over the defaults.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "engine/array/array.h"
#include "engine/context/options.h"

using namespace tessera;

TEST(EngineOptions, DefaultsAndArrayOptions) {
  EngineOptions o;
  EXPECT_EQ(o.to_string(),
            "threads=0 io_threads=4 tile_cache_mb=256 write_buffer_mb=64 write_memory_mb=64 direct_write_cells=16384 blob_kb=16384 "
            "inline_fragment_kb=64 inline_total_mb=256 index_on_write=0 index_precision=3 index_max_bins=1024 one_file=0 "
            "max_open_files=0 auto_consolidate=1 consolidate_fanin=4 consolidate_ratio=2 consolidate_retain_s=3600");
  ArrayOptions a = o.array_options();
  EXPECT_EQ(a.buffer_budget, 64ull << 20);
  EXPECT_EQ(a.direct_cells, 16384u);
  EXPECT_EQ(a.inline_fragment_bytes, 64ull << 10);
  EXPECT_FALSE(a.index_on_write);
  EXPECT_EQ(a.index.precision, 3u);
  EXPECT_EQ(a.index.max_bins, 1024u);
  // Automatic consolidation: on for the connector's files (off in a bare ArrayOptions).
  EXPECT_TRUE(a.auto_merge.on);
  EXPECT_FALSE(ArrayOptions().auto_merge.on);
  EXPECT_EQ(a.auto_merge.fanin, 4u);
  EXPECT_EQ(a.auto_merge.ratio, 2u);
  EXPECT_EQ(a.auto_merge.retain_ns, 3600ull * 1000000000ull);
  ASSERT_TRUE(o.apply("auto_consolidate=0 consolidate_fanin=8 consolidate_ratio=3 consolidate_retain_s=0").ok());
  a = o.array_options();
  EXPECT_FALSE(a.auto_merge.on);
  EXPECT_EQ(a.auto_merge.fanin, 8u);
  EXPECT_EQ(a.auto_merge.ratio, 3u);
  EXPECT_EQ(a.auto_merge.retain_ns, 0u);
  for (const char* bad : {"auto_consolidate=2", "consolidate_fanin=1", "consolidate_ratio=1", "consolidate_retain_s=-1",
                          "consolidate_retain_s=315360001"})
    EXPECT_FALSE(o.apply(bad).ok()) << bad;
}

TEST(EngineOptions, SettingsApplyInOrder) {
  EngineOptions o;
  ASSERT_TRUE(o.apply("threads=3, write_buffer_mb=8  inline_fragment_kb=0,,").ok());
  EXPECT_EQ(o.threads, 3u);
  EXPECT_EQ(o.write_buffer_mb, 8u);
  EXPECT_EQ(o.inline_fragment_kb, 0u);
  ASSERT_TRUE(o.apply("threads=5").ok());
  EXPECT_EQ(o.threads, 5u);
  EXPECT_EQ(o.array_options().buffer_budget, 8ull << 20);
  EXPECT_TRUE(o.apply("").ok());
}

TEST(EngineOptions, BadValuesAreErrorsNamingTheSetting) {
  for (const char* bad : {"threads=-1", "threads=4k", "threads=", "threads=1025", "io_threads=0",
                          "write_buffer_mb=0", "tile_cache_mb=99999999999999999999999", "threads=3.5",
                          "index_on_write=2", "index_precision=0", "index_max_bins=1"}) {
    EngineOptions o;
    Status st = o.apply(bad);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.code(), Errc::kInvalidArgument) << bad;
    std::string key = std::string(bad).substr(0, std::string(bad).find('='));
    EXPECT_NE(st.message().find(key), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("expected an integer"), std::string::npos) << st.message();
    EXPECT_EQ(o.to_string(), EngineOptions().to_string()) << "a failed setting changed nothing";
  }
  EngineOptions o;
  Status st = o.apply("thread=4");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("unknown setting 'thread'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("threads"), std::string::npos) << "the known settings are listed";
  EXPECT_FALSE(o.apply("threads").ok());  // no value
}

TEST(EngineOptions, EnvironmentVariables) {
  ::setenv("TESSERA_TILE_CACHE_MB", "32", 1);
  ::setenv("TESSERA_DIRECT_WRITE_CELLS", "100", 1);
  EngineOptions o;
  ASSERT_TRUE(EngineOptions::from_env(&o).ok());
  EXPECT_EQ(o.tile_cache_mb, 32u);
  EXPECT_EQ(o.direct_write_cells, 100u);
  ::setenv("TESSERA_IO_THREADS", "-3", 1);
  Status st = EngineOptions::from_env(&o);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("TESSERA_IO_THREADS"), std::string::npos) << st.message();
  ::unsetenv("TESSERA_TILE_CACHE_MB");
  ::unsetenv("TESSERA_DIRECT_WRITE_CELLS");
  ::unsetenv("TESSERA_IO_THREADS");
}

// A misspelt setting in the environment would change nothing in silence; as_of there
// would make every open a read of the past.  Both are errors naming the variable.  Other
// TESSERA_* variables (the build scripts', the tools') are not settings and pass.
TEST(EngineOptions, MisspeltOrMisplacedEnvironmentSettingsAreErrors) {
  EngineOptions o;
  for (const char* bad : {"TESSERA_THREAD", "TESSERA_TILE_CACHE_M", "TESSERA_INLINE_TOTAL_MBS"}) {
    ::setenv(bad, "4", 1);
    Status st = EngineOptions::from_env(&o);
    EXPECT_EQ(st.code(), Errc::kInvalidArgument) << bad << " was accepted";
    EXPECT_NE(st.message().find(bad), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("did you mean"), std::string::npos) << st.message();
    ::unsetenv(bad);
  }
  ::setenv("TESSERA_AS_OF", "3", 1);
  Status st = EngineOptions::from_env(&o);
  EXPECT_EQ(st.code(), Errc::kInvalidArgument);
  EXPECT_NE(st.message().find("TESSERA_AS_OF"), std::string::npos) << st.message();
  ::unsetenv("TESSERA_AS_OF");
  ::setenv("TESSERA_BUILD_DIR", "/somewhere", 1);
  ::setenv("TESSERA_TOOL", "/bin/true", 1);
  EXPECT_TRUE(EngineOptions::from_env(&o).ok());
  ::unsetenv("TESSERA_BUILD_DIR");
  ::unsetenv("TESSERA_TOOL");
}
