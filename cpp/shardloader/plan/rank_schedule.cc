#include "shardloader/plan/rank_schedule.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shardloader {

absl::StatusOr<RankSchedule> RankSchedule::Create(const ScheduleOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", options.rank, " is not in [0, world_size ", options.world_size, ")"));
  }
  if (options.num_workers < 1 || options.worker < 0 || options.worker >= options.num_workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker ", options.worker, " is not in [0, num_workers ", options.num_workers, ")"));
  }
  if (options.batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size must be positive, got ", options.batch_size));
  }
  if (options.start < 0 || options.start > options.num_samples) {
    return absl::InvalidArgumentError(absl::StrCat("resume position ", options.start,
                                                   " is not in [0, ", options.num_samples,
                                                   "], the samples of this epoch"));
  }
  return RankSchedule(options);
}

RankSchedule::RankSchedule(const ScheduleOptions& options) : options_(options) {
  const int64_t world = options.world_size;
  const int64_t remaining = options.num_samples - options.start;
  if (options.num_samples > 0) {
    dealt_ = options.remainder == Remainder::kPad ? (remaining + world - 1) / world * world
                                                  : remaining / world * world;
  }
  full_batches_ = dealt_ / (world * options.batch_size);
  tail_ = (dealt_ - full_batches_ * world * options.batch_size) / world;
  rank_batches_ = full_batches_ + (tail_ > 0 && !options.drop_last ? 1 : 0);
}

int64_t RankSchedule::num_batches() const {
  const int64_t k = options_.worker;
  const int64_t workers = options_.num_workers;
  return rank_batches_ > k ? (rank_batches_ - k + workers - 1) / workers : 0;
}

RankSchedule::Span RankSchedule::Batch(int64_t j) const {
  const int64_t g = options_.worker + j * options_.num_workers;  // rank batch
  const int64_t global = options_.world_size * options_.batch_size;
  const int64_t size = g < full_batches_ ? options_.batch_size : tail_;
  return {.first = options_.start + g * global + options_.rank * size, .size = size};
}

int64_t RankSchedule::PositionAfter(int64_t rank_batches) const {
  const int64_t global = options_.world_size * options_.batch_size;
  // Padding may deal past the end; the epoch then is over.
  return std::min(options_.num_samples,
                  options_.start + std::min(dealt_, std::max<int64_t>(0, rank_batches) * global));
}

}  // namespace shardloader
