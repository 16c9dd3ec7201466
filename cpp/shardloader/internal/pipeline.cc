#include "shardloader/internal/pipeline.h"

#include <algorithm>

#include "shardloader/format/sample_reader.h"
#include "shardloader/internal/assembler.h"
#include "shardloader/internal/shuffle_buffer.h"

namespace shardloader::internal_pipeline {

Pipeline::Pipeline(PipelineConfig config,
                   std::shared_ptr<internal_batch::BatchPool> pool,
                   tbb::task_arena* arena)
    : config_(std::move(config)),
      pool_(std::move(pool)),
      arena_(arena),
      ready_(config_.prefetch_batches) {
  for (const FieldSpec& field : config_.fields) {
    for (const std::string& extension : field.extensions) {
      wanted_extensions_.push_back(extension);
    }
  }
  for (size_t i = 0; i < config_.shards.size(); ++i) {
    shard_queues_.push_back(
        std::make_unique<SampleQueue>(config_.shard_queue_samples));
  }
  const int num_io_threads = std::clamp<int>(
      config_.num_io_threads, 1, std::max<int>(1, config_.shards.size()));
  for (int i = 0; i < num_io_threads; ++i) {
    io_threads_.emplace_back([this] { ReadShards(); });
  }
  assembler_ = std::thread([this] { Assemble(); });
}

Pipeline::~Pipeline() {
  Stop();
  for (std::thread& thread : io_threads_) thread.join();
  assembler_.join();
}

void Pipeline::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  for (auto& queue : shard_queues_) queue->Close();
  ready_.Close();
}

absl::StatusOr<std::optional<Batch>> Pipeline::Next() {
  std::optional<absl::StatusOr<Batch>> item = ready_.Pop();
  if (!item.has_value()) return std::nullopt;
  if (!item->ok()) return item->status();
  return std::move(**item);
}

bool Pipeline::WaitReady(absl::Duration timeout) {
  return ready_.WaitPoppable(timeout);
}

void Pipeline::ReadShards() {
  while (true) {
    size_t index;
    {
      absl::MutexLock lock(&mu_);
      auto can_claim = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopped_ || next_shard_to_claim_ >= config_.shards.size() ||
               next_shard_to_claim_ <=
                   current_shard_ + static_cast<size_t>(config_.prefetch_shards);
      };
      mu_.Await(absl::Condition(&can_claim));
      if (stopped_ || next_shard_to_claim_ >= config_.shards.size()) return;
      index = next_shard_to_claim_++;
    }
    ReadShard(index);
  }
}

void Pipeline::ReadShard(size_t index) {
  SampleQueue& queue = *shard_queues_[index];
  absl::StatusOr<std::unique_ptr<ByteSource>> source =
      OpenSource(config_.shards[index], config_.source);
  if (!source.ok()) {
    queue.Push(source.status());
    queue.Close();
    return;
  }
  SampleReader reader(*std::move(source), wanted_extensions_);
  while (true) {
    absl::StatusOr<std::optional<Sample>> sample = reader.Next();
    if (!sample.ok()) {
      queue.Push(sample.status());
      break;
    }
    if (!sample->has_value() || !queue.Push(**std::move(sample))) break;
  }
  queue.Close();
}

bool Pipeline::Emit(std::vector<Sample>& samples) {
  absl::StatusOr<Batch> batch =
      AssembleBatch(config_.fields, samples, pool_->Acquire(), *arena_);
  samples.clear();
  const bool ok = batch.ok();
  return ready_.Push(std::move(batch)) && ok;
}

void Pipeline::Assemble() {
  ShuffleBuffer<Sample> shuffle(config_.shuffle_buffer_size,
                                config_.shuffle_seed);
  std::vector<Sample> pending;
  pending.reserve(config_.batch_size);
  auto take = [&](Sample sample) {
    pending.push_back(std::move(sample));
    return static_cast<int64_t>(pending.size()) < config_.batch_size ||
           Emit(pending);
  };
  for (size_t index = 0; index < config_.shards.size(); ++index) {
    {
      absl::MutexLock lock(&mu_);
      current_shard_ = index;
    }
    while (std::optional<absl::StatusOr<Sample>> item =
               shard_queues_[index]->Pop()) {
      if (!item->ok()) {
        ready_.Push(item->status());
        ready_.Close();
        return;
      }
      std::optional<Sample> out = shuffle.Add(**std::move(item));
      if (out.has_value() && !take(*std::move(out))) {
        ready_.Close();
        return;
      }
    }
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
  }
  bool running = true;
  while (running) {
    std::optional<Sample> out = shuffle.Drain();
    if (!out.has_value()) break;
    running = take(*std::move(out));
  }
  if (running && !pending.empty() && !config_.drop_last) Emit(pending);
  ready_.Close();
}

}  // namespace shardloader::internal_pipeline
