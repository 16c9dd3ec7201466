#include "shardloader/plan/rank_schedule.h"

#include <map>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardloader {
namespace {

// Positions each (rank, worker) reads, batch by batch, in the rank's order
// (worker batches interleaved round-robin, as a DataLoader does).
std::vector<std::vector<int64_t>> RankBatches(ScheduleOptions options) {
  std::vector<std::vector<std::vector<int64_t>>> per_worker(options.num_workers);
  for (int w = 0; w < options.num_workers; ++w) {
    options.worker = w;
    const RankSchedule schedule = *RankSchedule::Create(options);
    for (int64_t j = 0; j < schedule.num_batches(); ++j) {
      const RankSchedule::Span span = schedule.Batch(j);
      std::vector<int64_t> batch;
      for (int64_t p = span.first; p < span.first + span.size; ++p) batch.push_back(p);
      per_worker[w].push_back(batch);
    }
  }
  std::vector<std::vector<int64_t>> out;
  for (size_t j = 0;; ++j) {
    bool any = false;
    for (auto& worker : per_worker) {
      if (j < worker.size()) {
        out.push_back(worker[j]);
        any = true;
      }
    }
    if (!any) return out;
  }
}

TEST(RankScheduleTest, RanksGetEqualBatchesCoveringEveryPositionOnce) {
  for (int64_t n : {0, 1, 7, 100, 101, 1023}) {
    for (int world : {1, 2, 3, 8}) {
      for (bool drop_last : {false, true}) {
        std::map<int64_t, int> seen;
        size_t batches = 0;
        for (int rank = 0; rank < world; ++rank) {
          const auto rank_batches = RankBatches({.num_samples = n,
                                                 .rank = rank,
                                                 .world_size = world,
                                                 .batch_size = 4,
                                                 .drop_last = drop_last});
          if (rank == 0) batches = rank_batches.size();
          ASSERT_EQ(rank_batches.size(), batches) << n << " " << world;
          for (const auto& batch : rank_batches) {
            for (int64_t p : batch) ++seen[p];
          }
        }
        // Padded: every position up to N at least once, nothing more than a
        // multiple of the world size beyond it.
        const int64_t padded = n == 0 ? 0 : (n + world - 1) / world * world;
        if (!drop_last) {
          ASSERT_EQ(static_cast<int64_t>(seen.size()), padded) << n << " " << world;
        }
        for (const auto& [position, count] : seen) {
          ASSERT_EQ(count, 1);
          ASSERT_LT(position, padded);
        }
      }
    }
  }
}

TEST(RankScheduleTest, DropLeavesOutTheRemainderAndDropLastTheShortBatch) {
  const auto batches = RankBatches({.num_samples = 10,
                                    .rank = 1,
                                    .world_size = 3,
                                    .batch_size = 2,
                                    .remainder = Remainder::kDrop});
  // 9 positions dealt: one global batch of 6, then a short one of 1 per rank.
  EXPECT_THAT(batches, ::testing::ElementsAre(std::vector<int64_t>{2, 3}, std::vector<int64_t>{7}));
  const auto dropped = RankBatches({.num_samples = 10,
                                    .rank = 1,
                                    .world_size = 3,
                                    .batch_size = 2,
                                    .drop_last = true,
                                    .remainder = Remainder::kDrop});
  EXPECT_EQ(dropped.size(), 1u);
}

TEST(RankScheduleTest, WorkersSplitTheRankBatchesRoundRobin) {
  const ScheduleOptions options{.num_samples = 50, .rank = 0, .world_size = 2, .batch_size = 3};
  const auto single = RankBatches(options);
  ScheduleOptions with_workers = options;
  with_workers.num_workers = 3;
  EXPECT_EQ(RankBatches(with_workers), single);
}

TEST(RankScheduleTest, ResumingWithAnotherWorldSizeContinuesTheOrder) {
  // World size 1 consumes 3 batches of 4, then 2 ranks continue.
  const RankSchedule one = *RankSchedule::Create({.num_samples = 30, .batch_size = 4});
  const int64_t position = one.PositionAfter(3);
  EXPECT_EQ(position, 12);
  std::vector<int64_t> seen;
  for (int rank = 0; rank < 2; ++rank) {
    for (const auto& batch : RankBatches({.num_samples = 30,
                             .start = position,
                             .rank = rank,
                             .world_size = 2,
                             .batch_size = 4})) {
      seen.insert(seen.end(), batch.begin(), batch.end());
    }
  }
  std::sort(seen.begin(), seen.end());
  std::vector<int64_t> expected;
  for (int64_t p = 12; p < 30; ++p) expected.push_back(p);
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(one.PositionAfter(100), 30);
}

TEST(RankScheduleTest, RejectsBadArguments) {
  EXPECT_FALSE(RankSchedule::Create({.num_samples = 5, .rank = 2, .world_size = 2}).ok());
  EXPECT_FALSE(RankSchedule::Create({.num_samples = 5, .worker = 1}).ok());
  EXPECT_FALSE(RankSchedule::Create({.num_samples = 5, .start = 6}).ok());
  EXPECT_FALSE(RankSchedule::Create({.num_samples = 5, .batch_size = 0}).ok());
}

}  // namespace
}  // namespace shardloader
