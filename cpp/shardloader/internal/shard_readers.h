// ShardReaders: reads an epoch's shards ahead, in order, with I/O threads.
//
// Threads claim shards in list order, at most `prefetch_shards` ahead of the
// shard being consumed, parse them into samples and fill one bounded queue
// per shard. The consumer pops shard by shard, in order, so the sample order
// never depends on timing. A read or parse error is queued in place of the
// shard's next sample and ends that shard.
//
// The threads are detached and share their state with this object: Stop()
// (or destruction) wakes every thread waiting on a queue, and a thread stuck
// in a read that never returns (a hung mount, a FIFO without a writer) cannot
// hold up the consumer, Close() or process exit.
//
// Ownership: owns the state together with its threads. Thread-safety:
// Pop() from one consumer thread; Stop() from any thread.
#ifndef SHARDLOADER_INTERNAL_SHARD_READERS_H_
#define SHARDLOADER_INTERNAL_SHARD_READERS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shardloader/format/sample.h"
#include "shardloader/internal/sample_pool.h"
#include "shardloader/internal/stats_counters.h"
#include "shardloader/io/open_source.h"

namespace shardloader::internal_pipeline {

struct ShardReadersConfig {
  std::vector<std::string> shards;             // in consumption order
  std::vector<int64_t> shard_indices;          // Sample::shard_index of each
  std::vector<std::string> wanted_extensions;  // fields to read
  SourceOptions source;
  int num_threads = 2;
  int prefetch_shards = 2;
  size_t queue_samples = 64;  // parsed samples buffered per shard
  std::shared_ptr<internal_stats::StatsCounters> stats;  // not null
  std::shared_ptr<SamplePool> sample_pool;              // not null
};

class ShardReaders {
 public:
  explicit ShardReaders(ShardReadersConfig config);
  ~ShardReaders();
  ShardReaders(const ShardReaders&) = delete;
  ShardReaders& operator=(const ShardReaders&) = delete;

  // The next sample (or error) of shard `index`, waiting for it; nullopt at
  // the shard's end or after Stop(). Shards must be popped in order.
  std::optional<absl::StatusOr<Sample>> Pop(size_t index);

  size_t num_shards() const;
  bool stopped() const;
  void Stop();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace shardloader::internal_pipeline

#endif  // SHARDLOADER_INTERNAL_SHARD_READERS_H_
