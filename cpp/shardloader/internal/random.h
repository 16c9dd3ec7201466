// Deterministic random numbers for shuffling.
//
// The standard library's distributions and std::shuffle are
// implementation-defined, so the same seed could give another order on
// another compiler. Everything here is specified exactly: SplitMix64 for
// deriving seeds (Steele, Lea, Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014), xoshiro256** for streams (Blackman and Vigna,
// 2018), Lemire's nearly-divisionless bounded integers (ACM TOMS 2019) and
// Fisher-Yates shuffling.
//
// Thread-safety: Rng is thread-compatible; the functions are pure.
#ifndef SHARDLOADER_INTERNAL_RANDOM_H_
#define SHARDLOADER_INTERNAL_RANDOM_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace shardloader::internal_random {

// One step of SplitMix64: a bijective mix of 64 bits.
uint64_t Mix64(uint64_t x);

// Combines a seed with any number of identifiers (epoch, rank, ...) into a
// new, well-mixed seed. Order matters.
uint64_t DeriveSeed(uint64_t seed, std::initializer_list<uint64_t> ids);

class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t Next();
  // Uniform integer in [0, bound), bound > 0, without modulo bias.
  uint64_t Below(uint64_t bound);

 private:
  uint64_t state_[4];
};

// Shuffles `items` in place with Fisher-Yates driven by `rng`.
template <typename T>
void Shuffle(std::vector<T>& items, Rng& rng) {
  for (size_t i = items.size(); i > 1; --i) {
    std::swap(items[i - 1], items[rng.Below(i)]);
  }
}

}  // namespace shardloader::internal_random

#endif  // SHARDLOADER_INTERNAL_RANDOM_H_
