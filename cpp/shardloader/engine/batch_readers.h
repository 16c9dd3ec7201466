// BatchReaders: reads a reader's batches of samples ahead, with I/O threads.
//
// Threads claim batches in schedule order, at most prefetch_batches + 1 ahead of the
// batch being consumed, and read each of its samples through the Dataset
// (one positional read per member). A sample that cannot be read keeps its
// error beside it, for the assembler to raise or replace. Batches are
// handed over strictly in order, so nothing depends on timing.
//
// The threads are detached and share their state with this object: Stop()
// (or destruction) wakes every waiting thread, and a thread stuck in a read
// that never returns (a hung mount) cannot hold up the consumer, Close() or
// process exit.
//
// Ownership: owns the state together with its threads. Thread-safety: Pop()
// from one consumer thread; Stop() from any thread.
#ifndef SHARDLOADER_ENGINE_BATCH_READERS_H_
#define SHARDLOADER_ENGINE_BATCH_READERS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "shardloader/engine/dataset.h"
#include "shardloader/engine/sample_pool.h"
#include "shardloader/format/sample.h"
#include "shardloader/loader_options.h"
#include "shardloader/plan/epoch_order.h"
#include "shardloader/plan/rank_schedule.h"

namespace shardloader::internal_pipeline {

// One batch's samples as read, before decoding.
struct ReadBatch {
  std::vector<Sample> samples;
  std::vector<absl::Status> errors;  // per sample; OK if read
  std::vector<int64_t> positions;    // in the epoch's order
};

// What the readers read: num_io_threads threads read up to
// prefetch_batches + 1 batches ahead of the consumer (LoaderOptions).
struct BatchReadersConfig {
  std::shared_ptr<const LoaderOptions> options;  // not null
  std::shared_ptr<Dataset> dataset;              // not null
  std::vector<int64_t> counts;                   // samples per shard
  OrderOptions order;
  RankSchedule schedule;
  std::vector<std::string> wanted_extensions;
  std::shared_ptr<SamplePool> sample_pool;  // not null
};

class BatchReaders {
 public:
  explicit BatchReaders(BatchReadersConfig config);
  ~BatchReaders();
  BatchReaders(const BatchReaders&) = delete;
  BatchReaders& operator=(const BatchReaders&) = delete;

  // Batch `j`, waiting for it; nullopt after Stop(). Batches must be popped
  // in order.
  std::optional<ReadBatch> Pop(int64_t j);

  int64_t num_batches() const;
  void Stop();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace shardloader::internal_pipeline

#endif  // SHARDLOADER_ENGINE_BATCH_READERS_H_
