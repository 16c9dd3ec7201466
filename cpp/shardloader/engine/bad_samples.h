// BadSamples: what happens to a sample that cannot be read or decoded.
//
// With on_error="raise" its error ends the epoch. With "skip", the sample is
// counted and listed in the loader's stats, and replaced by another sample
// chosen by (seed, epoch, its position in the epoch, try number) uniformly
// among the dataset's samples, so the batch keeps its size, every rank keeps
// the same number of batches, and a rerun or a resumed run makes the same
// choice. A replacement that is bad too is skipped in turn; after
// kMaxTries the error is raised. Beyond `max_skips` skips in the epoch the
// next bad sample's error is raised, saying so.
//
// Thread-safety: thread-safe (Replace runs on decode threads).
#ifndef SHARDLOADER_ENGINE_BAD_SAMPLES_H_
#define SHARDLOADER_ENGINE_BAD_SAMPLES_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "shardloader/engine/dataset.h"
#include "shardloader/engine/stats_counters.h"
#include "shardloader/format/sample.h"
#include "shardloader/loader_options.h"

namespace shardloader::internal_pipeline {

class BadSamples {
 public:
  static constexpr int kMaxTries = 16;

  // With options->on_error == kSkip, up to `max_skips` bad samples of epoch
  // `epoch` are replaced; otherwise every error is raised.
  BadSamples(std::shared_ptr<const LoaderOptions> options, int64_t epoch, int64_t max_skips,
             std::shared_ptr<Dataset> dataset, const std::vector<int64_t>& counts,
             std::vector<std::string> wanted_extensions,
             std::shared_ptr<internal_stats::StatsCounters> stats);

  // For the sample at `position` that failed with `error`: returns OK once
  // `*sample` holds a readable replacement, else the error to raise.
  // `*tries` counts this position's replacements so far.
  absl::Status Replace(int64_t position, const absl::Status& error, int* tries, Sample* sample);

 private:
  // Records one skip; the error to raise if the budget is spent.
  absl::Status Skip(const absl::Status& error);

  const std::shared_ptr<const LoaderOptions> options_;
  const int64_t epoch_;
  const int64_t max_skips_;
  const std::shared_ptr<Dataset> dataset_;
  std::vector<int64_t> first_sample_;  // running sum of the shard counts
  const std::vector<std::string> wanted_;
  const std::shared_ptr<internal_stats::StatsCounters> stats_;
  std::atomic<int64_t> skipped_{0};
};

}  // namespace shardloader::internal_pipeline

#endif  // SHARDLOADER_ENGINE_BAD_SAMPLES_H_
