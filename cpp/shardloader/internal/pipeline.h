// Pipeline: the threads that produce one epoch's batches for one reader.
//
//   ShardReaders ──▶ assembler thread ──────────▶ ready queue
//   (I/O threads     (shuffle buffer, decode      (bounded: prefetch)
//    read ahead)      in the arena, batch slots)
//
// The assembler consumes shards strictly in plan order and feeds a seeded
// shuffle buffer, so the sample order depends only on the plan and the seed,
// never on timing. The first error ends the epoch:
// it is handed to the consumer after the batches before it.
//
// Ownership: owns its threads; Stop() or destruction ends them (and joins the
// assembler).
// Thread-safety: thread-safe.
#ifndef SHARDLOADER_INTERNAL_PIPELINE_H_
#define SHARDLOADER_INTERNAL_PIPELINE_H_

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "oneapi/tbb/task_arena.h"
#include "shardloader/batch.h"
#include "shardloader/decode/field.h"
#include "shardloader/format/sample.h"
#include "shardloader/internal/batch_pool.h"
#include "shardloader/internal/bounded_queue.h"
#include "shardloader/internal/sample_pool.h"
#include "shardloader/internal/shard_readers.h"
#include "shardloader/io/open_source.h"

namespace shardloader::internal_pipeline {

struct PipelineConfig {
  std::vector<std::string> shards;  // this reader's shards, in read order
  std::vector<int64_t> shard_indices;  // their positions in the loader's list
  std::vector<FieldSpec> fields;
  int64_t batch_size = 1;
  bool drop_last = false;
  size_t shuffle_buffer_size = 0;  // samples; <= 1 keeps the order
  uint64_t shuffle_seed = 0;
  uint64_t seed = 0;   // the loader's seed, for per-sample augmentation
  int64_t epoch = 0;
  int num_io_threads = 2;
  int prefetch_shards = 2;        // shards read ahead of the current one
  size_t prefetch_batches = 2;    // assembled batches waiting for the consumer
  size_t shard_queue_samples = 64;  // parsed samples buffered per shard
  SourceOptions source;
  std::shared_ptr<internal_stats::StatsCounters> stats;  // not null
};

class Pipeline {
 public:
  // Starts the threads. `pool` and `arena` must outlive the pipeline.
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
  // Decodes `samples` into a batch and queues it; false if stopped or failed.
  bool Emit(std::vector<Sample>& samples);
  // Hands `error` to the consumer and ends the epoch.
  void Fail(absl::Status error);

  const PipelineConfig config_;
  std::shared_ptr<internal_batch::BatchPool> pool_;
  tbb::task_arena* arena_;
  std::shared_ptr<SamplePool> sample_pool_;
  ShardReaders readers_;
  BoundedQueue<absl::StatusOr<Batch>> ready_;
  std::thread assembler_;
};

}  // namespace shardloader::internal_pipeline

#endif  // SHARDLOADER_INTERNAL_PIPELINE_H_
