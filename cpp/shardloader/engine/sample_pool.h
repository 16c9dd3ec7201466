// SamplePool: recycles Sample objects between the pipeline's stages, so
// that a warm loader parses samples into strings that already have room
// (no per-sample heap allocation in steady state).
//
// Readers Take() a sample to fill; the assembler Give()s samples back once
// their batch is decoded. The free list is capped: samples beyond
// `capacity` are freed.
//
// Thread-safety: thread-safe.
#ifndef SHARDLOADER_ENGINE_SAMPLE_POOL_H_
#define SHARDLOADER_ENGINE_SAMPLE_POOL_H_

#include <cstddef>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "shardloader/format/sample.h"

namespace shardloader::internal_pipeline {

class SamplePool {
 public:
  explicit SamplePool(size_t capacity) : capacity_(capacity) {}

  // A free sample (with its old contents), or a new one.
  Sample Take() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (free_.empty()) return Sample();
    Sample sample = std::move(free_.back());
    free_.pop_back();
    return sample;
  }

  // Returns `samples` to the pool and leaves the vector empty.
  void Give(std::vector<Sample>& samples) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    for (Sample& sample : samples) {
      if (free_.size() >= capacity_) break;
      sample.backing.reset();  // an idle sample holds no shard open
      free_.push_back(std::move(sample));
    }
    samples.clear();
  }

 private:
  const size_t capacity_;
  absl::Mutex mu_;
  std::vector<Sample> free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardloader::internal_pipeline

#endif  // SHARDLOADER_ENGINE_SAMPLE_POOL_H_
