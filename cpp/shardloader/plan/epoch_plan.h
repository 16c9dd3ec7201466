// Epoch plan: which shards a reader (rank, DataLoader worker) reads in an
// epoch, in which order, and the seed of its sample shuffle buffer.
//
// The plan is a pure function of (seed, epoch, rank, world size, worker,
// number of workers, shuffle): never of thread timing. With shuffling on, all
// shards are permuted by (seed, epoch) and then dealt round-robin: rank r of
// W takes positions r, r+W, r+2W, ...; worker k of K of that rank takes every
// K-th of those, starting at k (WebDataset's split_by_node then
// split_by_worker). Equal sample counts per rank are not guaranteed by a
// shard-level split.
//
// Thread-safety: pure functions.
#ifndef SHARDLOADER_PLAN_EPOCH_PLAN_H_
#define SHARDLOADER_PLAN_EPOCH_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace shardloader {

struct ReaderPosition {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int rank = 0;
  int world_size = 1;
  int worker = 0;       // DataLoader worker id, 0 without workers
  int num_workers = 1;  // DataLoader workers, 1 without workers
  bool shuffle = true;
};

// Returns indices into a list of `num_shards` shards: the shards this reader
// reads in this epoch, in order. Errors: InvalidArgument for a rank, world
// size, worker or worker count out of range, or fewer shards than ranks
// (which would leave a rank without data and hang collective operations).
absl::StatusOr<std::vector<size_t>> PlanShards(size_t num_shards,
                                               const ReaderPosition& position);

// Seed of the reader's sample shuffle buffer for this epoch.
uint64_t SampleShuffleSeed(const ReaderPosition& position);

// Seed of the random augmentations (crops, flips) of one sample in one
// epoch: a function of (seed, epoch, shard index in the loader's shard list,
// sample index in the shard) only, so a sample is augmented the same way
// whatever the rank, world size or thread count.
uint64_t SampleAugmentationSeed(uint64_t seed, int64_t epoch,
                                int64_t shard_index, int64_t sample_index);

}  // namespace shardloader

#endif  // SHARDLOADER_PLAN_EPOCH_PLAN_H_
