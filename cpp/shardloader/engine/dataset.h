// Dataset: a loader's shards, their sample indexes and open sources.
//
// Sample counts come from each shard's index file ("<shard>.idx", see
// format/shard_index.h) when there is one (only its first line is read), or
// from a scan of the shard's headers otherwise (the scanned index is kept).
// Counting runs on LoaderOptions::num_io_threads threads and happens once per
// Dataset.
// Full indexes are loaded when a shard is first read, and kept: about 40
// bytes per sample plus the key. Open shards are kept in a small LRU cache
// of 2 × window_shards + 2 (8 to 256).
//
// A shard whose scan fails part-way (a damaged member header) is an error;
// with on_error="skip" its samples before the damage are used
// instead, and the error is recorded once in the stats as a skip.
//
// Ownership: shared by the loader and its pipelines. Thread-safety:
// thread-safe.
#ifndef SHARDLOADER_ENGINE_DATASET_H_
#define SHARDLOADER_ENGINE_DATASET_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "shardloader/engine/stats_counters.h"
#include "shardloader/format/sample.h"
#include "shardloader/format/shard_index.h"
#include "shardloader/io/random_access.h"
#include "shardloader/loader_options.h"
#include "shardloader/plan/epoch_order.h"

namespace shardloader::internal_pipeline {

class Dataset {
 public:
  // `options` and `stats` must not be null.
  Dataset(std::vector<std::string> shards, std::shared_ptr<const LoaderOptions> options,
          std::shared_ptr<internal_stats::StatsCounters> stats);

  const std::vector<std::string>& shards() const { return shards_; }

  // Samples of every shard, in list order. Errors: the first shard (in list
  // order) that cannot be counted: NotFound, DataLoss (malformed index file
  // or shard), ... naming it.
  absl::StatusOr<std::vector<int64_t>> Counts() ABSL_LOCKS_EXCLUDED(mu_);

  // Starts fetching `shard` into the remote cache (see io/cache/shard_cache.h);
  // errors are left to the read.
  void Prefetch(int64_t shard) const;

  // Reads sample `ref` into `*out` (members with extensions in `wanted`;
  // see ReadIndexedSample) and sets its shard and shard index.
  absl::Status Read(SampleRef ref, absl::Span<const std::string> wanted, Sample* out)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Shard {
    std::shared_ptr<const std::string> uri;
    std::optional<int64_t> count;
    std::shared_ptr<const ShardIndex> index;
  };
  struct OpenShard {
    int64_t shard;
    std::shared_ptr<RandomAccessSource> source;
    uint64_t last_use;
  };

  absl::StatusOr<int64_t> Count(int64_t shard) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::shared_ptr<const ShardIndex>> Index(int64_t shard) ABSL_LOCKS_EXCLUDED(mu_);
  // Builds the index from the shard's headers and keeps it.
  absl::StatusOr<std::shared_ptr<const ShardIndex>> Scan(int64_t shard) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::shared_ptr<RandomAccessSource>> Open(int64_t shard) ABSL_LOCKS_EXCLUDED(mu_);

  const std::vector<std::string> shards_;
  const std::shared_ptr<const LoaderOptions> options_;
  const std::shared_ptr<internal_stats::StatsCounters> stats_;
  const size_t max_open_shards_;
  // One per shard, held while opening it, so a shard is opened once.
  std::unique_ptr<absl::Mutex[]> opening_;
  mutable absl::Mutex mu_;
  std::vector<Shard> state_ ABSL_GUARDED_BY(mu_);
  std::vector<OpenShard> open_ ABSL_GUARDED_BY(mu_);
  uint64_t clock_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<std::vector<int64_t>> counts_ ABSL_GUARDED_BY(mu_);  // all
};

}  // namespace shardloader::internal_pipeline

#endif  // SHARDLOADER_ENGINE_DATASET_H_
