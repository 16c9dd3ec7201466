// Loader: streams batches of decoded samples from tar shards (WebDataset
// convention) for training.
//
// A Loader resolves its shard specs once and counts their samples (from the
// shards' index files, or by reading their headers). Each epoch has one
// global sample order, a pure function of (seed, epoch, shuffle,
// window_shards) and the dataset (plan/epoch_order.h); it is dealt to ranks
// by global batch, so every rank gets the same number of batches and the
// union of the ranks' samples is the epoch (plan/rank_schedule.h). The
// Loader reads the samples it is dealt with its I/O threads (one positional
// read each), decodes the declared fields in its own TBB arena of
// `num_threads` threads and assembles batches into a reusable pool. Nothing
// depends on thread counts or timing.
//
// State() is the position in the epoch's order after the batches yielded so
// far; Resume() continues from such a position, with this or another world
// size, without reading the samples before it.
//
//   auto loader = shardloader::Loader::Create(options);  // StatusOr
//   while (true) {
//     absl::StatusOr<std::optional<shardloader::Batch>> batch = (*loader)->Next();
//     if (!batch.ok()) { /* error with shard, offset, key */ break; }
//     if (!batch->has_value()) break;  // end of epoch
//     ...
//   }
//   (*loader)->SetEpoch(1);  // the next Next() starts epoch 1
//
// Ownership: a Loader owns its threads, arena and batch pool; batches it
// returned stay valid after it is destroyed. Thread-safety: thread-safe; a
// Loader created before fork() refuses to work in the child (its threads do
// not exist there) with FailedPrecondition instead of hanging.
#ifndef SHARDLOADER_LOADER_H_
#define SHARDLOADER_LOADER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "shardloader/batch.h"
#include "shardloader/loader_options.h"
#include "shardloader/plan/epoch_order.h"
#include "shardloader/plan/rank_schedule.h"
#include "shardloader/stats.h"

namespace shardloader {

namespace internal_pipeline {
class Dataset;
class Pipeline;
}  // namespace internal_pipeline

// Where a Loader stands in its epochs: small, no sample data. The other
// members identify the order, so a state is only resumed into a Loader that
// would produce the same order.
struct LoaderState {
  int64_t epoch = 0;
  int64_t position = 0;     // samples of the epoch's order consumed by all ranks
  int64_t num_samples = 0;  // samples in the epoch's order (the dataset)
  uint64_t seed = 0;
  bool shuffle = true;
  int64_t window_shards = 8;
};

class Loader {
 public:
  // Validates `options` and resolves the shard specs (listing directories).
  // Errors: InvalidArgument for bad options (naming the option), NotFound
  // for a missing shard directory.
  static absl::StatusOr<std::unique_ptr<Loader>> Create(LoaderOptions options);
  ~Loader();

  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The next batch of the current epoch, waiting for it; nullopt at the end
  // of the epoch. Starts the epoch on first use. Errors: those of reading and
  // decoding (NotFound, DataLoss, ...) with shard, offset and sample key,
  // after which the epoch is over; FailedPrecondition after fork() or
  // Close().
  absl::StatusOr<std::optional<Batch>> Next();

  // Waits up to `timeout` until Next() would not block (a batch, the end of
  // the epoch or an error is ready). Lets callers stay responsive, e.g. to
  // Ctrl-C.
  bool WaitReady(absl::Duration timeout);

  // Ends the current epoch (if running) and makes the next Next() start
  // `epoch` from its beginning.
  void SetEpoch(int64_t epoch);
  // Ends the current epoch and restarts it from the beginning.
  void Restart();
  int64_t epoch() const;

  // Samples and batches this reader yields in the current epoch (from its
  // start, or from the resumed position). Counts every shard's samples once
  // (from index files, or by reading headers). Errors: those of counting.
  absl::StatusOr<int64_t> NumSamples();
  absl::StatusOr<int64_t> NumBatches();

  // Waits up to `timeout` until the samples are counted (or counting has
  // failed), starting the count if need be: then NumSamples(), NumBatches(),
  // State() and Resume() do not block. Counting runs on a detached thread,
  // so callers stay responsive (e.g. to Ctrl-C) and a count that never
  // returns (a hung mount) does not hold up exit.
  bool WaitCounted(absl::Duration timeout);

  // The position after the batches Next() has returned in this epoch.
  // Errors: those of counting the samples.
  absl::StatusOr<LoaderState> State();

  // Continues from `state`: the next Next() yields the batch that follows
  // it in epoch `state.epoch`, for this Loader's rank and world size (which
  // may differ from the ones the state was saved with). A later
  // SetEpoch(state.epoch) before iterating keeps the position. Errors:
  // InvalidArgument if the state belongs to another dataset, seed, shuffle
  // or window.
  absl::Status Resume(const LoaderState& state);

  // Counters and queue depths (see stats.h).
  LoaderStats Stats() const;

  // Stops the threads; later Next() calls fail with FailedPrecondition.
  void Close();

  const std::vector<std::string>& shards() const { return shards_; }
  // What resolving the shard specs found worth telling the user (other
  // shards beside a folder's index.json; plan/shard_list.h), to be logged.
  const std::vector<std::string>& shard_warnings() const { return shard_warnings_; }
  const LoaderOptions& options() const { return *options_; }

 private:
  class Engine;
  struct Counting;  // a count in progress or done, shared with its thread
  Loader(LoaderOptions options, std::vector<std::string> shards);
  // The sample counts of every shard (counted once, by the dataset; a
  // failed count is tried again by the next call).
  absl::StatusOr<std::vector<int64_t>> Counts() ABSL_LOCKS_EXCLUDED(mu_);
  std::shared_ptr<Counting> StartedCounting() ABSL_LOCKS_EXCLUDED(mu_);
  // This reader's schedule for the current epoch and start (counting the
  // samples first if need be).
  absl::StatusOr<RankSchedule> Schedule() ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<RankSchedule> Schedule(int64_t num_samples) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // This reader's schedule options from start_, without the sample count.
  ScheduleOptions ReaderSchedule() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The running epoch's pipeline, started if need be.
  absl::StatusOr<std::shared_ptr<internal_pipeline::Pipeline>> StartedPipeline()
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status CheckUsable() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stops the running pipeline and sets where the next one starts.
  void Reposition(int64_t epoch, int64_t start) ABSL_LOCKS_EXCLUDED(mu_);

  const std::shared_ptr<const LoaderOptions> options_;  // shared with the engine
  const std::vector<std::string> shards_;
  std::vector<std::string> shard_warnings_;  // set by Create()
  const int creator_pid_;
  std::unique_ptr<Engine> engine_;  // arena, pool, dataset, running epoch

  mutable absl::Mutex mu_;
  int64_t epoch_ ABSL_GUARDED_BY(mu_);
  int64_t start_ ABSL_GUARDED_BY(mu_) = 0;            // first position of this epoch's run
  bool resumed_ ABSL_GUARDED_BY(mu_) = false;         // start_ came from Resume()
  int64_t batches_yielded_ ABSL_GUARDED_BY(mu_) = 0;  // by Next() since start_
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<Counting> counting_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardloader

#endif  // SHARDLOADER_LOADER_H_
