#include "shardloader/plan/epoch_order.h"

#include <algorithm>
#include <numeric>

#include "shardloader/internal/random.h"

namespace shardloader {
namespace {

using internal_random::DeriveSeed;
using internal_random::Rng;

// Distinct stream identifiers, so no two uses of (seed, epoch) coincide.
constexpr uint64_t kShardOrderStream = 1;
constexpr uint64_t kSampleShuffleStream = 2;
constexpr uint64_t kAugmentationStream = 3;
constexpr uint64_t kReplacementStream = 4;

}  // namespace

EpochOrder::EpochOrder(std::vector<int64_t> counts, OrderOptions options)
    : counts_(std::move(counts)), options_(options) {
  options_.window_shards = std::max<int64_t>(1, options_.window_shards);
  shard_order_.resize(counts_.size());
  std::iota(shard_order_.begin(), shard_order_.end(), 0);
  if (options_.shuffle) {
    Rng rng(DeriveSeed(options_.seed, {kShardOrderStream, static_cast<uint64_t>(options_.epoch)}));
    internal_random::Shuffle(shard_order_, rng);
  }
  window_start_.push_back(0);
  for (size_t first = 0; first < shard_order_.size();
       first += static_cast<size_t>(options_.window_shards)) {
    const size_t last =
        std::min(shard_order_.size(), first + static_cast<size_t>(options_.window_shards));
    int64_t size = 0;
    for (size_t i = first; i < last; ++i) size += counts_[shard_order_[i]];
    window_start_.push_back(window_start_.back() + size);
  }
}

void EpochOrder::LoadWindow(size_t window) {
  window_ = window;
  const size_t first = window * static_cast<size_t>(options_.window_shards);
  const size_t last =
      std::min(shard_order_.size(), first + static_cast<size_t>(options_.window_shards));
  shard_start_.assign(1, 0);
  for (size_t i = first; i < last; ++i) {
    shard_start_.push_back(shard_start_.back() + counts_[shard_order_[i]]);
  }
  permutation_.resize(static_cast<size_t>(shard_start_.back()));
  std::iota(permutation_.begin(), permutation_.end(), 0);
  if (options_.shuffle) {
    Rng rng(DeriveSeed(options_.seed, {kSampleShuffleStream, static_cast<uint64_t>(options_.epoch),
                                       static_cast<uint64_t>(window)}));
    internal_random::Shuffle(permutation_, rng);
  }
}

SampleRef EpochOrder::At(int64_t position) {
  // The window holding `position`: the last start <= position.
  const size_t window =
      static_cast<size_t>(std::upper_bound(window_start_.begin(), window_start_.end(), position) -
                          window_start_.begin() - 1);
  if (window != window_) LoadWindow(window);
  const int64_t local = permutation_[position - window_start_[window]];
  const size_t in_window = static_cast<size_t>(
      std::upper_bound(shard_start_.begin(), shard_start_.end(), local) - shard_start_.begin() - 1);
  return {.shard = shard_order_[window * options_.window_shards + in_window],
          .index = local - shard_start_[in_window]};
}

uint64_t SampleAugmentationSeed(uint64_t seed, int64_t epoch, int64_t shard_index,
                                int64_t sample_index) {
  return DeriveSeed(
      seed, {kAugmentationStream, static_cast<uint64_t>(epoch), static_cast<uint64_t>(shard_index),
             static_cast<uint64_t>(sample_index)});
}

uint64_t ReplacementSeed(uint64_t seed, int64_t epoch, int64_t position, int64_t attempt) {
  return DeriveSeed(seed, {kReplacementStream, static_cast<uint64_t>(epoch),
                           static_cast<uint64_t>(position), static_cast<uint64_t>(attempt)});
}

}  // namespace shardloader
