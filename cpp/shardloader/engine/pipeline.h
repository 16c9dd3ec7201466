// Pipeline: the threads that produce one epoch's batches for one reader.
//
//   BatchReaders ──▶ assembler thread ──────────────▶ ready queue
//   (I/O threads     (decode in the arena into a      (bounded: prefetch)
//    read batches     batch slot; bad samples raised
//    ahead)           or replaced)
//
// The assembler thread first counts the dataset's samples (which may read
// index files or shard headers, so the consumer is never blocked outside
// Next() and WaitReady()), then starts the readers. The reader's batches
// are the positions its RankSchedule deals it from the epoch's EpochOrder;
// the assembler takes them strictly in order, so the batches depend only on
// the plan, never on timing. The first error ends the epoch: it is handed to
// the consumer after the batches before it.
//
// Ownership: owns its threads; Stop() or destruction ends them (and joins the
// assembler). Thread-safety: thread-safe.
#ifndef SHARDLOADER_ENGINE_PIPELINE_H_
#define SHARDLOADER_ENGINE_PIPELINE_H_

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "oneapi/tbb/task_arena.h"
#include "shardloader/batch.h"
#include "shardloader/decode/decode_field.h"
#include "shardloader/engine/bad_samples.h"
#include "shardloader/engine/batch_pool.h"
#include "shardloader/engine/batch_readers.h"
#include "shardloader/engine/dataset.h"
#include "shardloader/engine/sample_pool.h"
#include "shardloader/internal/bounded_queue.h"
#include "shardloader/loader_options.h"
#include "shardloader/plan/epoch_order.h"
#include "shardloader/plan/rank_schedule.h"

namespace shardloader::internal_pipeline {

struct PipelineConfig {
  std::shared_ptr<const LoaderOptions> options;  // not null
  std::shared_ptr<Dataset> dataset;              // not null
  int64_t epoch = 0;
  ScheduleOptions schedule;  // num_samples is filled in from the dataset
  std::shared_ptr<internal_stats::StatsCounters> stats;  // not null
};

class Pipeline {
 public:
  // Starts the threads. `pool` and `arena` must outlive the pipeline; a null
  // `arena` decodes on plain threads (a process forked from one whose TBB
  // threads ran cannot use TBB: its locks may be copied held, its workers
  // are not there).
  Pipeline(PipelineConfig config, std::shared_ptr<internal_batch::BatchPool> pool,
           tbb::task_arena* arena);
  ~Pipeline();

  // The next batch, waiting for it; nullopt at the end of the epoch or after
  // Stop(). After an error, later calls return nullopt.
  absl::StatusOr<std::optional<Batch>> Next();

  // Waits up to `timeout` until Next() would not block.
  bool WaitReady(absl::Duration timeout);

  // Batches ready for the consumer now.
  size_t num_ready() const { return ready_.size(); }

  // Ends the epoch early: wakes and stops every thread. Idempotent.
  void Stop();

 private:
  void Assemble();
  // The dataset's sample counts, computed on a detached thread: a read that
  // never returns (a FIFO without a writer, a hung mount) must not keep
  // Stop() waiting. Shared with that thread.
  struct Counting;

  // Counts the samples and starts the readers; false if stopped or failed.
  bool Start();
  // Hands `error` to the consumer and ends the epoch.
  void Fail(absl::Status error);

  const PipelineConfig config_;
  const OrderOptions order_;  // from the options and the epoch
  std::shared_ptr<internal_batch::BatchPool> pool_;
  tbb::task_arena* arena_;
  std::shared_ptr<SamplePool> sample_pool_;
  BoundedQueue<absl::StatusOr<Batch>> ready_;
  const std::shared_ptr<Counting> counting_;
  // Set up by Start() on the assembler thread.
  std::unique_ptr<BadSamples> bad_samples_;
  absl::Mutex mu_;
  std::unique_ptr<BatchReaders> readers_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::thread assembler_;
};

}  // namespace shardloader::internal_pipeline

#endif  // SHARDLOADER_ENGINE_PIPELINE_H_
