#include "shardloader/internal/pipeline.h"

#include <algorithm>

#include "shardloader/internal/assembler.h"
#include "shardloader/internal/shuffle_buffer.h"

namespace shardloader::internal_pipeline {

namespace {

std::vector<std::string> WantedExtensions(const std::vector<FieldSpec>& fields) {
  std::vector<std::string> extensions;
  for (const FieldSpec& field : fields) {
    extensions.insert(extensions.end(), field.extensions.begin(),
                      field.extensions.end());
  }
  return extensions;
}

}  // namespace

Pipeline::Pipeline(PipelineConfig config,
                   std::shared_ptr<internal_batch::BatchPool> pool,
                   tbb::task_arena* arena)
    : config_(std::move(config)),
      pool_(std::move(pool)),
      arena_(arena),
      sample_pool_(std::make_shared<SamplePool>(
          std::max<size_t>(2 * config_.batch_size, 256))),
      readers_({.shards = config_.shards,
                .shard_indices = config_.shard_indices,
                .wanted_extensions = WantedExtensions(config_.fields),
                .source = config_.source,
                .num_threads = config_.num_io_threads,
                .prefetch_shards = config_.prefetch_shards,
                .queue_samples = config_.shard_queue_samples,
                .stats = config_.stats,
                .sample_pool = sample_pool_}),
      ready_(config_.prefetch_batches),
      assembler_([this] { Assemble(); }) {}

Pipeline::~Pipeline() {
  Stop();
  assembler_.join();
}

void Pipeline::Stop() {
  readers_.Stop();
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

bool Pipeline::Emit(std::vector<Sample>& samples) {
  using internal_stats::StatsCounters;
  absl::StatusOr<Batch> batch;
  {
    internal_stats::ScopedTimer timer(config_.stats->decode_busy_ns);
    batch = AssembleBatch(config_.fields, samples, pool_->Acquire(), *arena_,
                          {.seed = config_.seed, .epoch = config_.epoch});
  }
  if (!batch.ok()) {
    Fail(batch.status());
    return false;
  }
  StatsCounters::Add(config_.stats->num_batches, 1);
  StatsCounters::Add(config_.stats->num_samples_decoded,
                     static_cast<int64_t>(samples.size()));
  sample_pool_->Give(samples);
  return ready_.Push(*std::move(batch));
}

void Pipeline::Fail(absl::Status error) {
  internal_stats::StatsCounters::Add(config_.stats->num_errors, 1);
  ready_.Push(std::move(error));
  ready_.Close();
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
  for (size_t index = 0; index < readers_.num_shards(); ++index) {
    while (std::optional<absl::StatusOr<Sample>> item = readers_.Pop(index)) {
      if (!item->ok()) {
        Fail(item->status());
        return;
      }
      std::optional<Sample> out = shuffle.Add(**std::move(item));
      if (out.has_value() && !take(*std::move(out))) {
        ready_.Close();
        return;
      }
    }
    if (readers_.stopped()) return;
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
