// ShuffleBuffer: WebDataset-style streaming sample shuffle.
//
// Holds up to `capacity` samples. Once full, each added sample evicts a
// uniformly chosen resident one, which is returned; at the end Drain()
// returns the rest in random order. With capacity <= 1 samples pass through
// in order. The order depends only on the seed and the input order.
//
// Thread-safety: thread-compatible.
#ifndef SHARDLOADER_INTERNAL_SHUFFLE_BUFFER_H_
#define SHARDLOADER_INTERNAL_SHUFFLE_BUFFER_H_

#include <optional>
#include <utility>
#include <vector>

#include "shardloader/internal/random.h"

namespace shardloader::internal_pipeline {

template <typename T>
class ShuffleBuffer {
 public:
  ShuffleBuffer(size_t capacity, uint64_t seed)
      : capacity_(capacity), rng_(seed) {
    items_.reserve(capacity);
  }

  // Adds `item`; returns the sample that leaves the buffer, if any.
  std::optional<T> Add(T item) {
    if (capacity_ <= 1) return item;
    if (items_.size() < capacity_) {
      items_.push_back(std::move(item));
      return std::nullopt;
    }
    T& slot = items_[rng_.Below(items_.size())];
    std::swap(slot, item);
    return item;
  }

  // Removes and returns one remaining sample at random; nullopt when empty.
  std::optional<T> Drain() {
    if (items_.empty()) return std::nullopt;
    std::swap(items_[rng_.Below(items_.size())], items_.back());
    T item = std::move(items_.back());
    items_.pop_back();
    return item;
  }

 private:
  size_t capacity_;
  internal_random::Rng rng_;
  std::vector<T> items_;
};

}  // namespace shardloader::internal_pipeline

#endif  // SHARDLOADER_INTERNAL_SHUFFLE_BUFFER_H_
