#include "shardloader/shard_writer.h"

#include <filesystem>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardloader/format/sample_reader.h"
#include "shardloader/io/local/local_file.h"
#include "test_util.h"

namespace shardloader {
namespace {

using ::testing::HasSubstr;

TEST(ShardPathTest, PrintfAndOpenBracePatterns) {
  EXPECT_EQ(*ShardPath("out/train-%06d.tar", 12), "out/train-000012.tar");
  EXPECT_EQ(*ShardPath("out/train-%d.tar", 12), "out/train-12.tar");
  EXPECT_EQ(*ShardPath("out/train-{0000..}.tar", 12), "out/train-0012.tar");
  EXPECT_EQ(*ShardPath("out/train-{0100..}.tar", 1), "out/train-0101.tar");
  EXPECT_EQ(ShardPath("out/train.tar", 0).status().code(), absl::StatusCode::kInvalidArgument);
}

// "t-%d-%d.tar" used to write "t-0-%d.tar".
TEST(ShardPathTest, MoreThanOnePlaceholderIsAnError) {
  for (const char* pattern : {"out/t-%d-%d.tar", "out/t-%06d-{000..}.tar", "out-%d/t-%d.tar"}) {
    const absl::Status status = ShardPath(pattern, 0).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << pattern;
    EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr(pattern));
  }
}

TEST(ShardWriterTest, RollsShardsByCountAndWritesAnIndex) {
  testing::TempDir dir;
  auto writer =
      ShardWriter::Create({.pattern = dir.Join("s-%03d.tar"), .max_samples_per_shard = 3});
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE((*writer)
                    ->Write("k" + std::to_string(i),
                            {{"bin", std::string(i, 'a')}, {"cls", std::to_string(i)}})
                    .ok());
  }
  ASSERT_TRUE((*writer)->Close().ok());
  const auto& shards = (*writer)->shards();
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[0].path, dir.Join("s-000.tar"));
  EXPECT_EQ(shards[2].num_samples, 1);
  EXPECT_EQ(shards[0].sha256.size(), 64u);
  EXPECT_EQ(shards[1].size_bytes, static_cast<int64_t>(std::filesystem::file_size(shards[1].path)));
  const std::string index = testing::ReadFile(dir.Join("index.json"));
  EXPECT_THAT(index, HasSubstr("\"num_samples\": 7"));
  EXPECT_THAT(index, HasSubstr(shards[2].sha256));
  // No temporary files are left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_THAT(entry.path().filename().string(), ::testing::Not(HasSubstr("partial")));
    ++files;
  }
  EXPECT_EQ(files, 7);  // 3 shards, their 3 sample indexes, index.json

  // The shards read back as the samples written.
  SampleReader reader(*LocalFileSource::Open(shards[1].path));
  Sample sample;
  absl::StatusOr<bool> read = reader.Next(&sample);
  ASSERT_TRUE(read.ok() && *read);
  EXPECT_EQ(sample.key, "k3");
  EXPECT_EQ(sample.Find("bin")->data, "aaa");
}

TEST(ShardWriterTest, RollsShardsBySize) {
  testing::TempDir dir;
  auto writer =
      *ShardWriter::Create({.pattern = dir.Join("s-%03d.tar"), .max_size_bytes = 10 * 1024});
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(writer->Write("k" + std::to_string(i), {{"bin", std::string(3000, 'x')}}).ok());
  }
  ASSERT_TRUE(writer->Close().ok());
  for (const ShardInfo& shard : writer->shards()) EXPECT_LE(shard.size_bytes, 10 * 1024);
  EXPECT_GT(writer->shards().size(), 3u);
}

TEST(ShardWriterTest, UnclosedWriterLeavesNoPartialShard) {
  testing::TempDir dir;
  {
    auto writer = *ShardWriter::Create({.pattern = dir.Join("s-%03d.tar")});
    ASSERT_TRUE(writer->Write("k", {{"bin", "x"}}).ok());
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(ShardWriterTest, RejectsBadKeysAndExtensions) {
  testing::TempDir dir;
  auto writer = *ShardWriter::Create({.pattern = dir.Join("s-%03d.tar")});
  EXPECT_EQ(writer->Write("a.b", {{"bin", "x"}}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(writer->Write("", {{"bin", "x"}}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(writer->Write("k", {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(writer->Write("k", {{"bin", "x"}, {"bin", "y"}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ShardWriter::Create({.pattern = dir.Join("missing/s-%03d.tar")}).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace shardloader
