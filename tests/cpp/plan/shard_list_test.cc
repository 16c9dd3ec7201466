#include "shardloader/plan/shard_list.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace shardloader {
namespace {

using ::testing::ElementsAre;

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

}  // namespace
}  // namespace shardloader
