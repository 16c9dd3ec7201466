#include "shardloader/plan/epoch_plan.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardloader {
namespace {

TEST(PlanShardsTest, SameInputsGiveTheSameOrder) {
  const ReaderPosition position{.seed = 7, .epoch = 3};
  EXPECT_EQ(*PlanShards(100, position), *PlanShards(100, position));
}

TEST(PlanShardsTest, EpochAndSeedChangeTheOrder) {
  const auto base = *PlanShards(100, {.seed = 7, .epoch = 3});
  EXPECT_NE(base, *PlanShards(100, {.seed = 7, .epoch = 4}));
  EXPECT_NE(base, *PlanShards(100, {.seed = 8, .epoch = 3}));
  std::vector<size_t> sorted = base;
  std::sort(sorted.begin(), sorted.end());
  std::vector<size_t> all(100);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);  // a permutation
}

TEST(PlanShardsTest, NoShuffleKeepsTheOrder) {
  EXPECT_THAT(*PlanShards(4, {.shuffle = false}), ::testing::ElementsAre(0, 1, 2, 3));
}

TEST(PlanShardsTest, RanksAndWorkersPartitionTheShards) {
  const size_t num_shards = 37;
  std::multiset<size_t> seen;
  for (int rank = 0; rank < 3; ++rank) {
    for (int worker = 0; worker < 2; ++worker) {
      const ReaderPosition position{.seed = 1, .epoch = 2, .rank = rank,
                                    .world_size = 3, .worker = worker,
                                    .num_workers = 2};
      absl::StatusOr<std::vector<size_t>> mine = PlanShards(num_shards, position);
      ASSERT_TRUE(mine.ok()) << mine.status();
      seen.insert(mine->begin(), mine->end());
    }
  }
  ASSERT_EQ(seen.size(), num_shards);
  for (size_t i = 0; i < num_shards; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
}

TEST(PlanShardsTest, RejectsBadPositionsAndTooFewShards) {
  EXPECT_EQ(PlanShards(10, {.rank = 2, .world_size = 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanShards(10, {.worker = 1, .num_workers = 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanShards(1, {.rank = 0, .world_size = 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SampleShuffleSeedTest, DiffersPerReaderAndEpoch) {
  const uint64_t base = SampleShuffleSeed({.seed = 1});
  EXPECT_EQ(base, SampleShuffleSeed({.seed = 1}));
  EXPECT_NE(base, SampleShuffleSeed({.seed = 1, .epoch = 1}));
  EXPECT_NE(base, SampleShuffleSeed({.seed = 1, .rank = 1, .world_size = 2}));
  EXPECT_NE(base, SampleShuffleSeed({.seed = 1, .worker = 1, .num_workers = 2}));
}

}  // namespace
}  // namespace shardloader
