#include "shardloader/internal/shard_readers.h"

#include <algorithm>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "shardloader/format/sample_reader.h"
#include "shardloader/internal/bounded_queue.h"

namespace shardloader::internal_pipeline {

using SampleQueue = BoundedQueue<absl::StatusOr<Sample>>;

struct ShardReaders::State {
  explicit State(ShardReadersConfig c) : config(std::move(c)) {
    for (size_t i = 0; i < config.shards.size(); ++i) {
      queues.push_back(std::make_unique<SampleQueue>(config.queue_samples));
    }
  }

  // Claims the next shard to read; nullopt when there is none or stopped.
  std::optional<size_t> Claim() ABSL_LOCKS_EXCLUDED(mu) {
    absl::MutexLock lock(&mu);
    auto can_claim = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return stopped || next_to_claim >= config.shards.size() ||
             next_to_claim <=
                 current + static_cast<size_t>(config.prefetch_shards);
    };
    mu.Await(absl::Condition(&can_claim));
    if (stopped || next_to_claim >= config.shards.size()) return std::nullopt;
    return next_to_claim++;
  }

  void Read(size_t index) {
    using internal_stats::ScopedTimer;
    using internal_stats::StatsCounters;
    StatsCounters& stats = *config.stats;
    SampleQueue& queue = *queues[index];
    absl::StatusOr<std::unique_ptr<ByteSource>> source;
    {
      ScopedTimer timer(stats.read_busy_ns);
      source = OpenSource(config.shards[index], config.source);
    }
    if (!source.ok()) {
      queue.Push(source.status());
      queue.Close();
      return;
    }
    StatsCounters::Add(stats.num_shards_opened, 1);
    const ByteSource* position = source->get();
    SampleReader reader(*std::move(source), config.wanted_extensions);
    int64_t counted_bytes = 0;
    while (true) {
      Sample sample = config.sample_pool->Take();
      absl::StatusOr<bool> read;
      {
        ScopedTimer timer(stats.read_busy_ns);
        read = reader.Next(&sample);
      }
      StatsCounters::Add(stats.num_bytes_read, position->position() - counted_bytes);
      counted_bytes = position->position();
      if (!read.ok()) {
        queue.Push(read.status());
        break;
      }
      if (!*read) break;
      StatsCounters::Add(stats.num_samples_read, 1);
      sample.shard_index = config.shard_indices[index];
      if (!queue.Push(std::move(sample))) break;
    }
    queue.Close();
  }

  const ShardReadersConfig config;
  std::vector<std::unique_ptr<SampleQueue>> queues;  // one per shard
  absl::Mutex mu;
  size_t next_to_claim ABSL_GUARDED_BY(mu) = 0;
  size_t current ABSL_GUARDED_BY(mu) = 0;  // shard being consumed
  bool stopped ABSL_GUARDED_BY(mu) = false;
};

ShardReaders::ShardReaders(ShardReadersConfig config)
    : state_(std::make_shared<State>(std::move(config))) {
  const int num_threads =
      std::clamp<int>(state_->config.num_threads, 1,
                      std::max<int>(1, state_->config.shards.size()));
  for (int i = 0; i < num_threads; ++i) {
    std::thread([state = state_] {
      while (std::optional<size_t> index = state->Claim()) state->Read(*index);
    }).detach();
  }
}

ShardReaders::~ShardReaders() { Stop(); }

std::optional<absl::StatusOr<Sample>> ShardReaders::Pop(size_t index) {
  {
    absl::MutexLock lock(&state_->mu);
    state_->current = index;
  }
  return state_->queues[index]->Pop();
}

size_t ShardReaders::num_shards() const { return state_->config.shards.size(); }

bool ShardReaders::stopped() const {
  absl::MutexLock lock(&state_->mu);
  return state_->stopped;
}

void ShardReaders::Stop() {
  {
    absl::MutexLock lock(&state_->mu);
    state_->stopped = true;
  }
  for (auto& queue : state_->queues) queue->Close();
}

}  // namespace shardloader::internal_pipeline
