// EpochOrder: the global sample order of one epoch.
//
// The order is a pure function of (seed, epoch, shuffle, window) and the
// dataset (its shards' sample counts, in the loader's shard list order); it
// does not depend on the world size, the rank, DataLoader workers or thread
// counts, so every rank computes the same order without communicating, and a
// job resumed on another number of ranks continues it.
//
// The scheme (bounded memory): with shuffling on, the shards are permuted
// by (seed, epoch); the permuted list is cut into windows of `window_shards`
// consecutive shards, and the samples of each window are permuted (Fisher-
// Yates, seeded by (seed, epoch, window)). The epoch's order is window 0's
// samples, then window 1's, and so on. Memory is 4 bytes per sample of one
// window; reads touch the shards of about one window at a time. Without
// shuffling the order is the shard list's, sample by sample. The idea is
// that of MosaicML Streaming's shard-block shuffles ("py1s", "py1b"): shuffle
// shards, then samples within a bounded span of shards.
//
// Thread-safety: thread-compatible (At() caches the current window).
#ifndef SHARDLOADER_PLAN_EPOCH_ORDER_H_
#define SHARDLOADER_PLAN_EPOCH_ORDER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardloader {

// A sample by its shard (index into the loader's shard list) and its index
// among that shard's samples.
struct SampleRef {
  int64_t shard = 0;
  int64_t index = 0;
  bool operator==(const SampleRef&) const = default;
};

struct OrderOptions {
  uint64_t seed = 0;
  int64_t epoch = 0;
  bool shuffle = true;
  int64_t window_shards = 8;  // shards whose samples are shuffled together
};

class EpochOrder {
 public:
  // `counts[s]`: samples of shard s (>= 0).
  EpochOrder(std::vector<int64_t> counts, OrderOptions options);

  // Samples in the epoch (the sum of the counts).
  int64_t num_samples() const { return window_start_.back(); }

  // The sample at `position` in [0, num_samples()).
  SampleRef At(int64_t position);

 private:
  void LoadWindow(size_t window);

  std::vector<int64_t> counts_;
  OrderOptions options_;
  std::vector<int64_t> shard_order_;   // permuted shard list
  std::vector<int64_t> window_start_;  // first position of each window, + end
  // The cached window: its index, the start of each of its shards within it
  // (plus its end), and its permutation of local sample numbers.
  size_t window_ = static_cast<size_t>(-1);
  std::vector<int64_t> shard_start_;
  std::vector<uint32_t> permutation_;
};

// Seed of the random augmentations (crops, flips) of one sample in one
// epoch: a function of (seed, epoch, shard index in the loader's shard list,
// sample index in the shard) only, so a sample is augmented the same way
// whatever the rank, world size or thread count.
uint64_t SampleAugmentationSeed(uint64_t seed, int64_t epoch, int64_t shard_index,
                                int64_t sample_index);

// Seed of the choice of the `attempt`-th replacement (from 0) for the sample
// at `position` of the epoch, when that sample is skipped as bad.
uint64_t ReplacementSeed(uint64_t seed, int64_t epoch, int64_t position, int64_t attempt);

}  // namespace shardloader

#endif  // SHARDLOADER_PLAN_EPOCH_ORDER_H_
