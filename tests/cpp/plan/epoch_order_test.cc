#include "shardloader/plan/epoch_order.h"

#include <algorithm>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardloader {
namespace {

std::vector<SampleRef> All(const std::vector<int64_t>& counts, const OrderOptions& options) {
  EpochOrder order(counts, options);
  std::vector<SampleRef> refs;
  for (int64_t p = 0; p < order.num_samples(); ++p) refs.push_back(order.At(p));
  return refs;
}

TEST(EpochOrderTest, IsAPermutationOfEverySample) {
  const std::vector<int64_t> counts = {5, 0, 17, 3, 9, 1, 12};
  const std::vector<SampleRef> refs = All(counts, {.seed = 3, .epoch = 1, .window_shards = 3});
  ASSERT_EQ(refs.size(), 47u);
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const SampleRef& ref : refs) {
    ASSERT_GE(ref.index, 0);
    ASSERT_LT(ref.index, counts[ref.shard]);
    seen.insert({ref.shard, ref.index});
  }
  EXPECT_EQ(seen.size(), 47u);
}

TEST(EpochOrderTest, SeedAndEpochChangeTheOrderAndNothingElseDoes) {
  const std::vector<int64_t> counts = {10, 10, 10, 10};
  const auto base = All(counts, {.seed = 1, .epoch = 0});
  EXPECT_EQ(base, All(counts, {.seed = 1, .epoch = 0}));
  EXPECT_NE(base, All(counts, {.seed = 1, .epoch = 1}));
  EXPECT_NE(base, All(counts, {.seed = 2, .epoch = 0}));
}

TEST(EpochOrderTest, ShufflesOnlyWithinWindowsOfShards) {
  const std::vector<int64_t> counts = {4, 4, 4, 4, 4, 4};
  EpochOrder order(counts, {.seed = 9, .window_shards = 2});
  // Positions [0, 8) come from two shards, [8, 16) from two others, ...
  for (int64_t window = 0; window < 3; ++window) {
    std::set<int64_t> shards;
    for (int64_t p = window * 8; p < window * 8 + 8; ++p) shards.insert(order.At(p).shard);
    EXPECT_EQ(shards.size(), 2u);
  }
  // Random access agrees with a sequential walk.
  const auto walk = All(counts, {.seed = 9, .window_shards = 2});
  EXPECT_EQ(order.At(3), walk[3]);
  EXPECT_EQ(order.At(20), walk[20]);
  EXPECT_EQ(order.At(1), walk[1]);
}

TEST(EpochOrderTest, WithoutShuffleIsTheShardListInOrder) {
  const auto refs = All({2, 1}, {.seed = 5, .shuffle = false});
  EXPECT_THAT(refs, ::testing::ElementsAre(SampleRef{0, 0}, SampleRef{0, 1}, SampleRef{1, 0}));
}

}  // namespace
}  // namespace shardloader
