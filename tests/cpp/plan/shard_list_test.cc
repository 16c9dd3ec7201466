#include "shardloader/plan/shard_list.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace shardloader {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ExpandBracesTest, NumericRangeKeepsZeroPadding) {
  absl::StatusOr<std::vector<std::string>> names = ExpandBraces("train-{000008..000011}.tar");
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, ElementsAre("train-000008.tar", "train-000009.tar", "train-000010.tar",
                                  "train-000011.tar"));
}

TEST(ExpandBracesTest, UnpaddedRangeAndCountingDown) {
  EXPECT_THAT(*ExpandBraces("s{9..11}"), ElementsAre("s9", "s10", "s11"));
  EXPECT_THAT(*ExpandBraces("s{3..1}"), ElementsAre("s3", "s2", "s1"));
  EXPECT_THAT(*ExpandBraces("s{08..10}"), ElementsAre("s08", "s09", "s10"));
}

TEST(ExpandBracesTest, AlternativesAndSeveralGroupsExpandLikeBash) {
  EXPECT_THAT(*ExpandBraces("{train,val}-{0..1}.tar"),
              ElementsAre("train-0.tar", "train-1.tar", "val-0.tar", "val-1.tar"));
  EXPECT_THAT(*ExpandBraces("a{b,c{1..2}}d"), ElementsAre("abd", "ac1d", "ac2d"));
  EXPECT_THAT(*ExpandBraces("plain.tar"), ElementsAre("plain.tar"));
}

TEST(ExpandBracesTest, RejectsUnbalancedAndHugePatterns) {
  EXPECT_EQ(ExpandBraces("a{0..3").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExpandBraces("a}").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ExpandBraces("{0..99999999999}").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ResolveShardsTest, DirectoryListsTarFilesSorted) {
  testing::TempDir dir;
  for (const char* name : {"b.tar", "a.tar", "notes.txt"}) {
    std::ofstream(dir.Join(name)) << "x";
  }
  absl::StatusOr<std::vector<std::string>> shards = ResolveShards({dir.path()});
  ASSERT_TRUE(shards.ok()) << shards.status();
  EXPECT_THAT(*shards, ElementsAre(dir.Join("a.tar"), dir.Join("b.tar")));
}

TEST(ResolveShardsTest, JoinsListsAndDoubleColonSpecs) {
  absl::StatusOr<std::vector<std::string>> shards =
      ResolveShards({"x-{0..1}.tar::y.tar", "s3://bucket/z.tar"});
  ASSERT_TRUE(shards.ok());
  EXPECT_THAT(*shards, ElementsAre("x-0.tar", "x-1.tar", "y.tar", "s3://bucket/z.tar"));
}

TEST(ResolveShardsTest, EmptyListIsAnError) {
  EXPECT_EQ(ResolveShards({}).status().code(), absl::StatusCode::kInvalidArgument);
  testing::TempDir empty;
  EXPECT_EQ(ResolveShards({empty.path()}).status().code(), absl::StatusCode::kInvalidArgument);
}

// A folder as `shardloader pack` leaves it after packing twice: the shards of
// the second pack (listed in index.json, not in name order) and older ones.
void WritePackedFolder(const testing::TempDir& dir) {
  for (const char* name : {"t-000000.tar", "t-000001.tar", "t-000002.tar", "t-000003.tar"}) {
    std::ofstream(dir.Join(name)) << "x";
  }
  std::ofstream(dir.Join("index.json")) << R"({"format": "shardloader-index", "version": 1,
    "num_samples": 3, "shards": [
      {"url": "t-000001.tar", "num_samples": 2, "size_bytes": 1, "sha256": ""},
      {"url": "t-000000.tar", "num_samples": 1, "size_bytes": 1, "sha256": ""}]})";
}

