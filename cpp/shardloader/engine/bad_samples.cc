#include "shardloader/engine/bad_samples.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "shardloader/internal/random.h"
#include "shardloader/plan/epoch_order.h"

namespace shardloader::internal_pipeline {

BadSamples::BadSamples(std::shared_ptr<const LoaderOptions> options, int64_t epoch,
                       int64_t max_skips, std::shared_ptr<Dataset> dataset,
                       const std::vector<int64_t>& counts,
                       std::vector<std::string> wanted_extensions,
                       std::shared_ptr<internal_stats::StatsCounters> stats)
    : options_(std::move(options)),
      epoch_(epoch),
      max_skips_(max_skips),
      dataset_(std::move(dataset)),
      wanted_(std::move(wanted_extensions)),
      stats_(std::move(stats)) {
  first_sample_.push_back(0);
  for (int64_t count : counts) first_sample_.push_back(first_sample_.back() + count);
}

absl::Status BadSamples::Skip(const absl::Status& error) {
  if (options_->on_error != OnError::kSkip) return error;
  if (skipped_.fetch_add(1) >= max_skips_) {
    return Prefixed(error, absl::StrCat("more bad samples than max_errors allows (", max_skips_,
                                        " in this epoch); the last: "));
  }
  stats_->RecordSkip(error);
  return absl::OkStatus();
}

absl::Status BadSamples::Replace(int64_t position, const absl::Status& error, int* tries,
                                 Sample* sample) {
  absl::Status status = error;
  while (true) {
    SHARDLOADER_RETURN_IF_ERROR(Skip(status));
    if (*tries >= kMaxTries) {
      return Prefixed(error, absl::StrCat("no readable replacement in ", kMaxTries,
                                          " tries; the first error: "));
    }
    internal_random::Rng rng(ReplacementSeed(options_->seed, epoch_, position, (*tries)++));
    const int64_t global = static_cast<int64_t>(rng.Below(first_sample_.back()));
    const size_t shard =
        static_cast<size_t>(std::upper_bound(first_sample_.begin(), first_sample_.end(), global) -
                            first_sample_.begin() - 1);
    status = dataset_->Read(
        {.shard = static_cast<int64_t>(shard), .index = global - first_sample_[shard]}, wanted_,
        sample);
    if (status.ok()) return status;
  }
}

}  // namespace shardloader::internal_pipeline
