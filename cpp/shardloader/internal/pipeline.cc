#include "shardloader/internal/pipeline.h"

#include <algorithm>

#include "shardloader/internal/assembler.h"

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
      sample_pool_(std::make_shared<SamplePool>(static_cast<size_t>(
          std::max<int64_t>(2 * config_.schedule.Batch(0).size, 256)))),
      bad_samples_(config_.bad_samples, config_.dataset, config_.counts,
                   WantedExtensions(config_.fields), config_.stats),
      readers_({.dataset = config_.dataset,
                .counts = config_.counts,
                .order = config_.order,
                .schedule = config_.schedule,
                .wanted_extensions = WantedExtensions(config_.fields),
                .num_threads = config_.num_io_threads,
                .lookahead = config_.prefetch_batches + 1,
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

void Pipeline::Fail(absl::Status error) {
  internal_stats::StatsCounters::Add(config_.stats->num_errors, 1);
  ready_.Push(std::move(error));
  ready_.Close();
}

void Pipeline::Assemble() {
  using internal_stats::StatsCounters;
  for (int64_t j = 0; j < readers_.num_batches(); ++j) {
    std::optional<ReadBatch> read = readers_.Pop(j);
    if (!read.has_value()) break;  // stopped
    absl::StatusOr<Batch> batch;
    {
      internal_stats::ScopedTimer timer(config_.stats->decode_busy_ns);
      batch = AssembleBatch(
          config_.fields, absl::MakeSpan(read->samples), read->errors,
          pool_->Acquire(), *arena_,
          {.seed = config_.order.seed, .epoch = config_.order.epoch},
          [&](size_t row, const absl::Status& error, int* tries, Sample* sample) {
            return bad_samples_.Replace(read->positions[row], error, tries, sample);
          });
    }
    if (!batch.ok()) {
      Fail(batch.status());
      return;
    }
    StatsCounters::Add(config_.stats->num_batches, 1);
    StatsCounters::Add(config_.stats->num_samples_decoded,
                       static_cast<int64_t>(read->samples.size()));
    sample_pool_->Give(read->samples);
    if (!ready_.Push(*std::move(batch))) break;
  }
  ready_.Close();
}

}  // namespace shardloader::internal_pipeline