TEST(ResolveShardsTest, FolderWithIndexJsonReadsTheListedShardsAndWarnsAboutOthers) {
  testing::TempDir dir;
  WritePackedFolder(dir);
  std::vector<std::string> warnings;
  absl::StatusOr<std::vector<std::string>> shards =
      ResolveShards({dir.path()}, SourceOptions(), &warnings);
  ASSERT_TRUE(shards.ok()) << shards.status();
  EXPECT_THAT(*shards, ElementsAre(dir.Join("t-000001.tar"), dir.Join("t-000000.tar")));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("2 other .tar files"));
  EXPECT_THAT(warnings[0], HasSubstr(dir.Join("index.json")));
  // Without a warnings list the result is the same.
  EXPECT_THAT(*ResolveShards({dir.path() + "/"}),
              ElementsAre(dir.Join("t-000001.tar"), dir.Join("t-000000.tar")));
}

TEST(ResolveShardsTest, IndexJsonPathListsItsShards) {
  testing::TempDir dir;
  WritePackedFolder(dir);
  std::vector<std::string> warnings;
  absl::StatusOr<std::vector<std::string>> shards =
      ResolveShards({dir.Join("index.json")}, SourceOptions(), &warnings);
  ASSERT_TRUE(shards.ok()) << shards.status();
  EXPECT_THAT(*shards, ElementsAre(dir.Join("t-000001.tar"), dir.Join("t-000000.tar")));
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(ResolveShardsTest, FolderWithoutOthersGivesNoWarning) {
  testing::TempDir dir;
  WritePackedFolder(dir);
  std::filesystem::remove(dir.Join("t-000002.tar"));
  std::filesystem::remove(dir.Join("t-000003.tar"));
  std::vector<std::string> warnings;
  ASSERT_TRUE(ResolveShards({dir.path()}, SourceOptions(), &warnings).ok());
  EXPECT_TRUE(warnings.empty());
}

TEST(ResolveShardsTest, ForeignIndexJsonInAFolderIsIgnoredButNamedOneIsAnError) {
  testing::TempDir dir;
  for (const char* name : {"b.tar", "a.tar"}) std::ofstream(dir.Join(name)) << "x";
  std::ofstream(dir.Join("index.json")) << R"({"files": ["a.tar"]})";
  EXPECT_THAT(*ResolveShards({dir.path()}), ElementsAre(dir.Join("a.tar"), dir.Join("b.tar")));
  const absl::Status named = ResolveShards({dir.Join("index.json")}).status();
  EXPECT_EQ(named.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(named.message(), HasSubstr(dir.Join("index.json")));
}

TEST(ResolveShardsTest, IndexListingAMissingShardIsNotFoundNamingIt) {
  testing::TempDir dir;
  WritePackedFolder(dir);
  std::filesystem::remove(dir.Join("t-000001.tar"));
  const absl::Status status = ResolveShards({dir.path()}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr(dir.Join("t-000001.tar")));
  EXPECT_EQ(ResolveShards({dir.Join("missing.json")}).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace shardloader

namespace shardloader {
namespace {

// Ranges multiply: three of them after a long prefix would be 10^7 names of
// over 200 characters (2 GB). Found by tests/fuzz/shard_list_fuzzer.cc.
TEST(ExpandBracesLimitTest, AnExpansionTooLargeForMemoryIsAnError) {
  const std::string pattern = std::string(200, 'p') + "{000..999}{000..999}{0..9}.tar";
  const absl::StatusOr<std::vector<std::string>> names = ExpandBraces(pattern);
  ASSERT_FALSE(names.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(names.status())) << names.status();
  EXPECT_THAT(std::string(names.status().message()), ::testing::HasSubstr("MiB of names"));
}

TEST(ExpandBracesLimitTest, AMillionShortNamesAreFine) {
  const absl::StatusOr<std::vector<std::string>> names =
      ExpandBraces("train-{000..999}{000..999}.tar");
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(names->size(), 1'000'000u);
  EXPECT_EQ(names->back(), "train-999999.tar");
}

}  // namespace
}  // namespace shardloader
