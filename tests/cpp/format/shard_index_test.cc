#include "shardloader/format/shard_index.h"

#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardloader/io/open/open_source.h"
#include "shardloader/shard_writer.h"
#include "shardloader/status.h"
#include "test_util.h"

namespace shardloader {
namespace {

using ::testing::HasSubstr;

class ShardIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto writer = *ShardWriter::Create({.pattern = dir_.Join("s-%03d.tar")});
    const std::string long_dir(120, 'd');  // needs a PAX path record
    ASSERT_TRUE(writer->Write("a", {{"jpg", "JPEGDATA"}, {"cls", "3"}}).ok());
    ASSERT_TRUE(
        writer->Write(long_dir + "/b", {{"jpg", std::string(1000, 'x')}, {"cls", "4"}}).ok());
    ASSERT_TRUE(writer->Write("c", {{"cls", ""}, {"txt", "hello"}}).ok());
    ASSERT_TRUE(writer->Close().ok());
    shard_ = dir_.Join("s-000.tar");
  }

  testing::TempDir dir_;
  std::string shard_;
};

TEST_F(ShardIndexTest, WriterIndexEqualsAScanOfTheShard) {
  const std::string written = testing::ReadFile(IndexUriFor(shard_));
  ShardIndex scanned;
  const absl::Status status = ScanShardIndex(*OpenSource(shard_), &scanned);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(FormatShardIndex(scanned), written);
  EXPECT_THAT(written, ::testing::StartsWith("v1.2 3\njpg "));
  absl::StatusOr<ShardIndex> parsed = ParseShardIndex(written, "s.idx");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(FormatShardIndex(*parsed), written);
  EXPECT_EQ(parsed->key(1), std::string(120, 'd') + "/b");
}

TEST_F(ShardIndexTest, ReadsOnlyTheWantedMembersOfASample) {
  ShardIndex index;
  ASSERT_TRUE(ScanShardIndex(*OpenSource(shard_), &index).ok());
  for (const bool memory_map : {true, false}) {
    SCOPED_TRACE(memory_map ? "memory-mapped" : "pread");
    std::shared_ptr<RandomAccessSource> shard =
        *OpenRandomAccess(shard_, {.memory_map = memory_map});
    EXPECT_EQ(shard->mapped().empty(), !memory_map);
    Sample sample;
    const std::vector<std::string> wanted = {"jpg"};
    ASSERT_TRUE(ReadIndexedSample(shard, index, 1, wanted, &sample).ok());
    EXPECT_EQ(sample.key, std::string(120, 'd') + "/b");
    ASSERT_EQ(sample.fields.size(), 2u);
    EXPECT_EQ(sample.fields[0].bytes(), std::string(1000, 'x'));
    EXPECT_EQ(sample.fields[1].extension, "cls");
    EXPECT_EQ(sample.fields[1].bytes(), "");  // not wanted, not read
    ASSERT_TRUE(ReadIndexedSample(shard, index, 2, {}, &sample).ok());
    // Mapped bytes are viewed, not copied, and the sample keeps the shard.
    EXPECT_EQ(sample.fields[1].data.empty(), memory_map);
    EXPECT_EQ(sample.backing != nullptr, memory_map);
    shard.reset();
    EXPECT_EQ(sample.fields[1].bytes(), "hello");
    EXPECT_EQ(sample.index, 2);
  }
}

TEST_F(ShardIndexTest, ADamagedHeaderIsDataLossNamingShardOffsetAndKey) {
  ShardIndex index;
  ASSERT_TRUE(ScanShardIndex(*OpenSource(shard_), &index).ok());
  const int64_t header = index.members(2)[1].offset - 512;
  {
    std::fstream file(shard_, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(header + 124);  // the size field
    file.write("7", 1);
  }
  for (const bool memory_map : {true, false}) {
    SCOPED_TRACE(memory_map ? "memory-mapped" : "pread");
    auto shard = *OpenRandomAccess(shard_, {.memory_map = memory_map});
    Sample sample;
    const absl::Status status = ReadIndexedSample(shard, index, 2, {}, &sample);
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(GetContext(status).uri, shard_);
    EXPECT_EQ(GetContext(status).offset, header);
    EXPECT_EQ(GetContext(status).key, "c");
    // The other samples still read.
    EXPECT_TRUE(ReadIndexedSample(shard, index, 0, {}, &sample).ok());
  }
}

// An index whose member claims a size near INT64_MAX, or a range past the
// shard's end, is rejected before anything is read, allocated or mapped.
TEST_F(ShardIndexTest, AnIndexReachingPastTheShardIsDataLossBeforeAnyRead) {
  const int64_t shard_size = static_cast<int64_t>(testing::ReadFile(shard_).size());
  const std::string near_max = "9223372036854775000";
  for (const std::string& bad_group :
       {"jpg 1024 " + near_max + " b.jpg", "jpg " + near_max + " 10 b.jpg",
        "jpg 1024 " + std::to_string(shard_size) + " b.jpg",
        "jpg " + std::to_string(shard_size + 512) + " 0 b.jpg"}) {
    SCOPED_TRACE(bad_group);
    const std::string text = "v1.2 2\njpg 1024 8 a.jpg\n" + bad_group + "\n";
    absl::StatusOr<ShardIndex> parsed = ParseShardIndex(text, "s-000.idx");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    const absl::Status bounds = CheckShardIndexBounds(*parsed, shard_size, shard_, "s-000.idx");
    EXPECT_EQ(bounds.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(bounds.message(), HasSubstr("s-000.idx, line 3"));
    EXPECT_EQ(GetContext(bounds).uri, shard_);
    EXPECT_EQ(GetContext(bounds).offset, parsed->members(1)[0].offset);
    EXPECT_EQ(GetContext(bounds).key, "b");
    // Reading with it, unchecked, is DataLoss too: no huge allocation (pread)
    // and no read past the mapping.
    for (const bool memory_map : {true, false}) {
      SCOPED_TRACE(memory_map ? "memory-mapped" : "pread");
      auto shard = *OpenRandomAccess(shard_, {.memory_map = memory_map});
      Sample sample;
      const absl::Status status = ReadIndexedSample(shard, *parsed, 1, {}, &sample);
      EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
      EXPECT_EQ(GetContext(status).uri, shard_);
      EXPECT_EQ(GetContext(status).offset, parsed->members(1)[0].offset);
      EXPECT_EQ(GetContext(status).key, "b");
    }
  }
}

TEST(ParseShardIndexTest, ReadsDaliV11AndRejectsMalformedIndexes) {
  absl::StatusOr<ShardIndex> v11 =
      ParseShardIndex("v1.1 2\njpg 512 10 cls 1536 1\njpg 2048 5\n", "x.idx");
  ASSERT_TRUE(v11.ok()) << v11.status();
  EXPECT_EQ(v11->num_samples(), 2);
  EXPECT_EQ(v11->key(1), "1");
  EXPECT_EQ(v11->members(0).size(), 2u);
  EXPECT_EQ(v11->members(0)[1].offset, 1536);
  for (const char* bad : {"", "v9 1\njpg 512 1\n", "v1.1 2\njpg 512 1\n", "v1.2 1\njpg 512 1\n",
                          "v1.1 1\njpg x 1\n"}) {
    absl::StatusOr<ShardIndex> parsed = ParseShardIndex(bad, "x.idx");
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kDataLoss) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("malformed shard index"));
  }
}

