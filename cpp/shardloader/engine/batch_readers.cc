#include "shardloader/engine/batch_readers.h"

#include <algorithm>
#include <numeric>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace shardloader::internal_pipeline {

struct BatchReaders::State {
  explicit State(BatchReadersConfig c)
      : config(std::move(c)),
        num_samples(std::accumulate(config.counts.begin(), config.counts.end(), int64_t{0})),
        ready(static_cast<size_t>(config.schedule.num_batches())) {}

  // Batches read ahead of the one being consumed.
  int64_t Lookahead() const { return static_cast<int64_t>(config.options->prefetch_batches) + 1; }

  // Claims the next batch to read; nullopt when there is none or stopped.
  std::optional<int64_t> Claim() ABSL_LOCKS_EXCLUDED(mu) {
    absl::MutexLock lock(&mu);
    auto can_claim = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return stopped || next_to_claim >= config.schedule.num_batches() ||
             next_to_claim <= current + Lookahead();
    };
    mu.Await(absl::Condition(&can_claim));
    if (stopped || next_to_claim >= config.schedule.num_batches()) return std::nullopt;
    return next_to_claim++;
  }

  // Hints the shard of the first sample `distance` batches after `j` to the
  // remote cache, so it is local by the time it is read (a no-op for local
  // shards and without a cache).
  void Prefetch(int64_t j, EpochOrder& order) {
    const int64_t later = j + Lookahead() + 1;
    if (later >= config.schedule.num_batches()) return;
    const int64_t p = config.schedule.Batch(later).first;
    const int64_t position = p < num_samples ? p : (p - num_samples) % num_samples;
    config.dataset->Prefetch(order.At(position).shard);
  }

  void Read(int64_t j, EpochOrder& order) {
    Prefetch(j, order);
    const RankSchedule::Span span = config.schedule.Batch(j);
    ReadBatch batch;
    batch.samples.reserve(span.size);
    for (int64_t p = span.first; p < span.first + span.size; ++p) {
      // Positions past the end pad the epoch with its first samples.
      const int64_t position = p < num_samples ? p : (p - num_samples) % num_samples;
      Sample& sample = batch.samples.emplace_back(config.sample_pool->Take());
      batch.positions.push_back(position);
      batch.errors.push_back(
          config.dataset->Read(order.At(position), config.wanted_extensions, &sample));
    }
    absl::MutexLock lock(&mu);
    ready[j] = std::move(batch);
  }

  const BatchReadersConfig config;
  const int64_t num_samples;
  absl::Mutex mu;
  std::vector<std::optional<ReadBatch>> ready ABSL_GUARDED_BY(mu);
  int64_t next_to_claim ABSL_GUARDED_BY(mu) = 0;
  int64_t current ABSL_GUARDED_BY(mu) = 0;  // batch being consumed
  bool stopped ABSL_GUARDED_BY(mu) = false;
};

BatchReaders::BatchReaders(BatchReadersConfig config)
    : state_(std::make_shared<State>(std::move(config))) {
  const int num_threads = static_cast<int>(
      std::clamp<int64_t>(state_->config.options->num_io_threads, 1,
                          std::max<int64_t>(1, state_->config.schedule.num_batches())));
  for (int i = 0; i < num_threads; ++i) {
    std::thread([state = state_] {
      // Each thread walks the order with its own cached window.
      EpochOrder order(state->config.counts, state->config.order);
      while (std::optional<int64_t> j = state->Claim()) state->Read(*j, order);
    }).detach();
  }
}

BatchReaders::~BatchReaders() { Stop(); }

std::optional<ReadBatch> BatchReaders::Pop(int64_t j) {
  absl::MutexLock lock(&state_->mu);
  state_->current = j;
  auto available = [this, j]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu) {
    return state_->stopped || state_->ready[j].has_value();
  };
  state_->mu.Await(absl::Condition(&available));
  if (state_->stopped) return std::nullopt;
  std::optional<ReadBatch> batch = std::move(state_->ready[j]);
  state_->ready[j].reset();
  return batch;
}

int64_t BatchReaders::num_batches() const { return state_->config.schedule.num_batches(); }

void BatchReaders::Stop() {
  absl::MutexLock lock(&state_->mu);
  state_->stopped = true;
}

}  // namespace shardloader::internal_pipeline
