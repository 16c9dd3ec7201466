#include "shardloader/plan/epoch_plan.h"

#include <numeric>

#include "absl/strings/str_cat.h"
#include "shardloader/internal/random.h"

namespace shardloader {
namespace {

using internal_random::DeriveSeed;
using internal_random::Rng;

// Distinct stream identifiers, so no two uses of (seed, epoch) coincide.
constexpr uint64_t kShardOrderStream = 1;
constexpr uint64_t kSampleShuffleStream = 2;
constexpr uint64_t kAugmentationStream = 3;

}  // namespace

absl::StatusOr<std::vector<size_t>> PlanShards(size_t num_shards,
                                               const ReaderPosition& position) {
  if (position.world_size < 1 || position.rank < 0 ||
      position.rank >= position.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", position.rank, " is not in [0, world_size ",
                     position.world_size, ")"));
  }
  if (position.num_workers < 1 || position.worker < 0 ||
      position.worker >= position.num_workers) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker ", position.worker, " is not in [0, num_workers ",
                     position.num_workers, ")"));
  }
  if (num_shards < static_cast<size_t>(position.world_size)) {
    return absl::InvalidArgumentError(absl::StrCat(
        num_shards, " shards cannot be split across world_size ",
        position.world_size, ": every rank needs at least one shard"));
  }
  std::vector<size_t> order(num_shards);
  std::iota(order.begin(), order.end(), 0);
  if (position.shuffle) {
    Rng rng(DeriveSeed(position.seed,
                       {kShardOrderStream, static_cast<uint64_t>(position.epoch)}));
    internal_random::Shuffle(order, rng);
  }
  std::vector<size_t> mine;
  const size_t stride =
      static_cast<size_t>(position.world_size) * position.num_workers;
  for (size_t i = static_cast<size_t>(position.rank) +
                  static_cast<size_t>(position.world_size) * position.worker;
       i < num_shards; i += stride) {
    mine.push_back(order[i]);
  }
  return mine;
}

uint64_t SampleShuffleSeed(const ReaderPosition& position) {
  return DeriveSeed(position.seed,
                    {kSampleShuffleStream, static_cast<uint64_t>(position.epoch),
                     static_cast<uint64_t>(position.rank),
                     static_cast<uint64_t>(position.world_size),
                     static_cast<uint64_t>(position.worker),
                     static_cast<uint64_t>(position.num_workers)});
}

uint64_t SampleAugmentationSeed(uint64_t seed, int64_t epoch,
                                int64_t shard_index, int64_t sample_index) {
  return DeriveSeed(seed, {kAugmentationStream, static_cast<uint64_t>(epoch),
                           static_cast<uint64_t>(shard_index),
                           static_cast<uint64_t>(sample_index)});
}

}  // namespace shardloader