// Member names with spaces, newlines or backslashes (an ImageFolder class
// "a b") are escaped in the space-separated index and read back.
TEST(ShardIndexEscapingTest, NamesWithSpacesAndNewlinesRoundTrip) {
  testing::TempDir dir;
  const std::vector<std::string> keys = {"a b/c d", "tab\there", "new\nline", "back\\slash\\x41",
                                         "plain"};
  auto writer = *ShardWriter::Create({.pattern = dir.Join("e-%03d.tar")});
  for (const std::string& key : keys) {
    ASSERT_TRUE(writer->Write(key, {{"jpg", key}, {"cls", "1"}}).ok()) << key;
  }
  ASSERT_TRUE(writer->Close().ok());
  const std::string shard = dir.Join("e-000.tar");
  const std::string written = testing::ReadFile(IndexUriFor(shard));
  EXPECT_THAT(written, HasSubstr(" a\\x20b/c\\x20d.jpg "));
  EXPECT_THAT(written, HasSubstr(" back\\x5cslash\\x5cx41.jpg "));
  EXPECT_THAT(written, HasSubstr(" plain.jpg "));
  absl::StatusOr<ShardIndex> parsed = ParseShardIndex(written, "e-000.idx");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->num_samples(), static_cast<int64_t>(keys.size()));
  ShardIndex scanned;
  ASSERT_TRUE(ScanShardIndex(*OpenSource(shard), &scanned).ok());
  EXPECT_EQ(FormatShardIndex(scanned), written);
  auto source = *OpenRandomAccess(shard);
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(parsed->key(i), keys[i]);
    Sample sample;
    const absl::Status status = ReadIndexedSample(source, *parsed, i, {}, &sample);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(sample.key, keys[i]);
    EXPECT_EQ(sample.fields[0].bytes(), keys[i]);
  }
}

// Indexes from DALI's tools do not escape: a backslash that does not start
// "\xHH" is read as it is, and v1.1 indexes are unaffected.
TEST(ShardIndexEscapingTest, UnescapedDaliIndexesReadAsBefore) {
  absl::StatusOr<ShardIndex> parsed =
      ParseShardIndex("v1.2 2\njpg 512 10 dir\\name.jpg\njpg 2048 5 x\\x4.jpg\n", "d.idx");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->key(0), "dir\\name");
  EXPECT_EQ(parsed->key(1), "x\\x4");
  absl::StatusOr<ShardIndex> v11 = ParseShardIndex("v1.1 1\njpg 512 10 cls 1536 1\n", "d.idx");
  ASSERT_TRUE(v11.ok()) << v11.status();
  EXPECT_EQ(v11->key(0), "0");
  EXPECT_EQ(v11->extension(v11->members(0)[1].extension), "cls");
}

TEST(IndexUriForTest, ReplacesTheLastExtension) {
  EXPECT_EQ(IndexUriFor("a.b/train-000001.tar"), "a.b/train-000001.idx");
  EXPECT_EQ(IndexUriFor("s3://b/x/shard"), "s3://b/x/shard.idx");
}

// A presigned URL keeps its query (its token); the path's extension is
// replaced as for any shard. '?' in a local path or an S3 key is a name.
TEST(IndexUriForTest, KeepsTheQueryOfAnHttpUrl) {
  EXPECT_EQ(IndexUriFor("https://h/a.tar?X=1"), "https://h/a.idx?X=1");
  EXPECT_EQ(IndexUriFor("http://h.x/d.v/a.tar?X=1&Y=a.b#f.g"),
            "http://h.x/d.v/a.idx?X=1&Y=a.b#f.g");
  EXPECT_EQ(IndexUriFor("https://h/shard?t=a.b"), "https://h/shard.idx?t=a.b");
  EXPECT_EQ(IndexUriFor("https://h.example/a.tar"), "https://h.example/a.idx");
  EXPECT_EQ(IndexUriFor("dir/a?b.tar"), "dir/a?b.idx");
  EXPECT_EQ(IndexUriFor("s3://b/a?b.tar"), "s3://b/a?b.idx");
}

}  // namespace
}  // namespace shardloader
